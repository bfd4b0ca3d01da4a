"""What a tokenizer family tells the explainer: the stretches of a text it cuts on their own (:class:`Unit`), and
how to retrace and name them (:class:`Plan`), or, for a family that does not merge, why a part is what it is
(:class:`Detail`).

A unit is a pre-token (byte-level BPE), a stretch of normalized text that merges on its own (SentencePiece), a
word (WordPiece), a stretch no piece of the vocabulary spans (Unigram), or something that was never merged: a
special or added token, text a lab tokenizer leaves between words. Units tile the token ids in order, so the unit
of token ``i`` is found by its first index (or, for a family that can, by :meth:`Plan.locate` from the token
itself). Each family has its plan (:mod:`.byte_level_plans`, :mod:`.sentencepiece_plans`, :mod:`.wordpiece_plans`,
:mod:`.unigram_plans`; the lab's tokenizers bring their own): it cuts a text into units exactly as its engine does,
gives the symbols a unit's merge starts from and the ranking the engine merges them with (BPE) or the detail of a
part (the others), the rule that cut the unit, and what the model's normalizer changed. This module holds no
family's logic.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from app.engines.base import Tokenizer
from app.engines.merging import Ranking

from .normalization import Normalization, identity
from .split_rules import Rule
from .trace import Tree, split_tree


@dataclass(slots=True)
class Unit:
    """A stretch of the input and its tokens. ``text`` is what the model merges (after normalization);
    ``parts`` its final parts (one per id unless ``per_part`` says how many ids each became); ``context`` is
    what the plan needs to name the unit's rule later."""

    start: int  # character offsets into the input
    end: int
    text: str
    first: int  # index of its first token in the whole text
    ids: Sequence[int]
    #: merged by BPE ("merge"), a special token ("special"), an added token ("added": a tokenizer.json's non-special
    #: one), or text that is never merged ("plain": a lab tokenizer's text between words)
    kind: str = "merge"
    parts: Sequence[Any] = ()
    per_part: Sequence[int] | None = None
    whole: bool = False  # taken whole, without merging (tiktoken's rule, tokenizer.json's ignore_merges)
    context: Any = None

    def part_of(self, k: int) -> tuple[int, int]:
        """``(part index, index within the part's ids)`` of the unit's ``k``-th token."""
        if self.per_part is None:
            return k, 0
        for p, n in enumerate(self.per_part):
            if k < n:
                return p, k
            k -= n
        raise IndexError(k)


class Plan(ABC):
    """How one tokenizer family is explained. The defaults are byte-level BPE's: symbols are bytes, ranks are
    whole numbers already. A family whose cuts are not merges (WordPiece, Unigram) sets ``algorithm`` and says
    why a part is what it is in :meth:`detail` instead."""

    #: ``bpe`` (the merges are retraced), or the algorithm whose :meth:`detail` explains a part.
    algorithm: ClassVar[str] = "bpe"
    #: What the symbols are called in a note.
    symbol_name: ClassVar[str] = "bytes"
    #: Why special-token text inside a unit was not parsed as special.
    special_off: ClassVar[str] = "special tokens were not allowed here, so its text was encoded as ordinary text"
    #: Which rule takes a pre-token that is a token whole ("" when none does).
    whole_rule: ClassVar[str] = ""

    def __init__(self, tokenizer: Tokenizer, ranking: Ranking):
        self.tokenizer = tokenizer
        self.ranking = ranking

    @abstractmethod
    def units(self, text: str, allow_special: bool) -> Iterator[Unit]:
        """The units of ``text``, in order, their ids exactly the engine's; cut as they are asked for."""

    @abstractmethod
    def rule(self, unit: Unit) -> Rule:
        """The rule that cut ``unit`` out of the text."""

    def complete(self, unit: Unit) -> None:
        """Fill in what only the explained unit needs (its final parts, whether it was taken whole), when
        :meth:`units` left it out to stay fast."""

    def notes(self, unit: Unit) -> list[str]:
        """What else is worth telling about a unit of this family (the dummy prefix, ...)."""
        return []

    def symbols(self, unit: Unit) -> list[Any]:
        """The symbols the merge of ``unit`` starts from."""
        return [bytes([b]) for b in unit.text.encode("utf-8")]

    def data(self, symbol: Any) -> bytes:
        """The bytes a symbol or part stands for (as the steps and the tree show it)."""
        return symbol

    def rank(self, raw: Any) -> int:
        """A merge's rank as the model numbers it."""
        return raw

    def size(self, part: Any) -> int:
        """How many symbols a final part spans."""
        return len(part)

    def pair_rank(self, left: bytes, right: bytes) -> int | None:
        """The rank of the merge of two parts, ``None`` when they do not merge (the tree of a token taken whole)."""
        return None

    def unknown(self, unit: Unit, part: int) -> str | None:
        """``"byte_fallback"`` or ``"unknown"`` when part ``part`` of ``unit`` is no token of the model."""
        return None

    def whole_tree(self, data: bytes) -> Tree:
        """The tree of a token taken whole whose own bytes do not merge into it: its oldest pieces."""
        return split_tree(data, self.pair_rank)

    def locate(self, text: str, allow_special: bool, *, index: int | None = None, offset: int | None = None) -> Unit | None:
        """The unit holding token ``index`` (or the first one ending after character ``offset``), found without
        cutting the units before it; None when the family cuts its units only in order (the default)."""
        return None

    def normalization(self, text: str, allow_special: bool) -> Normalization:
        """What the model's normalizer did to ``text`` (the default: a model without one)."""
        return identity(text)

    def detail(self, text: str, unit: Unit, part: int, sub: int) -> Detail:
        """Why part ``part`` of ``unit`` is what it is, for a family that does not merge (``sub``: which of the
        part's ids the token is)."""
        raise NotImplementedError(f"{type(self).__name__} explains by merges")


class Detail(ABC):
    """What a family that does not merge tells about one token: the fields it adds to the explanation's JSON,
    its ``kind``, the text it worked on (``normalized``), its notes, and where the window it shows lies in the
    unit (``window``: symbol offsets, or None for the whole unit)."""

    kind: str
    normalized: str
    notes: list[str]
    window: tuple[int, int] | None = None

    @abstractmethod
    def to_dict(self) -> dict:
        """The fields this family adds to the explanation's JSON."""

    def shifted(self, chars: int, tokens: int) -> Detail:
        """This detail with its input offsets moved by ``chars`` and its token indexes by ``tokens``."""
        return self


PlanFactory = Callable[[Tokenizer], Plan]


def added_token_units(
    added, text: str, allow_special: bool, plain: Callable[[Any, int], Iterator[Unit]]
) -> Iterator[Unit]:
    """The units of a text for a tokenizer.json model: each added token a unit of its own (found first, as
    ``tokenizers`` finds them: :class:`~app.engines.pipeline.added_tokens.AddedVocabulary`), and
    ``plain(piece, first)`` the units of the normalized text between them, from token ``first`` on."""
    first = 0
    for piece in added.split(text, allow_special):
        if piece.token is not None:
            kind = "special" if piece.token.special else "added"
            yield Unit(piece.start, piece.end, piece.token.content, first, [piece.token.id], kind)
            first += 1
            continue
        for unit in plain(piece, first):
            yield unit
            first = unit.first + len(unit.ids)


def window_around(sizes: Sequence[int], part: int, limit: int) -> tuple[int, int]:
    """The widest run of whole parts around ``part`` whose sizes add up to at most ``limit`` (at least ``part``
    itself), grown on both sides in turn: the window a long unit is explained in."""
    first, last, total = part, part + 1, sizes[part]
    grown = True
    while grown:
        grown = False
        if first > 0 and total + sizes[first - 1] <= limit:
            first -= 1
            total += sizes[first]
            grown = True
        if last < len(sizes) and total + sizes[last] <= limit:
            total += sizes[last]
            last += 1
            grown = True
    return first, last
