"""The BPE merge loop every trainer shares: one merge per step, every step recorded as a ``MergeStep``.

:class:`MergeState` takes the corpus as distinct words (id sequences with counts, in first-seen order) over a
base vocabulary (id -> surface bytes) and merges the most frequent adjacent pair, everywhere, left to right,
once per :meth:`~MergeState.step`. What differs between trainers is what they pass in:

- the base vocabulary and how text becomes words (bytes for byte-level BPE, code points for character-level
  BPE and SentencePiece-style training);
- a :class:`MergeRule` saying which pairs may merge (SentencePiece: a piece-length limit, and a pair whose text
  is already a piece never merges); without one, every pair may;
- the step record, built by :meth:`~MergeState.record` (a subclass may add to it).

Ties (pairs with the same count) are broken by a rule the user picks, recorded in every step:

- ``first``: the pair seen first in corpus order, which is what the minimal Python implementations do
  (``max(stats, key=stats.get)`` over a dict filled word by word). Precisely, the key of a pair is (index of
  the first word in the corpus that holds it now, position of its first occurrence there).
- ``lexical``: the smallest pair compared as byte strings, left then right (then ``first``, for two ids that
  spell the same bytes).

Counting lives in :mod:`.pair_counts`, the words in :mod:`.words`; running a state to a target is
:func:`app.engines.training.driver.run_merges`. Nothing here prints, reads text or encodes new text.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from operator import mul
from typing import Protocol

from ..errors import TokenplayError
from ..steps import TIE_BREAKS, MergeStep, TrainResult
from .driver import cycle_collector_paused
from .pair_counts import PairCounts
from .words import LONG_WORD, MAX_ID, LongWords, ShortWords

Pair = tuple[int, int]


class TrainingError(TokenplayError):
    """A training request that cannot run (bad vocab size, unknown tie-break, a pair that is not there)."""


class MergeRule(Protocol):
    """Which pairs may merge, for trainers that limit it (SentencePiece-style pieces)."""

    def refused(self, pairs: Iterable[Pair]) -> list[Pair]:
        """The pairs among ``pairs`` that may never merge. Asked once, when they first appear; they stay uncounted."""
        ...

    def added(self, new_id: int, pair: Pair) -> Iterable[Pair]:
        """``pair`` was just merged into ``new_id``: return the existing pairs this rules out from now on."""
        ...


def check_tie_break(tie_break: str, error: type[TokenplayError] = TrainingError) -> str:
    """Return ``tie_break`` if it is a known rule, else raise: ``check_tie_break("first") == "first"``."""
    if tie_break not in TIE_BREAKS:
        raise error(f"unknown tie-break {tie_break!r}; choose one of: {', '.join(TIE_BREAKS)}")
    return tie_break


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

    def __init__(
        self,
        words: Iterable[tuple[Sequence[int] | str, int]],
        base_vocab: Mapping[int, bytes],
        *,
        tie_break: str = "first",
        rule: MergeRule | None = None,
        long_word: int = LONG_WORD,
    ):
        self.tie_break = check_tie_break(tie_break, self.error)
        self.base_vocab = dict(base_vocab)
        self.vocab: dict[int, bytes] = dict(base_vocab)
        self.next_id = max(self.vocab) + 1 if self.vocab else 0
        self.rule = rule
        self.merges: list[Pair] = []
        self.steps: list[MergeStep] = []
        self.tie_counts: list[int] = []  # ties per step before ``max_ties`` cut the record's list
        with cycle_collector_paused():
            counts = self._lay_out(list(words), long_word)
        if rule is not None:
            for pair in rule.refused(counts):
                del counts[pair]
        if tie_break == "lexical":
            self.tie_key = self._lexical_key
        elif len(self._layouts) == 1:
            self.tie_key = self._layouts[0].first  # the common case, without a call in between
        else:
            self.tie_key = self._first_key
        self.pairs = PairCounts(counts, self.tie_key)
        self.counts = self.pairs.counts

    def _lay_out(self, words: list[tuple[Sequence[int] | str, int]], long_word: int) -> dict[Pair, int]:
        """Check the words, put each in its layout and return every pair's count."""
        ids_of = [ids for ids, _ in words]
        self.freqs: list[int] = [freq for _, freq in words]
        if self.freqs and min(self.freqs) < 1:
            w = next(w for w, freq in enumerate(self.freqs) if freq < 1)
            raise self.error(f"word {w} has count {self.freqs[w]}; counts must be at least 1")
        lengths = list(map(len, ids_of))
        used = {i if isinstance(i, int) else ord(i) for i in set().union(*ids_of)}  # ids, or chr(id) in a str
        unknown = used - self.vocab.keys()
        if unknown:
            raise self.error(f"the words use ids {sorted(unknown)[:5]} that the base vocabulary lacks")
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
        counts: dict[Pair, int] = {}
        for layout in self._layouts:
            for pair, count in layout.pair_counts().items():
                counts[pair] = counts.get(pair, 0) + count
        return counts

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

    def pair_count(self, pair: Pair) -> int:
        return self.counts.get((int(pair[0]), int(pair[1])), 0)

    # -- ordering ----------------------------------------------------------------------------------------------
    def _first_key(self, pair: Pair) -> tuple[int, int]:
        """(first word holding ``pair``, position there): the ``first`` tie key. ``tie_key`` is the run's key."""
        keys = [key for key in (layout.first(pair) for layout in self._layouts) if key is not None]
        if not keys:
            raise AssertionError(f"pair {pair} has a count but no word holds it")
        return min(keys)

    def _lexical_key(self, pair: Pair) -> tuple[bytes, bytes, tuple[int, int]]:
        return self.vocab[pair[0]], self.vocab[pair[1]], self._first_key(pair)

    # -- queries -----------------------------------------------------------------------------------------------
    def best_pair(self) -> Pair | None:
        """The pair the next automatic step merges, or ``None`` when no pair occurs twice."""
        won = self._winner(0)
        return won[0] if won else None

    def _winner(self, max_ties: int | None = None) -> tuple[Pair, list[Pair]] | None:
        """The automatic winner and the first ``max_ties`` pairs tied with it, or None when no pair occurs twice."""
        if self.pairs.top_count() < 2:
            return None
        ranked = self.pairs.ranked_top()
        return ranked[0], ranked[1:] if max_ties is None else ranked[1 : 1 + max_ties]

    @property
    def done(self) -> bool:
        """True when no pair occurs twice (an automatic step has nothing to merge)."""
        return self.pairs.top_count() < 2

    def current_top_pairs(self, k: int) -> list[tuple[Pair, int]]:
        """The ``k`` most frequent pairs with their counts, in the order the winner is chosen."""
        return self.pairs.top_pairs(k)

    # -- one merge ---------------------------------------------------------------------------------------------
    def step(self, force_pair: Pair | None = None, *, top_k: int = 0, max_ties: int | None = None) -> MergeStep:
        """Merge the winning pair (or ``force_pair``) everywhere and return the step's record.

        ``top_k`` > 0 records the k most frequent pairs before the merge; ``max_ties`` keeps only the first
        ties (in tie-break order) in the record, which bounds memory on large corpora (default: all).
        """
        pairs = self.pairs
        if force_pair is None:
            won = self._winner(max_ties)
            if won is None:
                raise self.error("no pair occurs twice; training is complete (pass force_pair to merge a pair anyway)")
            pair, ties = won
            count = pairs.top_count()
            n_ties = len(pairs.ranked(count)) - 1
        else:
            pair = (int(force_pair[0]), int(force_pair[1]))
            count = pairs.get(pair)
            if count < 1:
                raise self.error(
                    f"pair {pair} does not occur in the corpus now (or cannot be merged); "
                    "pick one from current_top_pairs()"
                )
            ties = pairs.first_ranked(count, max_ties, without=pair) if max_ties != 0 else []
            n_ties = len(pairs.bucket(count)) - 1
        top = pairs.top_pairs(top_k) if top_k > 0 else []
        new_id = self.next_id
        if new_id > MAX_ID:
            raise self.error(f"no more ids: the trainer stores ids as characters, at most {MAX_ID}")
        self.next_id += 1
        self.vocab[new_id] = self.vocab[pair[0]] + self.vocab[pair[1]]
        replaced = self._merge(pair, new_id)
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
        return MergeStep(
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

    def _merge(self, pair: Pair, new_id: int) -> int:
        """Apply one merge to every word holding ``pair`` and update the counts; return occurrences merged."""
        replaced, changes = self._layouts[0].merge(*pair, new_id)
        for layout in self._layouts[1:]:
            more, their_changes = layout.merge(*pair, new_id)
            replaced += more
            changes += their_changes
        rule = self.rule
        if rule is None:
            self.pairs.apply(pair, changes)
        else:
            banned = rule.added(new_id, pair)  # first: what it refuses may depend on the new piece
            self.pairs.apply(pair, changes, set(rule.refused([came for _, came, _ in changes])))
            for p in banned:  # no longer counted, so never chosen, forced or ranked again
                self.pairs.remove(p)
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
