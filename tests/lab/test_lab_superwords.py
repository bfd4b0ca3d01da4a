"""Superword BPE (issue 34 part 2) against a naive trainer written here from the issue's definition, the referee:

    Merges 1..t are learned with the run's pattern. From merge t+1 on, the corpus is cut by the stage-two pattern
    (by default ``lines-digits-r2l``); each stage-two piece starts from its base units with merges 1..t applied in
    order (each merge replacing its pair left to right), and training goes on from there with the run's tie rule
    and min_count. A transition equal to the run's merge count gives exactly the plain run. Encoding with a
    superword run cuts text with the stage-two pattern and applies all merges in order.

The referee (``tests/helpers/bpe_naive.py``) recounts every pair at every step over every occurrence of every piece
(no distinct words, no incremental counts) and cuts text with ``regex.findall`` of patterns that match every
character.
"""

from __future__ import annotations

import pytest
import regex
from helpers import realtext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engines.bpe.patterns import LINES_DIGITS_R2L_PATTERN
from app.engines.bpe.patterns import PATTERNS as ENGINE_PATTERNS
from app.engines.errors import TokenplayError
from app.lab.algorithms import train
from app.lab.options import LabOptionsError, Options
from app.lab.replay import RunReplay
from app.lab.runs import Run, new_id
from helpers.bpe_naive import naive_encode, naive_superwords

STAGE_ONE = {"gpt4": ENGINE_PATTERNS["gpt4"], "gpt2": ENGINE_PATTERNS["gpt2"], "whitespace": r"\S+|\s+"}
STAGE_TWO = {"lines-digits-r2l": LINES_DIGITS_R2L_PATTERN, "whitespace": r"\S+|\s+", "none": r"[\s\S]+"}


def superword_run(text: str, merges: int, t: int, pattern: str = "gpt4", two: str | None = None, **more) -> Run:
    sw = {"transition": t} | ({"pattern": two} if two else {})
    options = Options("byte", pattern, merges, superwords=sw, **more)
    run = Run(new_id(), text, options)
    run.apply(train(text, options, max_merges=10_000))
    run.status = "done"
    return run


ALPHABET = [*"ab  ba\n\n", "the ", "of the ", "cat", ". ", "1234567", "42", " in", "é", "日本", "It's", "\r\n"]
texts = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=50).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts,
    n=st.integers(0, 40),
    t=st.integers(0, 40),
    one=st.sampled_from(sorted(STAGE_ONE)),
    two=st.sampled_from(sorted(STAGE_TWO)),
    tie_break=st.sampled_from(["first", "lexical"]),
    min_count=st.sampled_from([1, 2]),
)
def test_superword_runs_learn_what_the_definition_learns(text, n, t, one, two, tie_break, min_count):
    t = min(t, n)
    run = superword_run(text, n, t, one, two, tie_break=tie_break, min_count=min_count)
    want = naive_superwords(text, n, t, STAGE_ONE[one], STAGE_TWO[two], tie_break, min_count)
    assert [s.pair for s in run.steps] == want
    assert [s.step for s in run.steps] == list(range(1, len(want) + 1))
    # encoding cuts with stage two (past the transition) and applies the merges in order
    sample = text[::-1] + " of the 1234"
    k = len(run.steps)
    pattern = STAGE_TWO[two] if k > t else STAGE_ONE[one]
    assert RunReplay(run).encode_trace(sample, k)["ids"] == naive_encode(sample, want, pattern)


def test_a_transition_at_the_run_s_merge_count_is_the_plain_run():
    text = "of the cat. of the dog. of the 12345 cats\n" * 5
    plain = train(text, Options("byte", "gpt4", 40), max_merges=10_000)
    run = superword_run(text, 40, 40)
    assert [s.pair for s in run.steps] == [s.pair for s in plain.steps]
    assert [s.count for s in run.steps] == [s.count for s in plain.steps]


def test_superword_tokens_cross_spaces_after_the_transition():
    text = "of the cat sat on the mat. " * 20
    run = superword_run(text, 30, 10)
    before, after = run.steps[:10], run.steps[10:]
    assert not any(b" " in s.token.strip() for s in before)  # gpt4 never joins across a space in stage one
    assert any(b" " in s.token.strip() for s in after)


@pytest.mark.parametrize("name", ["en", "zh"])
def test_superwords_on_real_text(name):
    realtext.require()
    (text,) = realtext.slices(name, 1, 1200, seed=5)
    run = superword_run(text, 60, 40)
    assert [s.pair for s in run.steps] == naive_superwords(text, 60, 40, STAGE_ONE["gpt4"], LINES_DIGITS_R2L_PATTERN)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"merges": 5, "superwords": {"transition": 6}}, "superwords.transition 6 is larger than the run's 5 merges"),
        ({"merges": 5, "superwords": {"transition": -1}}, "superwords.transition must be a whole number"),
        ({"merges": 5, "superwords": {"transition": "3"}}, "superwords.transition must be a whole number"),
        ({"merges": 5, "superwords": {}}, "superwords.transition must be a whole number"),
        ({"merges": 5, "superwords": 3}, "superwords must be an object"),
        ({"merges": 5, "superwords": {"transition": 1, "size": 2}}, "superwords has no field 'size'"),
        ({"merges": 5, "superwords": {"transition": 1, "pattern": "bogus"}}, "unknown superwords.pattern 'bogus'"),
        ({"merges": 5, "superwords": {"transition": 1, "pattern": "custom"}}, "superwords.pattern_regex is missing"),
        ({"merges": 5, "superwords": {"transition": 1, "pattern": "custom", "pattern_regex": "(x"}},
         "superwords.pattern_regex is not a valid regular expression"),
        ({"algorithm": "unigram", "merges": 5, "superwords": {"transition": 1}}, "superwords applies to byte- and"),
        ({"algorithm": "wordpiece", "merges": 5, "superwords": {"transition": 1}}, "superwords applies to byte- and"),
    ],
)
def test_bad_superwords_are_refused_in_words(options, says):
    with pytest.raises(TokenplayError, match=regex.escape(says)):
        Options(**({"algorithm": "byte"} | options)).check(10_000)


def test_a_transition_above_a_vocab_size_s_merges_is_refused_when_training():
    with pytest.raises(LabOptionsError, match="superwords.transition 50 is larger than the run's 44 merges"):
        train("ab " * 50, Options("byte", "gpt4", vocab_size=300, superwords={"transition": 50}), max_merges=10_000)


def test_superword_tokens_are_marked_listed_and_traced():
    text = "of the cat sat on the mat. it's the cat. " * 20
    run = superword_run(text, 40, 15)
    replay = RunReplay(run)
    marked = {replay.vocab[tid] for tid in replay.superwords}
    assert marked and all(step > 15 for step in replay.superwords.values())
    for tid, step in replay.superwords.items():  # each crosses a stage-one cut or holds a space inside
        token = replay.vocab[tid].decode()
        assert len(regex.findall(STAGE_ONE["gpt4"], token)) > 1 or regex.search(r"\S\s+\S", token)
    made_later = {s.token for s in run.steps[15:]}
    assert marked <= made_later and b" the" not in marked  # a word with its space is no superword
    listed, total = replay.superword_list(40)
    assert total == len(marked) and [row["step"] for row in listed] == sorted(replay.superwords.values(), reverse=True)
    assert replay.superword_list(15) == ([], 0)
    trace = replay.encode_trace("of the cat sat", 40)
    assert any(stage.get("superword") for stage in trace["stages"][1:])
    assert all(stage.get("superword") == (stage["new_id"] in replay.superwords) for stage in trace["stages"][1:])
    assert RunReplay(superword_run(text, 40, 40)).superwords == {}
