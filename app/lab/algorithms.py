"""One training interface over the lab's algorithms: byte-level BPE, character-level BPE, SentencePiece-style.

Every algorithm reduces to the same shape: a *base vocabulary* (id -> surface bytes), the corpus cut into
*words* (id sequences with counts, in first-seen order) and the shared merge loop of
:mod:`app.engines.training`, which emits one :class:`~app.engines.steps.MergeStep` per merge and is run by
its one driver (:func:`~app.engines.training.run_merges`, as ``tokenplay train`` is). Byte- and
character-level BPE both use ``BPETrainerState``; they differ only in how text becomes base ids (UTF-8 bytes, or
one id per code point plus an optional end-of-word marker ``</w>``). SentencePiece-style runs use
:class:`app.engines.sentencepiece.trainer.SentencePieceTrainerState` (lines, ``▁``, byte fallback, its own
whitespace split: the ``pattern`` option does not apply) and keep the trained ``.model`` file.

:class:`Encoder` turns text into base-id words the same way for training, the step views and "encode a new
text", so the three can never disagree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import regex

from app.engines.base import check_text
from app.engines.bpe.patterns import exact, pattern_regex
from app.engines.bpe.trainer import BYTE_VOCAB, BPETrainerState
from app.engines.errors import TokenplayError
from app.engines.sentencepiece.trainer import SentencePieceTrainerState
from app.engines.steps import TIE_BREAKS, MergeStep
from app.engines.training import MAX_VOCAB_SIZE, STOP_VOCAB_SIZE, MergeState, cycle_collector_paused, replay, run_merges
from app.engines.training import Cancelled as Cancelled  # raised by the loops above; the lab's jobs catch it
from app.engines.wordpiece_trainer import PREFIX as WP_PREFIX
from app.engines.wordpiece_trainer import (
    WordPieceTrainerState,
    corpus_words,
    normalize_word,
    tokenizer_json,
    word_spans,
)

ALGORITHMS = ("byte", "char", "sentencepiece", "wordpiece", "unigram")
ALGORITHM_LABELS = {
    "byte": "byte-level BPE",
    "char": "character-level BPE",
    "sentencepiece": "SentencePiece-style BPE",
    "wordpiece": "WordPiece (merge by score)",
    "unigram": "Unigram (SentencePiece)",
}
PATTERNS = ("none", "whitespace", "gpt2", "gpt4")
PATTERN_LABELS = {
    "none": "none (the whole text is one word)",
    "whitespace": "whitespace (words; spaces are not tokens)",
    "gpt2": "GPT-2 regex",
    "gpt4": "GPT-4 regex (cl100k)",
}
END_OF_WORD = "</w>"
SP_SPACE = "\u2581"  # ▁, SentencePiece's visible space

#: Top pairs recorded before every merge (the step's pair table).
TOP_K = 10
#: Tie lists longer than this are cut when stored (the total is kept in ``n_ties``).
MAX_TIES = 24


class LabOptionsError(TokenplayError):
    """Training options the lab cannot run (unknown algorithm, bad merge count, ...)."""


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

    def check(self, max_merges: int) -> Options:
        if self.algorithm not in ALGORITHMS:
            raise LabOptionsError(f"unknown algorithm {self.algorithm!r}; choose one of: {', '.join(ALGORITHMS)}")
        if self.pattern not in PATTERNS:
            raise LabOptionsError(f"unknown pattern {self.pattern!r}; choose one of: {', '.join(PATTERNS)}")
        if self.tie_break not in TIE_BREAKS:
            raise LabOptionsError(f"unknown tie_break {self.tie_break!r}; choose one of: {', '.join(TIE_BREAKS)}")
        if self.algorithm == "unigram" and self.tie_break != "first":
            raise LabOptionsError("tie_break applies to merge-based algorithms; unigram runs prune by loss (use 'first')")
        if self.end_of_word and self.algorithm != "char":
            raise LabOptionsError("end_of_word (the </w> marker) applies to character-level BPE only (algorithm 'char')")
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
        }

    @classmethod
    def from_dict(cls, d: dict) -> Options:
        return cls(**{k: d.get(k) for k in ("algorithm", "pattern", "merges", "vocab_size", "tie_break", "end_of_word")})

    def describe(self) -> str:
        if self.algorithm == "sentencepiece":
            return f"{ALGORITHM_LABELS[self.algorithm]} (▁ marks spaces, byte fallback), ties: {self.tie_break}"
        if self.algorithm == "wordpiece":
            return f"{ALGORITHM_LABELS[self.algorithm]}: score = count(ab) / (count(a) · count(b)), ## inside words, ties: {self.tie_break}"
        if self.algorithm == "unigram":
            return f"{ALGORITHM_LABELS[self.algorithm]}: EM rounds, pruning by likelihood loss (▁ marks spaces, byte fallback)"
        eow = " with </w>" if self.end_of_word else ""
        return f"{ALGORITHM_LABELS[self.algorithm]}{eow}, pre-tokenizer {self.pattern}, ties: {self.tie_break}"


# -- pre-tokenizing ------------------------------------------------------------------------------------------

_WS = regex.compile(r"\S+")
_SP_REST = regex.compile(r" [^ \n]*")


def chunk_spans(text: str, pattern: str) -> list[tuple[int, int]]:
    """Character spans of the words of ``text``; text between spans (whitespace for ``whitespace``) is no word."""
    if not text:
        return []
    if pattern == "none":
        return [(0, len(text))]
    rx = _WS if pattern == "whitespace" else exact(pattern_regex(pattern))  # cut as tiktoken cuts (byte-level runs)
    return [m.span() for m in rx.finditer(text)]


def sp_spans(text: str) -> list[tuple[int, int, bool]]:
    """SentencePiece-style words: per non-empty line, the text before the first space (it gets the dummy-prefix
    ``▁``, so it may be empty), then each space with the characters up to the next space or line end."""
    out: list[tuple[int, int, bool]] = []
    pos = 0
    for line in text.split("\n"):
        if line:
            first = line.find(" ")
            first = len(line) if first < 0 else first
            out.append((pos, pos + first, True))
            for m in _SP_REST.finditer(line, first):
                out.append((pos + m.start(), pos + m.end(), False))
        pos += len(line) + 1
    return out


class Encoder:
    """Text to base-id words for one run. ``base`` maps every base id to its surface bytes.

    ``spans(text)`` gives ``(start, end, lead)`` per word; ``word_ids(text[start:end], lead)`` its base ids. A
    character the base vocabulary lacks becomes -1 (never merged). ``lead`` marks a SentencePiece-style line
    start, which gets the dummy-prefix ``▁``.
    """

    def __init__(self, algorithm: str, pattern: str, base: dict[int, bytes], end_of_word: bool = False):
        self.algorithm = algorithm
        self.pattern = pattern
        self.base = base
        self.end_of_word = end_of_word
        self.char_ids: dict[str, int] = {}
        self.eow_id: int | None = None
        if algorithm != "byte":
            for i, b in base.items():
                s = b.decode("utf-8")
                if s == END_OF_WORD and end_of_word:
                    self.eow_id = i
                elif len(s) == 1 or (algorithm == "wordpiece" and len(s) == 3 and s.startswith(WP_PREFIX)):
                    self.char_ids.setdefault(s, i)  # not <unk>, <s>, </s>, [UNK] or <0xNN> pieces

    def spans(self, text: str) -> list[tuple[int, int, bool]]:
        if self.algorithm == "sentencepiece":
            return sp_spans(text)
        if self.algorithm == "wordpiece":
            return [(a, b, False) for a, b in word_spans(text)]
        return [(a, b, False) for a, b in chunk_spans(text, self.pattern)]

    def word_ids(self, chunk: str, lead: bool = False) -> list[int]:
        if self.algorithm == "byte":
            return list(chunk.encode("utf-8"))
        if self.algorithm == "sentencepiece":
            chunk = (SP_SPACE if lead else "") + chunk.replace(" ", SP_SPACE)
        if self.algorithm == "wordpiece":
            word = normalize_word(chunk)
            return [self.char_ids.get(c if n == 0 else WP_PREFIX + c, -1) for n, c in enumerate(word)]
        get = self.char_ids.get
        ids = [get(c, -1) for c in chunk]
        if self.eow_id is not None:
            ids.append(self.eow_id)
        return ids

    def words(self, text: str) -> list[tuple[list[int], int]]:
        counts = Counter((text[a:b], lead) for a, b, lead in self.spans(text))
        return [(self.word_ids(chunk, lead), n) for (chunk, lead), n in counts.items()]


def base_vocab_for(text: str, algorithm: str, pattern: str, end_of_word: bool) -> dict[int, bytes]:
    """The base vocabulary: 256 bytes, or every character of the corpus's words in code-point order."""
    if algorithm == "byte":
        return dict(BYTE_VOCAB)
    chars: set[str] = set()
    for a, b in chunk_spans(text, pattern):
        chars.update(text[a:b])
    base = {i: c.encode("utf-8") for i, c in enumerate(sorted(chars))}
    if end_of_word:
        base[len(base)] = END_OF_WORD.encode()
    return base


def base_units(text: str, algorithm: str, pattern: str) -> int:
    """What compression is measured against: the corpus's bytes (byte-level) or characters (the others)."""
    if algorithm == "wordpiece":
        return sum(len(normalize_word(text[a:b])) for a, b in word_spans(text))
    if algorithm in ("sentencepiece", "unigram"):
        return sum(len(line) for line in text.split("\n"))
    spans = chunk_spans(text, pattern)
    if algorithm == "byte":
        return sum(len(text[a:b].encode("utf-8")) for a, b in spans)
    return sum(b - a for a, b in spans)


# -- training ------------------------------------------------------------------------------------------------


def _model_file(state: MergeState) -> bytes | None:
    """What a run exports as a file of its own: SentencePiece's ``.model``, WordPiece's ``tokenizer.json``."""
    if isinstance(state, SentencePieceTrainerState):
        return state.model().serialize()
    if isinstance(state, WordPieceTrainerState):
        return tokenizer_json(state.vocab).encode()
    return None


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


ProgressFn = Callable[[int, int], None]

#: Why a WordPiece run ends early: unlike BPE it merges a pair seen once, so it runs out of pairs, not of repeats.
WP_NO_PAIR = "no pair left to merge"


def _stop_reason(reason: str, algorithm: str) -> str:
    if reason == STOP_VOCAB_SIZE:
        return "merge count reached"
    return WP_NO_PAIR if algorithm == "wordpiece" else reason


def start(corpus: str, options: Options) -> tuple[MergeState, dict[int, bytes]]:
    """A training state for ``corpus`` under ``options``, and its base vocabulary (nothing merged yet)."""
    if options.algorithm == "sentencepiece":
        try:
            state = SentencePieceTrainerState(corpus, MAX_VOCAB_SIZE, byte_fallback=True, tie_break=options.tie_break)
        except TokenplayError as exc:
            raise LabOptionsError(str(exc)) from None
        return state, {i: state.surfaces[i] for i in range(state.base_size)}
    if options.algorithm == "wordpiece":
        try:
            words, base = corpus_words(corpus)
        except TokenplayError as exc:
            raise LabOptionsError(str(exc)) from None
        return WordPieceTrainerState(words, base, tie_break=options.tie_break), base
    base = base_vocab_for(corpus, options.algorithm, options.pattern, options.end_of_word)
    encoder = Encoder(options.algorithm, options.pattern, base, options.end_of_word)
    return BPETrainerState(encoder.words(corpus), base, tie_break=options.tie_break), base


def train(
    corpus: str,
    options: Options,
    *,
    max_merges: int,
    prefix: Sequence[MergeStep] = (),
    prefix_n_ties: Sequence[int] = (),
    force: tuple[int, int] | None = None,
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Trained:
    """Train ``corpus`` with ``options``; with ``prefix`` (and ``force``) continue a run from a chosen point.

    ``prefix`` steps are replayed as given (their records are kept), then ``force`` is merged as the next
    step (recorded ``forced=True``) and training continues automatically to the target number of merges.
    ``progress(done, total)`` is called after every merge; ``should_stop()`` returning true raises
    :class:`Cancelled`. Records keep at most :data:`MAX_TIES` ties; ``Trained.n_ties`` has the full counts.
    """
    check_text(corpus)  # a lone surrogate has no UTF-8: refuse it clearly (InvalidTextError, 422)
    options.check(max_merges)
    if options.algorithm == "unigram":
        from .unigram_runs import train_unigram_run

        return train_unigram_run(corpus, options, max_merges=max_merges, progress=progress, should_stop=should_stop)
    with cycle_collector_paused():
        state, base = start(corpus, options)
        total = options.n_merges(len(base), max_merges)
        kept = list(zip(prefix, prefix_n_ties))
        if isinstance(state, SentencePieceTrainerState):
            state.requested_vocab_size = len(base) + max(total, len(kept) + (force is not None))
        replay(state, [step.pair for step, _ in kept], should_stop)
        if force is not None:
            total = max(total, len(kept) + 1)
            try:
                state.step(force_pair=force, top_k=TOP_K, max_ties=MAX_TIES)
            except TokenplayError as exc:
                raise LabOptionsError(str(exc)) from None
            if progress is not None:
                progress(len(state.merges), total)
        report = None if progress is None else lambda done, target, _record: progress(done, target)
        reason = run_merges(state, total, top_k=TOP_K, max_ties=MAX_TIES, progress=report, should_stop=should_stop)
        steps = [step for step, _ in kept] + state.steps[len(kept) :]
        trained = Trained(
            base=base,
            steps=steps,
            n_ties=[n for _, n in kept] + state.tie_counts[len(kept) :],
            initial_tokens=state.initial_tokens,
            base_units=base_units(corpus, options.algorithm, options.pattern),
            target_merges=total,
            stop_reason=_stop_reason(reason, options.algorithm),
            top0=list(state.current_top_pairs(TOP_K) if not steps else steps[0].top_pairs),
            model=_model_file(state),
        )
        del state  # gone before the collector resumes: its passes would walk every list of the run once more
    return trained
