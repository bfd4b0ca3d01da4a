"""The byte-level BPE trainer: pre-tokens as bytes, merged one step at a time, every step recorded as data.

Training works on *words*: the distinct pre-tokens (the text cut by a named split pattern, special-token text
left out) with how often each occurs, as byte ids; the base vocabulary is the 256 bytes. A pair's count is the
sum over words of its occurrences (overlaps counted: ``aaa`` has two ``(a, a)``) times the word's frequency.
Each step merges the most frequent pair in every word that holds it, left to right. The merge loop itself, with
its tie-breaks (``first``: the pair seen first in the corpus; ``lexical``: the smallest as byte strings), is the
shared core :class:`app.engines.training.MergeState`; this module says what the words and the base are.

Worked example, ``"ba ab ba ab"`` with pattern ``none``: ``(b, a)``, ``(a, " ")``, ``(" ", a)`` and ``(a, b)``
each occur twice. ``first`` merges ``(b, a)`` (it starts the text); ``lexical`` merges ``(" ", a)``, because
``b" " < b"a" < b"b"`` (left bytes first, right bytes only between equal lefts: ``(a, " ") < (a, b)``).

:class:`BPETrainerState` is the incremental trainer (the BPE lab's manual mode uses it directly, one
``step()`` at a time, possibly forcing a pair); :func:`train` runs it to a vocabulary size. A character-level
variant only needs other base ids: :func:`train_words`. Nothing here prints or encodes new text; the reference
implementation the tests hold this to is ``tests/helpers/bpe_reference.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, TypedDict

from ..base import check_text
from ..training.steps import TrainResult
from ..training import MAX_VOCAB_SIZE, MergeState, ProgressFn, TrainingError, cycle_collector_paused, run_merges
from ..training.words import LONG_WORD, MAX_ID
from .patterns import pattern_regex, pretokenize

if TYPE_CHECKING:
    from typing_extensions import Unpack

Pair = tuple[int, int]

#: The byte-level base vocabulary: id ``i`` is the byte ``i``.
BYTE_VOCAB: dict[int, bytes] = {i: bytes([i]) for i in range(256)}


class BPETrainingError(TrainingError):
    """A training request that cannot run (bad vocab size, unknown tie-break, a pair that is not there)."""


def check_vocab_size(vocab_size: int, base_size: int = 256, max_vocab_size: int = MAX_VOCAB_SIZE) -> int:
    """Return the number of merges for ``vocab_size``: ``check_vocab_size(300) == 44``; raise when out of range."""
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise BPETrainingError(f"vocab_size must be a whole number, got {vocab_size!r}")
    if vocab_size < base_size:
        raise BPETrainingError(
            f"vocab_size {vocab_size} is below the {base_size} base tokens (one per byte); "
            f"pass a vocab_size of at least {base_size}"
        )
    if vocab_size > min(max_vocab_size, MAX_ID + 1):
        raise BPETrainingError(
            f"vocab_size {vocab_size} is above the limit of {min(max_vocab_size, MAX_ID + 1)}; pass a smaller vocab_size "
            "or raise max_vocab_size"
        )
    return vocab_size - base_size


def vocab_from_merges(merges: Sequence[Pair], base: Mapping[int, bytes] = BYTE_VOCAB) -> dict[int, bytes]:
    """Id -> bytes, derived from the merges in order: ``vocab_from_merges([(97, 97)])[256] == b"aa"``."""
    vocab = dict(base)
    next_id = max(vocab) + 1 if vocab else 0
    for i, (a, b) in enumerate(merges):
        try:
            vocab[next_id + i] = vocab[a] + vocab[b]
        except KeyError:
            raise BPETrainingError(f"merge {i + 1} ({a}, {b}) uses an id that does not exist yet") from None
    return vocab


def words_from_text(text: str, pattern: str = "gpt4", special_tokens: Iterable[str] = ()) -> list[tuple[bytes, int]]:
    """Distinct pre-tokens as UTF-8 bytes (each byte is its id) with counts, in first-seen order.

    >>> words_from_text("ab ab", "gpt2")
    [(b'ab', 1), (b' ab', 1)]
    """
    check_text(text)
    counts = Counter(pretokenize(text, pattern_regex(pattern), special_tokens))
    return [(chunk.encode("utf-8"), n) for chunk, n in counts.items()]


class BPETrainerState(MergeState):
    """A byte-level (or, with another ``base_vocab``, character-level) BPE run in progress.

    ``words`` is a list of ``(ids, count)`` in corpus order; ``base_vocab`` maps every id the words use to its
    bytes (default: the 256 bytes).
    """

    error = BPETrainingError

    def __init__(
        self,
        words: Iterable[tuple[Sequence[int], int]],
        base_vocab: Mapping[int, bytes] = BYTE_VOCAB,
        *,
        tie_break: str = "first",
        long_word: int = LONG_WORD,
        min_count: int = 2,
    ):
        super().__init__(words, base_vocab, tie_break=tie_break, long_word=long_word, min_count=min_count)

    @classmethod
    def from_text(
        cls,
        text: str,
        pattern: str = "gpt4",
        *,
        special_tokens: Iterable[str] = (),
        tie_break: str = "first",
        min_count: int = 2,
    ) -> BPETrainerState:
        """A byte-level run on ``text`` cut by the named pre-tokenizer (special-token text left out)."""
        return cls(words_from_text(text, pattern, special_tokens), BYTE_VOCAB, tie_break=tie_break, min_count=min_count)


class RunOptions(TypedDict, total=False):
    """How a run goes, whatever it trains on (the keywords of :func:`train`, :func:`train_words` and
    ``BPETokenizer.train``): ``top_k`` > 0 records the k most frequent pairs before each merge; ``max_ties`` keeps
    only that many ties per record (all by default: on corpora of many MB the tie lists of late, low-count steps
    hold hundreds of pairs each); ``max_vocab_size`` caps the size asked for; ``progress`` is called after each
    merge with ``(step, total_merges, record)``."""

    top_k: int
    max_ties: int | None
    max_vocab_size: int
    progress: ProgressFn | None


def _run(
    start: Callable[[], BPETrainerState],
    vocab_size: int,
    base_size: int,
    *,
    top_k: int = 0,
    max_ties: int | None = None,
    max_vocab_size: int = MAX_VOCAB_SIZE,
    progress: ProgressFn | None = None,
) -> TrainResult:
    """The run to ``vocab_size`` of the trainer ``start()`` makes, over a base of ``base_size`` ids."""
    n_merges = check_vocab_size(vocab_size, base_size, max_vocab_size)
    with cycle_collector_paused():
        state = start()
        result = state.result(run_merges(state, n_merges, top_k=top_k, max_ties=max_ties, progress=progress))
        del state  # gone before the collector resumes: its passes would walk every list of the run once more
    return result


def train(
    text: str,
    vocab_size: int,
    pattern: str = "gpt4",
    special_tokens: Iterable[str] = (),
    tie_break: str = "first",
    min_count: int = 2,
    **options: Unpack[RunOptions],
) -> TrainResult:
    """Train byte-level BPE on ``text`` up to ``vocab_size`` (256 bytes + merges; special tokens come after).

    ``pattern`` is ``none``, ``gpt2``, ``gpt4`` or ``o200k``; special-token text is cut out of the corpus so
    no merge learns it. A pair merges when it occurs at least ``min_count`` times (1: pairs seen once too, as
    tiktoken's ``_educational.bpe_train``). ``options``: see :class:`RunOptions`.
    """
    start = partial(
        BPETrainerState.from_text, text, pattern, special_tokens=special_tokens, tie_break=tie_break, min_count=min_count
    )
    return _run(start, vocab_size, 256, **options)


def train_words(
    words: Iterable[tuple[Sequence[int], int]],
    vocab_size: int,
    base_vocab: Mapping[int, bytes] = BYTE_VOCAB,
    tie_break: str = "first",
    min_count: int = 2,
    **options: Unpack[RunOptions],
) -> TrainResult:
    """Train on words given as id sequences with counts over ``base_vocab`` (e.g. one id per character)."""
    start = partial(BPETrainerState, words, base_vocab, tie_break=tie_break, min_count=min_count)
    return _run(start, vocab_size, len(base_vocab), **options)
