"""One training interface over the lab's algorithms: byte-level BPE, character-level BPE, WordPiece, and
sentencepiece's own BPE and unigram trainers.

The lab's own algorithms reduce to the same shape: a *base vocabulary* (id -> surface bytes), the corpus cut into
*words* (id sequences with counts, in first-seen order) and the shared merge loop of
:mod:`app.engines.training`, which emits one :class:`~app.engines.training.steps.MergeStep` per merge and is run by
its one driver (:func:`~app.engines.training.run_merges`, as ``tokenplay train`` is). Byte- and
character-level BPE both use ``BPETrainerState``; they differ only in how text becomes base ids (UTF-8 bytes, or
one id per code point plus an optional end-of-word marker ``</w>``).

SentencePiece BPE and unigram runs are sentencepiece's trainers, followed exactly (:mod:`app.lab.spm_runs`,
:mod:`app.lab.unigram_runs`): they read the corpus a sentence a line, normalized, with the ``sentencepiece`` options
(the ``pattern`` option does not apply), and keep the trained ``.model`` file, which their views run.

:class:`Encoder` turns text into base-id words the same way for training, the step views and "encode a new
text", so the three can never disagree. What a run is asked for and what training returns are
:mod:`app.lab.options`' (:class:`~app.lab.options.Options`, :class:`~app.lab.options.Trained`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import regex

from app.engines.base import check_text
from app.engines.bpe.patterns import exact, pattern_regex
from app.engines.bpe.trainer import BYTE_VOCAB, BPETrainerState
from app.engines.errors import TokenplayError
from app.engines.training.steps import MergeStep
from app.engines.training import STOP_VOCAB_SIZE, MergeState, cycle_collector_paused, replay, run_merges
from app.engines.training import Cancelled as Cancelled  # raised by the loops above; the lab's jobs catch it
from app.engines.wordpiece.trainer import PREFIX as WP_PREFIX
from app.engines.wordpiece.trainer import (
    WordPieceTrainerState,
    corpus_words,
    normalize_word,
    tokenizer_json,
    word_spans,
)

from .options import LabOptionsError, Options, Trained
from .spm_runs import train_sentencepiece_run

END_OF_WORD = "</w>"

#: Top pairs recorded before every merge (the step's pair table).
TOP_K = 10
#: Tie lists longer than this are cut when stored (the total is kept in ``n_ties``).
MAX_TIES = 24


# -- pre-tokenizing ------------------------------------------------------------------------------------------

_WS = regex.compile(r"\S+")


def chunk_spans(text: str, pattern: str) -> list[tuple[int, int]]:
    """Character spans of the words of ``text``; text between spans (whitespace for ``whitespace``) is no word."""
    if not text:
        return []
    if pattern == "none":
        return [(0, len(text))]
    rx = _WS if pattern == "whitespace" else exact(pattern_regex(pattern))  # cut as tiktoken cuts (byte-level runs)
    return [m.span() for m in rx.finditer(text)]


class Encoder:
    """Text to base-id words for one run. ``base`` maps every base id to its surface bytes.

    ``spans(text)`` gives ``(start, end, lead)`` per word as training cuts the corpus; ``word_ids(text[start:end],
    lead)`` its base ids. A character the base vocabulary lacks becomes -1 (never merged). ``lead`` is ``False`` for
    a word (``None`` for text between words below).

    ``text_spans(text)`` and ``text_ids`` cut a text as the run's tokenizer does ("use in playground",
    ``/api/tokenize``): the words of training and the text between them (lead ``None``: whitespace a words-only
    pre-tokenizer leaves out), whose characters no merge holds; a character the base vocabulary lacks is its UTF-8
    bytes (byte fallback), ids from ``byte_ids_from`` (the id of byte 0).

    SentencePiece BPE and unigram runs have no Encoder: their views run the trained ``.model``
    (:mod:`app.lab.spm_replay`, :mod:`app.lab.unigram_replay`).
    """

    def __init__(
        self, algorithm: str, pattern: str, base: dict[int, bytes], end_of_word: bool = False,
        byte_ids_from: int | None = None,
    ):
        self.algorithm = algorithm
        self.pattern = pattern
        self.base = base
        self.end_of_word = end_of_word
        self.char_ids: dict[str, int] = {}
        self.eow_id: int | None = None
        self.byte_ids_from = byte_ids_from
        if algorithm != "byte":
            for i, b in base.items():
                s = b.decode("utf-8")
                if s == END_OF_WORD and end_of_word:
                    self.eow_id = i
                elif len(s) == 1 or (algorithm == "wordpiece" and len(s) == 3 and s.startswith(WP_PREFIX)):
                    self.char_ids.setdefault(s, i)  # not [UNK]

    def spans(self, text: str) -> list[tuple[int, int, bool]]:
        if self.algorithm == "wordpiece":
            return [(a, b, False) for a, b in word_spans(text)]
        return [(a, b, False) for a, b in chunk_spans(text, self.pattern)]

    def word_ids(self, chunk: str, lead: bool = False) -> list[int]:
        if self.algorithm == "byte":
            return list(chunk.encode("utf-8"))
        if self.algorithm == "wordpiece":
            word = normalize_word(chunk)
            return [self.char_ids.get(c if n == 0 else WP_PREFIX + c, -1) for n, c in enumerate(word)]
        get = self.char_ids.get
        ids = [get(c, -1) for c in chunk]
        if self.eow_id is not None:
            ids.append(self.eow_id)
        return ids

    def text_spans(self, text: str) -> list[tuple[int, int, bool | None]]:
        """``text`` cut as the run's tokenizer cuts it: the words of :meth:`spans` and, as words of their own (lead
        ``None``), the text between them. WordPiece drops the whitespace between words, as BERT's pre-tokenizer
        does."""
        spans: list[tuple[int, int, bool | None]] = list(self.spans(text))
        if self.algorithm == "wordpiece":
            return spans
        out: list[tuple[int, int, bool | None]] = []
        pos = 0
        for a, b, lead in spans:
            if a > pos:
                out.append((pos, a, None))
            out.append((a, b, lead))
            pos = b
        if pos < len(text):
            out.append((pos, len(text), None))
        return out

    def text_ids(self, chunk: str, lead: bool | None = False) -> list[int]:
        """The base ids of a word of :meth:`text_spans` as the run's tokenizer has them: text between words gets
        no marker (``</w>``), and a character the base vocabulary lacks is its UTF-8 bytes."""
        if self.algorithm == "byte":
            return list(chunk.encode("utf-8"))
        symbols = chunk
        ids = [self.char_ids.get(c, -1) for c in chunk] if lead is None else self.word_ids(chunk, lead)
        if self.byte_ids_from is None or -1 not in ids:
            return ids
        out: list[int] = []
        for n, i in enumerate(ids):  # a marker (</w>) comes after the symbols, and is never -1
            if i >= 0:
                out.append(i)
            else:
                out.extend(self.byte_ids_from + b for b in symbols[n].encode("utf-8"))
        return out

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
    """What a run exports as a file of its own: WordPiece's ``tokenizer.json`` (SentencePiece runs: their ``.model``,
    made by their own trainers)."""
    if isinstance(state, WordPieceTrainerState):
        return tokenizer_json(state.vocab).encode()
    return None


ProgressFn = Callable[[int, int], None]

#: Why a WordPiece run ends early: unlike BPE it merges a pair seen once, so it runs out of pairs, not of repeats.
WP_NO_PAIR = "no pair left to merge"


def _stop_reason(reason: str, algorithm: str) -> str:
    if reason == STOP_VOCAB_SIZE:
        return "merge count reached"
    return WP_NO_PAIR if algorithm == "wordpiece" else reason


def start(corpus: str, options: Options) -> tuple[MergeState, dict[int, bytes]]:
    """A training state for ``corpus`` under ``options``, and its base vocabulary (nothing merged yet)."""
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
    if options.algorithm in ("sentencepiece", "unigram"):
        if prefix or force is not None:
            raise LabOptionsError("sentencepiece's trainers make their own choices in their own order: manual mode "
                                  "(choosing the next merge) is for the lab's byte-level, character-level and "
                                  "WordPiece runs", "algorithm")
        with cycle_collector_paused():  # thousands of step records, no cycles
            return train_sentencepiece_run(corpus, options, max_merges=max_merges,
                                           base_units=base_units(corpus, options.algorithm, options.pattern),
                                           progress=progress, should_stop=should_stop)
    with cycle_collector_paused():
        state, base = start(corpus, options)
        total = options.n_merges(len(base), max_merges)
        kept = list(zip(prefix, prefix_n_ties))
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
