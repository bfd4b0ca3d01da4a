"""A lab run as data: its corpus, options, status and, once done, every merge record; and its JSON form.

A run is immutable once done: manual mode makes a *new* run (``parent`` names the one it continues), so a URL
``/lab/runs/<id>?step=k`` always shows the same thing. Where runs are kept is :mod:`.stores`.
"""

from __future__ import annotations

import secrets
import time
import functools
from dataclasses import dataclass, field
from typing import ClassVar

from app.engines.training.steps import MergeStep
from app.engines.wordpiece.trainer import WordPieceStep

from .options import ALGORITHM_LABELS, Options, Trained
from .spm_runs import PackedSteps


def new_id() -> str:
    return secrets.token_hex(5)


def valid_id(run_id: str) -> bool:
    return 4 <= len(run_id) <= 32 and all(c in "0123456789abcdef" for c in run_id)


@dataclass
class Run:
    #: What a store's message calls it (:mod:`app.lab.stores`).
    STORED_AS: ClassVar[str] = "the lab run"

    id: str
    corpus: str
    options: Options
    status: str = "queued"
    error: str | None = None
    error_field: str | None = None  # the option the error is about ("vocab_size", "sentencepiece.byte_fallback"...)
    done_merges: int = 0
    target_merges: int = 0
    created: float = field(default_factory=time.time)
    parent: str | None = None
    base: dict[int, bytes] = field(default_factory=dict)
    steps: list[MergeStep] = field(default_factory=list)
    n_ties: list[int] = field(default_factory=list)
    initial_tokens: int = 0
    base_units: int = 0
    stop_reason: str = ""
    top0: list = field(default_factory=list)
    model: bytes | None = None  # SentencePiece BPE and unigram runs: the .model file; WordPiece: tokenizer.json
    extra: dict = field(default_factory=dict)  # unigram runs: per-round corpus tokens and scores (see unigram_runs)
    #: What is computed once from a finished run and kept with it in memory (never stored): its API document.
    kept: dict = field(default_factory=dict, repr=False, compare=False)

    # -- facts -----------------------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.status in ("done", "cancelled", "error")

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def unigram(self) -> bool:
        """Steps are EM/pruning rounds (:class:`~app.engines.sentencepiece.unigram_trainer.UnigramRound`), not merges."""
        return self.options.algorithm == "unigram"

    def vocab(self) -> dict[int, bytes]:
        """Every token of the run (a unigram run's base holds every piece it ever had)."""
        v = dict(self.base)
        if isinstance(self.steps, PackedSteps):
            v |= self.steps.tokens()
        elif not self.unigram:
            for s in self.steps:
                v[s.new_id] = s.token
        return v

    def vocab_size_at(self, k: int) -> int:
        if self.unigram:
            return self.steps[k - 1].vocab_size if k > 0 else len(self.base)  # the seed: every piece
        return len(self.base) + k

    def tokens_at(self, k: int) -> int:
        if self.unigram:
            return self.extra["tokens"][k]
        return self.steps[k - 1].corpus_tokens if k > 0 else self.initial_tokens

    def compression_at(self, k: int) -> float:
        """Training's compression after ``k`` steps: its base units (:func:`app.lab.algorithms.base_units`) per token
        of its own count (``tokens_at``); the lab shows :meth:`bytes_per_token` instead."""
        t = self.tokens_at(k)
        return self.base_units / t if t else 0.0

    @functools.cached_property
    def corpus_bytes(self) -> int:
        return len(self.corpus.encode("utf-8", "surrogatepass"))

    def bytes_per_token(self, text_tokens: int) -> float:
        """The lab's compression: the corpus's UTF-8 bytes per token as the run's tokenizer cuts the whole corpus
        (``text_tokens``, what ``/api/tokenize`` counts with it): one basis for every algorithm, the count the page
        shows beside it (issue 37)."""
        return self.corpus_bytes / text_tokens if text_tokens else 0.0

    def estimated_bytes(self) -> int:
        """A rough size in memory: the corpus, the merge records, the model file, and the API document a finished
        run keeps once it is asked for (``kept``; about 520 bytes a step until it is built)."""
        size = 200 + len(self.corpus) * 2 + sum(map(len, self.extra.get("scores", ())))
        if self.unigram:
            size += sum(100 + 80 * len(s.removed) for s in self.steps)
        elif isinstance(self.steps, PackedSteps):
            size += self.steps.nbytes + 64 * len(self.steps)
        else:
            size += sum(200 + 40 * len(s.ties) + 48 * len(s.top_pairs) + len(s.left) + len(s.right) for s in self.steps)
        if self.finished:
            size += len(self.kept.get("document", b"")) or 520 * len(self.steps)
        return size + 64 * len(self.base) + len(self.model or b"")

    def label(self) -> str:
        """What a picker shows: ``lab run 3f2a (Unigram, 1 round)``."""
        what = "round" if self.unigram else "merge"
        plural = "" if self.n_steps == 1 else "s"
        return f"lab run {self.id} ({ALGORITHM_LABELS[self.options.algorithm]}, {self.n_steps:,} {what}{plural})"

    def apply(self, trained: Trained) -> None:
        self.base = trained.base
        self.steps = trained.steps
        self.n_ties = trained.n_ties
        self.initial_tokens = trained.initial_tokens
        self.base_units = trained.base_units
        self.stop_reason = trained.stop_reason
        self.target_merges = trained.target_merges
        self.done_merges = len(trained.steps)
        self.top0 = trained.top0
        self.model = trained.model
        self.extra = trained.extra

    def summary(self) -> dict:
        k = self.n_steps
        return {
            "id": self.id,
            "status": self.status,
            "error": self.error,
            "error_field": self.error_field,
            "parent": self.parent,
            "options": self.options.to_dict(),
            "progress": {"done": self.done_merges, "total": self.target_merges},
            "corpus_chars": len(self.corpus),
            "base_vocab_size": len(self.base),
            "merges": k,
            "vocab_size": self.vocab_size_at(k),
            "initial_tokens": self.initial_tokens,
            "final_tokens": self.tokens_at(k) if self.status == "done" else None,
            "base_units": self.base_units,
            "compression": round(self.compression_at(k), 4) if self.status == "done" else None,
            "stop_reason": self.stop_reason,
        }

    # -- JSON ----------------------------------------------------------------------------------------------
    def to_json(self, *, with_steps: bool = True) -> dict:
        d = {
            "format": "tokenplay-lab-run/1",
            "id": self.id,
            "status": self.status,
            "error": self.error,
            "error_field": self.error_field,
            "done_merges": self.done_merges,
            "target_merges": self.target_merges,
            "created": self.created,
            "parent": self.parent,
            "options": self.options.to_dict(),
            "corpus": self.corpus,
        }
        if with_steps:
            d |= {
                "base": {str(i): b.hex() for i, b in self.base.items()},
                "initial_tokens": self.initial_tokens,
                "base_units": self.base_units,
                "stop_reason": self.stop_reason,
                "top0": [[a, b, c] for (a, b), c in self.top0],
                "n_ties": self.n_ties,
                "steps": [] if isinstance(self.steps, PackedSteps) else
                         [s.to_dict() if self.unigram else _step_row(s) for s in self.steps],
                **({"packed_steps": self.steps.to_json()} if isinstance(self.steps, PackedSteps) else {}),
                "model": self.model.hex() if self.model else None,
                "extra": self.extra,
            }
        return d

    @classmethod
    def from_json(cls, d: dict) -> Run:
        run = cls(
            id=d["id"],
            corpus=d["corpus"],
            options=Options.from_dict(d["options"]),
            status=d["status"],
            error=d.get("error"),
            error_field=d.get("error_field"),
            done_merges=d.get("done_merges", 0),
            target_merges=d.get("target_merges", 0),
            created=d.get("created", 0.0),
            parent=d.get("parent"),
        )
        if "steps" in d:
            run.base = {int(i): bytes.fromhex(h) for i, h in d["base"].items()}
            run.initial_tokens = d["initial_tokens"]
            run.base_units = d["base_units"]
            run.stop_reason = d["stop_reason"]
            run.top0 = [((a, b), c) for a, b, c in d.get("top0", [])]
            run.n_ties = d["n_ties"]
            run.model = bytes.fromhex(d["model"]) if d.get("model") else None
            run.extra = d.get("extra") or {}
            if run.unigram:
                from .unigram_runs import round_records

                run.steps = round_records(d["steps"])
                return run
            if "packed_steps" in d:
                run.steps = PackedSteps.from_json(d["packed_steps"], run.base)
                return run
            vocab = dict(run.base)
            steps = []
            for row in d["steps"]:
                s = _step_from_row(row, vocab, run.options.tie_break)
                vocab[s.new_id] = s.token
                steps.append(s)
            run.steps = steps
        return run


def _step_row(s: MergeStep) -> list:
    scored = [] if not isinstance(s, WordPieceStep) else [
        s.score, s.left_count, s.right_count, [[a, b, c, ca, cb, sc] for (a, b), c, ca, cb, sc in s.scored]
    ]
    return [
        s.step,
        s.pair[0],
        s.pair[1],
        s.new_id,
        s.count,
        s.replaced,
        [list(p) for p in s.ties],
        s.corpus_tokens,
        int(s.forced),
        [[a, b, c] for (a, b), c in s.top_pairs],
        *scored,
    ]


def _step_from_row(row: list, vocab: dict[int, bytes], tie_break: str) -> MergeStep:
    step, a, b, new_id, count, replaced, ties, corpus_tokens, forced, top = row[:10]
    kind, more = (MergeStep, {}) if len(row) == 10 else (WordPieceStep, {
        "score": row[10], "left_count": row[11], "right_count": row[12],
        "scored": [((x, y), c, ca, cb, sc) for x, y, c, ca, cb, sc in row[13]],
    })
    return kind(
        step=step,
        pair=(a, b),
        left=vocab[a],
        right=vocab[b],
        new_id=new_id,
        count=count,
        replaced=replaced,
        ties=[(x, y) for x, y in ties],
        corpus_tokens=corpus_tokens,
        tie_break=tie_break,
        forced=bool(forced),
        top_pairs=[((x, y), c) for x, y, c in top],
        **more,
    )
