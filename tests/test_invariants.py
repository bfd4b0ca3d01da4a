"""Invariants every registered tokenizer keeps, on arbitrary text (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engines import registry
from app.engines.errors import InvalidTextError

# Any Unicode scalar value (no lone surrogates: those are tested as errors below).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)
NAMES = registry.names()


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT)
def test_tokenize_invariants_hold_for_any_text(name, text):
    tok = registry.get(name)
    result = tok.tokenize(text)
    assert result.ids == tok.encode(text)
    assert [t.id for t in result.tokens] == result.ids
    assert "".join(seg.text for seg in result.segments()) == text
    assert all(0 <= t.start <= t.end <= len(text) for t in result.tokens)
    assert (result.count == 0) == (text == "") or tok.family == "sentencepiece"
    if tok.family != "sentencepiece":  # SentencePiece pieces are normalised text, not input bytes
        assert b"".join(t.bytes for t in result.tokens) == text.encode("utf-8")
        assert tok.decode(result.ids) == text


@pytest.mark.parametrize("name", NAMES)
def test_tokenize_lone_surrogate_is_refused(name):
    with pytest.raises(InvalidTextError, match="surrogate"):
        registry.get(name).tokenize("ok \udc80 not ok")


@pytest.mark.parametrize("name", NAMES)
def test_partial_character_tokens_group_into_whole_characters(name):
    text = "閒 🇯🇵 👨‍👩‍👧"
    result = registry.get(name).tokenize(text)
    segments = result.segments()
    assert "".join(s.text for s in segments) == text
    for seg in segments:
        assert "\ufffd" not in seg.text
        assert seg.text == text[seg.start : seg.end]


@pytest.mark.parametrize("name", NAMES)
def test_tokenize_window_equals_slice_of_full_result(name):
    tok = registry.get(name)
    text = "日本語のテキスト 🇯🇵 and English words, " * 40
    full = tok.tokenize(text)
    for offset, limit in [(0, 7), (5, 50), (len(full.ids) - 3, 10)]:
        window = tok.tokenize_window(text, offset=offset, limit=limit)
        assert window.ids == full.ids
        assert window.tokens == full.tokens[offset : offset + limit]
        assert window.complete is (offset == 0 and limit >= len(full.ids))
        segs = window.segments()
        assert "".join(s.text for s in segs) == text[segs[0].start : segs[-1].end]
