"""sentencepiece's unigram trainer, round by round: the pieces ``sentencepiece.SentencePieceTrainer.train(
model_type="unigram", num_threads=1)`` writes for the same corpus and options, in its order, with its scores.

What it does (sentencepiece's ``unigram_model_trainer.cc``, followed here, not copied):

1. The corpus is read as sentencepiece reads it (:func:`.training_corpus.load_sentences`).
2. **Seed pieces**: every character, most frequent first, then the substrings a suffix array of the sentences finds
   (each repeated substring that some two occurrences continue differently; whole characters, 2 to
   ``max_sentencepiece_length`` of them, valid pieces), best first by count times length, at most a million; each
   starts with the log of its count (times length), normalized.
3. With ``split_by_whitespace`` the sentences become their distinct words with counts, most frequent first.
4. **Rounds** until at most 1.1 x ``vocab_size`` pieces are left: ``num_sub_iterations`` EM steps (the E-step's
   expected uses by forward-backward over each word's lattice; the M-step drops pieces expected less than half a
   time and scores the others ``digamma(count) - digamma(total)``), then pruning: a piece its own Viterbi path
   splits goes, and of the others, those whose removal would cost the corpus least likelihood (their uses given to
   their second-best segmentation) go until ``shrinking_factor`` of the pieces are left.
5. Pieces Viterbi can no longer reach go; the required characters are kept (those the model lost get scores just
   above the lowest); the best-scored pieces fill ``vocab_size``, sorted by score.

Every float is computed as sentencepiece computes it (float32 where it keeps float32), so scores are its own. The
heavy passes run in the compiled module ``_spm_unigram.c``; it has no Python twin: where it is not built, this trainer
refuses to run with a message that says so (:data:`NO_TWIN`). Each round is a :class:`UnigramRound` record: its EM
steps, the pieces it removed and why (:data:`WHY`; the last round ends with the final choice), the size after it and
the corpus log-likelihood; :class:`TrainedUnigram` keeps every round's scores so the lab can show the model of any
round. Nothing here prints.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..base import check_text
from ..compiled import twin
from ..training import Cancelled
from .bpe_trainer import model_pieces, normalizer_spec, trainer_spec
from .proto import UNIGRAM, ModelProto, Piece
from .trainer_options import TrainerOptions
from .training_corpus import BOUNDARY_CHAR, UNK_CHAR, CorpusError, load_sized, out_of_reach, script_ranges, word_counts

SEED_SIZE = 1_000_000  # sentencepiece's seed_sentencepiece_size
NEG_INF = float("-inf")
NO_TWIN = ("unigram training needs the compiled module app.engines.sentencepiece._spm_unigram, which is not built "
           "here: build it with `make install-dev` (a C compiler is needed), or train a SentencePiece BPE run")


def f32(x: float) -> float:
    """``x`` rounded to float32, as a C ``float`` holds it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


#: Why a piece left the vocabulary in a round (the third item of each of :attr:`UnigramRound.removed`).
WHY = {
    "em": "the EM step dropped it: the corpus would use it less than half a time",
    "free": "pruning removed it at no cost: no best segmentation of the corpus uses it, or its own best "
            "segmentation splits it",
    "loss": "pruning removed it: of those left, the corpus loses least likelihood without it",
    "unreachable": "no segmentation reaches it any more (another piece always wins on its text)",
    "final": "the final choice: beyond the size asked for, the lowest scored",
}


@dataclass(slots=True)
class UnigramRound:
    """One round (EM steps, then pruning): the pieces it removed (``(piece, loss, why)``: ``why`` a key of
    :data:`WHY`, ``loss`` NaN unless pruned by loss), the vocabulary size after it (meta pieces included; the last
    round's: the model's), the corpus log-likelihood before it pruned, each EM step's log-likelihood and size
    (``em``), and, in the last round, the required characters the final choice brought back (``restored``)."""

    round: int
    removed: list[tuple[str, float, str]]
    vocab_size: int
    log_likelihood: float
    em: list[tuple[float, int]] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "round": self.round,
            "removed": [{"piece": p, "loss": None if math.isnan(loss) else loss, "why": why}
                        for p, loss, why in self.removed],
            "vocab_size": self.vocab_size,
            "log_likelihood": self.log_likelihood,
            "em": [{"log_likelihood": ll, "vocab_size": n} for ll, n in self.em],
            "restored": list(self.restored),
        }

    @classmethod
    def from_dict(cls, d: dict) -> UnigramRound:
        return cls(d["round"], [(x["piece"], math.nan if x["loss"] is None else x["loss"], x["why"]) for x in d["removed"]],
                   d["vocab_size"], d["log_likelihood"], [(e["log_likelihood"], e["vocab_size"]) for e in d["em"]],
                   list(d["restored"]))


@dataclass
class TrainedUnigram:
    """A finished training: the seed pieces, the rounds, each round's scores by seed piece (``scores[0]``: the seed;
    NaN once removed; the last: the finished model's before the final choice), the corpus tokens per round, the
    final pieces (in id order) and the ``.model`` file."""

    pieces: list[str]
    rounds: list[UnigramRound]
    scores: list[array]
    corpus_tokens: list[int]
    final: list[Piece]
    model: bytes
    stop_reason: str
    n_meta: int


def _flags(options: TrainerOptions) -> int:
    return (options.split_by_unicode_script | options.split_by_number << 1 | options.split_digits << 2
            | options.split_by_whitespace << 3 | options.treat_whitespace_as_suffix << 4
            | options.allow_whitespace_only_pieces << 5)


def seed_pieces(sentences: list[str], options: TrainerOptions) -> list[tuple[str, float]]:
    """The seed: characters (count), then the suffix array's substrings (count x length), as float32 scores."""
    chars: Counter = Counter("".join(sentences))
    chars.pop(UNK_CHAR, None)
    chars.pop(BOUNDARY_CHAR, None)
    seed = [(c, f32(float(n))) for c, n in sorted(chars.items(), key=lambda kv: (-kv[1], kv[0]))]
    seeds = twin("_spm_unigram", "seed_candidates")
    if seeds is None:  # pragma: no cover - the twin is built wherever a C compiler is
        raise CorpusError("algorithm", NO_TWIN)
    corpus = b"".join(s.encode("utf-8") + b"\0" for s in sentences)
    text, lengths, scores = seeds(corpus, script_ranges(), _flags(options), options.max_sentencepiece_length, SEED_SIZE)
    lens, values = array("i"), array("f")
    lens.frombytes(lengths)
    values.frombytes(scores)
    at = 0
    for n, score in zip(lens, values):
        seed.append((text[at : at + n].decode("utf-8"), score))
        at += n
    return seed


def to_log_prob(seed: list[tuple[str, float]]) -> list[tuple[str, float]]:
    total = 0.0
    for _, v in seed:
        total += v
    logsum = math.log(total)
    return [(p, f32(math.log(v) - logsum)) for p, v in seed]


def _codepoints(texts: list[str]) -> tuple[array, array]:
    flat = array("i")
    flat.frombytes("".join(texts).encode("utf-32-le"))
    return flat, array("i", map(len, texts))


def train_unigram(
    text: str,
    vocab_size: int | None = None,
    options: TrainerOptions | None = None,
    *,
    learned: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> TrainedUnigram:
    """Train sentencepiece's unigram model on ``text`` (one sentence a line) to ``vocab_size`` pieces, or to the meta
    pieces, the required characters and ``learned`` longer pieces.

    ``progress(rounds done, rounds expected)`` after each round; ``should_stop()`` returning true raises
    :class:`~app.engines.training.Cancelled`. Raises :class:`.training_corpus.CorpusError` for a ``vocab_size`` the
    corpus cannot fill (sentencepiece's "Vocabulary size too high").

    >>> run = train_unigram("the cat sat on the mat\\nthe cat ate the rat\\na hat and a bat\\nthat cat\\n" * 3, 20)
    >>> [p.piece for p in run.final[3:8]], len(run.final)
    (['▁', 'at', 'e', '▁th', '▁cat'], 20)
    """
    check_text(text)
    options = options or TrainerOptions()
    Core = twin("_spm_unigram", "Core")
    if Core is None:  # pragma: no cover
        raise CorpusError("algorithm", NO_TWIN)
    loaded, vocab_size = load_sized(text, options, vocab_size, learned)
    seed = to_log_prob(seed_pieces(loaded.sentences, options))
    if options.split_by_whitespace:
        words = word_counts(loaded.sentences, options)
    else:
        words = [(s, 1) for s in loaded.sentences]
    wcps, wlens = _codepoints([w for w, _ in words])
    pieces = [p for p, _ in seed]
    pcps, plens = _codepoints(pieces)
    core = Core(wcps, wlens, array("q", (f for _, f in words)), pcps, plens)
    n_meta = len(loaded.meta)
    desired = int(vocab_size * 1.1)
    order = array("i", range(len(seed)))
    scores = array("f", (s for _, s in seed))
    snapshots = [_snapshot(len(seed), order, scores)]
    tokens = [core.tokens(order, scores)]
    rounds: list[UnigramRound] = []
    while True:
        if should_stop is not None and should_stop():
            raise Cancelled()
        record = UnigramRound(len(rounds) + 1, [], 0, 0.0)
        for _ in range(options.num_sub_iterations):
            expected, ll = core.estep(order, scores)
            kept_raw, new_scores = core.mstep(bytes(expected))
            order = _keep(order, kept_raw, pieces, record.removed, "em")
            scores = array("f")
            scores.frombytes(bytes(new_scores))
            record.em.append((ll, n_meta + len(order)))
        record.log_likelihood = record.em[0][0]
        new_raw, losses_raw, n_tokens = core.prune(order, scores, desired, options.shrinking_factor)
        losses = array("f")
        losses.frombytes(bytes(losses_raw))
        gone: list[tuple[str, float, str]] = []
        kept = _kept(new_raw)
        alive = set(kept)
        for i in range(len(order)):
            if i not in alive:
                gone.append((pieces[order[i]], losses[i], "free" if math.isnan(losses[i]) else "loss"))
        gone.sort(key=lambda r: (r[2] == "loss", r[1] if r[2] == "loss" else 0.0))  # the free first, then by loss
        record.removed += gone
        scores = array("f", (scores[i] for i in kept))
        order = array("i", (order[i] for i in kept))
        record.vocab_size = n_meta + len(order)
        rounds.append(record)
        snapshots.append(_snapshot(len(seed), order, scores))
        tokens.append(n_tokens)
        if progress is not None:  # with the rounds still expected, were each to shrink by shrinking_factor
            left = len(order) / desired
            more = math.ceil(math.log(left) / -math.log(options.shrinking_factor)) if left > 1 else 0
            progress(record.round, record.round + more)
        if len(order) <= desired:
            break
    last = rounds[-1]
    kept = _kept(core.unreachable(order, scores))
    scores = array("f", (scores[i] for i in kept))
    order = _keep(order, kept, pieces, last.removed, "unreachable")
    final = finalize([(pieces[p], s) for p, s in zip(order, scores)], loaded.required, vocab_size - n_meta)
    if len(final) < vocab_size - n_meta:
        raise out_of_reach("unigram", vocab_size, loaded, len(final) + n_meta,
                           f"{n_meta:,} meta pieces and {len(final):,} others: the rounds left no more")
    # the final choice ends the last round: the pieces beyond the size go, the required characters come back
    chosen = dict(final)
    alive_now = {pieces[i] for i in order}
    last.removed += [(pieces[i], math.nan, "final") for i in order if pieces[i] not in chosen]
    last.restored = [p for p, _ in final if p not in alive_now]
    last.vocab_size = vocab_size
    seed_index = {p: i for i, p in enumerate(pieces)}
    order = array("i", (seed_index[p] for p, _ in final))
    scores = array("f", (s for _, s in final))
    snapshots[-1] = _snapshot(len(seed), order, scores)
    tokens[-1] = core.tokens(order, scores)
    out = model_pieces(loaded, final, vocab_size)
    proto = ModelProto(out, trainer_spec(options, vocab_size, UNIGRAM), normalizer_spec(options))
    return TrainedUnigram(pieces, rounds, snapshots, tokens, out, proto.serialize(), "vocab_size reached", n_meta)


def _kept(raw) -> array:
    kept = array("i")
    kept.frombytes(bytes(raw))
    return kept


def _keep(order: array, kept_raw, pieces: list[str], removed: list, why: str) -> array:
    """``order`` cut to the positions ``kept_raw`` lists; the others go to ``removed`` with ``why``."""
    kept = _kept(kept_raw) if not isinstance(kept_raw, array) else kept_raw
    alive = set(kept)
    removed += [(pieces[order[i]], math.nan, why) for i in range(len(order)) if i not in alive]
    return array("i", (order[i] for i in kept))


def _snapshot(n: int, order: array, scores: array) -> array:
    out = array("f", [math.nan]) * n
    for p, s in zip(order, scores):
        out[p] = s
    return out


def finalize(model: list[tuple[str, float]], required: list[tuple[str, int]], size: int) -> list[tuple[str, float]]:
    """sentencepiece's last choice: the required characters (those the model lost just above its lowest score, a
    little more for each rarer one), then the best-scored pieces up to ``size``, all sorted by score, then piece."""
    scores = dict(model)
    min_score = min(s for _, s in model) if model else 0.0
    final: dict[str, float] = {}
    penalty = 0.0
    delta = f32(0.0001)
    for c, _ in required:
        if c in scores:
            final[c] = scores[c]
        else:
            final[c] = f32(min_score + penalty)
            penalty = f32(penalty + delta)
    if size <= 0:
        return []
    for piece, score in sorted(model, key=lambda ps: (-ps[1], ps[0])):
        if piece in final:
            continue
        if len(final) == size:
            break
        final[piece] = score
    return sorted(final.items(), key=lambda ps: (-ps[1], ps[0]))
