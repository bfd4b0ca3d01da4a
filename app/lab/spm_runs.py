"""SentencePiece BPE runs in the lab: sentencepiece's own trainer (:mod:`app.engines.sentencepiece.bpe_trainer`), its
merges turned into the lab's step records.

A run's ids are those of the ``.model`` it exports (what sentencepiece writes): the meta pieces at their ids (``<unk>``,
``<s>``, ``</s>``, user-defined symbols, the 256 byte pieces with byte fallback), the merged pieces in merge order,
then the characters, most frequent first. Its base vocabulary is the meta pieces and the characters; merge ``k``
makes the ``k``-th merged piece from the two pieces sentencepiece joined, with the count the pair had when it won
(its frequency); the step's pair table is the best candidates before it in sentencepiece's order (count, then the
shorter piece, then the piece's bytes: :data:`TIE_RULE`), its ties the candidates with the winner's count.

The option ``merges`` counts merges; ``vocab_size`` is the model's size, as sentencepiece's ``vocab_size``. A size the
corpus cannot fill is refused as sentencepiece refuses it (:func:`spm_refusal` says it in the option the run was
given).
"""

from __future__ import annotations

from collections.abc import Callable

from app.engines.errors import TokenplayError
from app.engines.sentencepiece.bpe_trainer import train_bpe
from app.engines.sentencepiece.training_corpus import OutOfReach
from app.engines.training.steps import MergeStep

from .options import LabOptionsError, Options, Trained

#: What a SentencePiece BPE step's ``tie_break`` says: sentencepiece's own order of equal counts.
TIE_RULE = "sentencepiece"


def spm_refusal(exc: TokenplayError, options: Options) -> LabOptionsError:
    """sentencepiece's refusal of a run as the lab's error, naming the option (``merges`` when the run asked for a
    number of merges or learned pieces rather than a size)."""
    if isinstance(exc, OutOfReach) and options.merges is not None:
        most = exc.reached - exc.least
        what = "merges" if options.algorithm == "sentencepiece" else "learned pieces"
        return LabOptionsError(
            f"merges {options.merges:,} is more than this corpus allows: sentencepiece's trainer ends at {most:,} "
            f"{what} on it (a vocab_size of {exc.reached:,}); choose at most {most:,}, or add text",
            "merges",
        )
    return LabOptionsError(str(exc), getattr(exc, "field", None))


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
        run = train_bpe(corpus, options.vocab_size, spm, learned=options.merges, progress=progress,
                        should_stop=should_stop)
    except TokenplayError as exc:
        raise spm_refusal(exc, options) from None
    if len(run.merges) > max_merges:
        raise LabOptionsError(f"vocab_size {options.vocab_size:,} needs {len(run.merges):,} merges on this corpus; the "
                              f"lab makes at most {max_merges:,} merges", "vocab_size")
    ids = {p.piece: i for i, p in enumerate(run.pieces)}
    merged = {m.piece for m in run.merges}
    base = {i: p.piece.encode("utf-8") for i, p in enumerate(run.pieces) if p.piece not in merged}
    steps: list[MergeStep] = []
    n_ties: list[int] = []
    for k, m in enumerate(run.merges, start=1):
        top = [((ids[a], ids[b]), c) for a, b, c in m.top]
        ties = [p for p, c in top[1:] if c == m.count]
        steps.append(MergeStep(
            step=k, pair=(ids[m.left], ids[m.right]), left=m.left.encode("utf-8"), right=m.right.encode("utf-8"),
            new_id=ids[m.piece], count=m.count, replaced=m.replaced, ties=ties, corpus_tokens=m.corpus_tokens,
            tie_break=TIE_RULE, top_pairs=top,
        ))
        n_ties.append(len(ties))
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
        extra={"n_meta": len(run.pieces) - len(run.required) - len(run.merges)},
    )
