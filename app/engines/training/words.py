"""Where the pairs are: the corpus's words in two layouts, each able to apply one merge and say what changed.

A training corpus is a list of distinct *words* (id sequences) with counts. Merging a pair ``(a, b)`` into a new
id ``X`` turns every occurrence ``.. L a b R ..`` into ``.. L X R ..``: ``(L, a)`` and ``(b, R)`` lose one,
``(L, X)`` and ``(X, R)`` are new; between two occurrences (``a b a b``) the old ``(b, a)`` goes and ``(X, X)``
comes. Both layouts report exactly that, summed per neighbour (a list of :data:`Change`), and keep
``where``: pair -> the words (or positions) that held it when it appeared, in corpus order. A pair never appears
again once it exists (a merge only makes pairs with the new id), so ``where`` only goes stale: stale entries are
skipped when met (and the lists of pairs that died are left to go stale: dropping them costs more than they
weigh).

A pair is keyed by its two ids as a two-character string (``chr(a) + chr(b)``, see :func:`pair_key`): that is the
very text a :class:`ShortWords` word holds where the pair occurs, so finding it needs no conversion, and a
string keeps its hash, which a tuple recomputes at every look-up.

- :class:`ShortWords`: each word is a string with one character per id, so finding and replacing a pair runs in
  C (``str.partition`` and ``str.replace`` go left to right without overlaps, as BPE does) and Python only visits
  the words that hold the pair. Rewriting a word costs its length, which is nothing for pre-tokens. Its two loops
  over words, the first index (:func:`index_pairs`) and a merge (:func:`merge_words`), run in
  ``app/engines/training/_train.c`` when that was built (``pip install`` builds it), else in Python;
  ``TOKENPLAY_PURE_PYTHON=1`` forces Python. The tests hold the two equal.
- :class:`LongWords`: one linked list over the ids of long words (pattern ``none``: the whole text is one word),
  with ``where`` holding positions. A merge touches only its occurrences and never rescans the word.

Neither layout knows which pairs may merge or which one wins; that is :mod:`.merge_state`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Sequence
from operator import add

from ..compiled import twin

Pair = tuple[int, int]

#: Ids are stored as characters (``chr(id)``) in :class:`ShortWords` and pair keys, so no id can pass the largest
#: code point.
MAX_ID = 0x10FFFF

#: Words longer than this (in base ids) go to :class:`LongWords`.
LONG_WORD = 4096

#: One consequence of a merge: ``(old pair, new pair, n)`` as keys: ``n`` occurrences of the old pair became the
#: new one.
Change = tuple[str, str, int]


def pair_key(pair: Pair) -> str:
    """The key of a pair of ids: ``pair_key((104, 105)) == "hi"``."""
    return chr(pair[0]) + chr(pair[1])


def key_pair(key: str) -> Pair:
    """The pair of ids a key stands for: ``key_pair("hi") == (104, 105)``."""
    return ord(key[0]), ord(key[1])


def as_string(ids: Sequence[int] | str) -> str:
    """Ids as one character each: ``as_string([104, 105]) == "hi"`` (a str is taken as that already)."""
    if isinstance(ids, str):
        return ids
    if isinstance(ids, bytes):
        return ids.decode("latin-1")  # bytes are ids below 256: chr() of each, in C
    return "".join(map(chr, ids))


def first_live(entries: list[int] | None, position: Callable[[int], int]) -> tuple[int, int] | None:
    """The first of a pair's ``entries`` that still holds the pair, with ``position(entry)`` (-1 for one that lost
    it), or None: the stale entries before it are dropped, and all of them when none holds the pair any more."""
    for k, entry in enumerate(entries or ()):
        at = position(entry)
        if at >= 0:
            if k:
                del entries[:k]
            return entry, at
    if entries:
        entries.clear()
    return None


def index_pairs_python(words: list[str], freqs: list[int]) -> tuple[dict[str, list[int]], dict[str, int]]:
    """Every adjacent pair of ``words`` (strings of ids): ``where`` (pair -> the words holding it, one entry per
    occurrence) and the counts (occurrences times the word's frequency), both in the order pairs are first met.

    >>> index_pairs_python(["abab", "ba"], [2, 3])
    ({'ab': [0, 0], 'ba': [0, 1]}, {'ab': 4, 'ba': 5})
    """
    where: dict[str, list[int]] = {}
    for w, word in enumerate(words):
        for pair in map(add, word, word[1:]):  # the keys themselves: two characters of the word
            entries = where.get(pair)
            if entries is None:
                where[pair] = [w]
            else:
                entries.append(w)
    freq = freqs.__getitem__
    return where, {pair: sum(map(freq, ws)) for pair, ws in where.items()}


def merge_words_python(
    words: list[str], freqs: list[int], where: dict[str, list[int]], entries: list[int], pair: str, new: str
) -> list[Change]:
    """Merge ``pair`` into the character ``new`` in each word of ``entries`` that still holds it (``words[w]`` is
    rewritten), put the lists of the pairs this made into ``where`` and return the changes: left neighbours first,
    then right ones, then ``(b a) -> (new new)``.

    >>> words, where = ["xab", "abab"], {}
    >>> merge_words_python(words, [1, 2], where, [0, 1, 1], "ab", "X")
    [('xa', 'xX', 1), ('ba', 'XX', 2)]
    >>> words, where
    (['xX', 'XX'], {'xX': [0], 'XX': [1]})
    """
    lefts: defaultdict[str, list[int]] = defaultdict(list)  # left neighbour -> words, one entry per occurrence
    rights: defaultdict[str, list[int]] = defaultdict(list)
    doubles: list[int] = []  # words with X X, one entry per such pair
    for w in entries:  # in corpus order, so ``where`` lists stay ascending
        head, found, tail = words[w].partition(pair)
        if not found:
            continue  # stale: the word lost the pair to an earlier merge (or, met again, to this one)
        if pair not in tail:  # the common case, one occurrence: this loop is the hot one
            words[w] = head + new + tail
            if head:
                lefts[head[-1]].append(w)
            if tail:
                rights[tail[0]].append(w)
            continue
        word = words[w] = words[w].replace(pair, new)
        i = word.find(new)
        while i >= 0:
            if i:
                c = word[i - 1]
                if c == new:
                    doubles.append(w)
                else:
                    lefts[c].append(w)
            c = word[i + 1 : i + 2]
            if c and c != new:
                rights[c].append(w)
            i = word.find(new, i + 1)
    freq = freqs.__getitem__
    a, b = pair
    changes = []
    for c, ws in lefts.items():
        came = c + new
        where[came] = ws
        changes.append((c + a, came, sum(map(freq, ws))))
    for c, ws in rights.items():
        came = new + c
        where[came] = ws
        changes.append((b + c, came, sum(map(freq, ws))))
    if doubles:
        came = new + new
        where[came] = doubles
        changes.append((b + a, came, sum(map(freq, doubles))))
    return changes


_index_pairs, _merge_words = twin("_train", "index_pairs"), twin("_train", "merge_words")
#: Whether :class:`ShortWords` runs its word loops compiled (``app/engines/training/_train.c``).
COMPILED = _merge_words is not None
index_pairs = _index_pairs or index_pairs_python
merge_words = _merge_words or merge_words_python


class ShortWords:
    """Distinct words as strings of ``chr(id)`` (see :func:`as_string`), with their frequencies; ``where`` lists
    word indices."""

    def __init__(self, numbers: Sequence[int], words: Sequence[str], freqs: Sequence[int]):
        self.index = numbers  # the corpus-wide word number of each word here
        self.words: list[str] = list(words)
        self.freqs = list(freqs)
        self.where: dict[str, list[int]] = {}  # one entry per occurrence when the pair appeared, ascending
        self._first: dict[str, tuple[int, int, str]] = {}  # pair -> (word, position, that word's string then)

    def __len__(self) -> int:
        return len(self.words)

    def pair_counts(self) -> dict[str, int]:
        """Index every pair (``where``) and return the counts."""
        self.where, counts = index_pairs(self.words, self.freqs)
        return counts

    def ids(self, w: int) -> list[int]:
        return list(map(ord, self.words[w]))

    def first(self, pair: str) -> tuple[int, int] | None:
        """(corpus word number, position) of the first occurrence of ``pair``, or None when no word holds it.

        Cached per pair while that word is unchanged: no earlier word can gain the pair later.
        """
        cached = self._first.get(pair)
        words = self.words
        if cached is not None and words[cached[0]] is cached[2]:
            return self.index[cached[0]], cached[1]
        found = first_live(self.where.get(pair), lambda w: words[w].find(pair))
        if found is None:
            return None
        w, i = found
        self._first[pair] = (w, i, words[w])
        return self.index[w], i

    def merge(self, pair: str, new: str) -> list[Change]:
        """Merge ``pair`` into the id ``new`` (both as characters) in every word holding it; return the changes."""
        entries = self.where.pop(pair, None)
        if not entries:
            return []
        self._first.pop(pair, None)
        return merge_words(self.words, self.freqs, self.where, entries, pair, new)


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
        self.where: dict[str, list[int]] = {}

    def __len__(self) -> int:
        return len(self.starts)

    def pair_counts(self) -> dict[str, int]:
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
        self.where = {pair_key(pair): ps for pair, ps in where.items() if pair[0] >= 0 and pair[1] >= 0}
        return {pair: len(ps) for pair, ps in self.where.items()}

    def ids(self, key: int) -> list[int]:
        """The current ids of word ``key`` here (its first copy)."""
        tok, nxt = self.tok, self.nxt
        p = self.starts[self.keys[key]]
        out = []
        while tok[p] >= 0:
            out.append(tok[p])
            p = nxt[p]
        return out

    def first(self, pair: str) -> tuple[int, int] | None:
        """(corpus word number, position) of the first occurrence of ``pair``, or None."""
        a, b = key_pair(pair)
        tok, nxt = self.tok, self.nxt
        found = first_live(self.where.get(pair), lambda p: p if tok[p] == a and tok[nxt[p]] == b else -1)
        if found is None:
            return None
        p = found[0]
        return self.numbers[bisect_right(self.starts, p) - 1], p

    def merge(self, pair: str, new: str) -> list[Change]:
        """Merge ``pair`` into ``new`` at every position holding it, left to right; see :meth:`ShortWords.merge`."""
        positions = self.where.pop(pair, None)
        if not positions:
            return []
        (a, b), x = key_pair(pair), ord(new)
        tok, nxt, prv = self.tok, self.nxt, self.prv
        lefts: dict[int, list[int]] = {}  # left neighbour -> positions of the new pair (left, new)
        rights: dict[int, list[int]] = {}
        doubles: list[int] = []
        for p in positions:  # ascending, so overlapping runs (a a a) merge from the left
            if tok[p] != a:
                continue
            q = nxt[p]
            if tok[q] != b:
                continue
            tok[p] = x
            tok[q] = -1
            r = nxt[q]
            nxt[p] = r
            prv[r] = p
            left = prv[p]
            c = tok[left]
            if c >= 0:
                if c == x:  # right after the previous occurrence: its (new, a) is really (new, new)
                    rights[a].pop()
                    doubles.append(left)
                else:
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
        a_, b_ = pair
        changes = []
        for c, ps in lefts.items():
            came = chr(c) + new
            where[came] = ps
            changes.append((chr(c) + a_, came, len(ps)))
        for c, ps in rights.items():
            if ps:
                came = new + chr(c)
                where[came] = ps
                changes.append((b_ + chr(c), came, len(ps)))
        if doubles:
            where[new + new] = doubles
            changes.append((b_ + a_, new + new, len(doubles)))
        return changes
