"""The BPE merge loop every trainer shares: one merge per step, every step recorded as a ``MergeStep``.

:class:`MergeState` takes the corpus as distinct words (id sequences with counts, in first-seen order) over a
base vocabulary (id -> surface bytes) and merges the most frequent adjacent pair, everywhere, left to right,
once per :meth:`~MergeState.step`. What differs between trainers is what they pass in:

- the base vocabulary and how text becomes words (bytes for byte-level BPE, code points for character-level
  BPE);
- a :class:`MergeRule` saying which pairs may merge (a trainer that limits pieces, say by length); without one,
  every pair may;
- the step record, built by :meth:`~MergeState.record` (a subclass may add to it).

Ties (pairs with the same count) are broken by a rule the user picks, recorded in every step:

- ``first``: the pair seen first in corpus order, which is what the minimal Python implementations do
  (``max(stats, key=stats.get)`` over a dict filled word by word). Precisely, the key of a pair is (index of
  the first word in the corpus that holds it now, position of its first occurrence there).
- ``lexical``: the smallest pair compared as byte strings, left then right (then ``first``, for two ids that
  spell the same bytes).

A pair merges only when it occurs at least ``min_count`` times (2 by default: a pair seen once is left alone;
1 merges it too, as tiktoken's ``_educational.bpe_train`` and minbpe do, so the last merges of a small text can
have count 1). Forced merges (manual mode, a typed merge list) ignore it.

Pairs are ``(left id, right id)`` tuples everywhere a caller sees them (records, :meth:`~MergeState.step`,
:meth:`~MergeState.current_top_pairs`, :class:`MergeRule`); inside, the layouts and the counts key them as
two-character strings (:func:`~app.engines.training.words.pair_key`). Counting lives in :mod:`.pair_counts`,
the words in :mod:`.words`; running a state to a target is :func:`app.engines.training.driver.run_merges`.
Nothing here prints, reads text or encodes new text.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from operator import mul
from typing import Protocol

from ..errors import TokenplayError
from .steps import TIE_BREAKS, MergeStep, TrainResult
from .driver import STOP_NO_PAIR, cycle_collector_paused
from .pair_counts import PairCounts
from .words import LONG_WORD, MAX_ID, LongWords, ShortWords, as_string, key_pair, pair_key

Pair = tuple[int, int]


class TrainingError(TokenplayError):
    """A training request that cannot run (bad vocab size, unknown tie-break, a pair that is not there)."""


class MergeRule(Protocol):
    """Which pairs may merge, for trainers that limit it (by piece length, say)."""

    def refused(self, pairs: Iterable[Pair]) -> list[Pair]:
        """The pairs among ``pairs`` that may never merge. Asked before a pair is ranked, listed or merged, and
        only then (see :mod:`.pair_counts`); a refusal must never lapse. Refused pairs are forgotten."""
        ...

    def added(self, new_id: int, pair: Pair) -> Iterable[Pair]:
        """``pair`` is being merged into ``new_id``: return the existing pairs this rules out from now on."""
        ...


class _Pairs(dict):
    """Pair keys -> ``(left id, right id)``, each converted once (look-ups of many ties stay in C)."""

    def __missing__(self, key: str) -> Pair:
        pair = self[key] = key_pair(key)
        return pair


def _first_key(layouts: list[ShortWords | LongWords], pair: str) -> tuple[int, int]:
    """(first word holding ``pair``, position there): the ``first`` tie key over several layouts."""
    keys = [key for key in (layout.first(pair) for layout in layouts) if key is not None]
    if not keys:
        raise AssertionError(f"pair {key_pair(pair)} has a count but no word holds it")
    return min(keys)


def _lexical_key(vocab: dict[int, bytes], first: Callable[[str], tuple[int, int]], pair: str) -> tuple:
    """The ``lexical`` tie key: the two surfaces, then ``first``."""
    return vocab[ord(pair[0])], vocab[ord(pair[1])], first(pair)


def _refused(rule: MergeRule, pairs: _Pairs, keys: list[str]) -> list[str]:
    """``rule``'s answer for pair keys (see :class:`MergeRule`)."""
    return list(map(pair_key, rule.refused(map(pairs.__getitem__, keys))))


def check_min_count(min_count: int, error: type[TokenplayError] = TrainingError) -> int:
    """Return ``min_count`` if it is a whole number of at least 1, else raise: ``check_min_count(2) == 2``."""
    if not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 1:
        raise error(f"min_count must be a whole number of at least 1 (1 merges pairs seen once), got {min_count!r}")
    return min_count


def no_pair_reason(min_count: int) -> str:
    """Why a run with ``min_count`` stops early: ``no_pair_reason(2) == "no pair occurs twice"``."""
    if min_count == 2:
        return STOP_NO_PAIR
    return "no pair is left" if min_count == 1 else f"no pair occurs {min_count} times"


def check_tie_break(tie_break: str, error: type[TokenplayError] = TrainingError) -> str:
    """Return ``tie_break`` if it is a known rule, else raise: ``check_tie_break("first") == "first"``."""
    if tie_break not in TIE_BREAKS:
        raise error(f"unknown tie-break {tie_break!r}; choose one of: {', '.join(TIE_BREAKS)}")
    return tie_break


def _id_ranges(ids: Iterable[int]) -> list[tuple[int, int]]:
    """Runs of consecutive ids: ``_id_ranges([0, 1, 2, 5]) == [(0, 2), (5, 5)]``."""
    runs: list[tuple[int, int]] = []
    for i in sorted(ids):
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


class MergeState:
    """A BPE training run in progress: :meth:`step` merges once (the lab's manual mode calls it directly).

    ``words`` are ``(ids, count)`` in corpus order (first-seen order decides ``first`` ties); ``base_vocab`` maps
    every id the words use to its bytes. New ids follow the largest base id. Ids may come as ``bytes`` (each byte
    an id) or as a ``str`` whose code points are the ids (``"".join(map(chr, ids))``, the layouts' own form).
    Words longer than ``long_word`` ids are kept in the linked layout (see :mod:`.words`).

    >>> state = MergeState([([1, 2, 1, 2], 1), ([2, 1], 1)], {1: b"a", 2: b"b"})
    >>> step = state.step()
    >>> step.pair, step.count, step.ties, state.words
    ((1, 2), 2, [(2, 1)], [[3, 3], [2, 1]])
    """

    error: type[TokenplayError] = TrainingError
    #: The class of the step records (a subclass adds fields with defaults, filled in after :meth:`record`).
    record_type: type[MergeStep] = MergeStep

    def __init__(
        self,
        words: Iterable[tuple[Sequence[int] | str, int]],
        base_vocab: Mapping[int, bytes],
        *,
        tie_break: str = "first",
        rule: MergeRule | None = None,
        long_word: int = LONG_WORD,
        min_count: int = 2,
    ):
        self.tie_break = check_tie_break(tie_break, self.error)
        self.min_count = check_min_count(min_count, self.error)
        self.base_vocab = dict(base_vocab)
        self.vocab: dict[int, bytes] = dict(base_vocab)
        self.next_id = max(self.vocab) + 1 if self.vocab else 0
        self.rule = rule
        self.merges: list[Pair] = []
        self.steps: list[MergeStep] = []
        self.tie_counts: list[int] = []  # ties per step before ``max_ties`` cut the record's list
        self._pairs = _Pairs()
        self._last_ties: tuple[list[str], list[Pair]] = ([], [])  # the previous step's tie keys and their pairs
        with cycle_collector_paused():
            counts = self._lay_out(list(words), long_word)
        # the callables the counts keep hold what they need, not the state: a cycle through it would leave the
        # whole run to the cycle collector instead of being freed when the caller lets go of it
        first = self._layouts[0].first if len(self._layouts) == 1 else partial(_first_key, self._layouts)
        self.tie_key = partial(_lexical_key, self.vocab, first) if tie_break == "lexical" else first
        refused = None if rule is None else partial(_refused, rule, self._pairs)
        self.pairs = PairCounts(counts, self.tie_key, refused)

    def _lay_out(self, words: list[tuple[Sequence[int] | str, int]], long_word: int) -> dict[str, int]:
        """Check the words, put each in its layout and return every pair's count."""
        self.freqs: list[int] = [freq for _, freq in words]
        if self.freqs and min(self.freqs) < 1:
            w = next(w for w, freq in enumerate(self.freqs) if freq < 1)
            raise self.error(f"word {w} has count {self.freqs[w]}; counts must be at least 1")
        try:
            ids_of = [ids if isinstance(ids, str) else as_string(ids) for ids, _ in words]
        except (ValueError, OverflowError, TypeError):  # an id no character can hold: not in any vocabulary
            ids_of = None
        self._check_ids(ids_of, words)
        lengths = list(map(len, ids_of))
        longs = [w for w, n in enumerate(lengths) if n > long_word] if max(lengths, default=0) > long_word else []
        long_set = set(longs)
        shorts = [w for w in range(len(words)) if w not in long_set] if longs else range(len(words))
        self._short = ShortWords(shorts, [ids_of[w] for w in shorts], [self.freqs[w] for w in shorts])
        self._long = LongWords(longs, [ids_of[w] for w in longs], [self.freqs[w] for w in longs])
        self._long_numbers = longs
        self.initial_tokens = self.n_tokens = sum(map(mul, lengths, self.freqs))
        self._layouts = [layout for layout in (self._short, self._long) if len(layout)]
        if len(self._layouts) == 1:
            return self._layouts[0].pair_counts()
        counts: dict[str, int] = {}
        for layout in self._layouts:
            for pair, count in layout.pair_counts().items():
                counts[pair] = counts.get(pair, 0) + count
        return counts

    def _check_ids(self, strings: list[str] | None, words: list[tuple[Sequence[int] | str, int]]) -> None:
        """Raise when a word uses an id the base vocabulary lacks (one regex scan in C when all is well)."""
        if strings is not None and self.vocab and max(self.vocab) <= MAX_ID and min(self.vocab) >= 0:
            ranges = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _id_ranges(self.vocab))
            if not re.search(f"[^{ranges}]", "".join(strings)):
                return
        used = set()
        for ids, _ in words:
            used.update(map(ord, ids) if isinstance(ids, str) else ids)
        unknown = used - self.vocab.keys()
        if unknown:
            raise self.error(f"the words use ids {sorted(unknown)[:5]} that the base vocabulary lacks")
        if strings is None:
            raise self.error(f"ids must be whole numbers from 0 to {MAX_ID}")

    # -- the corpus now ----------------------------------------------------------------------------------------
    def word(self, w: int) -> list[int]:
        """Word ``w`` as it is now, as ids."""
        k = bisect_left(self._long_numbers, w)  # the long words before it: the short ones keep their order
        if k < len(self._long_numbers) and self._long_numbers[k] == w:
            return self._long.ids(k)
        return self._short.ids(w - k)

    @property
    def words(self) -> list[list[int]]:
        """Every word as it is now (built on demand: for inspection and tests)."""
        return [self.word(w) for w in range(len(self.freqs))]

    @property
    def counts(self) -> dict[Pair, int]:
        """Every pair that may merge, with its count now (built on demand: for inspection and tests)."""
        pairs = self.pairs
        return {self._pairs[key]: pairs.counts[key] for key in pairs.allowed(list(pairs.counts))}

    def pair_count(self, pair: Pair) -> int:
        key = self._key(pair)
        return self.pairs.get(key) if key is not None else 0

    @staticmethod
    def _key(pair: Pair) -> str | None:
        """The key of ``pair``, or None when no id of it can exist."""
        a, b = int(pair[0]), int(pair[1])
        return chr(a) + chr(b) if 0 <= a <= MAX_ID and 0 <= b <= MAX_ID else None

    # -- queries -----------------------------------------------------------------------------------------------
    def best_pair(self) -> Pair | None:
        """The pair the next automatic step merges, or ``None`` when no pair occurs ``min_count`` times."""
        won = self._winner(0)
        return won[0] if won else None

    def _winner(self, max_ties: int | None = None) -> tuple[Pair, list[Pair]] | None:
        """The automatic winner and the first ``max_ties`` pairs tied with it, or None when no pair may merge."""
        if self.pairs.top_count() < self.min_count:
            return None
        ranked = self.pairs.ranked(self.pairs.top_count())
        tied = ranked[1:] if max_ties is None else ranked[1 : 1 + max_ties]
        return self._pairs[ranked[0]], list(map(self._pairs.__getitem__, tied))

    @property
    def done(self) -> bool:
        """True when no pair occurs ``min_count`` times (an automatic step has nothing to merge)."""
        return self.pairs.top_count() < self.min_count

    @property
    def stop_reason(self) -> str:
        """Why a run that is :attr:`done` stopped, in words."""
        return no_pair_reason(self.min_count)

    def ranked_pairs(self) -> list[tuple[Pair, int]]:
        """Every pair that may merge now, with its count, in the order the winner is chosen: the highest count
        first, equal counts by the tie rule (pairs seen once too, whatever ``min_count``)."""
        pairs = self.pairs
        counts = pairs.counts
        keys = pairs.allowed(list(counts))
        tie_key = self.tie_key
        keys.sort(key=lambda key: (-counts[key], tie_key(key)))
        return [(self._pairs[key], counts[key]) for key in keys]

    def current_top_pairs(self, k: int) -> list[tuple[Pair, int]]:
        """The ``k`` most frequent pairs with their counts, in the order the winner is chosen."""
        return [(self._pairs[key], count) for key, count in self.pairs.top_pairs(k)]

    # -- one merge ---------------------------------------------------------------------------------------------
    def step(
        self, force_pair: Pair | None = None, *, top_k: int = 0, max_ties: int | None = None, absent_ok: bool = False
    ) -> MergeStep:
        """Merge the winning pair (or ``force_pair``) everywhere and return the step's record.

        ``top_k`` > 0 records the k most frequent pairs before the merge; ``max_ties`` keeps only the first
        ties (in tie-break order) in the record, which bounds memory on large corpora (default: all). A forced
        pair must occur in the corpus, unless ``absent_ok`` (a typed merge list: the pair of two tokens that exist
        makes its token even where the corpus never holds it; the record's count is 0).
        """
        pairs = self.pairs
        if force_pair is None:
            count = pairs.top_count()
            if count < self.min_count:
                raise self.error(f"{self.stop_reason}; training is complete (pass force_pair to merge a pair anyway)")
            ranked = pairs.ranked(count)
            key = ranked[0]
            tied = ranked[1:] if max_ties is None else ranked[1 : 1 + max_ties]
            n_ties = len(ranked) - 1
        else:
            key = self._key(force_pair)
            count = pairs.get(key) if key is not None else 0
            if absent_ok and key is not None and count < 1 and all(i in self.vocab for i in force_pair):
                count = 0
            elif count < 1:
                asked = (int(force_pair[0]), int(force_pair[1]))
                raise self.error(
                    f"pair {asked} does not occur in the corpus now (or cannot be merged); "
                    "pick one from current_top_pairs()"
                )
            tied = pairs.first_ranked(count, max_ties, without=key) if max_ties != 0 and count else []
            n_ties = max(0, len(pairs.bucket(count)) - 1) if max_ties != 0 and count else 0  # a replay's record has its own
        top = self.current_top_pairs(top_k) if top_k > 0 else []
        new_id = self.next_id
        if new_id > MAX_ID:
            raise self.error(f"no more ids: the trainer stores ids as characters, at most {MAX_ID}")
        self.next_id += 1
        pair = self._pairs[key]
        last_keys, last_ties = self._last_ties
        if tied[:1] and tied == last_keys[1:]:  # usually the winner was the first tie and the others stayed
            ties = last_ties[1:]
        else:
            ties = list(map(self._pairs.__getitem__, tied))
        self._last_ties = (tied, ties)
        self.vocab[new_id] = self.vocab[pair[0]] + self.vocab[pair[1]]
        replaced = self._merge(key, pair, new_id, count)
        self.n_tokens -= replaced
        self.merges.append(pair)
        self.tie_counts.append(n_ties)
        record = self.record(pair, new_id, count, replaced, ties, top, forced=force_pair is not None)
        self.steps.append(record)
        return record

    def record(
        self,
        pair: Pair,
        new_id: int,
        count: int,
        replaced: int,
        ties: list[Pair],
        top: list[tuple[Pair, int]],
        *,
        forced: bool,
    ) -> MergeStep:
        """The step's record (after the merge: ``corpus_tokens`` is the corpus length now)."""
        return self.record_type(
            step=len(self.merges),
            pair=pair,
            left=self.vocab[pair[0]],
            right=self.vocab[pair[1]],
            new_id=new_id,
            count=count,
            replaced=replaced,
            ties=ties,
            corpus_tokens=self.n_tokens,
            tie_break=self.tie_break,
            forced=forced,
            top_pairs=top,
        )

    def _merge(self, key: str, pair: Pair, new_id: int, count: int) -> int:
        """Apply one merge to every word holding ``pair`` (of ``count`` occurrences) and update the counts; return
        the occurrences merged."""
        new = chr(new_id)
        changes = self._layouts[0].merge(key, new)
        for layout in self._layouts[1:]:
            changes += layout.merge(key, new)
        replaced = count
        if key[0] == key[1]:  # in a run (a a a) an occurrence overlapping a merged one is lost: its (a, a) went
            replaced -= sum(n for gone, _, n in changes if gone == key)
        rule = self.rule
        banned = rule.added(new_id, pair) if rule is not None else ()  # first: refusals may ask for the new piece
        self.pairs.apply(key, changes)
        for p in banned:  # no longer counted, so never chosen, forced or ranked again
            self.pairs.remove(pair_key(p))
        return replaced

    # -- results -----------------------------------------------------------------------------------------------
    def result(self, stop_reason: str) -> TrainResult:
        return TrainResult(
            merges=list(self.merges),
            vocab=dict(self.vocab),
            steps=list(self.steps),
            stop_reason=stop_reason,
            initial_tokens=self.initial_tokens,
        )
