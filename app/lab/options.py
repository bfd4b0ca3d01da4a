"""What a lab run is asked for and what its training gives back, shared by every algorithm's trainer.

SentencePiece BPE and unigram runs take sentencepiece's own trainer options in ``Options.sentencepiece`` (its names,
its defaults: :class:`~app.engines.sentencepiece.trainer_options.TrainerOptions`), checked with the option named.

:class:`Options` are checked before a run is stored (:meth:`Options.check`), so a bad option is refused with a
:class:`LabOptionsError` saying what to choose; :class:`Trained` is what :func:`app.lab.algorithms.train` and the
unigram runs (:mod:`app.lab.unigram_runs`) return for :class:`~app.lab.runs.Run` to keep. Nothing here trains.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from app.engines.errors import TokenplayError
from app.engines.sentencepiece.trainer_options import TrainerOptions, TrainerOptionsError
from app.engines.training.steps import TIE_BREAKS, MergeStep

ALGORITHMS = ("byte", "char", "sentencepiece", "wordpiece", "unigram")
ALGORITHM_LABELS = {
    "byte": "byte-level BPE",
    "char": "character-level BPE",
    "sentencepiece": "SentencePiece BPE",
    "wordpiece": "WordPiece (merge by score)",
    "unigram": "Unigram (SentencePiece)",
}
PATTERNS = ("none", "whitespace", "gpt2", "gpt4")
PATTERN_LABELS = {
    "none": "none (the whole text is one word)",
    "whitespace": "whitespace (words; no merge takes a space)",
    "gpt2": "GPT-2 regex",
    "gpt4": "GPT-4 regex (cl100k)",
}


class LabOptionsError(TokenplayError):
    """Training options the lab cannot run (unknown algorithm, bad merge count, ...); ``field`` names the option
    when one is to blame."""

    def __init__(self, message: str, field: str | None = None):
        self.field = field
        super().__init__(message)

    def __reduce__(self):  # a worker process sends it back whole
        return self.__class__, (str(self), self.field)


#: More base tokens than any corpus can have (one per Unicode code point, plus bytes and markers): a vocab_size
#: above this plus the merge limit is refused before the corpus is looked at.
MAX_BASE_TOKENS = 0x110000 + 1024


@dataclass(slots=True)
class Options:
    algorithm: str = "byte"
    pattern: str = "gpt2"
    merges: int | None = None  # number of merges, or
    vocab_size: int | None = None  # a target vocabulary size (base vocabulary + merges)
    tie_break: str = "first"
    end_of_word: bool = False
    # sentencepiece's trainer options (its names, its defaults) for the "sentencepiece" and "unigram" algorithms
    sentencepiece: dict | None = None

    def spm_options(self) -> TrainerOptions:
        """The ``sentencepiece`` options object, checked (:class:`LabOptionsError` naming the option)."""
        try:
            return TrainerOptions.from_dict(self.sentencepiece or {})
        except TrainerOptionsError as exc:
            raise LabOptionsError(str(exc), exc.field) from None

    def check(self, max_merges: int) -> Options:
        if self.algorithm not in ALGORITHMS:
            raise LabOptionsError(f"unknown algorithm {self.algorithm!r}; choose one of: {', '.join(ALGORITHMS)}")
        if self.pattern not in PATTERNS:
            raise LabOptionsError(f"unknown pattern {self.pattern!r}; choose one of: {', '.join(PATTERNS)}")
        if self.tie_break not in TIE_BREAKS:
            raise LabOptionsError(f"unknown tie_break {self.tie_break!r}; choose one of: {', '.join(TIE_BREAKS)}")
        if self.algorithm == "unigram" and self.tie_break != "first":
            raise LabOptionsError("tie_break applies to merge-based algorithms; unigram runs prune by loss (use 'first')",
                                  "tie_break")
        if self.algorithm == "sentencepiece" and self.tie_break != "first":
            raise LabOptionsError("tie_break does not apply to SentencePiece BPE: sentencepiece's trainer orders equal "
                                  "counts its own way (the shorter piece first, then byte order); use 'first'",
                                  "tie_break")
        if self.end_of_word and self.algorithm != "char":
            raise LabOptionsError("end_of_word (the </w> marker) applies to character-level BPE only (algorithm 'char')")
        if self.sentencepiece is not None:
            if self.algorithm not in ("sentencepiece", "unigram"):
                raise LabOptionsError("the sentencepiece options object applies to the 'sentencepiece' and 'unigram' "
                                      "algorithms only", "sentencepiece")
            self.spm_options()
        if (self.merges is None) == (self.vocab_size is None):
            raise LabOptionsError("give exactly one of 'merges' or 'vocab_size'")
        if self.merges is not None and not 0 <= self.merges <= max_merges:
            raise LabOptionsError(f"merges must be between 0 and {max_merges:,} (the lab's limit); got {self.merges:,}")
        if self.vocab_size is not None and self.vocab_size < 1:
            raise LabOptionsError(f"vocab_size must be positive; got {self.vocab_size}")
        if self.vocab_size is not None and self.vocab_size > MAX_BASE_TOKENS + max_merges:
            # refused here, before the run is stored: the exact limit needs the corpus's base vocabulary
            raise LabOptionsError(
                f"vocab_size {self.vocab_size:,} is more than the lab can reach: it learns at most {max_merges:,} "
                "merges on top of the corpus's base tokens"
            )
        return self

    def n_merges(self, base_size: int, max_merges: int) -> int:
        if self.merges is not None:
            return self.merges
        n = self.vocab_size - base_size
        if n < 0:
            raise LabOptionsError(
                f"vocab_size {self.vocab_size:,} is below the {base_size:,} base tokens of this corpus; "
                f"choose at least {base_size:,}"
            )
        if n > max_merges:
            raise LabOptionsError(
                f"vocab_size {self.vocab_size:,} needs {n:,} merges; the lab's limit is {max_merges:,} merges "
                f"(a vocab_size of at most {base_size + max_merges:,} here)"
            )
        return n

    def to_dict(self) -> dict:
        return {
            "algorithm": self.algorithm,
            "pattern": self.pattern,
            "merges": self.merges,
            "vocab_size": self.vocab_size,
            "tie_break": self.tie_break,
            "end_of_word": self.end_of_word,
            "sentencepiece": self.sentencepiece,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Options:
        return cls(**{k: d.get(k) for k in ("algorithm", "pattern", "merges", "vocab_size", "tie_break", "end_of_word",
                                             "sentencepiece")})

    def describe(self) -> str:
        if self.algorithm == "sentencepiece":
            return f"{ALGORITHM_LABELS[self.algorithm]}: sentencepiece's trainer{_spm_note(self)}"
        if self.algorithm == "wordpiece":
            return f"{ALGORITHM_LABELS[self.algorithm]}: score = count(ab) / (count(a) · count(b)), ## inside words, ties: {self.tie_break}"
        if self.algorithm == "unigram":
            return f"{ALGORITHM_LABELS[self.algorithm]}: sentencepiece's EM rounds and pruning{_spm_note(self)}"
        eow = " with </w>" if self.end_of_word else ""
        return f"{ALGORITHM_LABELS[self.algorithm]}{eow}, pre-tokenizer {self.pattern}, ties: {self.tie_break}"


def _spm_note(options: Options) -> str:
    """The sentencepiece options that differ from its defaults, in words."""
    try:
        given = TrainerOptions.from_dict(options.sentencepiece).to_dict()
    except TrainerOptionsError:
        return ""
    changed = {k: v for k, v in given.items() if TrainerOptions().to_dict()[k] != v}
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in changed.items())
    return f" (options: {shown})" if changed else " (its defaults)"


@dataclass(slots=True)
class Trained:
    base: dict[int, bytes]
    steps: list[MergeStep]
    n_ties: list[int]
    initial_tokens: int
    base_units: int
    target_merges: int
    stop_reason: str
    top0: list = field(default_factory=list)  # pair table before the first merge (same as steps[0].top_pairs)
    model: bytes | None = None  # SentencePiece: the trained ``.model`` file; WordPiece: its ``tokenizer.json``
    extra: dict = field(default_factory=dict)  # unigram runs: per-round corpus tokens and scores
