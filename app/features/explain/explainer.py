"""Explain one token of a text: the pre-token it came from and the rule that cut it, what the normalizer changed
there, and for BPE the merges inside that pre-token step by step with the pairs each merge won against and the
merge tree of the token; for WordPiece and Unigram, whose cuts are not merges, the plan's :class:`~.units.Detail`
(the word's walk, :mod:`.wordpiece_plans`; the span's lattice and best segmentations, :mod:`.unigram_plans`).

:func:`explain` tokenizes the text with the tokenizer asked for (its token record is the one ``/api/tokenize``
answers) and retraces it with our own engine: models served by tiktoken or Hugging Face ``tokenizers`` are
retraced by their ``native-*`` engine, which gives the same ids (checked on the text itself: if the two ever
disagreed, the explanation is refused rather than made up). The family's :class:`~.units.Plan` cuts the text
into units; the unit holding the token is merged again by :func:`~.trace.retrace`.

What is told truthfully rather than smoothed over:

- a pre-token that is itself a token is taken whole (tiktoken's rule; ``ignore_merges`` in a tokenizer.json):
  ``steps`` is empty, ``pretoken.whole`` is set, and the tree shows how the token's own bytes merge into it;
- a pre-token longer than :data:`TRACE_SYMBOLS` symbols is retraced in a *window*: the whole tokens around the
  explained one. A final token boundary is never crossed by a merge, so inside the window the merges are exactly
  the encoder's, in its order (the lowest pair overall, when inside the window, is the lowest there too); pairs
  outside the window are not listed as candidates, and ``pretoken.window`` says which symbols were retraced;
- special and added tokens, byte-fallback pieces and ``<unk>`` were made by no merge: ``steps`` is empty and
  ``kind`` says which, and special-token text that was *not* parsed as special says why.

This module does not render anything; the API, the CLI and the pages show an :class:`Explanation`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from weakref import WeakKeyDictionary

from app.engines import registry
from app.engines.base import Tokenizer, check_text
from app.engines.bpe.json_model import ByteLevelJSONTokenizer
from app.engines.bpe.model import NativeOpenAITokenizer, RankTokenizer
from app.engines.bpe.word_end_model import WordEndBPETokenizer
from app.engines.pipeline.added_tokens import trie_pattern
from app.engines.huggingface.library import HuggingFaceTokenizer
from app.engines.openai.encodings import ENCODINGS, TiktokenTokenizer
from app.engines.result import Token, TokenizeResult
from app.engines.sentencepiece.json_model import SentencePieceJSONTokenizer
from app.engines.sentencepiece.model import SentencePieceTokenizer
from app.engines.sentencepiece.unigram import UnigramTokenizer
from app.engines.sentencepiece.unigram_json import UnigramJSONTokenizer
from app.engines.wordpiece.model import WordPieceTokenizer

from .byte_level_plans import JSONPlan, RankPlan
from .errors import NotExplainableError, TokenIndexError
from .normalization import Change, Normalization, merged
from .sentencepiece_plans import SentencePieceJSONPlan, SentencePiecePlan
from .split_rules import Rule
from .trace import Step, Tree, mark, retrace
from .unigram_plans import UnigramPlan
from .units import Detail, Plan, PlanFactory, Unit, window_around
from .word_end_plans import WordEndPlan
from .wordpiece_plans import WordPiecePlan

#: Pre-tokens of more symbols than this are retraced in a window of whole tokens (see the module docstring).
TRACE_SYMBOLS = 64
#: Tokens taken whole are retraced from their own bytes up to this length (longer ones: their oldest pieces).
WHOLE_SYMBOLS = 256
#: The pieces of a pre-token a view shows, around the explained one.
PIECES_SHOWN = 48


@dataclass(slots=True)
class PreToken:
    """The unit a token came from: its span in the input, its text as the model merges it, the rule that cut it,
    its tokens (``first`` and ``count``), whether it was taken whole, and the retraced window when it was long."""

    start: int
    end: int
    text: str
    rule: Rule
    first: int
    count: int
    whole: bool = False
    window: tuple[int, int] | None = None

    def to_dict(self) -> dict:
        return {
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "rule": self.rule.name,
            "pattern": self.rule.pattern,
            "source": self.rule.source,
            "whole": self.whole,
            "window": None if self.window is None else {"start": self.window[0], "end": self.window[1]},
            "tokens": [self.first, self.first + self.count],
        }


@dataclass(slots=True)
class Explanation:
    """Why one token is what it is (see the module docstring). ``kind``: ``merge``, ``special``, ``added``,
    ``byte_fallback``, ``unknown`` or ``plain`` (BPE), ``wordpiece`` or ``unigram``."""

    tokenizer: str
    engine: str
    index: int
    token: Token
    kind: str
    pretoken: PreToken
    steps: list[Step]
    tree: Tree
    notes: list[str]
    pieces: list[bytes] = field(default_factory=list)  # the pre-token's tokens (as merged), for the views
    piece: int = 0  # which of them this token is (or is a byte of)
    piece_tokens: list[int] = field(default_factory=list)  # the index of each piece's first token
    pieces_cut: tuple[bool, bool] = (False, False)  # pieces left out before / after (a long pre-token)
    normalized: str = ""  # the text the model cut (the pre-token, the word, the unigram span), after normalizing
    changes: list[Change] = field(default_factory=list)  # what the normalizer changed in the pre-token's input
    normalizer_steps: list[str] = field(default_factory=list)  # what the model's normalizer does (none: [])
    normalizer_summary: str = ""
    detail: Detail | None = None  # WordPiece's walk, Unigram's lattice

    def shifted(self, chars: int, tokens: int) -> Explanation:
        """This explanation of a piece of a longer text, placed in that text: its piece starts at character
        ``chars`` and token ``tokens`` there (a chat prompt is tokenized piece by piece)."""
        pre = replace(self.pretoken, start=self.pretoken.start + chars, end=self.pretoken.end + chars,
                      first=self.pretoken.first + tokens)
        token = replace(self.token, start=self.token.start + chars, end=self.token.end + chars)
        changes = [replace(c, start=c.start + chars, end=c.end + chars) for c in self.changes]
        detail = self.detail.shifted(chars, tokens) if self.detail is not None else None
        return replace(self, index=self.index + tokens, token=token, pretoken=pre, changes=changes, detail=detail,
                       piece_tokens=[t + tokens for t in self.piece_tokens])

    @property
    def linked_pieces(self) -> list[tuple[bytes, int, bool]]:
        """``(piece, its first token's index, is this token's piece)`` for each piece of the pre-token."""
        return [(p, t, k == self.piece) for k, (p, t) in enumerate(zip(self.pieces, self.piece_tokens))]

    def to_dict(self) -> dict:
        return {
            "tokenizer": self.tokenizer,
            "engine": self.engine,
            "index": self.index,
            "kind": self.kind,
            "token": self.token.to_dict(),
            "pretoken": self.pretoken.to_dict(),
            "steps": [s.to_dict() for s in self.steps],
            "tree": self.tree.to_dict(),
            "notes": self.notes,
            "normalized": self.normalized,
            "normalizer": {
                "steps": self.normalizer_steps,
                "changes": [c.to_dict() for c in self.changes],
                "summary": self.normalizer_summary,
            },
        } | (self.detail.to_dict() if self.detail is not None else {})


# -- which plan explains a tokenizer ----------------------------------------------------------------------------------
def _no_unigram_json_plan(tokenizer: UnigramJSONTokenizer) -> Plan:
    """A Unigram model read from a tokenizer.json runs its own normalizers and pre-tokenizers, which the unigram
    plan (a SentencePiece .model's whole-text lattice) does not retrace: refused in words, not explained wrong."""
    raise NotExplainableError(
        f"{tokenizer.name or 'this tokenizer'} is a Unigram model read from a tokenizer.json: Tokenplay explains the "
        "lattice of a SentencePiece .model's unigram model, not yet of a tokenizer.json's"
    )


_PLANS: list[tuple[type, PlanFactory]] = [
    (RankTokenizer, RankPlan),
    (ByteLevelJSONTokenizer, JSONPlan),
    (UnigramJSONTokenizer, _no_unigram_json_plan),  # before its base class
    (UnigramTokenizer, UnigramPlan),  # a unigram model is a SentencePieceTokenizer too
    (SentencePieceJSONTokenizer, SentencePieceJSONPlan),  # before its base class
    (SentencePieceTokenizer, SentencePiecePlan),
    (WordPieceTokenizer, WordPiecePlan),
    (WordEndBPETokenizer, WordEndPlan),
]
_BUILT: WeakKeyDictionary = WeakKeyDictionary()
_NATIVE: WeakKeyDictionary = WeakKeyDictionary()


def retracing_engine(tokenizer: Tokenizer) -> Tokenizer:
    """The engine that retraces ``tokenizer``'s merges: itself, or for a model served by a reference library our
    engine on the same data (the one its owner gave it, ``native_engine``, as uploads do; its registered ``native-*``
    engine; else one built from the same file)."""
    if not isinstance(tokenizer, (TiktokenTokenizer, HuggingFaceTokenizer)):
        return tokenizer
    own = getattr(tokenizer, "native_engine", None)  # an uploaded file's, built from the very same bytes
    if own is not None:
        return own()
    native = f"native-{tokenizer.name}"
    if native in registry.names():
        return registry.get(native)
    found = _NATIVE.get(tokenizer)
    if found is None:
        if isinstance(tokenizer, TiktokenTokenizer) and tokenizer.name in ENCODINGS:
            found = NativeOpenAITokenizer(tokenizer.name)
        elif isinstance(tokenizer, HuggingFaceTokenizer):
            from app.engines.registry.loaders import tokenizer_from_json

            found = tokenizer_from_json(tokenizer.library.to_str(), name=native)
        else:
            raise NotExplainableError(f"{tokenizer.name} has no native engine in Tokenplay to retrace its merges")
        _NATIVE[tokenizer] = found
    return found


def plan_for(tokenizer: Tokenizer) -> Plan:
    """The plan that explains ``tokenizer``; :class:`NotExplainableError` names why there is none."""
    engine = retracing_engine(tokenizer)
    plan = _BUILT.get(engine)
    if plan is not None:
        return plan
    own = getattr(engine, "explain_plan", None)  # a tokenizer defined outside the engines brings its own plan
    if own is not None:
        plan = _BUILT[engine] = own()
        return plan
    for cls, factory in _PLANS:
        if isinstance(engine, cls):
            plan = _BUILT[engine] = factory(engine)
            return plan
    raise NotExplainableError(
        f"{tokenizer.name or 'this tokenizer'} is not a BPE tokenizer, nor a WordPiece or unigram one Tokenplay "
        "runs: only cuts made by BPE merges, a WordPiece walk or a unigram lattice can be explained"
    )


# -- explaining --------------------------------------------------------------------------------------------------
def pretoken_spans(tokenizer: Tokenizer, text: str, allow_special: bool = False) -> list[tuple[int, int, int, int]]:
    """Every unit of ``text`` as ``(start, end, first token, token count)``: the pre-tokens layer of the views."""
    return [
        (u.start, u.end, u.first, len(u.ids)) for u in Explainer(tokenizer, text, allow_special=allow_special).units
    ]


class Explainer:
    """One text's tokens, ready to explain any of them. The text is tokenized once; its units are cut only as far
    as the tokens asked about (a token near the start of 1 MB costs little), each checked against the
    tokenizer's own ids as it is cut."""

    def __init__(
        self, tokenizer: Tokenizer, text: str, *, allow_special: bool = False, result: TokenizeResult | None = None
    ):
        """``result``: the tokenizer's result for this text and flag, when the caller has it already."""
        check_text(text)
        self.tokenizer = tokenizer
        self.text = text
        self.allow_special = allow_special
        self.plan = plan_for(tokenizer)
        self._normalization: Normalization | None = None
        self.result = result if result is not None else tokenizer.tokenize(text, allow_special=allow_special)
        self._cut = self.plan.units(text, allow_special)
        self._units: list[Unit] = []
        self._firsts: list[int] = []
        self._tokens = 0  # tokens covered by the units cut so far

    def __len__(self) -> int:
        return len(self.result.ids)

    def _more(self) -> bool:
        """Cut one more unit (checked against the tokenizer's ids); False when there are no more."""
        unit = next(self._cut, None)
        if unit is None:
            if self._tokens != len(self.result.ids):
                self._disagree()
            return False
        ids = self.result.ids
        if unit.first != self._tokens or list(ids[unit.first : unit.first + len(unit.ids)]) != list(unit.ids):
            self._disagree()
        self._units.append(unit)
        self._firsts.append(unit.first)
        self._tokens += len(unit.ids)
        return True

    def _disagree(self):
        raise NotExplainableError(
            f"Tokenplay's engine does not give {self.tokenizer.name}'s ids for this text, so its merges cannot "
            "explain them"
        )

    def through(self, index: int) -> list[Unit]:
        """The units cut so far, at least up to the one holding token ``index``."""
        while self._tokens <= index and self._more():
            pass
        return self._units

    @property
    def units(self) -> list[Unit]:
        """Every unit of the text."""
        while self._more():
            pass
        return self._units

    def unit_of(self, index: int) -> Unit:
        """The unit token ``index`` came from."""
        n = len(self.result.ids)
        if not 0 <= index < n:
            raise TokenIndexError(
                f"token index {index} is out of range: the text has {n} tokens" + (f" (0..{n - 1})" if n else "")
            )
        if self._tokens <= index:  # not cut that far yet: a family that can find it on its own does
            found = self.plan.locate(self.text, self.allow_special, index=index)
            if found is not None:
                return self._checked(found)
        self.through(index)
        return self._units[bisect_right(self._firsts, index) - 1]

    def _checked(self, unit: Unit) -> Unit:
        """A unit found out of order, checked against the tokenizer's ids like every other."""
        if list(self.result.ids[unit.first : unit.first + len(unit.ids)]) != list(unit.ids):
            self._disagree()
        return unit

    def index_at(self, offset: int) -> int:
        """The index of the token that covers character ``offset`` of the text (the first one, when a character
        is cut into several tokens; the last token when ``offset`` is past the end)."""
        if not self._units or self._units[-1].end <= offset:
            found = self.plan.locate(self.text, self.allow_special, offset=offset)
            if found is not None and found.ids:
                unit = self._checked(found)
                tokens = self.result.window(unit.first, len(unit.ids))
                return unit.first + next((i for i, t in enumerate(tokens) if t.end > offset), len(tokens) - 1)
        while (not self._units or self._units[-1].end <= offset) and self._more():
            pass
        units = [u for u in self._units if u.ids]
        if not units:
            raise TokenIndexError("the text has no tokens")
        unit = next((u for u in units if u.end > offset), units[-1])
        tokens = self.result.window(unit.first, len(unit.ids))
        return unit.first + next((i for i, t in enumerate(tokens) if t.end > offset), len(tokens) - 1)

    @property
    def normalization(self) -> Normalization:
        """What the model's normalizer did to the text (made on first use)."""
        if self._normalization is None:
            self._normalization = self.plan.normalization(self.text, self.allow_special)
        return self._normalization

    def explain(self, index: int) -> Explanation:
        """Why token ``index`` is what it is."""
        unit = self.unit_of(index)
        explanation = _explain_unit(self.plan, self.text, unit, self.result.window(index, 1)[0], index)
        explanation.tokenizer = self.tokenizer.name
        explanation.notes[:0] = _special_text_notes(self.tokenizer, self.plan, self.text, unit)
        if unit.kind in ("merge", "plain"):
            norm = self.normalization
            # a unit of no input characters (a dummy-prefix ▁ alone) shows the change that made it
            explanation.changes = merged(norm.changes(unit.start, max(unit.end, unit.start + 1)))
            explanation.normalizer_steps = norm.steps
            explanation.normalizer_summary = norm.summary(explanation.changes)
        else:
            explanation.normalizer_summary = "An added or special token is cut out of the text before any normalizer runs."
        return explanation


def explain(tokenizer: Tokenizer, text: str, index: int, *, allow_special: bool = False) -> Explanation:
    """Why token ``index`` of ``text`` is what it is (see the module docstring)."""
    return Explainer(tokenizer, text, allow_special=allow_special).explain(index)


def explain_pieces(tokenizer: Tokenizer, pieces: Sequence[tuple[str, bool]], index: int) -> Explanation:
    """Why token ``index`` of a text tokenized piece by piece is what it is: ``pieces`` are ``(text, allow_special)``
    in order (a chat prompt: its markup with special tokens allowed, the messages without), each tokenized on its
    own, as :func:`app.features.chat.prompt.tokenize_prompt` does. The explanation is placed in the whole text."""
    chars = tokens = 0
    for text, allow_special in pieces:
        explainer = Explainer(tokenizer, text, allow_special=allow_special)
        if index < tokens + len(explainer):
            return explainer.explain(index - tokens).shifted(chars, tokens)
        chars += len(text)
        tokens += len(explainer)
    raise TokenIndexError(
        f"token index {index} is out of range: the text has {tokens} tokens" + (f" (0..{tokens - 1})" if tokens else "")
    )


def _explain_unit(plan: Plan, text: str, unit: Unit, token: Token, index: int) -> Explanation:
    plan.complete(unit)
    rule = _KIND_RULES.get(unit.kind) or plan.rule(unit)
    pre = PreToken(unit.start, unit.end, unit.text, rule, unit.first, len(unit.ids), unit.whole)
    notes = plan.notes(unit)

    part, sub = unit.part_of(index - unit.first) if unit.parts else (0, 0)
    pieces = list(map(plan.data, unit.parts)) if unit.parts else [token.bytes]
    counts = unit.per_part if unit.per_part is not None else [1] * len(pieces)
    firsts = [unit.first + n for n in accumulate(counts[:-1], initial=0)]
    lo = max(0, min(part - PIECES_SHOWN // 2, len(pieces) - PIECES_SHOWN))
    hi = lo + PIECES_SHOWN
    shown = (pieces[lo:hi], part - lo, firsts[lo:hi], (lo > 0, hi < len(pieces)))

    def answer(kind: str, steps: list[Step], tree: Tree) -> Explanation:
        return Explanation("", plan.tokenizer.name, index, token, kind, pre, steps, tree, notes, *shown, unit.text)

    if unit.kind != "merge":
        notes.insert(0, _KIND_NOTES[unit.kind])
        return answer(unit.kind, [], Tree(token.bytes))
    if plan.algorithm != "bpe":  # a walk or a lattice says why, not merges
        detail = plan.detail(text, unit, part, sub)
        pre.window = detail.window
        notes[:0] = detail.notes
        explanation = answer(detail.kind, [], Tree(token.bytes))
        explanation.detail, explanation.normalized = detail, detail.normalized
        return explanation
    unknown = plan.unknown(unit, part)
    if unknown is not None:
        notes.insert(0, _unknown_note(text[token.start : token.end], sub, unknown))
        return answer(unknown, [], Tree(token.bytes))
    if unit.whole:
        tree, note = _whole_tree(plan, unit.parts[0])
        notes[:0] = note
        return answer("merge", [], tree)
    symbols = plan.symbols(unit)
    first_part, last_part = 0, len(unit.parts)
    if len(symbols) > TRACE_SYMBOLS:
        sizes = [plan.size(p) for p in unit.parts]
        first_part, last_part = window_around(sizes, part, TRACE_SYMBOLS)
        start = sum(sizes[:first_part])
        pre.window = (start, start + sum(sizes[first_part:last_part]))
        notes.insert(0, _window_note(plan, len(symbols), pre.window))
        symbols = symbols[pre.window[0] : pre.window[1]]
    traced = retrace(symbols, plan.ranking, plan.data, plan.rank)
    if list(map(plan.data, traced.parts)) != list(map(plan.data, unit.parts[first_part:last_part])):
        raise NotExplainableError(
            "retracing this pre-token's merges did not give the engine's tokens; please report it"
        )
    tree = traced.trees[part - first_part]
    mark(traced.steps, tree)
    return answer("merge", traced.steps, tree)


def _whole_tree(plan: Plan, part) -> tuple[Tree, list[str]]:
    """The tree of a token taken whole, and what to tell about it."""
    data = plan.data(part)
    symbols = [bytes([b]) for b in data]
    head = f"This pre-token is itself a token, so the encoder took it whole ({plan.whole_rule}): no merge ran."
    if len(symbols) <= WHOLE_SYMBOLS:
        own = retrace(symbols, plan.ranking, plan.data, plan.rank)
        if len(own.parts) == 1:
            return own.trees[0], [f"{head} The tree shows how its own bytes merge into it."]
    return plan.whole_tree(data), [
        f"{head} Its own bytes would not merge into it; the tree shows the oldest tokens it splits into."
    ]


def _window_note(plan: Plan, total: int, window: tuple[int, int]) -> str:
    a, b = window
    return (
        f"This pre-token is {total:,} {plan.symbol_name} long; the steps retrace {plan.symbol_name} {a:,}–{b:,} "
        "of it, the whole tokens around this one. No merge ever crosses a token's edge, so these are exactly the "
        "encoder's merges there, in its order; pairs outside the window are not listed."
    )


_KIND_RULES = {
    "special": Rule("special-token text", None, "the special tokens, found before splitting"),
    "added": Rule("added-token text", None, "the model's added tokens, found before splitting"),
}
_KIND_NOTES = {
    "special": "A special token: its text was cut out before splitting and merging, because special tokens are "
    "allowed here. No merge made it.",
    "added": "An added token of the model: its text is cut out before splitting and merging, whether special "
    "tokens are allowed or not. No merge made it.",
    "plain": "Text between words, which this tokenizer never merges: each character is a token of its own.",
}


def _unknown_note(char: str, sub: int, kind: str) -> str:
    if kind == "byte_fallback":
        data = char.encode("utf-8")
        pieces = " ".join(f"<0x{b:02X}>" for b in data)
        return (
            f"{char!r} is no token of the vocabulary, so byte fallback writes its UTF-8 bytes as the tokens "
            f"{pieces}; this is byte {sub + 1} of {len(data)}. No merge made it."
        )
    return f"{char!r} is no token of the vocabulary and the model has no byte fallback: it becomes <unk>."


_SPECIAL_RES: WeakKeyDictionary = WeakKeyDictionary()


def _special_text_notes(tokenizer: Tokenizer, plan: Plan, text: str, unit: Unit) -> list[str]:
    """Special-token text inside an ordinary unit: it was not parsed as special, and why."""
    if unit.kind != "merge":
        return []
    found = _SPECIAL_RES.get(tokenizer)
    if found is None:
        specials = tokenizer.special_tokens
        found = _SPECIAL_RES[tokenizer] = (
            (re.compile(trie_pattern(specials)), max(map(len, specials))) if specials else None
        )
    if found is None:
        return []
    regex, longest = found
    seen = []
    for m in regex.finditer(text, max(0, unit.start - longest), min(len(text), unit.end + longest)):
        if m.start() < unit.end and unit.start < m.end() and m.group() not in seen:
            seen.append(m.group())
    return [f"This text spells the special token {s!r}, but {plan.special_off}." for s in seen]
