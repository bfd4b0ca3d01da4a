"""Words as the regex module's ``\\w+`` finds them (app/engines/training/word_table.py): the compiled table against the regex
module itself, on every kind of text."""

from __future__ import annotations

from collections import Counter

import pytest
import regex
from hypothesis import given, strategies as st
from helpers import realtext

from app.engines.training.word_table import CODE_POINTS, PyWordTable, word_bitmap, word_table

WORD = regex.compile(r"\w+")


def test_the_bitmap_is_the_regex_modules_word_class():
    bits = word_bitmap()
    for c in list(range(0, 0x3000)) + list(range(0xFF00, 0x10000)) + [0x1F600, 0x2070E, 0xE0100, 0x10FFFF]:
        assert bool(bits[c >> 3] >> (c & 7) & 1) == bool(regex.fullmatch(r"\w", chr(c))), hex(c)
    assert len(bits) == CODE_POINTS // 8


def compiled():
    table = word_table()
    if isinstance(table, PyWordTable):
        pytest.skip("the compiled twin is not built here (TOKENPLAY_PURE_PYTHON=1 or no C compiler)")
    return table


def check_same(text: str, known: list[str], values: list[int]) -> None:
    ours, reference = compiled(), PyWordTable()
    ours.add(known, values)
    reference.add(known, values)
    n, tallied, missing = ours.count(text)
    assert (n, tallied, missing) == reference.count(text)
    found = WORD.findall(text)
    assert n == len(found) and sum(tallied.values()) + len(missing) == n


@given(st.text(alphabet=st.characters(codec=None), max_size=200), st.data())
def test_compiled_equals_regex_on_any_text(text, data):
    found = WORD.findall(text)
    known = data.draw(st.lists(st.sampled_from(found), unique=True)) if found else []
    values = data.draw(st.lists(st.integers(0, 5000), min_size=len(known), max_size=len(known)))
    check_same(text, known, values)


@pytest.mark.parametrize("name", realtext.NAMES)
def test_compiled_equals_regex_on_real_text(name):
    realtext.require()
    text = realtext.read(name)
    words = sorted(set(WORD.findall(text)))
    check_same(text, words[::3], [k % 3000 for k in range(len(words[::3]))])


def test_first_value_stays_and_clear_forgets():
    table = compiled()
    table.add(["naïve", "日本語", "naïve"], [3, 2000, 9])
    assert len(table) == 2
    assert table.count("naïve 日本語 naïve x") == (4, {3: 2, 2000: 1}, ["x"])
    table.clear()
    assert len(table) == 0 and table.count("naïve") == (1, {}, ["naïve"])


def test_many_words_grow_the_table():
    table = compiled()
    words = [f"w{k}" for k in range(50_000)]
    table.add(words, [k % 7 for k in range(len(words))])
    n, tallied, missing = table.count(" ".join(words[::-1]) + " new")
    assert (n, missing) == (50_001, ["new"]) and tallied == dict(Counter(k % 7 for k in range(len(words))))


def test_bad_arguments_are_type_errors():
    table = compiled()
    with pytest.raises(ValueError):
        table.add(["a"], [])
    with pytest.raises(TypeError):
        table.add(["a"], [-1])
    with pytest.raises(TypeError):
        table.count(b"bytes")
