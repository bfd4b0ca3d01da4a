"""Unigram runs in the lab: training through :mod:`app.engines.sentencepiece.unigram_trainer`, and the model of any
round rebuilt from the stored records.

A unigram run's steps are its rounds (:class:`~app.engines.sentencepiece.unigram_trainer.UnigramRound`). Its ids
are those of the trained ``.model`` for the pieces that survive (special pieces, the 256 byte pieces, then by
log-probability), followed by the removed pieces in the order they went, so one id means one piece at every round
and the last round's ids are the exported model's. ``Run.extra`` keeps, per round, the corpus's Viterbi length and
every piece's log-probability (float32, NaN once removed); :func:`round_model` turns them back into a model in
which the removed pieces are ``UNUSED`` (in the vocabulary, never in a segmentation), which our unigram engine
runs.

The option ``merges`` counts pieces beyond the smallest possible vocabulary (special, bytes, characters), as a
BPE run's merges do; ``vocab_size`` is the size itself.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable

from app.engines.errors import TokenplayError
from app.engines.sentencepiece.proto import NORMAL, UNUSED, ModelProto, Piece
from app.engines.sentencepiece.unigram import UnigramTokenizer
from app.engines.sentencepiece.unigram_trainer import N_SPECIAL, UnigramRound, UnigramTrainer

from .options import LabOptionsError, Options, Trained


def train_unigram_run(
    corpus: str,
    options: Options,
    *,
    max_merges: int,
    base_units: int,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Trained:
    """Train a unigram run; ``progress(done rounds, expected rounds)`` after each round. ``base_units`` is what its
    compression is measured against (:func:`app.lab.algorithms.base_units`)."""
    try:
        size = options.vocab_size
        trainer = UnigramTrainer(corpus, size if size is not None else 1_000_000)
        if size is None:
            trainer.vocab_size = trainer.n_special + len(trainer.chars) + options.merges
    except TokenplayError as exc:
        raise LabOptionsError(str(exc)) from None
    expected = max(1, math.ceil(math.log(max(trainer.size, 2) / trainer.vocab_size) / math.log(1 / trainer.shrinking_factor)))
    report = None if progress is None else lambda k, _record: progress(k, max(expected, k))
    trained = trainer.train(progress=report, should_stop=should_stop)
    model = ModelProto.parse(trained.model)
    final = [p.piece for p in model.pieces]
    reason = trained.stop_reason
    if len(final) < trainer.vocab_size:  # a small corpus: EM dropped the pieces it would hardly use
        reason = (
            f"ended at {len(final):,} of the {trainer.vocab_size:,} pieces asked for: the EM step dropped the pieces "
            "the corpus would use less than half a time, and a corpus with few distinct pieces of text has no more"
        )
    removed = [piece for r in trained.rounds for piece, _ in r.removed]
    ids = {piece: i for i, piece in enumerate(final + removed)}
    seed_ids = [ids[p] for p in trained.pieces]
    scores = []
    for snapshot in trained.scores:
        lab = array("f", [math.nan] * len(ids))
        for i in range(N_SPECIAL):
            lab[i] = 0.0
        for seed_index, score in enumerate(snapshot):
            lab[seed_ids[seed_index]] = score
        scores.append(lab.tobytes().hex())
    tokens = trained.corpus_tokens
    return Trained(
        base={i: p.encode("utf-8") for i, p in enumerate(final + removed)},
        steps=trained.rounds,
        n_ties=[],
        initial_tokens=tokens[0],
        base_units=base_units,
        target_merges=len(trained.rounds),
        stop_reason=reason,
        model=trained.model,
        # a seed with every candidate piece (not cut at its size) is the seed of any larger size too: then a run that
        # ends short in its first round ends where any larger size would (app.lab.outcome says so)
        extra={"tokens": tokens, "scores": scores, "n_final": len(final),
               "seed_complete": len(trainer.pieces) < trainer.seed_size},
    )


def round_model(run, k: int) -> UnigramTokenizer:
    """The model after round ``k`` (0: the seed) in the run's ids: removed pieces are ``UNUSED``."""
    return UnigramTokenizer(round_proto(run, k), name=f"lab-{run.id}")


def round_proto(run, k: int) -> ModelProto:
    """The ``.model`` of round ``k`` (what :func:`round_model` runs; ``sentencepiece`` loads it too)."""
    final = ModelProto.parse(run.model)
    scores = array("f")
    scores.frombytes(bytes.fromhex(run.extra["scores"][k]))
    pieces = list(final.pieces)
    pieces += [Piece(run.base[i].decode("utf-8"), 0.0, NORMAL) for i in range(run.extra["n_final"], len(run.base))]
    out = []
    for i, piece in enumerate(pieces):
        if i < N_SPECIAL:
            out.append(piece)
        elif math.isnan(scores[i]):
            out.append(Piece(piece.piece, 0.0, UNUSED))
        else:
            out.append(Piece(piece.piece, scores[i], NORMAL))
    final.pieces = out
    return final


def round_records(rows: list[dict]) -> list[UnigramRound]:
    """Rounds back from their JSON form."""
    return [
        UnigramRound(r["round"], [(x["piece"], x["loss"]) for x in r["removed"]], r["vocab_size"], r["log_likelihood"])
        for r in rows
    ]
