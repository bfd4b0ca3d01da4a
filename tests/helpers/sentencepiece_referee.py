"""Our SentencePiece engines held to the ``sentencepiece`` library (the unigram and WordPiece tests use it too):
:func:`check_same` compares one text, :func:`varied_text` makes a long, deterministic, awkward one."""

from __future__ import annotations

import random

import sentencepiece as spm

from app.engines.sentencepiece import SentencePieceTokenizer

from .samples import ALL


def varied_text(n_lines: int = 3000, seed: int = 7) -> str:
    """Many lines of the shared samples, shuffled and glued with varied whitespace (deterministic)."""
    rng = random.Random(seed)
    lines = [line for text in ALL.values() for line in text.splitlines()] + [
        "    indented code(x)  # comment", "\t\ttabs\tinside", "   ", "", "trailing   ", "  leading",
        "日本語とEnglishの混在テキスト", "한국어와 English 혼합", "中文和English混合", "😀😀 😀\u200d👍",
        "▁already▁escaped▁", "<s> </s> <unk> <0x41>", "\x00\x01\x7f", "ꙮ\U0010fffd\ufffd",
    ]
    glue = ["\n", " ", "  ", "\t", "\r\n", "", "\n\n   "]
    return "".join(rng.choice(lines) + rng.choice(glue) for _ in range(n_lines))


def check_same(ours: SentencePieceTokenizer, theirs: spm.SentencePieceProcessor, text: str, windows=True) -> None:
    """``ours`` encodes, decodes and tokenizes ``text`` as ``theirs`` (the ``sentencepiece`` library) does: the same
    ids, the same decoded text, segments that join back to the text, and (with ``windows``) token windows placed
    alone equal to the same tokens placed all at once."""
    ids = theirs.encode(text)
    assert ours.encode(text) == ids, text
    assert ours.decode(ids) == theirs.decode(ids)
    result = ours.tokenize(text)
    assert result.ids == ids
    assert "".join(s.text for s in result.segments()) == text
    for offset, limit in ((0, 3), (2, 5), (len(ids) - 1, 4)) if windows else ():
        placed = ours.tokenize(text)  # a fresh result: the window is placed without placing the others
        assert placed.window(offset, limit) == result.tokens[max(0, offset) : max(0, offset) + limit]
