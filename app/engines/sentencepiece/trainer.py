"""Train a SentencePiece-style BPE model on a corpus, one merge per step, every step recorded as data.

What it does, in the order SentencePiece does it:

1. Each line of the corpus is a sentence. It is normalized as our saved models say (``identity``: no Unicode
   rewriting, spaces kept as they are): the dummy prefix ``▁`` is put in front if asked, and every space
   becomes ``▁``. Sentences are cut into words before each ``▁`` (``"▁the▁▁cat"`` -> ``▁the``, ``▁``, ``▁cat``),
   so no piece ever holds a ``▁`` after another character.
2. The base vocabulary is code points, not bytes: ``<unk>``, ``<s>``, ``</s>``, then the 256 ``<0xNN>`` pieces
   when byte fallback is on, then the characters, most frequent first, until ``character_coverage`` of all
   character occurrences is covered. Rarer characters (and NUL, which a ``.model`` cannot hold) stay out: they
   never merge, and at encoding time they become byte pieces (byte fallback) or ``<unk>``.
3. Each step merges the most frequent adjacent pair of pieces (counted over distinct words times their
   frequency, overlaps counted) everywhere, left to right, and records a :class:`~app.engines.training.steps.MergeStep`
   (``left``/``right`` are the UTF-8 of the two pieces). Ties follow the same rules as the byte-level trainer:
   ``first`` (the pair held by the earliest word of the corpus, then leftmost there) or ``lexical``. Pieces are
   at most ``max_piece_length`` characters, and a pair whose text is already a piece is never merged again
   (:class:`PieceRule`). The merge loop is the shared core, :class:`app.engines.training.MergeState`.
4. Training stops when the vocabulary reaches ``vocab_size`` or when no pair occurs twice. The second case is
   how a small classroom corpus ends: SentencePiece itself fails with "Vocabulary size too high"; we stop at
   the size reached and say so in ``TrainResult.stop_reason``.

The result saves as a real ``.model`` file (BPE ``ModelProto``, ``identity`` normalizer): merge number ``k``
(from 0) gets score ``-k``, so the ``sentencepiece`` library and our engine both encode with it identically.
Ids: specials, bytes, characters, then merges in order, so merge ``i`` creates id ``base_size + i``.

This module does not print, does not split by Unicode script or digits (SentencePiece's trainer does by
default), does not sample sentences and does not train unigram models.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..base import check_text
from ..training.steps import MergeStep, TrainResult
from ..training import MAX_VOCAB_SIZE, STOP_NO_PAIR, STOP_VOCAB_SIZE, MergeState, TrainingError, check_tie_break
from ..training import cycle_collector_paused, run_merges
from .model import SentencePieceTokenizer, byte_piece
from ..pipeline.pieces import SPACE_SYMBOL
from .proto import BPE, BYTE, CONTROL, NORMAL, UNKNOWN, ModelProto, NormalizerSpec, Piece, TrainerSpec

Pair = tuple[int, int]

META_PIECES: tuple[tuple[str, int], ...] = (("<unk>", UNKNOWN), ("<s>", CONTROL), ("</s>", CONTROL))

_WORDS = re.compile(f"{SPACE_SYMBOL}[^{SPACE_SYMBOL}\\n]*|[^{SPACE_SYMBOL}\\n]+")


class SentencePieceTrainingError(TrainingError):
    """A training request that cannot run (empty corpus, vocab size too small or too large, a bad pair)."""


def normalize_corpus(text: str, add_dummy_prefix: bool = True) -> list[str]:
    """The corpus as normalized sentences (one per non-empty line), as the saved model will normalize text.

    >>> normalize_corpus("Hello world\\n\\n  two")
    ['▁Hello▁world', '▁▁▁two']
    """
    prefix = SPACE_SYMBOL if add_dummy_prefix else ""
    return [prefix + line for line in text.replace(" ", SPACE_SYMBOL).split("\n") if line]


def split_words(normalized: str) -> list[str]:
    """Cut a normalized sentence before every ``▁`` (SentencePiece's ``split_by_whitespace``).

    >>> split_words("▁the▁▁cat")
    ['▁the', '▁', '▁cat']
    """
    return _WORDS.findall(normalized)


def word_frequencies(text: str, add_dummy_prefix: bool = True) -> Counter:
    """The distinct words of the normalized corpus (see :func:`normalize_corpus` and :func:`split_words`) with how
    often each occurs, in first-seen order.

    >>> word_frequencies("a b\\n\\n a  c")
    Counter({'▁a': 2, '▁': 2, '▁b': 1, '▁c': 1})
    >>> word_frequencies("a b\\n\\n a  c", add_dummy_prefix=False)
    Counter({'a': 1, '▁b': 1, '▁a': 1, '▁': 1, '▁c': 1})
    """
    if not add_dummy_prefix:  # a line may start without ▁: cut the lines apart
        joined = "\n".join(normalize_corpus(text, add_dummy_prefix))
        words = Counter(joined.replace(SPACE_SYMBOL, "\n" + SPACE_SYMBOL).split("\n"))
        words.pop("", None)
        return words
    # Every line starts with ▁, so a line break cuts like any ▁ once empty lines are gone: one split in C, and
    # what follows each ▁ is counted, the ▁ put back on the distinct words only.
    lines = text
    while "\n\n" in lines:
        lines = lines.replace("\n\n", "\n")
    lines = lines.strip("\n")
    if not lines:
        return Counter()
    pieces = Counter(lines.replace(" ", SPACE_SYMBOL).replace("\n", SPACE_SYMBOL).split(SPACE_SYMBOL))
    return Counter({SPACE_SYMBOL + piece: n for piece, n in pieces.items()})


def char_frequencies(word_counts: Counter) -> Counter:
    """Character occurrences over the corpus, from its distinct words (cheaper than counting the whole text).

    >>> char_frequencies(Counter({"▁ab": 2, "▁b": 1}))
    Counter({'▁': 3, 'b': 3, 'a': 2})
    """
    by_count: dict[int, list[str]] = {}  # words grouped by how often they occur: one count in C per group
    for w, n in word_counts.items():
        group = by_count.get(n)
        if group is None:
            by_count[n] = [w]
        else:
            group.append(w)
    chars = Counter("".join(by_count.pop(1, ())))
    for n, group in by_count.items():
        for c, k in Counter("".join(group)).items():
            chars[c] += k * n
    return chars


def required_chars(counts: Counter, coverage: float) -> list[str]:
    """Characters kept in the base vocabulary, most frequent first (ties by code point), until ``coverage`` of
    all occurrences is covered (SentencePiece's rule: add while the covered share is below ``coverage``).

    >>> required_chars(Counter("aaaaaaaaab"), 0.9)
    ['a']
    >>> required_chars(Counter("aaaaaaaaab"), 1.0)
    ['a', 'b']
    """
    total = sum(counts.values())
    kept: list[str] = []
    covered = 0
    for ch, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if total and covered / total >= coverage:
            break
        covered += n
        kept.append(ch)
    return kept


@dataclass
class TrainedSentencePiece:
    """A trained vocabulary with the options it was trained with; saves as a real ``.model`` file."""

    pieces: list[Piece]
    byte_fallback: bool = True
    add_dummy_prefix: bool = True
    character_coverage: float = 1.0
    max_piece_length: int = 16
    requested_vocab_size: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def to_proto(self) -> ModelProto:
        trainer = TrainerSpec(
            model_prefix="tokenplay",
            model_type=BPE,
            vocab_size=len(self.pieces),
            character_coverage=self.character_coverage,
            max_sentencepiece_length=self.max_piece_length,
            split_by_unicode_script=False,
            split_by_number=False,
            split_by_whitespace=True,
            treat_whitespace_as_suffix=False,
            byte_fallback=self.byte_fallback,
            num_threads=1,
            unk_id=0,
            bos_id=1,
            eos_id=2,
            pad_id=-1,
            hard_vocab_limit=True,
        )
        normalizer = NormalizerSpec(
            name="identity",
            precompiled_charsmap=b"",
            add_dummy_prefix=self.add_dummy_prefix,
            remove_extra_whitespaces=False,
            escape_whitespaces=True,
        )
        return ModelProto([Piece(p.piece, p.score, p.type) for p in self.pieces], trainer, normalizer)

    def serialize(self) -> bytes:
        return self.to_proto().serialize()

    def save(self, path: str | Path) -> Path:
        """Write the ``.model`` file (``sentencepiece.SentencePieceProcessor(model_file=path)`` loads it)."""
        path = Path(path)
        path.write_bytes(self.serialize())
        return path

    def tokenizer(self, name: str = "") -> SentencePieceTokenizer:
        """Our engine running this model (same ids as ``sentencepiece`` on the saved file)."""
        return SentencePieceTokenizer(self.to_proto(), name=name)


class PieceRule:
    """SentencePiece's limits on merging, as a :class:`~app.engines.training.MergeRule`: a piece holds at most
    ``max_len`` characters, a pair whose text is already a piece never merges (it would be a second spelling),
    and nothing below ``first_char`` (``<unk>``, which stands for left-out characters, and the other special
    and byte pieces) is ever part of a pair.

    >>> rule = PieceRule(["<unk>", "a", "b", "ab"], first_char=1, max_len=3)
    >>> rule.refused([(1, 2), (2, 1), (0, 1), (3, 3)])
    [(1, 2), (0, 1), (3, 3)]
    >>> list(rule.added(4, (2, 1)))
    []
    """

    def __init__(self, texts: list[str], first_char: int, max_len: int):
        self.texts = list(texts)
        self.lengths = [len(t) for t in self.texts]
        self.known: dict[str, int] = {}
        for i, t in enumerate(self.texts):
            self.known.setdefault(t, i)
        self.first_char = first_char
        self.max_len = max_len

    def refused(self, pairs: Iterable[Pair]) -> list[Pair]:
        """The pairs that may never merge: too long, a second spelling, or with a special or left-out piece."""
        first, max_len, lengths, texts, known = self.first_char, self.max_len, self.lengths, self.texts, self.known
        return [
            (a, b)
            for a, b in pairs
            if a < first or b < first or lengths[a] + lengths[b] > max_len or texts[a] + texts[b] in known
        ]

    def added(self, new_id: int, pair: Pair) -> list[Pair]:
        """Record the new piece; return the pairs of pieces that spell it another way (now ruled out)."""
        text = self.texts[pair[0]] + self.texts[pair[1]]
        self.texts.append(text)
        self.lengths.append(len(text))
        self.known[text] = new_id
        known = self.known
        spellings = []
        for k in range(1, len(text)):  # a loop, not comprehensions: this runs once per merge
            a = known.get(text[:k])
            if a is not None:
                b = known.get(text[k:])
                if b is not None and (a, b) != pair:
                    spellings.append((a, b))
        return spellings


class SentencePieceTrainerState(MergeState):
    """A SentencePiece-style BPE training run in progress; :meth:`step` merges once (the lab's manual mode).

    >>> state = SentencePieceTrainerState("low lower lowest", 300, byte_fallback=False)
    >>> step = state.step()
    >>> step.left.decode(), step.right.decode(), step.count
    ('▁', 'l', 3)
    """

    error = SentencePieceTrainingError

    def __init__(
        self,
        text: str,
        vocab_size: int,
        *,
        byte_fallback: bool = True,
        add_dummy_prefix: bool = True,
        character_coverage: float = 1.0,
        tie_break: str = "first",
        max_piece_length: int = 16,
    ):
        check_text(text)
        check_tie_break(tie_break, SentencePieceTrainingError)
        if not 0.0 < character_coverage <= 1.0:
            raise SentencePieceTrainingError(
                f"character_coverage must be in (0, 1], got {character_coverage}; 1.0 keeps every character"
            )
        if max_piece_length < 2:
            raise SentencePieceTrainingError(f"max_piece_length must be at least 2, got {max_piece_length}")
        if not isinstance(vocab_size, int) or vocab_size > MAX_VOCAB_SIZE:
            raise SentencePieceTrainingError(
                f"vocab_size must be an integer up to {MAX_VOCAB_SIZE}, got {vocab_size!r}"
            )
        self.byte_fallback = byte_fallback
        self.add_dummy_prefix = add_dummy_prefix
        self.character_coverage = character_coverage
        self.max_piece_length = max_piece_length
        self.requested_vocab_size = vocab_size

        word_counts = word_frequencies(text, add_dummy_prefix)
        if not word_counts:
            raise SentencePieceTrainingError("the corpus is empty; give some text to train on")
        char_counts = char_frequencies(word_counts)
        # NUL can never be a piece (sentencepiece refuses to load one); it is always left to byte fallback/<unk>
        chars = required_chars(Counter({c: n for c, n in char_counts.items() if c != "\x00"}), character_coverage)
        self.unknown_chars = sorted(set(char_counts) - set(chars))

        pieces: list[Piece] = [Piece(p, 0.0, t) for p, t in META_PIECES]
        if byte_fallback:
            pieces.extend(Piece(byte_piece(b), 0.0, BYTE) for b in range(256))
        self.n_special = len(META_PIECES)
        self.char_start = len(pieces)
        pieces.extend(Piece(c, 0.0, NORMAL) for c in chars)
        self.base_size = len(pieces)
        if vocab_size < self.base_size:
            parts = f"{self.n_special} special" + (" + 256 byte" if byte_fallback else "")
            parts += f" + {len(chars)} character"
            raise SentencePieceTrainingError(
                f"vocab_size {vocab_size} is smaller than the base vocabulary ({parts} pieces = {self.base_size}); "
                f"use at least {self.base_size}, or lower character_coverage to leave rare characters out"
            )
        self.base_pieces = pieces
        rule = PieceRule([p.piece for p in pieces], self.char_start, max_piece_length)
        self.texts, self.lengths, self.known = rule.texts, rule.lengths, rule.known
        # a character left out is <unk> (id 0) while training: the rule never lets it pair
        to_id = {c: self.char_start + i for i, c in enumerate(chars)} | {c: 0 for c in self.unknown_chars}
        table = {ord(c): chr(i) for c, i in to_id.items()}
        super().__init__(
            ((w.translate(table), f) for w, f in word_counts.items()),  # ids as code points (see MergeState)
            {i: t.encode("utf-8") for i, t in enumerate(self.texts)},
            tie_break=tie_break,
            rule=rule,
        )
        self.surfaces = self.vocab

    # -- facts ---------------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return len(self.texts)

    def piece(self, token_id: int) -> str:
        return self.texts[token_id]

    @property
    def done(self) -> bool:
        return self.vocab_size >= self.requested_vocab_size or super().done

    def finish_reason(self) -> str:
        """Why training stops here (the text ``TrainResult.stop_reason`` carries)."""
        if self.vocab_size >= self.requested_vocab_size:
            return STOP_VOCAB_SIZE
        return (
            f"{STOP_NO_PAIR}: stopped at {self.vocab_size} of the {self.requested_vocab_size} pieces asked for; "
            "the corpus is too small for that vocab_size (add text or ask for fewer pieces)"
        )

    # -- one merge -------------------------------------------------------------------------------------------
    def step(self, force_pair: Pair | None = None, *, top_k: int = 0, max_ties: int | None = None) -> MergeStep:
        """Merge the winning pair (or ``force_pair``, the lab's "merge this next") and return the step record."""
        if self.vocab_size >= self.requested_vocab_size:
            raise SentencePieceTrainingError(
                f"the vocabulary already has {self.vocab_size} pieces (vocab_size); training is complete"
            )
        if force_pair is not None and not self.pair_count(force_pair):
            a, b = int(force_pair[0]), int(force_pair[1])
            text = self.texts[a] + self.texts[b] if 0 <= a < len(self.texts) and 0 <= b < len(self.texts) else None
            if text in self.known:  # a second spelling of a piece is never counted: say why
                raise SentencePieceTrainingError(
                    f"pair {(a, b)} does not occur in the corpus now, or spells {text!r}, which is already piece "
                    f"{self.known[text]}; pick one from current_top_pairs()"
                )
        return super().step(force_pair, top_k=top_k, max_ties=max_ties)

    # -- results -------------------------------------------------------------------------------------------
    def run(self, *, top_k: int = 0) -> TrainResult:
        """Step until the vocabulary is full or no pair occurs twice; return the result."""
        run_merges(self, self.requested_vocab_size - self.base_size, top_k=top_k)
        return self.result()

    def result(self, stop_reason: str | None = None) -> TrainResult:
        """The result so far; the stop reason says why training ended, or that the user stopped it early."""
        if stop_reason is None:
            stop_reason = self.finish_reason() if self.done else "stopped by the user before the end"
        return super().result(stop_reason)

    def model(self) -> TrainedSentencePiece:
        """The vocabulary so far as a model: merge ``k`` scores ``-k``; characters score below every merge."""
        n_merges = len(self.merges)
        pieces: list[Piece] = []
        for i, text in enumerate(self.texts):
            if i < self.char_start:
                score = 0.0
            elif i < self.base_size:
                score = -float(n_merges + i - self.char_start)
            else:
                score = -float(i - self.base_size)
            pieces.append(Piece(text, score, self.base_pieces[i].type if i < self.base_size else NORMAL))
        return TrainedSentencePiece(
            pieces,
            byte_fallback=self.byte_fallback,
            add_dummy_prefix=self.add_dummy_prefix,
            character_coverage=self.character_coverage,
            max_piece_length=self.max_piece_length,
            requested_vocab_size=self.requested_vocab_size,
        )


def train_sentencepiece(
    text: str, vocab_size: int, *, top_k: int = 0, **options
) -> tuple[TrainedSentencePiece, TrainResult]:
    """Train to ``vocab_size`` pieces (or until no pair occurs twice) and return the model and the steps.

    ``options`` are :class:`SentencePieceTrainerState`'s (``byte_fallback``, ``add_dummy_prefix``,
    ``character_coverage``, ``tie_break``, ``max_piece_length``); ``top_k`` pairs are recorded before each merge.

    >>> model, result = train_sentencepiece("the cat the hat the bat", 300, byte_fallback=False)
    >>> [s.token.decode() for s in result.steps][:3], result.stop_reason.split(":")[0]
    (['▁t', '▁th', '▁the'], 'no pair occurs twice')
    """
    with cycle_collector_paused():
        state = SentencePieceTrainerState(text, vocab_size, **options)
        result = state.run(top_k=top_k)
        model = state.model()
        del state  # gone before the collector resumes: its passes would walk every list of the run once more
    return model, result
