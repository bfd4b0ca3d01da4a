"""SentencePiece BPE runs in the lab: sentencepiece's own trainer (:mod:`app.engines.sentencepiece.bpe_trainer`), its
merges turned into the lab's step records.

A run's ids are those of the ``.model`` it exports (what sentencepiece writes): the meta pieces at their ids, the
merged pieces in merge order, then the characters. Its base vocabulary is the meta pieces and the characters; merge
``k`` makes the ``k``-th merged piece, from the two pieces sentencepiece joined, with the count the pair had when it
won; the step's pair table is the best candidates before it (count, then the shorter piece, then byte order:
sentencepiece's order), its ties the candidates with the winner's count.

The option ``merges`` counts merges; ``vocab_size`` is the model's size, as sentencepiece's ``vocab_size``.
"""

from __future__ import annotations

from collections.abc import Callable

from app.engines.errors import TokenplayError
from app.engines.sentencepiece.bpe_trainer import train_bpe
from app.engines.sentencepiece.training_corpus import load_sentences
from app.engines.training.steps import MergeStep

from .options import LabOptionsError, Options, Trained

TIE_RULE = "sentencepiece"  # what a step's tie_break says: count, then the shorter piece, then byte order


def train_spm_run(
    corpus: str,
    options: Options,
    *,
    max_merges: int,
    base_units: int,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Trained:
    """Train a SentencePiece BPE run; ``progress(done, total)`` as merges are made."""
    spm = options.spm_options()
    try:
        size = options.vocab_size
        if size is None:  # merges asked for: the size is the meta pieces, the required characters and the merges
            probe = load_sentences(corpus, spm, 1 << 30)
            size = len(probe.meta) + len(probe.required) + (options.merges or 0)
        run = train_bpe(corpus, size, spm, progress=progress, should_stop=should_stop)
    except TokenplayError as exc:
        raise LabOptionsError(str(exc), getattr(exc, "field", None)) from None
    if len(run.merges) > max_merges:
        raise LabOptionsError(f"vocab_size {size:,} needs {len(run.merges):,} merges; the lab's limit is "
                              f"{max_merges:,} merges", "vocab_size")
    ids = {p.piece: i for i, p in enumerate(run.pieces)}
    merged = {m.piece for m in run.merges}
    base = {i: p.piece.encode("utf-8") for i, p in enumerate(run.pieces) if p.piece not in merged}
    steps: list[MergeStep] = []
    n_ties: list[int] = []
    tokens = run.initial_tokens
    for k, m in enumerate(run.merges, start=1):
        pair = (ids[m.left], ids[m.right])
        top = [((ids[a], ids[b]), c) for a, b, c in m.top]
        ties = [p for p, c in top[1:] if c == m.count]
        steps.append(MergeStep(
            step=k, pair=pair, left=m.left.encode("utf-8"), right=m.right.encode("utf-8"), new_id=ids[m.piece],
            count=m.count, replaced=m.replaced, ties=ties, corpus_tokens=m.corpus_tokens, tie_break=TIE_RULE,
            top_pairs=top,
        ))
        n_ties.append(len(ties))
        tokens = m.corpus_tokens
    return Trained(
        base=base,
        steps=steps,
        n_ties=n_ties,
        initial_tokens=run.initial_tokens,
        base_units=base_units,
        target_merges=len(steps),
        stop_reason="vocab_size reached",
        top0=list(steps[0].top_pairs) if steps else [],
        model=run.serialize(),
        extra={"final_tokens": tokens, "n_meta": sum(1 for p in run.pieces if p.type != 1)},
    )
