"""The merge loop of every BPE in the app: join the adjacent pair of lowest rank, leftmost first, until none is left.

All the BPE variants Tokenplay runs are this one loop over different parts and ranks:

- byte-level BPE with tiktoken's rule: parts are ``bytes``, a pair's rank is the rank of the joined bytes;
- SentencePiece BPE: parts are ``str`` pieces, a pair's rank is minus the score of the joined piece;
- the BPE lab replaying its merges: parts are token ids, a pair's rank is the step of the merge that joins it,
  and the join is the new id (``key`` builds the pair, ``join`` the merged part).

:func:`merge` scans a list of pair ranks (fastest for short inputs) and switches to a heap over a linked list
(:func:`merge_heap`, O(n log n)) for long ones, so a long word never costs O(n^2). Both choose the same pair at
every step, so they give the same parts (the tests check it on random inputs).

:func:`merge_text` is the case every encoder runs on every new pre-token: the symbols of a text (its bytes or
its characters) joined by concatenation (its table and ids a dict, or a ``FrozenMap`` read in place from a table file,
:mod:`app.engines.registry.table_files`). It runs in ``app/engines/_merge.c``, the compiled twin of this loop,
when that was built (``pip install`` builds it; without a C compiler the package still works, slower), and in
:func:`merge` otherwise; ``TOKENPLAY_PURE_PYTHON=1`` forces the Python loop. The tests hold the two equal. The
traced merges of the explain view and the lab always run here, in Python: they record every step.

:func:`merge_table` compiles a ``str`` table once per model (the SentencePiece engine's): every part gets an int
id and the compiled merge looks pairs up in a C hash table on the two ids, building no object per lookup (a
million ``a`` is one chunk of a million characters, and string keys hash in O(length)). :class:`MergeTable` is
its Python twin.

This module knows nothing of vocabularies or pre-tokenizers: callers look those up before and after.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from heapq import heapify, heappop, heappush
from itertools import compress, count, repeat
from operator import add, not_
from typing import Any, NamedTuple, Protocol, TypeVar

from .compiled import twin

T = TypeVar("T")
#: The rank of a pair that does not merge: above every real rank (an int, so ``min`` compares ints only).
NO_RANK = 1 << 62
#: Inputs longer than this many parts use the heap.
HEAP_FROM = 16

RankGet = Callable[[Any, Any], Any]  # ``dict.get``: (pair key, default) -> rank or default


class Ranking(NamedTuple):
    """How one BPE ranks the pairs of its parts: ``merge(parts, r.get, key=r.key, join=r.join)`` merges as it does."""

    get: RankGet
    key: Callable[[Any, Any], Any] = add
    join: Callable[[Any, Any], Any] = add


def merge(
    parts: list[T],
    get: RankGet,
    *,
    key: Callable[[T, T], Any] = add,
    join: Callable[[T, T], T] = add,
    none: Any = NO_RANK,
    heap_from: int = HEAP_FROM,
    record: dict | None = None,
    steps: list | None = None,
    candidates: list | None = None,
) -> list[T]:
    """Merge ``parts`` in place by rank and return them.

    ``get(key(a, b), none)`` is the rank of the pair ``(a, b)`` (lower merges first; ``none`` never merges);
    ``join(a, b)`` is the merged part. ``record``, when given, maps the key of every pair that became a merge
    candidate to ``(a, b)``, the later candidate winning (SentencePiece needs it to split unused pieces back).
    ``steps``, when given, receives ``(rank, index, left, right)`` for every merge in order (the list scan is then
    used whatever the length: a trace is for short inputs). ``candidates``, with ``steps``, receives for every merge
    the pairs that could merge at that moment, each as ``(rank, index, left, right)`` (the explain view shows them).

    >>> merge([b"a", b"a", b"a"], {b"aa": 0}.get)
    [b'aa', b'a']
    >>> merge([1, 2, 1, 2], {(1, 2): 0}.get, key=lambda a, b: (a, b), join=lambda a, b: 9)
    [9, 9]
    """
    if len(parts) > heap_from and steps is None:
        return merge_heap(parts, get, key=key, join=join, record=record)
    if record is not None:
        for a, b in zip(parts, parts[1:]):
            record[key(a, b)] = (a, b)
    ranks = list(map(get, map(key, parts, parts[1:]), repeat(none)))
    while ranks:
        low = min(ranks)
        if low == none:
            break
        i = ranks.index(low)
        if steps is not None:
            if candidates is not None:
                candidates.append([(r, j, parts[j], parts[j + 1]) for j, r in enumerate(ranks) if r != none])
            steps.append((low, i, parts[i], parts[i + 1]))
        parts[i] = join(parts[i], parts.pop(i + 1))
        del ranks[i]
        if i:
            k = key(parts[i - 1], parts[i])
            ranks[i - 1] = get(k, none)
            if record is not None:
                record[k] = (parts[i - 1], parts[i])
        if i < len(ranks):
            k = key(parts[i], parts[i + 1])
            ranks[i] = get(k, none)
            if record is not None:
                record[k] = (parts[i], parts[i + 1])
    return parts


def merge_heap(
    parts: list[T],
    get: RankGet,
    *,
    key: Callable[[T, T], Any] = add,
    join: Callable[[T, T], T] = add,
    record: dict | None = None,
    firsts: list[T] | None = None,
    lasts: list[T] | None = None,
) -> list[T]:
    """:func:`merge` with a heap of candidate pairs over a linked list of parts: O(n log n) for any input.

    A part is known by the positions it spans in the input, so a candidate popped after one of its two parts
    changed is recognised and skipped. ``firsts`` / ``lasts``, when given, receive every part that was at some
    time the first / the last one (the byte-level encoder's segment cache needs them).

    >>> merge_heap(list(b"abcab"), {(97, 98): 0}.get, key=lambda a, b: (a, b), join=lambda a, b: 0)
    [0, 99, 0]
    """
    n = len(parts)
    if n == 0:
        return parts
    if firsts is not None:
        firsts.append(parts[0])
    if lasts is not None:
        lasts.append(parts[-1])
    nxt = list(range(1, n + 1))  # the part starting at i ends where the next begins; -1 once merged into its left
    prv = list(range(-1, n - 1))
    heap = []
    for i in range(n - 1):
        k = key(parts[i], parts[i + 1])
        r = get(k)
        if r is not None:
            heap.append((r, i, i + 1, i + 2))  # (rank, left start, right start, right end): leftmost on ties
        if record is not None:
            record[k] = (parts[i], parts[i + 1])
    heapify(heap)
    while heap:
        _, i, j, end = heappop(heap)
        if nxt[i] != j or nxt[j] != end:
            continue  # one of the two parts changed since this candidate was pushed
        parts[i] = merged = join(parts[i], parts[j])
        nxt[j] = -1
        nxt[i] = end
        if i == 0 and firsts is not None:
            firsts.append(merged)
        p = prv[i]
        if p >= 0:  # the new pair on the left first, as sentencepiece records them
            k = key(parts[p], merged)
            r = get(k)
            if r is not None:
                heappush(heap, (r, p, i, end))
            if record is not None:
                record[k] = (parts[p], merged)
        if end == n:
            if lasts is not None:
                lasts.append(merged)
        else:
            prv[end] = i
            k = key(merged, parts[end])
            r = get(k)
            if r is not None:
                heappush(heap, (r, i, end, nxt[end]))
            if record is not None:
                record[k] = (merged, parts[end])
    out = []
    i = 0
    while i < n:
        out.append(parts[i])
        i = nxt[i]
    parts[:] = out
    return parts


def pair(left: T, right: T) -> tuple[T, T]:
    """The key of two parts under a merges list (``pair_keys``): the pair itself."""
    return left, right


def merge_text_python(text: bytes | str, table: Mapping, ids: Mapping | None = None, pair_keys: bool = False) -> list:
    """:func:`merge_text` in Python: :func:`merge` over the symbols of ``text``."""
    symbols = list(map(_BYTES.__getitem__, text)) if isinstance(text, bytes) else list(text)
    parts = merge(symbols, table.get, key=pair if pair_keys else add)
    return parts if ids is None else list(map(ids.get, parts))


_BYTES = [bytes([b]) for b in range(256)]

_compiled = twin("_merge", "merge")
_CompiledTable = twin("_merge", "PairTable")
#: What the compiled merge reads as a table or as ids: dicts, and the frozen maps of a table file (read in place).
_TABLE_TYPES = tuple(t for t in (dict, twin("_frozen", "FrozenMap")) if t is not None)

#: Whether :func:`merge_text` runs compiled (``app/engines/_merge.c``).
COMPILED = _compiled is not None


def merge_text(text: bytes | str, table: Mapping, ids: Mapping | None = None, pair_keys: bool = False) -> list:
    """The symbols of ``text`` (its bytes, or its characters) merged by rank, joined by concatenation: the parts,
    or with ``ids`` each part's id (``None`` for a part ``ids`` lacks).

    ``table`` maps a joined part (or, with ``pair_keys``, a ``(left, right)`` pair of parts) to its rank; lower
    merges first, leftmost on ties.

    >>> merge_text(b"aaab", {b"ab": 0, b"aab": 1}, ids={b"a": 97, b"aab": 300})
    [97, 300]
    >>> merge_text("lower", {"lo": 0, "low": 1, "er": 2})
    ['low', 'er']
    """
    if _compiled is not None and type(table) in _TABLE_TYPES and (ids is None or type(ids) in _TABLE_TYPES):
        return _compiled(text, table, ids, pair_keys)
    return merge_text_python(text, table, ids, pair_keys)


class StrMerges(Protocol):
    """A ``str`` merge table compiled for one model (:func:`merge_table`)."""

    nbytes: int  #: the memory its compiled hash tables take (0 in Python)

    def merge(self, text: str) -> list[str]:
        """The parts of ``text`` after merging, as :func:`merge_text` gives them."""

    def cut(self, text: str) -> list[str]:
        """``text`` split between neighbouring characters that are no adjacent pair of the table."""


class MergeTable:
    """A ``str`` merge table for one model, in Python: what :func:`merge_table` gives without the compiled twin.

    ``merge(text)`` is ``merge_text(text, table, pair_keys=pair_keys)``; ``cut(text)`` splits ``text`` between
    any two neighbouring characters that are not one of the 2-character strings in ``adjacent``.

    >>> t = MergeTable({"ab": 0, "abc": 1}, {}, adjacent={"ab", "bc"})
    >>> t.merge("abcab"), t.cut("abcab")
    (['abc', 'ab'], ['abc', 'ab'])
    """

    nbytes = 0

    def __init__(
        self, table: Mapping | list, ids: Mapping[str, int], pair_keys: bool = False, adjacent: Collection[str] = ()
    ):
        if isinstance(table, list):
            # The pairs' parts become ids' own string objects: a JSON parser makes a new string for every
            # occurrence in a merges list (for Gemma's 515,000 merges that is some 50 MB).
            same = {part: part for part in ids}
            table = {(same.get(a, a), same.get(b, b)): rank for rank, (a, b) in enumerate(table)}
        self.table, self.pair_keys, self.adjacent = table, pair_keys, adjacent

    def merge(self, text: str) -> list[str]:
        return merge_text_python(text, self.table, pair_keys=self.pair_keys)

    def cut(self, text: str) -> list[str]:
        if not text:
            return []
        starts = [0, *compress(count(1), map(not_, map(self.adjacent.__contains__, map(add, text, text[1:]))))]
        return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]


def merge_table(
    table: dict | list[tuple[str, str]], ids: dict[str, int], *, pair_keys: bool = False, adjacent: Collection[str] = ()
) -> StrMerges:
    """``table`` (as for :func:`merge_text`, ``str`` parts; with ``pair_keys`` also a list of ``(left, right)``
    tuples, ranked by their place in it, a later repeat winning as in a dict built from it) compiled to int hash
    tables once, when ``app/engines/_merge.c`` is built: ``merge`` and ``cut`` as :class:`MergeTable`'s.

    ``ids`` gives parts their ids (distinct ints below 2**31 - 1, e.g. the vocabulary's; parts it lacks get new
    ones): passing the vocabulary saves building a string for every joined part. Ranks must not be NaN.

    >>> merge_table({("a", "b"): 0, ("ab", "c"): 1}, {"ab": 7}, pair_keys=True).merge("xabc")
    ['x', 'abc']
    """
    if _CompiledTable is None:
        return MergeTable(table, ids, pair_keys, adjacent)
    return _CompiledTable(table, ids, pair_keys, adjacent)
