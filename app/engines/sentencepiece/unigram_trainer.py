"""Train a SentencePiece *unigram* model, round by round, every round recorded as data.

What it does, as SentencePiece's unigram trainer does it:

1. The corpus is normalized as our saved models say (``identity``, the dummy prefix ``▁``, spaces as ``▁``) and
   cut into words before each ``▁`` (:func:`.trainer.word_frequencies`).
2. **Seed vocabulary**: every character, and the most frequent substrings of the words (at least twice, at most
   ``max_piece_length`` characters), ranked by frequency times length, ``seed_size`` pieces in all; each starts
   with the log of that rank score, normalized.
3. **EM rounds**: the E-step computes, by forward-backward over each word's lattice, how often each piece is
   expected to be used; the M-step re-estimates each piece's log-probability from those counts the Bayesian way
   SentencePiece does (``digamma(count) - digamma(total)``), dropping pieces expected less than half a time.
4. **Pruning**: with the words segmented by Viterbi, the *loss* of a piece is how much corpus likelihood goes
   if it is removed and its uses fall to its best other segmentation (the share of words using it, times the
   log-probability it loses); the pieces with the smallest losses go, keeping at most ``shrinking_factor`` of the
   vocabulary per round, until ``vocab_size`` pieces are left. Characters always stay (they have no other
   segmentation), so any text of the corpus can be segmented.

Each round (two EM iterations, then pruning) is a :class:`UnigramRound`: the pieces it removed with their loss,
smallest first (the pruning order), the vocabulary size after it and the corpus log-likelihood before pruning.
The result saves as a real unigram ``.model`` (byte fallback, ``identity`` normalizer) that the ``sentencepiece``
library and :class:`.unigram.UnigramTokenizer` encode identically. Unlike SentencePiece, the last round prunes
straight to ``vocab_size`` by loss (SentencePiece keeps 10% more, then cuts by score), and seeds come from word
substrings rather than a suffix array. Nothing here prints.

The seed's substring counts, the E-step, the Viterbi counts and the pruning losses run in the compiled twin
app/engines/sentencepiece/_unigram_train.c where it is built (:func:`..compiled.twin`); the Python loops here give the
same numbers, bit for bit.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from ..base import check_text
from ..compiled import twin
from ..training import Cancelled, TrainingError
from .model import byte_piece
from .proto import BYTE, NORMAL, UNIGRAM, ModelProto, Piece
from .trainer import META_PIECES, TrainedSentencePiece, word_frequencies

EXPECTED_MIN = 0.5  # the M-step drops pieces expected less often than this (SentencePiece's threshold)
EM_ITERATIONS = 2  # per round (SentencePiece's num_sub_iterations)
NEG_INF = float("-inf")
N_SPECIAL = len(META_PIECES) + 256  # special and byte pieces come first in every model trained here


@dataclass(slots=True)
class UnigramRound:
    """One EM + pruning round: what it removed (``(piece, loss)``, smallest loss first) and where it left the model."""

    round: int
    removed: list[tuple[str, float]]
    vocab_size: int  # pieces after the round (special and byte pieces included)
    log_likelihood: float  # of the corpus under the model before pruning

    def to_dict(self) -> dict:
        return {
            "round": self.round,
            "removed": [{"piece": p, "loss": loss} for p, loss in self.removed],
            "vocab_size": self.vocab_size,
            "log_likelihood": self.log_likelihood,
        }


@dataclass
class TrainedUnigram:
    """A finished training: the seed pieces, the rounds, each round's log-probabilities and the ``.model`` file.

    ``pieces[i]`` is piece ``i`` of the seed; ``scores[k][i]`` its log-probability after round ``k`` (``scores[0]``:
    the seed; the last: the saved model's), NaN once removed; ``corpus_tokens[k]`` the corpus's Viterbi length then.
    """

    pieces: list[str]
    rounds: list[UnigramRound]
    scores: list[array]
    corpus_tokens: list[int]
    model: bytes
    stop_reason: str


def digamma(x: float) -> float:
    """The digamma function (the derivative of log Γ), by recurrence and its asymptotic series.

    >>> round(digamma(1.0), 6)
    -0.577216
    """
    result = 0.0
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 0.5
    inv2 = 1 / (x * x)
    return result + math.log(x) + inv2 / 24 - 7 * inv2**2 / 960 + 31 * inv2**3 / 8064 - 127 * inv2**4 / 30720


def seed_pieces(words: Counter, max_len: int, size: int) -> dict[str, float]:
    """Every character plus the frequent substrings of ``words`` (``size`` pieces in all), each with its
    normalized log score ``log(frequency * length)``.

    >>> sorted(seed_pieces(Counter({"▁ab": 2, "▁b": 1}), 3, 5))
    ['a', 'ab', 'b', '▁', '▁ab']
    """
    chars: Counter = Counter()
    for word, freq in words.items():
        for c in word:
            chars[c] += freq
    kept = {c: float(f) for c, f in chars.items()}
    counts = substring_counts(words, max_len)
    best = heapq.nsmallest(max(0, size - len(kept)), ((-f * len(p), p) for p, f in counts if f >= 2))
    for negative_score, piece in best:  # highest score first, ties by piece
        kept[piece] = float(-negative_score)
    total = math.log(sum(kept.values()))
    return {p: math.log(s) - total for p, s in kept.items()}


def substring_counts(words: Counter, max_len: int) -> Iterable[tuple[str, int]]:
    """``(substring, frequency)`` of every substring of 2 to ``max_len`` characters of ``words`` (by the compiled
    twin where it is built).

    >>> sorted(substring_counts(Counter({"abc": 2, "bc": 1}), 2))
    [('ab', 2), ('bc', 3)]
    """
    count = twin("_unigram_train", "count_substrings")
    if count is not None:
        found, totals = count(list(words), array("q", words.values()), max_len)
        return zip(found, array("q", totals))
    counts: Counter = Counter()
    for word, freq in words.items():
        n = len(word)
        substrings = [word[i:j] for i in range(n) for j in range(i + 2, min(n, i + max_len) + 1)]
        if freq == 1:  # most distinct words: Counter.update counts them in C
            counts.update(substrings)
        else:
            for sub in substrings:
                counts[sub] += freq
    return counts.items()


class _Twin(NamedTuple):
    """The compiled twin's loops (app/engines/sentencepiece/_unigram_train.c) over its flat lattices."""

    build: Callable
    estep: Callable
    viterbi_counts: Callable
    losses: Callable


class _Lattices:
    """Every distinct word's lattice over the current pieces: per start, the ``(end, piece index)`` of each piece."""

    def __init__(self, words: list[str], index: dict[str, int], max_len: int):
        self.nodes: list[list[list[tuple[int, int]]]] = []
        for word in words:
            n = len(word)
            starts: list[list[tuple[int, int]]] = []
            for i in range(n):
                starts.append([(j, index[word[i:j]]) for j in range(i + 1, min(n, i + max_len) + 1) if word[i:j] in index])
            self.nodes.append(starts)


def _forward_backward(starts: list[list[tuple[int, int]]], logp: list[float], freq: int, expected: list[float]) -> float:
    """Add ``freq`` times each piece's posterior use in one word to ``expected``; return the word's log-likelihood.

    Log-probabilities are added pairwise (``log(e^a + e^b)``), one exponential per lattice node and direction.
    """
    n = len(starts)
    exp, log1p = math.exp, math.log1p
    alpha = [NEG_INF] * (n + 1)
    alpha[0] = 0.0
    for i in range(n):
        a = alpha[i]
        if a == NEG_INF:
            continue
        for j, p in starts[i]:
            c = a + logp[p]
            b = alpha[j]
            if b == NEG_INF:
                alpha[j] = c
            elif c > b:
                alpha[j] = c + log1p(exp(b - c))
            elif c != NEG_INF:
                alpha[j] = b + log1p(exp(c - b))
    beta = [NEG_INF] * (n + 1)
    beta[n] = 0.0
    for i in range(n - 1, -1, -1):
        acc = NEG_INF
        for j, p in starts[i]:
            c = logp[p] + beta[j]
            if acc == NEG_INF:
                acc = c
            elif c > acc:
                acc = c + log1p(exp(acc - c))
            elif c != NEG_INF:
                acc = acc + log1p(exp(c - acc))
        beta[i] = acc
    z = alpha[n]
    for i in range(n):
        a = alpha[i] - z
        if a == NEG_INF:
            continue
        for j, p in starts[i]:
            lp = logp[p]
            if lp != NEG_INF and beta[j] != NEG_INF:
                expected[p] += freq * exp(a + lp + beta[j])
    return z


def _viterbi(starts: list[list[tuple[int, int]]], logp: list[float], skip: int = -1) -> list[int]:
    """The best segmentation of one word (piece indices), never using piece ``skip``; [] when there is none."""
    n = len(starts)
    best = [NEG_INF] * (n + 1)
    back: list[tuple[int, int]] = [(-1, -1)] * (n + 1)
    best[0] = 0.0
    for i in range(n):
        if best[i] == NEG_INF:
            continue
        for j, p in starts[i]:
            score = best[i] + logp[p]
            if p != skip and score > best[j]:
                best[j], back[j] = score, (i, p)
    if best[n] == NEG_INF:
        return []
    out: list[int] = []
    end = n
    while end > 0:
        end, p = back[end]
        out.append(p)
    out.reverse()
    return out


class UnigramTrainer:
    """A unigram training in progress: :meth:`round` runs one round (the lab reports each)."""

    def __init__(
        self,
        corpus: str,
        vocab_size: int,
        *,
        max_piece_length: int = 16,
        seed_size: int | None = None,
        shrinking_factor: float = 0.75,
    ):
        check_text(corpus)
        self.words = word_frequencies(corpus)
        if not self.words:
            raise TrainingError("the corpus is empty: unigram training needs some text")
        self.vocab_size = vocab_size
        self.max_len = max_piece_length
        self.shrinking_factor = shrinking_factor
        self.n_special = N_SPECIAL
        self.seed_size = seed_size or max(10 * vocab_size, 2_000)  # the most pieces the seed may have
        seed = seed_pieces(self.words, max_piece_length, self.seed_size)
        self.chars = {p for p in seed if len(p) == 1}
        if vocab_size < self.n_special + len(self.chars):
            raise TrainingError(
                f"vocab_size {vocab_size:,} is below the {self.n_special + len(self.chars):,} pieces every unigram "
                f"model of this corpus needs (3 special, 256 bytes, {len(self.chars):,} characters); choose at least that"
            )
        self.pieces = sorted(seed, key=lambda p: (-seed[p], p))
        self.index = {p: i for i, p in enumerate(self.pieces)}
        self.logp = [seed[p] for p in self.pieces]
        self.alive = [True] * len(self.pieces)
        self.word_list = list(self.words)
        self.freqs = [self.words[w] for w in self.word_list]
        self.rounds: list[UnigramRound] = []
        twins = [twin("_unigram_train", name) for name in _Twin._fields]
        self._twin = None if None in twins else _Twin(*twins)
        if self._twin is not None:
            build = self._twin.build
            prefixes = {p[:k] for p in self.pieces for k in range(1, len(p))}  # where a longer piece may start
            # flat lattices of every word and every seed piece, over the whole seed: the twin skips the dead
            # pieces (log-probability -inf) as the Python arithmetic does, so they are never filtered
            self._word_lattice = build(self.word_list, self.index, prefixes, self.max_len)
            self._piece_lattice = build(self.pieces, self.index, prefixes, self.max_len)
            self._freq_array = array("q", self.freqs)
        # Every word's lattice over the whole seed, built once: a removed piece keeps its nodes but gets a log-
        # probability of -inf, so no path uses it (each round filters the nodes down to the living pieces).
        self._seed_nodes = [] if self._twin is not None else _Lattices(self.word_list, self.index, self.max_len).nodes
        self._live_nodes = self._seed_nodes
        self._stale = False  # pieces died since the living nodes were filtered
        self._piece_nodes: dict[int, list[list[tuple[int, int]]]] = {}
        self.scores: list[array] = [self._snapshot()]
        self.corpus_tokens: list[int] = [self._corpus_tokens()]  # Viterbi tokens of the corpus after each round

    # -- one round ------------------------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """The vocabulary size now (special and byte pieces included)."""
        return self.n_special + sum(self.alive)

    @property
    def done(self) -> bool:
        return self.size <= self.vocab_size

    def _lattices(self) -> list | tuple:
        """Every word's lattice over the living pieces (filtered from the seed's, kept until pieces die); with the
        compiled twin, its flat lattices over the whole seed."""
        if self._twin is not None:
            return self._word_lattice
        if self._stale:
            alive = self.alive
            self._live_nodes = [[[(j, p) for j, p in nodes if alive[p]] for nodes in starts] for starts in self._seed_nodes]
            self._stale = False
        return self._live_nodes

    def _lattice_of_piece(self, i: int) -> list[list[tuple[int, int]]]:
        found = self._piece_nodes.get(i)
        if found is None:
            found = self._piece_nodes[i] = _Lattices([self.pieces[i]], self.index, self.max_len).nodes[0]
        return found

    def em_step(self, lattices: list | tuple) -> float:
        """One EM iteration; returns the corpus log-likelihood under the model before it."""
        expected: list[float] | array
        if self._twin is not None:
            expected = self._zeros(len(self.pieces))
            likelihood = self._twin.estep(lattices, array("d", self.logp), self._freq_array, expected)
        else:
            expected = [0.0] * len(self.pieces)
            likelihood = 0.0
            for starts, freq in zip(lattices, self.freqs):
                likelihood += freq * _forward_backward(starts, self.logp, freq, expected)
        kept = [i for i, alive in enumerate(self.alive) if alive and (expected[i] >= EXPECTED_MIN or self.pieces[i] in self.chars)]
        total = digamma(sum(max(expected[i], EXPECTED_MIN) for i in kept))
        logp = [NEG_INF] * len(self.pieces)
        for i in kept:
            logp[i] = digamma(max(expected[i], EXPECTED_MIN)) - total
        alive = [lp != NEG_INF for lp in logp]
        self._stale = self._stale or alive != self.alive
        self.alive, self.logp = alive, logp
        return likelihood

    def losses(self, lattices: list | tuple) -> list[tuple[float, int]]:
        """``(loss, piece index)`` for every piece that may go (characters never do), smallest loss first."""
        if self._twin is not None:
            return self._compiled_losses(lattices)
        uses = [0.0] * len(self.pieces)  # Viterbi uses, times word frequency
        words_using = [0.0] * len(self.pieces)  # frequency of the words whose Viterbi path uses the piece
        for starts, freq in zip(lattices, self.freqs):
            path = _viterbi(starts, self.logp)
            for p in path:
                uses[p] += freq
            for p in set(path):
                words_using[p] += freq
        total_uses = sum(uses)
        total_words = sum(self.freqs)
        log_total = math.log(total_uses)
        out: list[tuple[float, int]] = []
        for i, piece in enumerate(self.pieces):
            if not self.alive[i] or piece in self.chars:
                continue
            if uses[i] == 0:
                out.append((0.0, i))
                continue
            alternative = _viterbi(self._lattice_of_piece(i), self.logp, skip=i)
            log_alt_total = math.log(total_uses + uses[i] * (len(alternative) - 1))
            logprob_piece = math.log(uses[i]) - log_total
            logprob_alt = 0.0
            for a in alternative:  # added in path order, as the compiled twin does
                logprob_alt += math.log(uses[a] + uses[i]) - log_alt_total
            out.append((words_using[i] / total_words * (logprob_piece - logprob_alt), i))
        out.sort()
        return out

    def _compiled_losses(self, lattices: tuple) -> list[tuple[float, int]]:
        """:meth:`losses` by the compiled twin: the same numbers, bit for bit."""
        logp = array("d", self.logp)
        uses, words_using = self._zeros(len(self.pieces)), self._zeros(len(self.pieces))
        self._twin.viterbi_counts(lattices, logp, self._freq_array, uses, words_using)
        candidates = array("i", (i for i, p in enumerate(self.pieces) if self.alive[i] and p not in self.chars))
        found = self._zeros(len(candidates))
        self._twin.losses(self._piece_lattice, logp, uses, words_using, candidates, sum(uses), sum(self.freqs), found)
        return sorted(zip(found, candidates))

    @staticmethod
    def _zeros(n: int) -> array:
        return array("d", bytes(8 * n))

    def round(self) -> UnigramRound:
        """Two EM iterations, then prune to ``max(vocab_size, shrinking_factor * size)``."""
        before = list(self.alive)
        for _ in range(EM_ITERATIONS):
            likelihood = self.em_step(self._lattices())
        # pieces the M-step dropped (expected less than half a use) go first, at no loss
        removed = [(self.pieces[i], 0.0) for i, (was, now) in enumerate(zip(before, self.alive)) if was and not now]
        lattices = self._lattices()
        size = self.size  # counted once: a count per removed piece made pruning quadratic
        target = max(self.vocab_size, int(self.shrinking_factor * size))
        for loss, i in self.losses(lattices):
            if size <= target:
                break
            size -= 1
            self.alive[i] = False
            self.logp[i] = NEG_INF  # no path uses it any more
            self._stale = True
            removed.append((self.pieces[i], loss))
        record = UnigramRound(len(self.rounds) + 1, removed, self.size, likelihood)
        self.rounds.append(record)
        self.scores.append(self._snapshot())
        self.corpus_tokens.append(self._corpus_tokens())
        return record

    def _corpus_tokens(self) -> int:
        """How many pieces the corpus's words are cut into by Viterbi now."""
        if self._twin is not None:
            uses, words_using = self._zeros(len(self.pieces)), self._zeros(len(self.pieces))  # not needed here
            return self._twin.viterbi_counts(self._word_lattice, array("d", self.logp), self._freq_array, uses, words_using)
        return sum(freq * len(_viterbi(starts, self.logp)) for starts, freq in zip(self._lattices(), self.freqs))

    def _snapshot(self) -> array:
        return array("f", (lp if alive else math.nan for lp, alive in zip(self.logp, self.alive)))

    # -- the result -----------------------------------------------------------------------------------------------
    def model_proto(self) -> ModelProto:
        """The trained model: special pieces, the 256 byte pieces, then the pieces by log-probability.

        The last EM pass may drop more pieces the corpus would use less than half a time: the last round ends
        with that pass, so they count among its removed pieces (at no loss, with the EM step's others)."""
        before = list(self.alive)
        self.em_step(self._lattices())  # the final probabilities, as SentencePiece's last EM pass
        dropped = [(self.pieces[i], 0.0) for i, (was, now) in enumerate(zip(before, self.alive)) if was and not now]
        if dropped and self.rounds:
            last = self.rounds[-1]
            last.removed[:0] = dropped
            last.vocab_size = self.size
        self.scores[-1] = self._snapshot()  # the last round ends with them
        self.corpus_tokens[-1] = self._corpus_tokens()
        pieces = [Piece(p, 0.0, t) for p, t in META_PIECES] + [Piece(byte_piece(b), 0.0, BYTE) for b in range(256)]
        alive = sorted((i for i, a in enumerate(self.alive) if a), key=lambda i: (-self.logp[i], self.pieces[i]))
        pieces += [Piece(self.pieces[i], self.logp[i], NORMAL) for i in alive]
        proto = TrainedSentencePiece(pieces, max_piece_length=self.max_len).to_proto()
        proto.trainer_spec.model_type = UNIGRAM
        return proto

    def train(self, progress: Callable[[int, UnigramRound], None] | None = None, should_stop: Callable[[], bool] | None = None) -> TrainedUnigram:
        """Run rounds until ``vocab_size`` is reached (or a round removes nothing more); at least one, which the
        final EM pass ends (so a seed already small enough gets its EM step too)."""
        while not self.done or not self.rounds:
            if should_stop is not None and should_stop():
                raise Cancelled()
            record = self.round()
            if progress is not None:
                progress(record.round, record)
            if not record.removed:
                break
        reason = "vocab_size reached" if self.done else "no piece left to remove"
        model = self.model_proto().serialize()
        return TrainedUnigram(self.pieces, self.rounds, self.scores, self.corpus_tokens, model, reason)


def train_unigram(corpus: str, vocab_size: int, **options) -> TrainedUnigram:
    """Train a unigram model on ``corpus`` to ``vocab_size`` pieces (see :class:`UnigramTrainer` for options).

    >>> trained = train_unigram("low lower newest widest\\n" * 5, 290)
    >>> trained.rounds[0].removed[:2], trained.rounds[-1].vocab_size
    ([('est', 0.0), ('low', 0.0)], 274)
    """
    return UnigramTrainer(corpus, vocab_size, **options).train()
