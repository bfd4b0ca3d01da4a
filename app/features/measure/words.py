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

from app.engines.training.word_table import word_table

from .encoders import Encoder

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
    """Counts words and, for each encoder, the words it cuts into 2+ tokens when encoded alone.

    The cache maps a word to a bit mask: bit ``k`` is set when encoder ``k`` cuts it, so a stretch's words are
    looked up and tallied by a compiled :func:`app.engines.training.word_table.word_table` rather than a Python step per word.
    """

    def __init__(self, encoders: Sequence[Encoder], cache_words: int = CACHE_WORDS):
        self.encoders = list(encoders)
        self.cache = word_table()
        self.cache_words = cache_words

    def count(self, text: str) -> tuple[int, list[int]]:
        """``(words, [continued words per encoder])`` of ``text``."""
        words = 0
        by_mask: Counter = Counter()
        for stretch in stretches(text):
            n, tallied, missing = self.cache.count(stretch)
            words += n
            by_mask.update(tallied)
            if missing:
                occurrences = Counter(missing)
                learned = self._learn(list(occurrences))
                for word, k in occurrences.items():
                    by_mask[learned[word]] += k
        continued = [0] * len(self.encoders)
        for mask, n in by_mask.items():
            for k in range(len(continued)):
                if mask >> k & 1:
                    continued[k] += n
        return words, continued

    def masks(self, words: Sequence[str]) -> list[int]:
        """Each word's mask, asked of the encoders."""
        mask = [0] * len(words)
        for k, enc in enumerate(self.encoders):
            for j, n in enumerate(enc.word_counts(words)):
                if n >= 2:
                    mask[j] |= 1 << k
        return mask

    def _learn(self, words: list[str]) -> dict[str, int]:
        """The masks of ``words`` (the cache lacks them), asked of the encoders and kept while the cache has room."""
        masks = self.masks(words)
        if len(self.cache) + len(words) > self.cache_words:
            self.cache.clear()
        if len(words) <= self.cache_words:
            self.cache.add(words, masks)
        return dict(zip(words, masks))
