"""Where the pairs are: the corpus's words in two layouts, each able to apply one merge and say what changed.

A training corpus is a list of distinct *words* (id sequences) with counts. Merging a pair ``(a, b)`` into a new
id ``X`` turns every occurrence ``.. L a b R ..`` into ``.. L X R ..``: ``(L, a)`` and ``(b, R)`` lose one,
``(L, X)`` and ``(X, R)`` are new; between two occurrences (``a b a b``) the old ``(b, a)`` goes and ``(X, X)``
comes. Both layouts report exactly that, summed per neighbour (a list of :data:`Change`), and keep
``where``: pair -> the words (or positions) that held it when it appeared, in corpus order. A pair never appears
again once it exists (a merge only makes pairs with the new id), so ``where`` only goes stale: stale entries are
skipped when met (and the lists of pairs that died are left to go stale: dropping them costs more than they
weigh).

- :class:`ShortWords`: each word is a string with one character per id, so finding and replacing a pair runs in
  C (``str.replace`` goes left to right without overlaps, as BPE does) and Python only visits the words that
  hold the pair. Rewriting a word costs its length, which is nothing for pre-tokens.
- :class:`LongWords`: one linked list over the ids of long words (pattern ``none``: the whole text is one word),
  with ``where`` holding positions. A merge touches only its occurrences and never rescans the word.

Neither layout knows which pairs may merge or which one wins; that is :mod:`.merge_state`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from operator import add

Pair = tuple[int, int]

#: Ids are stored as characters (``chr(id)``) in :class:`ShortWords`, so no id can pass the largest code point.
MAX_ID = 0x10FFFF

#: Words longer than this (in base ids) go to :class:`LongWords`.
LONG_WORD = 4096

#: One consequence of a merge: ``(old pair, new pair, n)``: ``n`` occurrences of the old pair became the new one.
Change = tuple[Pair, Pair, int]


def as_string(ids: Sequence[int] | str) -> str:
    """Ids as one character each: ``as_string([104, 105]) == "hi"`` (a str is taken as that already)."""
    if isinstance(ids, str):
        return ids
    if isinstance(ids, bytes):
        return ids.decode("latin-1")  # bytes are ids below 256: chr() of each, in C
    return "".join(map(chr, ids))


def _append(index: dict, key, value: int) -> None:
    entries = index.get(key)  # not try/except KeyError: a raised exception costs more than a look-up
    if entries is None:
        index[key] = [value]
    else:
        entries.append(value)


class ShortWords:
    """Distinct words as strings of ``chr(id)``, with their frequencies; ``where`` lists word indices."""

    def __init__(self, numbers: Sequence[int], words: Sequence[Sequence[int] | str], freqs: Sequence[int]):
        self.index = numbers  # the corpus-wide word number of each word here
        self.words: list[str] = [as_string(ids) for ids in words]
        self.freqs = list(freqs)
        self.where: dict[Pair, list[int]] = {}  # one entry per occurrence when the pair appeared, ascending
        self._first: dict[Pair, tuple[int, int, str]] = {}  # pair -> (word, position, that word's string then)

    def __len__(self) -> int:
        return len(self.words)

    def pair_counts(self) -> dict[Pair, int]:
        """Index every pair (``where``) and return the counts."""
        where: dict[str, list[int]] = {}  # keyed by the pair's two characters first: cheaper than tuples here
        for w, word in enumerate(self.words):
            for pair in map(add, word, word[1:]):
                entries = where.get(pair)
                if entries is None:
                    where[pair] = [w]
                else:
                    entries.append(w)
        self.where = {(ord(ab[0]), ord(ab[1])): ws for ab, ws in where.items()}
        freq = self.freqs.__getitem__
        return {pair: sum(map(freq, ws)) for pair, ws in self.where.items()}

    def ids(self, w: int) -> list[int]:
        return list(map(ord, self.words[w]))

    def first(self, pair: Pair) -> tuple[int, int] | None:
        """(corpus word number, position) of the first occurrence of ``pair``, or None when no word holds it.

        Cached per pair while that word is unchanged: no earlier word can gain the pair later.
        """
        cached = self._first.get(pair)
        words = self.words
        if cached is not None and words[cached[0]] is cached[2]:
            return self.index[cached[0]], cached[1]
        entries = self.where.get(pair)
        if not entries:
            return None
        ab = chr(pair[0]) + chr(pair[1])
        for k, w in enumerate(entries):
            word = words[w]
            i = word.find(ab)
            if i >= 0:
                if k:
                    del entries[:k]  # stale: those words lost the pair
                self._first[pair] = (w, i, word)
                return self.index[w], i
        entries.clear()
        return None

    def merge(self, a: int, b: int, new: int) -> tuple[int, list[Change]]:
        """Merge ``(a, b)`` into ``new`` in every word holding it.

        Returns the number of occurrences merged (times word frequency) and the changes (see :data:`Change`).
        """
        entries = self.where.pop((a, b), None)
        if not entries:
            return 0, []
        self._first.pop((a, b), None)
        ab, x = chr(a) + chr(b), chr(new)
        words = self.words
        lefts: dict[str, list[int]] = {}  # left neighbour -> words, one entry per occurrence
        rights: dict[str, list[int]] = {}
        doubles: list[int] = []  # words with X X, one entry per such pair
        hits: list[int] = []  # words, one entry per occurrence merged
        for w in dict.fromkeys(entries):  # once per word, in corpus order (``where`` lists stay ascending)
            old = words[w]
            word = old.replace(ab, x)
            n = len(old) - len(word)
            if n == 1:  # the common case (with _append inlined: this loop is the hot one)
                words[w] = word
                hits.append(w)
                i = word.find(x)
                if i:
                    c = word[i - 1]
                    ws = lefts.get(c)
                    if ws is None:
                        lefts[c] = [w]
                    else:
                        ws.append(w)
                c = word[i + 1 : i + 2]
                if c:
                    ws = rights.get(c)
                    if ws is None:
                        rights[c] = [w]
                    else:
                        ws.append(w)
            elif n:
                words[w] = word
                hits.extend([w] * n)
                i = word.find(x)
                while i >= 0:
                    if i:
                        c = word[i - 1]
                        if c == x:
                            doubles.append(w)
                        else:
                            _append(lefts, c, w)
                    c = word[i + 1 : i + 2]
                    if c and c != x:
                        _append(rights, c, w)
                    i = word.find(x, i + 1)
        freq = self.freqs.__getitem__
        where = self.where
        changes = []
        for c, ws in lefts.items():
            came = (ord(c), new)
            where[came] = ws
            changes.append(((came[0], a), came, sum(map(freq, ws))))
        for c, ws in rights.items():
            came = (new, ord(c))
            where[came] = ws
            changes.append(((b, came[1]), came, sum(map(freq, ws))))
        if doubles:
            where[new, new] = doubles
            changes.append(((b, a), (new, new), sum(map(freq, doubles))))
        return sum(map(freq, hits)), changes


class LongWords:
    """Long words as one linked list of ids; ``where`` lists positions. A word counted ``n`` times is laid out
    ``n`` times (its copies merge alike), so every position counts once.

    Each word is followed by a stop slot (id -1) that no pair matches, and the last slot is one too, so that
    ``tok[-1]`` (the left of the very first position) is a stop as well.
    """

    def __init__(self, numbers: Sequence[int], words: Sequence[Sequence[int] | str], freqs: Sequence[int]):
        self.tok: list[int] = []
        self.starts: list[int] = []  # the position where each copy begins
        self.numbers: list[int] = []  # the corpus-wide word number of each copy
        self.keys: list[int] = []  # the first copy of each word (its key for :meth:`ids`)
        for number, ids, freq in zip(numbers, words, freqs):
            ids = list(map(ord, ids)) if isinstance(ids, str) else list(ids)
            self.keys.append(len(self.starts))
            for _ in range(freq):
                self.starts.append(len(self.tok))
                self.numbers.append(number)
                self.tok.extend(ids)
                self.tok.append(-1)
        self.where: dict[Pair, list[int]] = {}

    def __len__(self) -> int:
        return len(self.starts)

    def pair_counts(self) -> dict[Pair, int]:
        tok = self.tok
        n = len(tok)
        self.nxt = list(range(1, n + 1))
        self.prv = list(range(-1, n - 1))
        where: dict[Pair, list[int]] = {}
        for p, pair in enumerate(zip(tok, tok[1:])):
            entries = where.get(pair)
            if entries is None:
                where[pair] = [p]
            else:
                entries.append(p)
        for pair in [p for p in where if p[0] < 0 or p[1] < 0]:
            del where[pair]
        self.where = where
        return {pair: len(ps) for pair, ps in where.items()}

    def ids(self, key: int) -> list[int]:
        """The current ids of word ``key`` here (its first copy)."""
        tok, nxt = self.tok, self.nxt
        p = self.starts[self.keys[key]]
        out = []
        while tok[p] >= 0:
            out.append(tok[p])
            p = nxt[p]
        return out

    def first(self, pair: Pair) -> tuple[int, int] | None:
        """(corpus word number, position) of the first occurrence of ``pair``, or None."""
        entries = self.where.get(pair)
        if not entries:
            return None
        a, b = pair
        tok, nxt = self.tok, self.nxt
        for k, p in enumerate(entries):
            if tok[p] == a and tok[nxt[p]] == b:
                if k:
                    del entries[:k]
                return self.numbers[bisect_right(self.starts, p) - 1], p
        entries.clear()
        return None

    def merge(self, a: int, b: int, new: int) -> tuple[int, list[Change]]:
        """Merge ``(a, b)`` into ``new`` at every position holding it, left to right; see :meth:`ShortWords.merge`."""
        positions = self.where.pop((a, b), None)
        if not positions:
            return 0, []
        tok, nxt, prv = self.tok, self.nxt, self.prv
        lefts: dict[int, list[int]] = {}  # left neighbour -> positions of the new pair (left, new)
        rights: dict[int, list[int]] = {}
        doubles: list[int] = []
        replaced = 0
        for p in positions:  # ascending, so overlapping runs (a a a) merge from the left
            if tok[p] != a:
                continue
            q = nxt[p]
            if tok[q] != b:
                continue
            replaced += 1
            tok[p] = new
            tok[q] = -1
            r = nxt[q]
            nxt[p] = r
            prv[r] = p
            left = prv[p]
            c = tok[left]
            if c >= 0:
                if c == new:  # right after the previous occurrence: its (new, a) is really (new, new)
                    rights[a].pop()
                    doubles.append(left)
                else:  # _append, inlined: this loop runs once per occurrence
                    ps = lefts.get(c)
                    if ps is None:
                        lefts[c] = [left]
                    else:
                        ps.append(left)
            c = tok[r]
            if c >= 0:
                ps = rights.get(c)
                if ps is None:
                    rights[c] = [p]
                else:
                    ps.append(p)
        where = self.where
        for c, ps in lefts.items():
            where[c, new] = ps
        for c, ps in rights.items():
            where[new, c] = ps
        changes = [((c, a), (c, new), len(ps)) for c, ps in lefts.items()]
        changes += [((b, c), (new, c), len(ps)) for c, ps in rights.items() if ps]
        if doubles:
            where[new, new] = doubles
            changes.append(((b, a), (new, new), len(doubles)))
        return replaced, changes
