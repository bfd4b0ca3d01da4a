"""A chat template a user brings runs under limits (app/features/chat/template.py): what it builds with ``*``,
``+`` or ``**`` is checked before it is built, what it writes while it writes, its recursion, and, in a child
process, its time (the request's budget) and memory. Each hostile template here is hostile on any machine."""

from __future__ import annotations

import pytest

from app.engines import budget
from app.engines.budget import Budget, OverBudget
from app.features.chat.template import MAX_OUTPUT, ChatTemplateError, Clock, render_template, template_pieces

MESSAGES = [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize("untrusted", [False, True])
def test_a_huge_repetition_is_refused_before_it_is_built(untrusted):
    with pytest.raises(ChatTemplateError, match="repeats a text of 1 character 300,000,000 times"):
        render_template("{{ 'x' * 300000000 }}", MESSAGES, untrusted=untrusted)


@pytest.mark.parametrize("template", [
    "{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}",
    "{{ 7 ** 100000 }}",
])
def test_doubling_strings_and_huge_powers_are_stopped_in_words(template):
    with pytest.raises(ChatTemplateError, match="was stopped"):
        render_template(template, MESSAGES)


def test_output_is_capped_while_it_is_written():
    template = "{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}"  # 100 MB, written 1,000 at a time
    with pytest.raises(ChatTemplateError, match=f"writes more than {MAX_OUTPUT:,} characters"):
        render_template(template, MESSAGES)


def test_endless_recursion_is_refused_in_words():
    template = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
    with pytest.raises(ChatTemplateError, match="calls itself too deeply"):
        render_template(template, MESSAGES, untrusted=True)


def test_a_users_template_that_loops_without_end_is_stopped_at_the_budget():
    template = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}done"
    with budget.use(Budget(0.3)), pytest.raises(OverBudget, match="the model's chat template took more than 0.3 s"):
        render_template(template, MESSAGES, untrusted=True)


def test_a_users_template_renders_as_a_trusted_one_and_its_clock_comes_back():
    template = "{% for m in messages %}<s>{{ m.content }}</s>{% endfor %}{{ strftime_now('%Y') }}"
    trusted_clock, child_clock = Clock(), Clock()
    assert render_template(template, MESSAGES, clock=trusted_clock) == \
        render_template(template, MESSAGES, clock=child_clock, untrusted=True)
    assert child_clock.used and child_clock.now is not None
    pieces = template_pieces(template, MESSAGES, special_tokens={"<s>", "</s>"}, untrusted=True)
    assert pieces[:3] == [("<s>", True), ("Hi", False), ("</s>", True)]
