"""The memoised token markup renders exactly what the macro renders, for any text."""

from __future__ import annotations

import html as htmllib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.engines import registry
from app.settings import Settings
from app.web.render import make_environment
from app.web.tokenview import token_window

ENV_SETTINGS = Settings()


def _direct(env, window, show_ws, focusable):
    """The markup straight from the macros, no memo: the reference."""
    module = env.get_template("_tokens.html").module
    spans = []
    for n, s in enumerate(window.spans):
        tabindex = 0 if focusable and n == 0 else None
        spans.append(str(module.token_span(s, show_ws, tabindex)))
    # The id list is what static/app.js rebuilds the id spans from: the token spans' data-ids, in order.
    ids = " ".join(re.findall(r'data-ids="([^"]*)"', "".join(spans)))
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
    assert html.count('data-seg="') == len(window.spans)
    assert [int(x.split('"')[0]) for x in html.split('data-seg="')[1:]] == [s.index for s in window.spans]
