"""The memoised token markup renders exactly what the macro renders, for any text."""

from __future__ import annotations

import html as htmllib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.engines import registry
from app.settings import Settings
from app.web.render import make_environment
from app.web.rendering.tokenview import token_window

ENV_SETTINGS = Settings()


def _direct(env, window, show_ws, focusable):
    """The markup straight from the macros, no memo: the reference."""
    module = env.get_template("_tokens.html").module
    spans = []
    for n, s in enumerate(window.spans):
        tabindex = 0 if focusable and n == 0 else None
        spans.append(str(module.token_span(s, show_ws, tabindex)))
    # The id list: the ids of the tokens the spans hold, in order (static/app.js hands them out to the spans).
    ids = " ".join(map(str, window.result.ids[window.token_start : window.token_stop]))
    return "".join(spans), ids


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=80), show_ws=st.booleans(), focusable=st.booleans())
def test_memoised_markup_equals_macro_output(text, show_ws, focusable):
    text = text.encode("utf-8", "replace").decode("utf-8", "replace")
    env = make_environment(ENV_SETTINGS.templates_dir)
    tokens_markup, ids_markup = env.globals["tokens_markup"], env.globals["ids_markup"]
    for name in ("gpt2", "cl100k_base"):
        window = token_window(registry.get(name).tokenize(text + text))  # repeats: the second half hits the memo
        expected = _direct(env, window, show_ws, focusable)
        assert (str(tokens_markup(window, show_ws, focusable)), str(ids_markup(window))) == expected
        assert (str(tokens_markup(window, show_ws, focusable)), str(ids_markup(window))) == expected


def test_memoised_markup_with_nul_and_markup_in_text_stays_escaped():
    env = make_environment(ENV_SETTINGS.templates_dir)
    window = token_window(registry.get("gpt2").tokenize("a\x00b <script>x</script> a\x00b"))
    html = str(env.globals["tokens_markup"](window))
    assert "<script" not in html and "&lt;" in html
    assert htmllib.unescape(re.sub(r"<[^>]+>", "", html)) == "a\x00b <script>x</script> a\x00b"
    assert html.count("<span ") == len(window.spans)


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=60), name=st.sampled_from(["gpt2", "o200k_base", "mistral-7b", "custom-bpe"]))
def test_id_list_handed_out_by_data_hex_entries_gives_each_span_its_ids(text, name):
    """What static/app.js relies on: a span takes one id, or one per data-hex entry when it has data-hex, or
    none when it is a gap; in order, that gives every span exactly its tokens' ids."""
    text = text.encode("utf-8", "replace").decode("utf-8", "replace")
    env = make_environment(ENV_SETTINGS.templates_dir)
    window = token_window(registry.get(name).tokenize(text))
    html = str(env.globals["tokens_markup"](window))
    ids = [int(i) for i in str(env.globals["ids_markup"](window)).split()]
    tags = re.findall(r"<span (class=(?:\w+|\"[^\"]*\"))(?: data-hex=\"([^\"]*)\")?[^>]*>", html)
    assert len(tags) == len(window.spans)
    at = 0
    for (cls, hexes), span in zip(tags, window.spans):
        n = 0 if "gap" in cls else len(hexes.split("|")) if hexes else 1
        assert ids[at : at + n] == span.ids
        at += n
    assert at == len(ids) == len(window.result.ids)


def test_a_window_keeps_uncovered_characters_at_either_end_as_gaps_like_the_whole_view():
    """BERT covers no spaces: a window's first (last) span is the gap before (after) the first (last) token, as in
    the whole view, never those characters folded into the token (compare marks a cut at the token's start)."""
    result = registry.get("bert-base-uncased").tokenize("    Leading spaces, words  and trailing ones   ")
    full = [(s.start, s.text, s.ids) for s in token_window(result).spans]
    assert full[0] == (0, "    ", []) and full[-1][1:] == ("   ", [])
    first = [(s.start, s.text, s.ids) for s in token_window(result, 0, 2).spans]
    last = [(s.start, s.text, s.ids) for s in token_window(result, result.count - 2, 2).spans]
    assert first == full[: len(first)] and len(first) == 4  # the gap, a token, a gap, a token
    assert last == full[-len(last) :] and len(last) == 4
