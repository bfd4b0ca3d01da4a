"""Invariants every registered tokenizer keeps, on arbitrary text (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engines import registry
from app.engines.errors import InvalidTextError
from app.engines.result import group_segments

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
    byte_level = result.byte_table is not None  # SentencePiece pieces are normalised text, not input bytes
    assert (result.count == 0) == (text == "") or not byte_level
    if byte_level:
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
def test_a_window_of_tokens_equals_a_slice_of_all_of_them(name):
    tok = registry.get(name)
    text = "日本語のテキスト 🇯🇵 and English words, " * 40
    full = tok.tokenize(text)
    for offset, limit in [(0, 7), (5, 50), (len(full.ids) - 3, 10)]:
        fresh = tok.tokenize(text)  # placed window by window, never all at once
        assert fresh.ids == full.ids
        window = fresh.window(offset, limit)
        assert window == full.tokens[offset : offset + limit]
        segs = group_segments(text, window, whole=False)
        assert "".join(s.text for s in segs) == text[segs[0].start : segs[-1].end]


FAMILY = "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466"


@pytest.mark.parametrize("name", ["llama-2", "mistral-7b", "gemma-3", "claude-legacy"])
def test_a_first_window_is_placed_from_a_prefix_as_from_the_whole(name, monkeypatch):
    """Library models whose tokens' bytes do not join up to the text place a view's first window from a prefix of
    the text (its ids checked against the text's): the tokens are those of placing every token."""
    tok = registry.get(name)
    words = "Tokenization,without;spaces:日本語のテキスト" + FAMILY + "  \n\n\tend."
    for text in [words * 300, "".join(words.split()) * 300, FAMILY * 2000, " " + words * 300]:
        full = tok.tokenize(text).tokens
        for offset, limit in [(0, 3000), (0, 7), (40, 50)]:
            seen = []
            if hasattr(tok, "_encoding"):
                real = tok._encoding
                monkeypatch.setattr(tok, "_encoding", lambda t, special: seen.append(len(t)) or real(t, special))
            fresh = tok.tokenize(text)
            assert fresh.window(offset, limit) == full[offset : offset + limit]
            monkeypatch.undo()
            if seen and limit < 100:  # the offsets path: a small first window did not encode the whole text again
                assert max(seen) < len(text)
