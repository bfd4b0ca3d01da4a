"""A corpus read the way ``sentencepiece``'s trainer reads it, before either of its algorithms (BPE, unigram) runs.

:func:`load_sentences` follows the trainer's loading step: one sentence a line; empty lines, lines longer than
``max_sentence_length`` bytes and lines holding U+2585 (``▅``, which the trainer keeps for unknown characters) are
skipped; each sentence is normalized as the model will normalize text (the rule's precompiled charsmap, extra spaces,
the dummy prefix, spaces as ``▁``); every meta piece written in it (``<unk>``, ``<s>``, a user-defined symbol, a byte
piece ``<0x41>``...) becomes a boundary no piece crosses; sentences left empty go (the last one takes the place of
each, as the trainer swaps them); the characters that make up ``character_coverage`` of all occurrences, most
frequent first, are the required characters, and every other character becomes ``▅``, which no piece holds.

:func:`split_words` cuts a sentence into words as the trainer does with ``split_by_whitespace``, and
:class:`PieceRule` says which pieces the trainer may make (their length, one Unicode script per piece as
sentencepiece's own script table has it, where ``▁`` may stand, digits alone with ``split_digits``).

The data this needs ships under ``tokenizers/sentencepiece/trainer/`` (scripts/build_sentencepiece_trainer_data.py):
the precompiled charsmaps of the normalization rules and sentencepiece's script table.
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from functools import cache

from ..compiled import twin
from ..datafiles import verified_bytes
from .normalizer import SPACE_SYMBOL, Normalizer
from .trainer_options import TrainerOptions, TrainerOptionsError

UNK_CHAR = "\u2585"  # ▅: what the trainer puts for a character left out of the vocabulary
BOUNDARY_CHAR = "\x1f"  # what the trainer puts for a meta piece found in the text
ANY_SCRIPT = -1
MAX_SIZE = 1 << 30
_char_counts = twin("_spm_train", "char_counts")  # collections.Counter of a str, compiled  # a size no vocabulary reaches: meta pieces placed before the size is known


class CorpusError(TrainerOptionsError):
    """A corpus the trainer cannot train on with these options (empty, or too small a ``vocab_size``)."""


@cache
def charsmap(rule: str) -> bytes:
    """The precompiled charsmap of a normalization rule (empty for ``identity``)."""
    if rule == "identity":
        return b""
    return verified_bytes(f"sentencepiece/trainer/{rule}.charsmap")


@cache
def _script_table() -> tuple[list[int], list[int], list[int], dict[str, int]]:
    starts, ends, ids = [], [], []
    names: dict[str, int] = {"Common": 0}
    for line in verified_bytes("sentencepiece/trainer/unicode-scripts.tsv").decode().splitlines():
        a, b, name = line.split("\t")
        starts.append(int(a, 16))
        ends.append(int(b, 16))
        ids.append(names.setdefault(name, len(names)))
    return starts, ends, ids, names


def script_of(cp: int) -> int:
    """sentencepiece's script of a code point, as a number (0 is ``Common``, also for code points it does not list).

    >>> script_of(ord("a")) == script_of(ord("Z")) != script_of(ord(","))
    True
    """
    starts, ends, ids, _ = _script_table()
    i = bisect_right(starts, cp) - 1
    return ids[i] if i >= 0 and cp <= ends[i] else 0


def script_names() -> dict[str, int]:
    return _script_table()[3]


def script_ranges() -> bytes:
    """The table as packed little-endian ``int32`` triples (first, last, script id) for the compiled twins, with the
    ids of Hiragana, Katakana, Han and Inherited first (the rules that merge or inherit scripts)."""
    starts, ends, ids, names = _script_table()
    head = [names.get(n, -2) for n in ("Hiragana", "Katakana", "Han", "Inherited")]
    flat = head + [v for triple in zip(starts, ends, ids) for v in triple]
    return struct.pack(f"<{len(flat)}i", *flat)


def _is_decimal(c: str) -> bool:
    return "0" <= c <= "9" or "\uff10" <= c <= "\uff19"


class PieceRule:
    """Which pieces sentencepiece's trainer may make (its ``IsValidSentencePiece``), under ``options``.

    >>> rule = PieceRule(TrainerOptions())
    >>> rule.valid("▁the"), rule.valid("e,"), rule.valid("the▁"), rule.valid("12"), rule.valid("あア漢")
    (True, False, False, True, True)
    """

    def __init__(self, options: TrainerOptions):
        self.options = options
        self._scripts: dict[str, int] = {}
        names = script_names()
        self.hiragana, self.katakana = names.get("Hiragana", -2), names.get("Katakana", -2)
        self.han, self.inherited = names.get("Han", -2), names.get("Inherited", -2)

    def script(self, c: str) -> int:
        s = self._scripts.get(c)
        if s is None:
            s = script_of(ord(c))
            if s in (self.hiragana, self.katakana) or c == "\u30fc":
                s = self.han
            self._scripts[c] = s
        return s

    def valid(self, piece: str) -> bool:
        o = self.options
        n = len(piece)
        if n == 0 or n > o.max_sentencepiece_length:
            return False
        all_ws = piece.count(SPACE_SYMBOL) == n
        prev = ANY_SCRIPT
        for pos, c in enumerate(piece):
            if c in (UNK_CHAR, "\x00", BOUNDARY_CHAR, " "):
                return False
            if c == SPACE_SYMBOL:
                if not o.allow_whitespace_only_pieces or not all_ws:
                    if o.treat_whitespace_as_suffix:
                        if (o.split_by_whitespace and pos < n - 1) or (not o.split_by_whitespace and pos < n - 1 and pos == 0):
                            return False
                    elif (o.split_by_whitespace and pos > 0) or (not o.split_by_whitespace and pos > 0 and pos == n - 1):
                        return False
                continue
            s = self.script(c)
            if s == self.inherited:
                s = prev
            decimal = _is_decimal(c)
            if decimal and not o.split_by_number:
                s = ANY_SCRIPT
            if decimal and o.split_digits and n > 1:
                return False
            if o.split_by_unicode_script and s != ANY_SCRIPT and prev != ANY_SCRIPT and prev != s:
                return False
            prev = s
        return True


def float32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


@dataclass
class Sentences:
    """The corpus as the trainer holds it once loaded: normalized sentences (rare characters as ``▅``), each once
    (frequency 1), in the trainer's order, and the required characters with their counts, most frequent first."""

    sentences: list[str]
    required: list[tuple[str, int]]
    meta: dict[int, tuple[str, str]]
    n_lines: int  # sentences read (before normalization dropped the empty ones)
    skipped_long: int
    skipped_unk: int


def _global_replace(text: str, metas: list[str], first_chars: frozenset[str]) -> str:
    """Each meta piece written in ``text`` (longest first at each place) as :data:`BOUNDARY_CHAR`."""
    if not first_chars.intersection(text):
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in first_chars:
            best = 0
            for m in metas:  # longest first
                if text.startswith(m, i):
                    best = len(m)
                    break
            if best:
                out.append(BOUNDARY_CHAR)
                i += best
                continue
        out.append(c)
        i += 1
    return "".join(out)


def load_sentences(text: str, options: TrainerOptions, vocab_size: int | None) -> Sentences:
    """Read ``text`` (one sentence a line) as sentencepiece's trainer reads its input, under ``options``; raise
    :class:`CorpusError` when nothing is left to train on or ``vocab_size`` cannot hold the required characters
    (``None``: the size is not known yet, :func:`sized` checks it)."""
    meta = options.meta_ids(MAX_SIZE if vocab_size is None else vocab_size)
    normalizer = Normalizer(
        add_dummy_prefix=options.add_dummy_prefix,
        remove_extra_whitespaces=options.remove_extra_whitespaces,
        escape_whitespaces=True,
        treat_whitespace_as_suffix=options.treat_whitespace_as_suffix,
        charsmap=charsmap(options.normalization_rule_name),
    )
    metas = sorted({p for p, _ in meta.values()}, key=len, reverse=True)
    first_chars = frozenset(m[0] for m in metas)
    limit = options.max_sentence_length
    sentences: list[str] = []
    skipped_long = skipped_unk = 0
    lines = [line for line in text.split("\n") if line]
    for line in lines:
        if len(line) * 4 > limit and len(line.encode("utf-8")) > limit:
            skipped_long += 1
            continue
        if UNK_CHAR in line:
            skipped_unk += 1
            continue
        sentences.append(line)
    n_lines = len(sentences)
    normalize = normalizer.normalize_text
    sentences = [_global_replace(normalize(s), metas, first_chars) for s in sentences]
    i = 0
    while i < len(sentences):  # an empty sentence makes way for the last one, as the trainer swaps them
        if sentences[i]:
            i += 1
        else:
            sentences[i] = sentences[-1]
            sentences.pop()
    if not sentences:
        if skipped_long == len(lines):
            raise CorpusError(
                "sentencepiece.max_sentence_length",
                f"sentencepiece's trainer skips lines longer than max_sentence_length ({limit:,} bytes), and "
                f"{'the corpus is one such line' if len(lines) == 1 else f'all {len(lines):,} lines of the corpus are'}"
                f": cut the text into lines (one sentence a line) or raise sentencepiece.max_sentence_length",
            )
        raise CorpusError("corpus", "the corpus has no sentence to train on once normalized; give some text "
                          "(one sentence a line)")
    joined = "\n".join(sentences)
    whole = joined.count("\n") == len(sentences) - 1  # no sentence holds a line break of its own: one pass each
    if not whole:
        joined = "".join(sentences)
    counts = _char_counts(joined) if _char_counts is not None else Counter(joined)
    if whole:
        counts.pop("\n", None)
    present = set(counts)
    counts.pop(" ", None)
    counts.pop("\x00", None)
    total = sum(counts.values())
    coverage_limit = float32(options.character_coverage)
    required: list[tuple[str, int]] = []
    covered = 0
    for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if float32(covered / total) >= coverage_limit:
            break
        covered += n
        if c == BOUNDARY_CHAR:
            continue
        required.append((c, n))
    kept = {c for c, _ in required}
    rare = sorted(c for c in present if c not in kept)
    if rare:  # one pass of a character class over the corpus (str.translate looks each character up)
        rx = re.compile("[" + "".join(map(re.escape, rare)) + "]")
        sentences = rx.sub(UNK_CHAR, joined).split("\n") if whole else [rx.sub(UNK_CHAR, s) for s in sentences]
    loaded = Sentences(sentences, required, meta, n_lines, skipped_long, skipped_unk)
    if vocab_size is not None:
        _check_room(loaded, options, vocab_size)
    return loaded


def _check_room(loaded: Sentences, options: TrainerOptions, vocab_size: int) -> None:
    least = len(loaded.required) + len(loaded.meta)
    if least > vocab_size:
        raise CorpusError(
            "vocab_size",
            f"vocab_size {vocab_size:,} is smaller than the {len(loaded.meta):,} meta pieces and the "
            f"{len(loaded.required):,} characters that make up character_coverage {options.character_coverage} of "
            f"this corpus ({least:,}); raise vocab_size or lower character_coverage",
        )


def load_sized(text: str, options: TrainerOptions, vocab_size: int | None, learned: int | None) -> tuple[Sentences, int]:
    """The corpus loaded (:func:`load_sentences`) and the size to train it to: ``vocab_size``, or, given ``learned``
    instead, the meta pieces, the required characters and ``learned`` pieces more (merges, or longer pieces)."""
    if (vocab_size is None) == (learned is None):
        raise CorpusError("vocab_size", "give exactly one of vocab_size and the number of pieces to learn")
    size = vocab_size if vocab_size is not None else learned
    if isinstance(size, bool) or not isinstance(size, int) or size < (1 if vocab_size is not None else 0):
        name = "vocab_size" if vocab_size is not None else "merges"
        raise CorpusError(name, f"{name} must be a {'positive' if vocab_size is not None else 'whole'} number, got {size!r}")
    loaded = load_sentences(text, options, vocab_size)
    if vocab_size is None:
        vocab_size = len(loaded.meta) + len(loaded.required) + learned
        options.meta_ids(vocab_size)  # a special id at or beyond the size is refused, naming it
    return loaded, vocab_size


class OutOfReach(CorpusError):
    """A ``vocab_size`` the corpus cannot fill (sentencepiece refuses it too): ``reached`` is the most it fills,
    ``least`` the meta pieces and required characters every size holds."""

    def __init__(self, message: str, reached: int, least: int):
        self.reached = reached
        self.least = least
        super().__init__("vocab_size", message)

    def __reduce__(self):
        return self.__class__, (str(self), self.reached, self.least)


def out_of_reach(trainer: str, vocab_size: int, loaded: Sentences, reached: int, what: str) -> OutOfReach:
    """sentencepiece's refusal of a size the corpus cannot fill, in words, with the largest it can: ``reached``
    pieces, ``what`` saying what they are."""
    return OutOfReach(
        f"vocab_size {vocab_size:,} is more than this corpus can fill: sentencepiece's {trainer} trainer ends at "
        f"{reached:,} pieces ({what}); choose a vocab_size of at most {reached:,}, or add text",
        reached,
        len(loaded.meta) + len(loaded.required),
    )


def split_words(sentence: str, suffix: bool = False, allow_ws_only: bool = False) -> list[str]:
    """A sentence cut into words as the trainer's ``split_by_whitespace`` cuts it: before each ``▁`` (after each
    with ``suffix``); a run of ``▁`` stays one word with ``allow_ws_only``.

    >>> split_words("▁the▁▁cat")
    ['▁the', '▁', '▁cat']
    >>> split_words("▁the▁▁cat", allow_ws_only=True)
    ['▁the', '▁▁cat']
    >>> split_words("the▁cat▁", suffix=True)
    ['the▁', 'cat▁']
    """
    ws = SPACE_SYMBOL
    if not suffix:
        if not allow_ws_only:
            if sentence.startswith(ws):
                return [ws + w for w in sentence[1:].split(ws)]
            head, *rest = sentence.split(ws)
            return [head] + [ws + w for w in rest]
        out: list[str] = []
        in_ws = False
        start = 0
        for i, c in enumerate(sentence):
            is_ws = c == ws
            if i == 0 or (is_ws and not in_ws):
                if i:
                    out.append(sentence[start:i])
                start = i
                in_ws = True
            if in_ws and not is_ws:
                in_ws = False
        out.append(sentence[start:])
        return out
    words = [""]
    in_ws = False
    n = len(sentence)
    for i, c in enumerate(sentence):
        is_ws = c == ws
        if is_ws:
            in_ws = True
        elif in_ws:
            if allow_ws_only:
                words.append("")
            in_ws = False
        words[-1] += c
        if i + 1 < n and is_ws and not allow_ws_only:
            words.append("")
    return [w for w in words if w] if n else []


def word_counts(sentences: list[str], options: TrainerOptions) -> list[tuple[str, int]]:
    """The distinct words of the sentences with their counts, most frequent first, then in byte order (the trainer's
    order); without ``split_by_whitespace``, the sentences themselves, each once, in their order."""
    if not options.split_by_whitespace:
        return [(s, 1) for s in sentences]
    suffix, allow = options.treat_whitespace_as_suffix, options.allow_whitespace_only_pieces
    if not suffix and not allow and all(s.startswith(SPACE_SYMBOL) for s in sentences):
        # every sentence starts a word: one split of the whole corpus, the ▁ put back on the distinct words
        pieces = Counter("".join(sentences).split(SPACE_SYMBOL))
        pieces[""] -= 1  # before the first ▁
        if not pieces[""]:
            del pieces[""]
        return sorted(((SPACE_SYMBOL + w, n) for w, n in pieces.items()), key=lambda kv: (-kv[1], kv[0]))
    counts: Counter = Counter()
    for s in sentences:
        counts.update(split_words(s, suffix, allow))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
