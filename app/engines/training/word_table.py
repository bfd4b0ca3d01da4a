"""Words of a corpus as the ``regex`` module's ``\\w+`` finds them, tallied by a table of known words.

A :class:`WordTable` knows words with a small int each (the corpus measure's mask of the tokenizers that cut a
word, ``app.features.measure.words``); ``count(text)`` answers how many words the text has, how many occurrences
each value has, and the words it does not know yet (for the caller to ask about and ``add``). Its compiled twin
(``_word_table.c``) walks the text's code points with a bitmap of ``\\w`` read from the regex module itself
(:func:`word_bitmap`: one bit per code point) and keeps known words as code points, so a known word costs no Python
object; :class:`PyWordTable` is the same with the regex module and a dict, and the tests hold the two equal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache

import regex

from ..compiled import twin

WORD = regex.compile(r"\w+")
CODE_POINTS = 0x110000


@cache
def word_bitmap() -> bytes:
    """One bit per code point (least significant first), set where the regex module's ``\\w`` matches it (the code
    points a block of 64K at a time in one string, its ``\\w+`` runs set: whole bytes at once)."""
    bits = bytearray(CODE_POINTS // 8)
    block = 1 << 16
    for first in range(0, CODE_POINTS, block):
        chars = "".join(map(chr, range(first, first + block)))
        for m in WORD.finditer(chars):
            start, end = first + m.start(), first + m.end()
            while start < end and start & 7:
                bits[start >> 3] |= 1 << (start & 7)
                start += 1
            while end > start and end & 7:
                end -= 1
                bits[end >> 3] |= 1 << (end & 7)
            bits[start >> 3 : end >> 3] = b"\xff" * ((end - start) >> 3)
    return bytes(bits)


class PyWordTable:
    """Known words and their values, with the regex module.

    >>> t = PyWordTable(); t.add(["the", "cat"], [0, 1])
    >>> t.count("the cat, the mat")
    (4, {0: 2, 1: 1}, ['mat'])
    """

    def __init__(self, bitmap: bytes | None = None):
        self.values: dict[str, int] = {}

    def count(self, text: str) -> tuple[int, dict[int, int], list[str]]:
        found = WORD.findall(text)
        looked = list(map(self.values.get, found))
        tallied = Counter(looked)
        missing = tallied.pop(None, 0)
        return len(found), dict(tallied), [w for w, v in zip(found, looked) if v is None] if missing else []

    def add(self, words: Sequence[str], values: Sequence[int]) -> None:
        for word, value in zip(words, values):
            self.values.setdefault(word, value)

    def clear(self) -> None:
        self.values.clear()

    def __len__(self) -> int:
        return len(self.values)


_CompiledTable = twin("_word_table", "WordTable")


def word_table():
    """An empty table: the compiled one when it is built, else :class:`PyWordTable` (the same answers)."""
    if _CompiledTable is None:
        return PyWordTable()
    return _CompiledTable(word_bitmap())
