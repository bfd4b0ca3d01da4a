"""Our view of characters equals Hugging Face ``tokenizers``' view, on every code point
(app/engines/pipeline/unicode.py).

The referee is ``tokenizers`` itself: its Split pre-tokenizer (Oniguruma) for the character classes that split
regexes use, and its normalizers for NFC, NFD, NFKC and NFKD.
"""

from __future__ import annotations

import unicodedata

import pytest
import regex
from tokenizers import Regex, normalizers, pre_tokenizers

from app.engines.pipeline.unicode import normalize, regex_view

CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
ALL = "".join(map(chr, CODE_POINTS))


# every class the shipped and the o200k-style tokenizer.json patterns use ([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*...)
CLASSES = [r"\p{L}", r"\p{N}", r"\p{P}", r"\p{S}", r"\p{M}", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\s"]


@pytest.mark.parametrize("pattern", CLASSES)
def test_split_classes_match_oniguruma_on_every_code_point(pattern):
    theirs = [o for _, o in pre_tokenizers.Split(Regex(pattern), behavior="isolated").pre_tokenize_str(ALL)]
    compiled = regex.compile(pattern)
    ours, pos = [], 0
    for m in compiled.finditer(regex_view(ALL)):
        if m.start() > pos:
            ours.append((pos, m.start()))
        ours.append(m.span())
        pos = m.end()
    if pos < len(ALL):
        ours.append((pos, len(ALL)))
    assert ours == theirs


def test_regex_view_keeps_length_and_plain_text():
    assert regex_view("plain ascii, 日本語, 🙂") == "plain ascii, 日本語, 🙂"
    assert len(regex_view(ALL)) == len(ALL)


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_normalize_matches_tokenizers_on_every_code_point(form):
    hf = getattr(normalizers, form)()
    for i in range(0, len(CODE_POINTS), 8192):
        block = "x".join(map(chr, CODE_POINTS[i : i + 8192]))
        assert normalize(form, block) == hf.normalize_str(block), hex(CODE_POINTS[i])


def test_normalize_reorders_and_composes_marks_like_tokenizers():
    hf = {form: getattr(normalizers, form)() for form in ("NFC", "NFD")}
    marks = [chr(c) for c in CODE_POINTS if unicodedata.combining(chr(c))]
    for mark in marks:
        for text in ("a\u0345" + mark, "a" + mark + "\u0334", "e" + mark + "\u0301", "e\u0301" + mark):
            for form, n in hf.items():
                assert normalize(form, text) == n.normalize_str(text), (form, hex(ord(mark)))
    for c in CODE_POINTS:
        parts = unicodedata.decomposition(chr(c)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            text = "".join(chr(int(p, 16)) for p in parts)
            assert normalize("NFC", text) == hf["NFC"].normalize_str(text), hex(c)
