"""How often each adjacent pair occurs now, and which pair wins: pairs grouped by count, ties in rule order.

:class:`PairCounts` holds ``counts`` (pair -> occurrences, overlaps counted, times word frequency) and
``buckets`` (count -> the pairs with that count). A merge only lowers the counts of pairs that exist and adds new
pairs, none above the merged pair's count, so the top count never grows and a pointer walks it down (jumping wide
gaps between counts). Pairs are opaque keys here (the layouts' two-character strings); only the tie key looks
inside them.

Pairs counted once are not kept in a bucket: most pairs a merge makes are, they can never win (counts never
grow), and only a finished run or a pair table shown to its last rows asks for them, so that bucket is gathered
from ``counts`` when asked for.

The top bucket is kept *ranked* by the tie key (smaller wins) between steps. Pairs that stay in it keep their
order: a pair whose count did not change lost no occurrence, so its first occurrence is where it was (positions
may shift inside a rewritten word, but never past another pair's). Only pairs entering or leaving the bucket
move, so a step costs the changed pairs, not a sort of hundreds of ties.

A trainer that forbids some pairs (``refused``: SentencePiece's piece-length limit) is asked lazily: a new pair
is counted like any other, and the rule is asked only when a pair is about to be ranked, listed or looked up;
those it refuses are forgotten then. Most pairs a merge makes never get that far, and a refusal never lapses
(what is too long stays too long), so asking later answers the same.

Selecting by raw count is what BPE does. A scoring rule such as WordPiece's ``count(ab) / (count(a) * count(b))``
changes the score of every pair that shares a part with the merged one, so it cannot live in count buckets: it
would replace this class (same ``apply``/``remove``/``top_count``/``ranked``/``top_pairs`` surface) with one
that orders pairs by score. Nothing here knows about words or vocabularies.
"""

from __future__ import annotations

import heapq
from bisect import insort
from collections.abc import Callable, Iterable
from typing import Any

from ..compiled import twin

Key = str  # a pair, as the layouts key it
TieKey = Callable[[Key], Any]
Refused = Callable[[list[Key]], list[Key]]


def _enter(buckets: dict[int, set[Key]], count: int, pair: Key) -> None:
    """Put ``pair`` in the bucket of ``count``."""
    bucket = buckets.get(count)
    if bucket is None:
        buckets[count] = {pair}
    else:
        bucket.add(pair)


def _set(counts: dict[Key, int], buckets: dict[int, set[Key]], pair: Key, count: int) -> None:
    """Give ``pair`` its new ``count`` (out of its old bucket already)."""
    if count > 1:
        counts[pair] = count
        _enter(buckets, count, pair)
    elif count:
        counts[pair] = 1
    else:
        del counts[pair]


def _move(
    counts: dict[Key, int],
    buckets: dict[int, set[Key]],
    ranked: list[Key],
    ranked_count: int,
    pair: Key,
    old: int,
    new: int,
    entering: set[Key],
) -> None:
    """``pair`` goes from ``old`` to ``new`` (0 for a new pair); see :func:`apply_counts_python`."""
    if old == ranked_count:
        if pair in entering:  # it came in during this merge and goes again
            entering.discard(pair)
        else:
            ranked.remove(pair)
    if old > 1:
        buckets[old].discard(pair)
    if new == ranked_count:
        entering.add(pair)
    _set(counts, buckets, pair, new)


def apply_counts_python(
    counts: dict[Key, int],
    buckets: dict[int, set[Key]],
    ranked: list[Key],
    ranked_count: int,
    changes: Iterable[tuple[Key, Key, int]],
) -> set[Key]:
    """The counting half of :meth:`PairCounts.apply`: move each pair of ``changes`` to its new count (``counts``
    and ``buckets``), taking those that leave ``ranked_count`` out of ``ranked``; return the pairs that reach
    ``ranked_count``, which the caller ranks in once every count is final.

    >>> counts, buckets = {"ab": 3, "bc": 2}, {3: {"ab"}, 2: {"bc"}}
    >>> apply_counts_python(counts, buckets, [], -1, [("ab", "Xb", 2), ("bc", "Xc", 2)])
    set()
    >>> counts, sorted(buckets[2])
    ({'ab': 1, 'Xb': 2, 'Xc': 2}, ['Xb', 'Xc'])
    """
    entering: set[Key] = set()
    for gone, came, n in changes:
        old = counts.get(gone)
        if old is not None:
            new = old - n
            if old == ranked_count or new == ranked_count:
                _move(counts, buckets, ranked, ranked_count, gone, old, new, entering)
            else:  # the common case: _move without the ranked list
                if old > 1:
                    buckets[old].discard(gone)
                _set(counts, buckets, gone, new)
        if came in counts or n == ranked_count:  # another layout made it too, or it enters the ranked bucket
            old = counts.get(came, 0)
            _move(counts, buckets, ranked, ranked_count, came, old, old + n, entering)
        else:  # a pair first seen now: the common case
            counts[came] = n
            if n > 1:
                _enter(buckets, n, came)
    return entering


_apply_counts = twin("_train", "apply_counts")
#: Whether :meth:`PairCounts.apply` runs its loop compiled (``app/engines/training/_train.c``).
COMPILED = _apply_counts is not None
apply_counts = _apply_counts or apply_counts_python


class PairCounts:
    """Counts of the pairs that may merge, grouped by count, with the top group ranked by ``tie_key``;
    ``refused`` (optional) names the pairs among those given that may never merge.

    >>> pc = PairCounts({"ab": 3, "bc": 3, "cd": 1}, tie_key=str)
    >>> pc.top_count(), pc.ranked(3)
    (3, ['ab', 'bc'])
    >>> pc.apply("ab", [("bc", "Xc", 3)])
    >>> pc.ranked(pc.top_count()), pc.top_pairs(5)
    (['Xc'], [('Xc', 3), ('cd', 1)])
    """

    def __init__(self, counts: dict[Key, int], tie_key: TieKey, refused: Refused | None = None):
        self.counts = counts
        self.tie_key = tie_key
        self.refused = refused
        self.buckets: dict[int, set[Key]] = {}  # count -> pairs, for counts above 1
        self._ranked: list[Key] = []  # the bucket of count ``_ranked_count`` in tie order
        self._ranked_count = -1
        buckets = self.buckets
        for pair, count in counts.items():
            if count > 1:
                _enter(buckets, count, pair)
        self._top = max(counts.values(), default=0)

    def get(self, pair: Key) -> int:
        """The count of ``pair`` now (0 when it does not occur or may never merge)."""
        count = self.counts.get(pair, 0)
        if count and self.refused is not None and self.refused([pair]):
            self.remove(pair)
            return 0
        return count

    def allowed(self, pairs: list[Key]) -> list[Key]:
        """``pairs`` without those ``refused`` names (which are forgotten); none of them may be ranked yet."""
        if self.refused is None or not pairs:
            return pairs
        banned = self.refused(pairs)
        if not banned:
            return pairs
        counts, buckets = self.counts, self.buckets
        for pair in banned:
            count = counts.pop(pair)
            if count > 1:
                buckets[count].discard(pair)
        banned_set = set(banned)
        return [p for p in pairs if p not in banned_set]

    def bucket(self, count: int) -> list[Key]:
        """The pairs with ``count`` now."""
        if count == self._ranked_count:
            return list(self._ranked)
        if count == 1:
            return self.allowed([p for p, c in self.counts.items() if c == 1])
        return self.allowed(list(self.buckets.get(count, ())))

    def top_count(self) -> int:
        """The highest count any pair has now (0 when there is no pair); its bucket is ranked when above 1."""
        c = self._top
        if c == self._ranked_count and self._ranked:
            return c
        buckets = self.buckets
        steps = 0
        while c > 1:
            bucket = buckets.get(c)
            if bucket:
                ranked = self.allowed(list(bucket))
                if ranked:
                    self._ranked, self._ranked_count = sorted(ranked, key=self.tie_key), c
                    break
            steps += 1
            if steps < 32:
                c -= 1
            else:  # far from the next count anyone has (early on, counts are thousands apart): jump there
                c = max((k for k, b in buckets.items() if k < c and b), default=1)
                steps = 0
        if c == 1 and not self.bucket(1):
            c = 0
        self._top = c
        return c

    def ranked(self, count: int) -> list[Key]:
        """The pairs with ``count``, in tie order (the list is shared when ``count`` is the top: do not change it)."""
        if count == self._ranked_count:
            return self._ranked
        ranked = sorted(self.bucket(count), key=self.tie_key)
        if count == self.top_count():  # only the count-1 bucket is ranked here rather than in top_count
            self._ranked, self._ranked_count = ranked, count
        return ranked

    def first_ranked(self, count: int, limit: int | None, without: Key | None = None) -> list[Key]:
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

    def top_pairs(self, k: int) -> list[tuple[Key, int]]:
        """The ``k`` most frequent pairs with their counts, in the order the winner is chosen."""
        out: list[tuple[Key, int]] = []
        c = self.top_count()
        while c >= 1 and len(out) < k:
            if c == 1 or self.buckets.get(c):
                out.extend((p, c) for p in self.first_ranked(c, k - len(out)))
            c -= 1
        return out

    # -- changes -----------------------------------------------------------------------------------------------
    def _leave(self, pair: Key, count: int) -> None:
        if count > 1:
            self.buckets[count].discard(pair)
        if count == self._ranked_count:
            self._ranked.remove(pair)

    def remove(self, pair: Key) -> None:
        """Forget ``pair`` (it was merged away, or it may never merge)."""
        count = self.counts.pop(pair, 0)
        if count:
            self._leave(pair, count)

    def apply(self, merged: Key, changes: Iterable[tuple[Key, Key, int]]) -> None:
        """After merging ``merged``: for each ``(old, new, n)`` of ``changes``, ``n`` occurrences of pair ``old``
        became pair ``new``. Old pairs that are not counted (merged, banned) are skipped.
        """
        self.remove(merged)
        entering = apply_counts(self.counts, self.buckets, self._ranked, self._ranked_count, changes)
        if entering:
            for pair in self.allowed(list(entering)):
                insort(self._ranked, pair, key=self.tie_key)
