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

from .splits import PATTERN_LABELS as PATTERN_LABELS
from .splits import PATTERNS, STAGE_TWO_DEFAULT, split_for

ALGORITHMS = ("byte", "char", "sentencepiece", "wordpiece", "unigram")
ALGORITHM_LABELS = {
    "byte": "byte-level BPE",
    "char": "character-level BPE",
    "sentencepiece": "SentencePiece BPE",
    "wordpiece": "WordPiece (merge by score)",
    "unigram": "Unigram (SentencePiece)",
}
#: The algorithms whose runs take the options of the "labbpe" block below (byte- and character-level BPE).
PLAIN_BPE = ("byte", "char")


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
    # -- labbpe (issues 33 parts 3-5 and 34): byte- and character-level BPE only -------------------------------
    min_count: int = 2  # a pair merges when it occurs at least this often (1: pairs seen once too)
    pattern_regex: str | None = None  # the user's own split regex, with pattern "custom"
    superwords: dict | None = None  # {"transition": t, "pattern": name, "pattern_regex": regex}: see stage_two
    merge_list: str | None = None  # merges typed as a merges.txt, replayed in order instead of trained
    # -- end of labbpe -----------------------------------------------------------------------------------------

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
        self._check_labbpe(max_merges)
        if self.merge_list is not None:
            if self.merges is not None or self.vocab_size is not None:
                raise LabOptionsError("give 'merge_list' alone, without 'merges' or 'vocab_size': its lines are the merges")
            return self
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

    def _check_labbpe(self, max_merges: int) -> None:
        """The options of the labbpe block: each names the field and what to choose."""
        plain = self.algorithm in PLAIN_BPE
        if not isinstance(self.min_count, int) or isinstance(self.min_count, bool) or self.min_count < 1:
            raise LabOptionsError(f"min_count must be a whole number of at least 1 (1 merges pairs seen once); got {self.min_count!r}")
        if self.min_count != 2 and not plain:
            raise LabOptionsError("min_count applies to byte- and character-level BPE (algorithm 'byte' or 'char'); leave it at 2")
        if self.pattern == "custom":
            if not plain:
                raise LabOptionsError("pattern 'custom' applies to byte- and character-level BPE (algorithm 'byte' or 'char')")
            if self.pattern_regex is None:
                raise LabOptionsError("pattern 'custom' needs 'pattern_regex': the regular expression to split with")
        elif self.pattern_regex is not None:
            raise LabOptionsError(f"pattern_regex is used with pattern 'custom' only; set pattern to 'custom' (it is {self.pattern!r})")
        if self.pattern == "custom":
            split_for("custom", self.pattern_regex)  # checks it: length, syntax
        if self.superwords is not None:
            stage_two(self)  # checks its fields
            if not plain:
                raise LabOptionsError(
                    "superwords applies to byte- and character-level BPE (algorithm 'byte' or 'char'): "
                    f"{ALGORITHM_LABELS.get(self.algorithm, self.algorithm)} has no stage two"
                )
            t = self.superwords["transition"]
            if self.merges is not None and t > self.merges:
                raise LabOptionsError(
                    f"superwords.transition {t:,} is larger than the run's {self.merges:,} merges; "
                    f"choose a transition from 0 to {self.merges:,}"
                )
        if self.merge_list is not None:
            if not plain:
                raise LabOptionsError("merge_list applies to byte- and character-level BPE (algorithm 'byte' or 'char')")
            if not isinstance(self.merge_list, str):
                raise LabOptionsError("merge_list must be text: one merge a line, two tokens separated by one space")

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
            # labbpe
            "min_count": self.min_count,
            "pattern_regex": self.pattern_regex,
            "superwords": self.superwords,
            "merge_list": self.merge_list,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Options:
        # runs stored before min_count existed have none: they merged pairs seen twice
        return cls(**{k: d.get(k) for k in ("algorithm", "pattern", "merges", "vocab_size", "tie_break", "end_of_word",
                                             "sentencepiece", "pattern_regex", "superwords", "merge_list")},
                   min_count=d.get("min_count", 2))

    def describe(self) -> str:
        if self.algorithm == "sentencepiece":
            return f"{ALGORITHM_LABELS[self.algorithm]}: sentencepiece's trainer{_spm_note(self)}"
        if self.algorithm == "wordpiece":
            return f"{ALGORITHM_LABELS[self.algorithm]}: score = count(ab) / (count(a) · count(b)), ## inside words, ties: {self.tie_break}"
        if self.algorithm == "unigram":
            return f"{ALGORITHM_LABELS[self.algorithm]}: sentencepiece's EM rounds and pruning{_spm_note(self)}"
        eow = " with </w>" if self.end_of_word else ""
        pattern = f"custom regex {self.pattern_regex}" if self.pattern == "custom" else self.pattern
        out = f"{ALGORITHM_LABELS[self.algorithm]}{eow}, pre-tokenizer {pattern}, ties: {self.tie_break}"
        if self.min_count != 2:
            out += f", pairs seen {self.min_count} time{'s' * (self.min_count != 1)} or more merge"
        if self.superwords is not None:
            sw = self.superwords
            two = f"custom regex {sw['pattern_regex']}" if sw["pattern"] == "custom" else sw["pattern"]
            out += f", superwords after merge {sw['transition']:,} (stage two: {two})"
        if self.merge_list is not None:
            out += ", merges typed as a list"
        return out


def stage_two(options: Options) -> dict:
    """The run's ``superwords`` checked and filled in: ``{"transition", "pattern", "pattern_regex"}`` (stage two's
    pattern ``lines-digits-r2l`` unless the run names one)."""
    sw = options.superwords
    if not isinstance(sw, dict):
        raise LabOptionsError('superwords must be an object: {"transition": t}, optionally with "pattern" / "pattern_regex"')
    unknown = set(sw) - {"transition", "pattern", "pattern_regex"}
    if unknown:
        raise LabOptionsError(f"superwords has no field {sorted(unknown)[0]!r}; it takes transition, pattern and pattern_regex")
    t = sw.get("transition")
    if not isinstance(t, int) or isinstance(t, bool) or t < 0:
        raise LabOptionsError(f"superwords.transition must be a whole number of merges, 0 or more; got {t!r}")
    pattern = sw.get("pattern") or ("custom" if sw.get("pattern_regex") is not None else STAGE_TWO_DEFAULT)
    if pattern not in PATTERNS:
        raise LabOptionsError(f"unknown superwords.pattern {pattern!r}; choose one of: {', '.join(PATTERNS)}")
    regex_text = sw.get("pattern_regex")
    if pattern == "custom":
        split_for("custom", regex_text, "superwords.pattern_regex")
    elif regex_text is not None:
        raise LabOptionsError("superwords.pattern_regex is used with superwords.pattern 'custom' only")
    filled = {"transition": t, "pattern": pattern, "pattern_regex": regex_text}
    options.superwords = filled
    return filled


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
