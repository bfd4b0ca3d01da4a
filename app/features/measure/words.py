"""Words of a document (the ``regex`` module's ``\\w+``) and how many each tokenizer cuts into two or more tokens.

A word's token count is that of the word encoded alone (no space before it), the same for every occurrence, so it
is asked of the tokenizer once and kept (:class:`WordCounter`'s cache, bounded: when full it starts again, which
changes only the speed). Words are found a stretch of text at a time, cut at whitespace (no word spans one), so a
long document never becomes one list of millions of words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import regex

from .encoders import Encoder

#: A word, as the issue defines it: the ``regex`` module's ``\w+`` (letters, marks, digits, connector punctuation).
WORD = regex.compile(r"\w+")
#: Characters of text scanned for words at a time.
STRETCH = 1 << 20
#: Distinct words whose token counts are kept (per process, every tokenizer's count in one entry).
CACHE_WORDS = 200_000
_SPACE = regex.compile(r"\s")


def stretches(text: str, size: int = STRETCH) -> list[str] | tuple[str]:
    """``text`` cut before the first whitespace character at or after every ``size`` characters (no ``\\w+`` match spans a cut).

    >>> stretches("aa bb cc", 3)
    ['aa bb', ' cc']
    """
    if len(text) <= size:
        return (text,)
    out, start = [], 0
    while len(text) - start > size:
        found = _SPACE.search(text, start + size)
        if found is None:
            break
        out.append(text[start : found.start()])
        start = found.start()
    out.append(text[start:])
    return out


class WordCounter:
    """Counts words and, for each encoder, the words it cuts into 2+ tokens when encoded alone."""

    def __init__(self, encoders: Sequence[Encoder], cache_words: int = CACHE_WORDS):
        self.encoders = list(encoders)
        self.cache: dict[str, tuple[int, ...]] = {}
        self.cache_words = cache_words

    def count(self, text: str) -> tuple[int, list[int]]:
        """``(words, [continued words per encoder])`` of ``text``."""
        words = 0
        continued = [0] * len(self.encoders)
        for stretch in stretches(text):
            found = WORD.findall(stretch)
            if not found:
                continue
            words += len(found)
            occurrences = Counter(found)
            cache = self.cache
            missing = [w for w in occurrences if w not in cache]
            if missing:
                self._learn(missing)
            for word, n in occurrences.items():
                counts = cache.get(word)
                if counts is None:  # not kept (the cache was full); asked again below
                    counts = self._counts([word])[0]
                for k, c in enumerate(counts):
                    if c >= 2:
                        continued[k] += n
        return words, continued

    def _counts(self, words: list[str]) -> list[tuple[int, ...]]:
        per_encoder = [e.word_counts(words) for e in self.encoders]
        return list(zip(*per_encoder))

    def _learn(self, words: list[str]) -> None:
        if len(self.cache) + len(words) > self.cache_words:
            self.cache.clear()
        if len(words) > self.cache_words:
            return
        self.cache.update(zip(words, self._counts(words)))
