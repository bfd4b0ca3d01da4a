"""Compare tokenizers on one text: per-tokenizer stats, the best value per column, boundary differences.

Pure functions over :class:`~app.engines.result.TokenizeResult`; nothing here knows about the web.

Definitions (the compare page and ``POST /api/compare`` show exactly these):

- **tokens**: number of token ids.
- **chars/token** and **bytes/token**: characters (code points) and UTF-8 bytes of the input per token; higher is
  better (a tokenizer that needs fewer tokens for the same text).
- **fertility**: tokens per *word*, where a word is a maximal run of non-whitespace characters (``str.split()``
  with no argument, so any Unicode whitespace separates words). ``None`` when the text has no words, or when
  a third or more of its letters are of scripts written without spaces (Chinese, Japanese, Thai...): a "word"
  would be a whole clause there, and the number would mean nothing. Lower is better.
- **partial share**: the share of tokens that are not a whole character on their own: their bytes are not valid
  UTF-8 by themselves (a byte-level BPE cutting a CJK character or an emoji, or a SentencePiece byte-fallback
  piece ``<0xE3>`` of a character spelled in bytes). Lower is better.
- **byte fallback**: byte-fallback pieces that are a whole character each (``<0x0A>`` for a newline the
  vocabulary lacks); counted apart from partial tokens, because they cut nothing (informational).
- **unknown**: tokens whose id is the tokenizer's unknown id (``tokenizer.unk_id``; tokenizers without one
  never produce unknown tokens). Lower is better.
- **special**: special tokens (informational, not ranked).

Boundaries are compared on *segments* (tokens that split one character folded together), so a boundary is always
a character offset: the offsets where a segment starts, other than 0.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import regex

from app.engines.errors import TokenplayError
from app.engines.pipeline.post_processor import NOTHING, AddedSpecials
from app.engines.result import TokenizeResult

MIN_TOKENIZERS = 2


class CompareError(TokenplayError):
    """A comparison that cannot be made as asked (too few tokenizers, a reference that is not compared)."""


# Column name -> True when a higher value is better. The order is the table's column order.
COLUMNS: dict[str, bool] = {
    "tokens": False,
    "chars_per_token": True,
    "bytes_per_token": True,
    "fertility": False,
    "partial_share": False,
    "unknown": False,
}

COLUMN_LABELS: dict[str, str] = {
    "tokens": "Tokens",
    "chars_per_token": "Chars / token",
    "bytes_per_token": "Bytes / token",
    "fertility": "Tokens / word",
    "partial_share": "Partial tokens",
    "unknown": "Unknown",
}


def count_words(text: str) -> int:
    """Words as the stats count them: maximal runs of non-whitespace characters."""
    return len(text.split())


#: Letters of scripts written without spaces between words.
_SPACELESS = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Tibetan}]")
_LETTER = regex.compile(r"\p{L}")


def has_words(text: str) -> bool:
    """Whether tokens per word means something for ``text``: it has words, and under a third of its letters
    are of scripts written without spaces.

    >>> has_words("a tokenizer"), has_words("東京は日本の首都です"), has_words("")
    (True, False, False)
    """
    letters = len(_LETTER.findall(text))
    return bool(text.split()) and len(_SPACELESS.findall(text)) * 3 < max(letters, 1)


def _ratio(numerator: int, denominator: int, digits: int = 3) -> float | None:
    return round(numerator / denominator, digits) if denominator else None


@dataclass(slots=True)
class Stats:
    tokens: int
    chars: int
    bytes: int
    words: int
    chars_per_token: float | None
    bytes_per_token: float | None
    fertility: float | None
    partial: int  # tokens that are not a whole character on their own
    partial_share: float | None
    unknown: int
    special: int
    byte_fallback: int = 0  # byte-fallback pieces that are a whole character each

    def to_dict(self) -> dict:
        return {
            "tokens": self.tokens,
            "chars": self.chars,
            "bytes": self.bytes,
            "words": self.words,
            "chars_per_token": self.chars_per_token,
            "bytes_per_token": self.bytes_per_token,
            "fertility": self.fertility,
            "partial": self.partial,
            "partial_share": self.partial_share,
            "unknown": self.unknown,
            "special": self.special,
            "byte_fallback": self.byte_fallback,
        }

    def value(self, column: str):
        return getattr(self, column)

    def exact(self, column: str):
        """The column's value before rounding (a page formats this to two digits: rounding the rounded value
        again can show 3.46 for 38/11 = 3.4545...).

        >>> compute_stats(TokenizeResult("t", "a" * 38, list(range(11)), place=lambda o, n: [])).exact("chars_per_token")
        3.4545454545454546
        """
        ratios = {
            "chars_per_token": (self.chars, self.tokens),
            "bytes_per_token": (self.bytes, self.tokens),
            "fertility": (self.tokens, self.words),
            "partial_share": (self.partial, self.tokens),
        }
        if column not in ratios or self.value(column) is None:
            return self.value(column)
        numerator, denominator = ratios[column]
        return numerator / denominator


def is_partial(token) -> bool:
    """A token that is not a whole character on its own: its bytes are not valid UTF-8 by themselves."""
    return not token.valid_utf8


def compute_stats(
    result: TokenizeResult, unk_id: int | None = None, *, words: int | None = None, spaced: bool | None = None
) -> Stats:
    """The stats of one result. ``unk_id`` is the tokenizer's unknown-token id, if it has one; ``words`` and
    ``spaced`` (:func:`has_words`) are the text's, found once when several results share it."""
    count, chars, n_bytes = result.count, result.chars, result.n_bytes
    words = count_words(result.text) if words is None else words
    spaced = has_words(result.text) if spaced is None else spaced
    partial = sum(1 for t in result.tokens if is_partial(t))
    whole_bytes = sum(1 for t in result.tokens if t.byte_fallback and t.valid_utf8)
    unknown = sum(1 for i in result.ids if i == unk_id) if unk_id is not None else 0
    special = sum(1 for t in result.tokens if t.special)
    return Stats(
        tokens=count,
        chars=chars,
        bytes=n_bytes,
        words=words,
        chars_per_token=_ratio(chars, count),
        bytes_per_token=_ratio(n_bytes, count),
        fertility=_ratio(count, words) if spaced else None,
        partial=partial,
        partial_share=_ratio(partial, count, 4),
        unknown=unknown,
        special=special,
        byte_fallback=whole_bytes,
    )


def unk_id_of(tokenizer) -> int | None:
    """The tokenizer's unknown-token id, or ``None`` (byte-level tokenizers have none)."""
    unk = getattr(tokenizer, "unk_id", None)
    return unk if isinstance(unk, int) and not isinstance(unk, bool) and unk >= 0 else None


def best_per_column(stats: dict[str, Stats]) -> dict[str, list[str]]:
    """For each column, the tokenizer names that share the best value (ties all win; ``None`` values never do).

    A column where every tokenizer has the same value still lists them all: they are all best.
    """
    best: dict[str, list[str]] = {}
    for column, higher in COLUMNS.items():
        values = {name: s.value(column) for name, s in stats.items() if s.value(column) is not None}
        if not values:
            best[column] = []
            continue
        target = max(values.values()) if higher else min(values.values())
        best[column] = [name for name, v in values.items() if v == target]
    return best


def boundaries(result: TokenizeResult) -> set[int]:
    """Character offsets where a segment (a token, or partial tokens folded into whole characters, or characters
    no token covers) starts, except 0.

    The same segments as :meth:`TokenizeResult.segments` (see ``group_segments``), without building them: this
    runs on every token of a long text for every compared tokenizer.
    """
    found: set[int] = set()
    end = 0  # end of the segments so far
    grouping = False  # the last segment has tokens (a token starting inside it joins it)
    for token in result.tokens:
        if grouping and token.start < end:
            end = max(end, token.end)
            continue
        if token.start > end:  # characters no token covers: a segment of their own
            found.add(end)
            end = token.start
        found.add(end)
        end = max(end, token.end)
        grouping = True
    if end < len(result.text) and result.tokens:
        found.add(end)
    found.discard(0)
    return found


@dataclass(slots=True)
class BoundaryDiff:
    """How one tokenizer's boundaries differ from the reference's, as character offsets."""

    extra: list[int] = field(default_factory=list)  # this tokenizer cuts here, the reference does not
    missing: list[int] = field(default_factory=list)  # the reference cuts here, this tokenizer does not

    @property
    def offsets(self) -> list[int]:
        return sorted(set(self.extra) | set(self.missing))

    def to_dict(self) -> dict:
        return {"offsets": self.offsets, "extra": self.extra, "missing": self.missing}


def boundary_diff(result: TokenizeResult, reference: TokenizeResult | set[int]) -> BoundaryDiff:
    """Where ``result`` cuts differently from ``reference`` (a result, or its :func:`boundaries` already found)."""
    mine = boundaries(result)
    theirs = reference if isinstance(reference, set) else boundaries(reference)
    return BoundaryDiff(extra=sorted(mine - theirs), missing=sorted(theirs - mine))


def cut_at(text: str, start: int, cuts: Sequence[int]) -> list[str]:
    """``text`` (which starts at character ``start`` of the input) cut at the input offsets ``cuts``.

    >>> cut_at("bcd", 1, [2])
    ['b', 'cd']
    """
    bounds = [start, *cuts, start + len(text)]
    return [text[a - start : b - start] for a, b in itertools.pairwise(bounds)]


@dataclass(slots=True)
class MarkedSegment:
    """A segment for display, with how it relates to the reference's boundaries."""

    start: int
    end: int
    text: str
    extra_cut: bool = False  # starts at an offset where the reference does not cut
    missing_cuts: list[int] = field(default_factory=list)  # reference cuts strictly inside this segment

    def pieces(self) -> list[str]:
        """The segment's text cut at the reference's boundaries inside it (one piece when there are none)."""
        return cut_at(self.text, self.start, self.missing_cuts)


def segment_marks(
    segments: Iterable, reference_boundaries: set[int], ordered: Sequence[int] | None = None
) -> Iterator[tuple[bool, list[int]]]:
    """For each of ``segments`` (anything with ``start`` and ``end``), whether it starts where the reference does
    not cut, and the reference's cuts strictly inside it (``ordered``: the boundaries sorted, when at hand)."""
    ordered = sorted(reference_boundaries) if ordered is None else ordered
    for seg in segments:
        start = seg.start
        yield start > 0 and start not in reference_boundaries, ordered[bisect_right(ordered, start) : bisect_left(ordered, seg.end)]


def mark_segments(
    segments: Iterable, reference_boundaries: set[int], ordered: Sequence[int] | None = None
) -> list[MarkedSegment]:
    """Each of ``segments`` (anything with ``start``, ``end`` and ``text``: a :class:`Segment`, a view's span)
    marked against the reference's boundaries (see :func:`segment_marks`)."""
    segments = list(segments)
    marks = segment_marks(segments, reference_boundaries, ordered)
    return [MarkedSegment(seg.start, seg.end, seg.text, extra, cuts) for seg, (extra, cuts) in zip(segments, marks)]


@dataclass(slots=True)
class Comparison:
    text: str
    results: list[TokenizeResult]
    stats: dict[str, Stats]
    best: dict[str, list[str]]
    reference: str | None
    diffs: dict[str, BoundaryDiff]
    reference_boundaries: set[int] = field(default_factory=set)  # boundaries(the reference's result)
    #: per tokenizer, the tokens its model's own default encoding adds around the text (none when not given)
    added: dict[str, AddedSpecials] = field(default_factory=dict)

    def added_of(self, name: str) -> AddedSpecials:
        return self.added.get(name, NOTHING)

    def counted(self, result: TokenizeResult) -> dict:
        """``added_specials`` and ``count_with_specials`` of one result (as ``POST /api/tokenize`` writes them)."""
        specials = self.added_of(result.tokenizer)
        return {"added_specials": specials.to_list(), "count_with_specials": result.count + len(specials)}

    @property
    def words(self) -> int:
        return count_words(self.text)

    def to_dict(self) -> dict:
        return {
            "text_chars": len(self.text),
            "text_bytes": len(self.text.encode("utf-8", "surrogatepass")),
            "words": self.words,
            "reference": self.reference,
            "columns": list(COLUMNS),
            "results": [
                r.to_dict() | self.counted(r) | {"stats": self.stats[r.tokenizer].to_dict()} for r in self.results
            ],
            "best": self.best,
            "boundary_diff": {name: d.offsets for name, d in self.diffs.items()},
            "boundary_detail": {name: d.to_dict() for name, d in self.diffs.items()},
        }


def unique_names(names: Iterable[str]) -> list[str]:
    """``names`` without repeats, first occurrence kept."""
    return list(dict.fromkeys(names))


def check_selection(names: Sequence[str], minimum: int = MIN_TOKENIZERS) -> list[str]:
    """``names`` de-duplicated; raises :class:`CompareError` when fewer than ``minimum`` remain."""
    names = unique_names(names)
    if len(names) < minimum:
        chosen = ", ".join(names) or "none"
        raise CompareError(
            f"choose at least {minimum} different tokenizer{'s' if minimum > 1 else ''} to compare "
            f"(got {len(names)}: {chosen})"
        )
    return names


def compare(
    text: str,
    results: Sequence[TokenizeResult],
    *,
    unk_ids: dict[str, int | None] | None = None,
    reference: str | None = None,
    added: dict[str, AddedSpecials] | None = None,
) -> Comparison:
    """Stats, best values and boundary differences for results of several tokenizers on the same ``text``.

    ``reference`` names the result the others' boundaries are compared to (default: the first result). It must be
    one of the results' tokenizers.
    """
    unk_ids = unk_ids or {}
    words, spaced = count_words(text), has_words(text)  # once for every result (two scans of the text each)
    stats = {r.tokenizer: compute_stats(r, unk_ids.get(r.tokenizer), words=words, spaced=spaced) for r in results}
    by_name = {r.tokenizer: r for r in results}
    if reference is None and results:
        reference = results[0].tokenizer
    diffs: dict[str, BoundaryDiff] = {}
    ref_bounds: set[int] = set()
    if reference is not None:
        if reference not in by_name:
            raise CompareError(
                f"reference tokenizer {reference!r} is not among the compared ones; choose one of: {', '.join(by_name)}"
            )
        ref_bounds = boundaries(by_name[reference])  # found once, for every result
        diffs = {r.tokenizer: BoundaryDiff() if r.tokenizer == reference else boundary_diff(r, ref_bounds) for r in results}
    return Comparison(text, list(results), stats, best_per_column(stats), reference, diffs, ref_bounds, added or {})
