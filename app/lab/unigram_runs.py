"""Unigram runs in the lab: sentencepiece's own trainer (:mod:`app.engines.sentencepiece.unigram_trainer`), and
the model of any round rebuilt from the stored records.

A unigram run's steps are its rounds (:class:`~app.engines.sentencepiece.unigram_trainer.UnigramRound`: EM
steps, pruning, and in the last the final choice). Its ids are those of the trained ``.model`` for the pieces that
survive (the meta pieces at their ids, the others by score), followed by the removed pieces in the order they went,
so one id means one piece at every round and the last round's ids are the exported model's. ``Run.extra`` keeps, per round, the corpus's Viterbi length and
every piece's log-probability (float32, NaN once removed); :func:`round_model` turns them back into a model in
which the removed pieces are ``UNUSED`` (in the vocabulary, never in a segmentation), which our unigram engine
runs.

The option ``merges`` counts pieces beyond the smallest possible vocabulary (the meta pieces and the characters
sentencepiece requires), as a BPE run's merges do; ``vocab_size`` is the size itself. A size the corpus cannot fill is
refused, as sentencepiece refuses it.
"""

from __future__ import annotations

import math
from array import array

from app.engines.sentencepiece.proto import NORMAL, UNUSED, ModelProto, Piece
from app.engines.sentencepiece.unigram import UnigramTokenizer
from app.engines.sentencepiece.unigram_trainer import TrainedUnigram, UnigramRound

from .options import Trained


def unigram_trained(trained: TrainedUnigram, base_units: int) -> Trained:
    """A finished unigram training as the lab keeps it (see the module); ``base_units`` is what its compression is
    measured against (:func:`app.lab.algorithms.base_units`)."""
    final = [p.piece for p in trained.final]
    kept = set(final)
    removed = [piece for r in trained.rounds for piece, _, _ in r.removed if piece not in kept]
    ids = {piece: i for i, piece in enumerate(final + removed)}
    seed_ids = [ids[p] for p in trained.pieces]
    scores = []
    for snapshot in trained.scores:
        lab = array("f", [math.nan] * len(ids))
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
        stop_reason=trained.stop_reason,
        model=trained.model,
        extra={"tokens": tokens, "scores": scores, "n_final": len(final), "n_meta": trained.n_meta},
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
        if i < run.extra["n_final"] and piece.type != NORMAL:  # meta pieces stay as they are
            out.append(piece)
        elif math.isnan(scores[i]):
            out.append(Piece(piece.piece, 0.0, UNUSED))
        else:
            out.append(Piece(piece.piece, scores[i], NORMAL))
    final.pieces = out
    return final


def round_records(rows: list[dict]) -> list[UnigramRound]:
    """Rounds back from their JSON form."""
    return [UnigramRound.from_dict(r) for r in rows]
