"""SentencePiece BPE and unigram runs in the lab: sentencepiece's own trainers
(:mod:`app.engines.sentencepiece.bpe_trainer`, ``unigram_trainer``), a BPE run's merges turned into the lab's step
records (a unigram run's rounds: :mod:`.unigram_runs`).

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

from array import array
from base64 import b64decode, b64encode
from collections.abc import Callable, Sequence

from app.engines.errors import TokenplayError
from app.engines.sentencepiece.bpe_trainer import TrainedBPE, train_bpe
from app.engines.sentencepiece.proto import NORMAL
from app.engines.sentencepiece.training_corpus import OutOfReach
from app.engines.sentencepiece.unigram_trainer import train_unigram
from app.engines.training.steps import MergeStep

from .options import LabOptionsError, Options, Trained
from .unigram_runs import unigram_trained

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


class PackedSteps(Sequence[MergeStep]):
    """A SentencePiece BPE run's merges as sentencepiece's trainer gives them (:class:`~app.engines.sentencepiece.
    bpe_trainer.TrainedBPE`: int64 rows and pair tables in the model's ids), each :class:`MergeStep` made when it is
    first asked for: a run of 8,000 merges is kept, stored and loaded without 8,000 records and 80,000 table rows of
    Python objects. ``surface`` gives every id's bytes (the base pieces and the merged ones)."""

    def __init__(self, rows: array, tops: array, top_k: int, new_ids: array, surface: dict[int, bytes]):
        self.rows, self.tops, self.top_k, self.new_ids, self.surface = rows, tops, top_k, new_ids, surface
        self._made: dict[int, MergeStep] = {}

    def __len__(self) -> int:
        return len(self.new_ids)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        step = self._made.get(k)
        if step is None:
            step = self._made[k] = self._step(k)
        return step

    def _step(self, k: int) -> MergeStep:
        left, right, count, replaced, tokens = self.rows[5 * k : 5 * k + 5]
        t = self.tops[3 * self.top_k * k : 3 * self.top_k * (k + 1)]
        top = [((t[j], t[j + 1]), t[j + 2]) for j in range(0, len(t), 3) if t[j] >= 0]
        return MergeStep(
            step=k + 1, pair=(left, right), left=self.surface[left], right=self.surface[right], new_id=self.new_ids[k],
            count=count, replaced=replaced, ties=[p for p, c in top[1:] if c == count], corpus_tokens=tokens,
            tie_break=TIE_RULE, top_pairs=top,
        )

    def n_ties(self) -> list[int]:
        """Per merge, the candidates of its pair table that had the winner's count (besides the winner)."""
        counts, k = self.tops[2::3], self.top_k
        return [counts[k * n + 1 : k * (n + 1)].count(counts[k * n]) for n in range(len(self))]

    def tokens(self) -> dict[int, bytes]:
        """Each merged piece's id and bytes."""
        return {i: self.surface[i] for i in self.new_ids}

    def corpus_tokens(self, k: int) -> int:
        return self.rows[5 * k + 4]

    @property
    def nbytes(self) -> int:
        return (len(self.rows) + len(self.tops)) * 8 + len(self.new_ids) * 4

    def to_json(self) -> dict:
        return {"rows": b64encode(self.rows.tobytes()).decode(), "tops": b64encode(self.tops.tobytes()).decode(),
                "top_k": self.top_k, "new_ids": list(self.new_ids),
                "merged": [self.surface[i].decode("utf-8") for i in self.new_ids]}

    @classmethod
    def from_json(cls, d: dict, base: dict[int, bytes]) -> PackedSteps:
        """Back from :meth:`to_json`, with the run's base pieces (``Run.base``)."""
        rows, tops = array("q"), array("q")
        rows.frombytes(b64decode(d["rows"]))
        tops.frombytes(b64decode(d["tops"]))
        surface = dict(base) | {i: t.encode("utf-8") for i, t in zip(d["new_ids"], d["merged"])}
        return cls(rows, tops, d["top_k"], array("i", d["new_ids"]), surface)


def train_sentencepiece_run(
    corpus: str,
    options: Options,
    *,
    max_merges: int,
    base_units: int,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Trained:
    """Train a SentencePiece BPE or unigram run with sentencepiece's trainer; ``progress(done, total)`` as merges (or
    rounds) are made. ``base_units`` is what its compression is measured against."""
    trainer = train_bpe if options.algorithm == "sentencepiece" else train_unigram
    try:
        trained = trainer(corpus, options.vocab_size, options.spm_options(), learned=options.merges, progress=progress,
                          should_stop=should_stop)
    except TokenplayError as exc:
        raise spm_refusal(exc, options) from None
    if options.algorithm == "unigram":
        return unigram_trained(trained, base_units)
    if trained.n_merges > max_merges:
        raise LabOptionsError(f"vocab_size {options.vocab_size:,} needs {trained.n_merges:,} merges on this corpus; "
                              f"the lab makes at most {max_merges:,} merges", "vocab_size")
    return _bpe_trained(trained, base_units)


def _bpe_trained(run: TrainedBPE, base_units: int) -> Trained:
    """A finished BPE training as the lab keeps it: its merges packed (:class:`PackedSteps`), in the model's ids."""
    surface = {i: p.piece.encode("utf-8") for i, p in enumerate(run.pieces)}
    n = run.n_merges
    new_ids = array("i", (i for i, p in enumerate(run.pieces) if p.type == NORMAL))[:n]  # merged pieces come first
    steps = PackedSteps(run.rows, run.tops, run.top_k, new_ids, surface)
    merged = set(new_ids)
    return Trained(
        base={i: b for i, b in surface.items() if i not in merged},
        steps=steps,
        n_ties=steps.n_ties(),
        initial_tokens=run.initial_tokens,
        base_units=base_units,
        target_merges=n,
        stop_reason="vocab_size reached",
        top0=list(steps[0].top_pairs) if n else [],
        model=run.serialize(),
        extra={"n_meta": len(run.pieces) - len(run.required) - n},
    )
