"""How often each adjacent pair occurs now, and which pair wins: pairs grouped by count, ties in rule order.

:class:`PairCounts` holds ``counts`` (pair -> occurrences, overlaps counted, times word frequency) and
``buckets`` (count -> the pairs with that count). A merge only lowers the counts of pairs that exist and adds new
pairs, none above the merged pair's count, so the top count never grows and a pointer walks it down.

Pairs counted once are not kept in a bucket: most pairs a merge makes are, they can never win (counts never
grow), and only a finished run or a pair table shown to its last rows asks for them, so that bucket is gathered
from ``counts`` when asked for.

The top bucket is kept *ranked* by the tie key (smaller wins) between steps. Pairs that stay in it keep their
order: a pair whose count did not change lost no occurrence, so its first occurrence is where it was (positions
may shift inside a rewritten word, but never past another pair's). Only pairs entering or leaving the bucket
move, so a step costs the changed pairs, not a sort of hundreds of ties.

Selecting by raw count is what BPE does. A scoring rule such as WordPiece's ``count(ab) / (count(a) * count(b))``
changes the score of every pair that shares a part with the merged one, so it cannot live in count buckets: it
would replace this class (same ``apply``/``remove``/``top_count``/``ranked_top``/``top_pairs`` surface) with one
that orders pairs by score. Nothing here knows about words or vocabularies.
"""

from __future__ import annotations

import heapq
from bisect import insort
from collections.abc import Callable, Container, Iterable
from typing import Any

Pair = tuple[int, int]
TieKey = Callable[[Pair], Any]


class PairCounts:
    """Counts of the pairs that may merge, grouped by count, with the top group ranked by ``tie_key``.

    >>> pc = PairCounts({(1, 2): 3, (2, 3): 3, (3, 4): 1}, tie_key=lambda p: p)
    >>> pc.top_count(), pc.ranked_top()
    (3, [(1, 2), (2, 3)])
    >>> pc.apply((1, 2), [((2, 3), (9, 3), 3)])
    >>> pc.ranked_top(), pc.top_pairs(5)
    ([(9, 3)], [((9, 3), 3), ((3, 4), 1)])
    """

    def __init__(self, counts: dict[Pair, int], tie_key: TieKey):
        self.counts = counts
        self.tie_key = tie_key
        self.buckets: dict[int, set[Pair]] = {}  # count -> pairs, for counts above 1
        self._ranked: list[Pair] = []  # the bucket of count ``_ranked_count`` in tie order
        self._ranked_count = -1
        for pair, count in counts.items():
            self._enter(pair, count)
        self._top = max(counts.values(), default=0)

    def get(self, pair: Pair) -> int:
        return self.counts.get(pair, 0)

    def bucket(self, count: int) -> set[Pair]:
        """The pairs with ``count`` now."""
        if count == 1:
            return {p for p, c in self.counts.items() if c == 1}
        return self.buckets.get(count, set())

    def top_count(self) -> int:
        """The highest count any pair has now (0 when there is no pair)."""
        c, buckets = self._top, self.buckets
        while c > 1 and not buckets.get(c):
            c -= 1
        if c == 1 and 1 not in self.counts.values():
            c = 0
        self._top = c
        return c

    def ranked(self, count: int) -> list[Pair]:
        """The pairs with ``count``, in tie order (the list is shared when ``count`` is the top: do not change it)."""
        if count == self._ranked_count:
            return self._ranked
        ranked = sorted(self.bucket(count), key=self.tie_key)
        if count == self.top_count():
            self._ranked, self._ranked_count = ranked, count
        return ranked

    def ranked_top(self) -> list[Pair]:
        """The pairs with the top count, the winner first (shared: do not change it)."""
        return self.ranked(self.top_count())

    def first_ranked(self, count: int, limit: int | None, without: Pair | None = None) -> list[Pair]:
        """The first ``limit`` pairs with ``count`` in tie order (all when ``limit`` is None), leaving out ``without``."""
        if count == self._ranked_count or limit is None:
            ranked = self.ranked(count)
            if without is not None:
                ranked = [p for p in ranked if p != without]
            return ranked if limit is None else ranked[:limit]
        bucket = self.bucket(count)
        if without is not None:
            bucket = [p for p in bucket if p != without]
        return heapq.nsmallest(limit, bucket, key=self.tie_key)

    def top_pairs(self, k: int) -> list[tuple[Pair, int]]:
        """The ``k`` most frequent pairs with their counts, in the order the winner is chosen."""
        out: list[tuple[Pair, int]] = []
        c = self.top_count()
        while c >= 1 and len(out) < k:
            if c == 1 or self.buckets.get(c):
                out.extend((p, c) for p in self.first_ranked(c, k - len(out)))
            c -= 1
        return out

    # -- changes -----------------------------------------------------------------------------------------------
    def _leave(self, pair: Pair, count: int) -> None:
        if count > 1:
            self.buckets[count].discard(pair)
        if count == self._ranked_count:
            self._ranked.remove(pair)

    def _enter(self, pair: Pair, count: int) -> None:
        if count > 1:
            bucket = self.buckets.get(count)
            if bucket is None:
                self.buckets[count] = {pair}
            else:
                bucket.add(pair)
        if count == self._ranked_count:
            insort(self._ranked, pair, key=self.tie_key)

    def remove(self, pair: Pair) -> None:
        """Forget ``pair`` (it was merged away, or it may never merge)."""
        count = self.counts.pop(pair, 0)
        if count:
            self._leave(pair, count)

    def apply(self, merged: Pair, changes: Iterable[tuple[Pair, Pair, int]], refused: Container[Pair] = ()) -> None:
        """After merging ``merged``: for each ``(old, new, n)`` of ``changes``, ``n`` occurrences of pair ``old``
        became pair ``new`` (a pair first seen in this merge, left uncounted when in ``refused``).

        Old pairs that are not counted (never allowed, or banned) are skipped.
        """
        self.remove(merged)
        counts, buckets, ranked_count = self.counts, self.buckets, self._ranked_count
        entering: set[Pair] = set()  # reached the ranked count: ranked in once every count is final
        for gone, came, n in changes:
            old = counts.get(gone)
            if old is not None:
                if old == ranked_count or old - n == ranked_count:
                    self._move(gone, old, old - n, entering)
                else:  # _move, inlined for the common case: this loop is hot
                    if old > 1:
                        buckets[old].discard(gone)
                    self._set(gone, old - n)
            if came in refused:
                continue
            old = counts.get(came, 0)  # 0 unless another layout made the same pair
            if old == ranked_count or old + n == ranked_count:
                self._move(came, old, old + n, entering)
            else:
                if old > 1:
                    buckets[old].discard(came)
                self._set(came, old + n)
        for pair in entering:
            insort(self._ranked, pair, key=self.tie_key)

    def _set(self, pair: Pair, count: int) -> None:
        """Give ``pair`` its new ``count`` (out of its old bucket already; not the ranked count)."""
        if count > 1:
            self.counts[pair] = count
            bucket = self.buckets.get(count)
            if bucket is None:
                self.buckets[count] = {pair}
            else:
                bucket.add(pair)
        elif count:
            self.counts[pair] = 1
        else:
            del self.counts[pair]

    def _move(self, pair: Pair, old: int, new: int, entering: set[Pair]) -> None:
        """``pair`` goes from ``old`` to ``new`` and one of them is the ranked count; see :meth:`apply`."""
        if old == self._ranked_count:
            if pair in entering:  # it came in during this merge and goes again
                entering.discard(pair)
                if old > 1:
                    self.buckets[old].discard(pair)
            else:
                self._leave(pair, old)
        elif old > 1:
            self.buckets[old].discard(pair)
        if new == self._ranked_count:
            entering.add(pair)
        self._set(pair, new)
