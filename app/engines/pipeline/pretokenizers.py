"""The pre-tokenizer of a tokenizer.json, cutting text exactly where Hugging Face ``tokenizers`` cuts it.

Supported steps (and ``Sequence`` of them, each step cutting the pieces of the one before): ``Split`` with a
regex or string pattern and any of its behaviours (``Isolated``, ``Removed``, ``MergedWithPrevious``,
``MergedWithNext``, ``Contiguous``; ``invert``), ``Digits``, ``Punctuation``, ``CharDelimiterSplit``, ``FixedLength``,
the WordPiece models' ``BertPreTokenizer``, ``Whitespace`` and ``WhitespaceSplit`` (characters classified as
:mod:`.bert_text` says), and the steps that rewrite what they cut (:mod:`.pretokenizer_steps`): ``ByteLevel`` (its
prefix space, its GPT-2 regex when ``use_regex``, its byte alphabet) and ``Metaspace``. Any other step raises
:class:`~app.engines.pipeline.tokenizer_json.UnsupportedTokenizerError` naming it.

Regexes are written for Oniguruma; they run here on the ``regex`` module, against :func:`.unicode.regex_view`
of the text so that characters are classified with Oniguruma's Unicode tables. Text that no pattern matches is
kept as pieces of its own (as ``tokenizers`` keeps it), unlike ``findall``. The result is a list of
``(start, end)`` character spans. This module does not encode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import accumulate, islice
from typing import NamedTuple

import regex

from ..budget import UserPattern
from .bert_text import PUNCTUATION, SPLIT_SPACE, char_class
from .onig_matches import spans as onig_spans
from .onig_regex import translate
from .pretokenizer_steps import ByteAlphabet, Metaspace, Origin, Piece, Prefix
from .step_tables import NUMERIC
from .unicode import regex_view
from .tokenizer_json import TokenizerFileError, UnsupportedTokenizerError, pipeline_steps

#: The split regex of the ``ByteLevel`` pre-tokenizer (GPT-2's), as ``tokenizers`` writes it.
BYTE_LEVEL_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

Span = tuple[int, int]
#: ``find(view, start, end)`` -> the ``(start, end, is_match)`` runs covering ``view[start:end]``.
Finder = Callable[[str, int, int], Iterator[tuple[int, int, bool]]]


def _regex_finder(pattern: regex.Pattern, invert: bool) -> Finder:
    def find(view: str, start: int, end: int) -> Iterator[tuple[int, int, bool]]:
        # Each piece is matched on its own, as tokenizers does: a slice, so that no lookaround sees past it.
        piece = view[start:end] if start or end < len(view) else view
        pos = 0
        for a, b in onig_spans(pattern, piece):
            if a > pos:
                yield start + pos, start + a, invert
            yield start + a, start + b, not invert
            pos = b
        if pos < len(piece):
            yield start + pos, end, invert

    find.pattern = pattern  # for _Split's shortcut (:func:`_tiling`)
    return find


def _tiling(pattern: regex.Pattern, view: str, start: int, end: int) -> list[Span] | None:
    """The spans of ``view[start:end]``'s matches when they tile it (no gap, no empty match), in one C call; else
    None. Then they are the ``Isolated`` pieces whatever ``invert`` is, and Oniguruma finds the same matches (the
    two engines part on empty matches only, :mod:`.onig_matches`): a byte-level model's split regex tiles any text,
    and this is how a whole declaration (thousands of pre-tokens) is cut without a Python step per pre-token."""
    found = _tiles(pattern, view[start:end] if start or end < len(view) else view)
    if found is None:
        return None
    ends = list(accumulate(map(len, found), initial=start))
    return list(zip(ends, islice(ends, 1, None)))


def _isolated(pattern: regex.Pattern, view: str, start: int, end: int) -> list[Span] | None:
    """The ``Isolated`` pieces of ``view[start:end]`` (each match and each gap between them), in one loop, when no
    match is empty (where Oniguruma and the regex module part: then None, for the general way)."""
    piece = view[start:end] if start or end < len(view) else view
    out: list[Span] = []
    pos = 0
    for a, b in [m.span() for m in pattern.finditer(piece)]:
        if a == b:
            return None
        if a > pos:
            out.append((start + pos, start + a))
        out.append((start + a, start + b))
        pos = b
    if pos < len(piece):
        out.append((start + pos, end))
    return out


#: A piece at least this long is first tried as a tiling (:func:`_tiling`: one C call, no loop per match).
_TILE_FROM = 256


def _tiles(pattern: regex.Pattern, text: str) -> list[str] | None:
    """The matches of ``pattern`` in ``text`` when they tile it (no gap, no empty match), else None."""
    found = pattern.findall(text)
    if sum(map(len, found)) != len(text) or "" in found:
        return None
    return found


def _merge(runs: list[tuple[int, int, bool]], behavior: str) -> list[Span]:
    """Pieces from match/gap runs, as ``NormalizedString.split`` builds them for each behaviour."""
    if behavior == "Isolated":
        return [(a, b) for a, b, _ in runs]
    if behavior == "Removed":
        return [(a, b) for a, b, is_match in runs if not is_match]
    if behavior == "MergedWithNext":
        flipped = [(-b, -a, m) for a, b, m in reversed(runs)]
        return [(-b, -a) for a, b in reversed(_merge(flipped, "MergedWithPrevious"))]
    out: list[list[int]] = []
    previous = False
    for a, b, is_match in runs:
        joins = (is_match and not previous) if behavior == "MergedWithPrevious" else is_match == previous
        if joins and out:
            out[-1][1] = b
        else:
            out.append([a, b])
        previous = is_match
    return [(a, b) for a, b in out]


class _Split:
    def __init__(
        self, find: Finder, behavior: str, kind: str = "Split", pattern: regex.Pattern | None = None, raw: bool = False
    ):
        if behavior not in ("Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"):
            raise UnsupportedTokenizerError(f"the Split behavior {behavior!r} is not supported")
        #: Whether it looks at the text itself rather than :func:`.unicode.regex_view`'s (a table of the library's own,
        #: not Oniguruma's classes).
        self.raw = raw
        self.find = find
        self.behavior = behavior
        self.kind = kind  # the step's type and regex, for the explain view to name the rule that cut a pre-token
        self.pattern = pattern
        #: An ``Isolated`` step's regex: its pieces are cut by :func:`_isolated` (or :func:`_tiling`, when its matches
        #: tile a long piece); None: the general way (:func:`_merge` of the finder's runs).
        self.isolated = getattr(find, "pattern", None) if behavior == "Isolated" else None
        tiles_with = self.isolated
        self.tiles_with = None if tiles_with is None or tiles_with.groups else tiles_with  # findall gives groups

    def __call__(self, view: str, spans: list[Span]) -> list[Span]:
        out: list[Span] = []
        pattern, tiles_with = self.isolated, self.tiles_with
        for start, end in spans:
            if tiles_with is not None and end - start >= _TILE_FROM:
                tiles = _tiling(tiles_with, view, start, end)
                if tiles is not None:
                    out.extend(tiles)
                    continue
                tiles_with = None  # a regex that leaves gaps: not tried again in this call
            pieces = None if pattern is None else _isolated(pattern, view, start, end)
            if pieces is not None:
                out.extend(pieces)
            else:
                out.extend(p for p in _merge(list(self.find(view, start, end)), self.behavior) if p[0] < p[1])
        return out


def _compile(pattern: str) -> regex.Pattern:
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise TokenizerFileError(f"the split regex {pattern!r} cannot be compiled: {exc}") from None


def _steps(obj: dict) -> list:
    """The steps one pipeline step makes, in order: cuts (:class:`_Split`) and, for ``ByteLevel`` and
    ``Metaspace``, the steps that rewrite pieces (:mod:`.pretokenizer_steps`)."""
    kind = obj.get("type")
    if kind == "BertPreTokenizer":  # cut at whitespace, then each punctuation mark alone
        punctuation = _compile(f"[{char_class(PUNCTUATION)}]")
        return [_whitespace_split(), _Split(_regex_finder(punctuation, False), "Isolated", raw=True)]
    if kind == "WhitespaceSplit":
        return [_whitespace_split()]
    if kind == "ByteLevel":
        steps: list = [Prefix()] if obj.get("add_prefix_space") else []
        if obj.get("use_regex", True):
            compiled = _compile(BYTE_LEVEL_PATTERN)
            steps.append(_Split(_regex_finder(compiled, False), "Isolated", kind, compiled))
        return steps + [ByteAlphabet()]
    if kind == "Metaspace":
        return _metaspace(obj)
    return [_step(obj)]


def _metaspace(obj: dict) -> list:
    replacement = obj.get("replacement", "\u2581")
    if not isinstance(replacement, str) or len(replacement) != 1:
        raise TokenizerFileError(f"a Metaspace replacement is one character, not {replacement!r}")
    scheme = obj.get("prepend_scheme", "always")
    if obj.get("add_prefix_space") is False:
        scheme = "never"
    if scheme not in ("always", "first", "never"):
        raise TokenizerFileError(f"the Metaspace prepend_scheme {scheme!r} is none of always, first, never")
    steps: list = [Metaspace(replacement, scheme)]
    if obj.get("split", True):
        compiled = regex.compile(regex.escape(replacement))
        steps.append(_Split(_regex_finder(compiled, False), "MergedWithNext", "Metaspace", compiled, raw=True))
    return steps


def _whitespace_split() -> _Split:
    """Cut at every whitespace character (Rust's ``char::is_whitespace``) and drop it."""
    return _Split(_regex_finder(_compile(f"[{char_class(SPLIT_SPACE)}]"), False), "Removed", raw=True)


def _fixed_length(length: int) -> Finder:
    def find(view: str, start: int, end: int) -> Iterator[tuple[int, int, bool]]:
        for a in range(start, end, length):
            yield a, min(a + length, end), True

    return find


def _step(obj: dict) -> _Split:
    kind = obj.get("type")
    if kind == "Split":
        pattern = obj.get("pattern") if isinstance(obj.get("pattern"), dict) else {}
        if isinstance(pattern.get("Regex"), str):
            # with Oniguruma's \w, \b, \h; a regex the file brings runs under the request's budget
            compiled = UserPattern(_compile(translate(pattern["Regex"])), "this tokenizer's pre-tokenizer regex")
        elif isinstance(pattern.get("String"), str):
            compiled = regex.compile(regex.escape(pattern["String"]))
        else:
            raise TokenizerFileError(f"Split pre-tokenizer without a pattern: {obj!r}")
        invert = bool(obj.get("invert"))
        behavior = obj.get("behavior", "Isolated")
        # a String pattern matches its characters themselves, whatever Oniguruma's tables say of them
        raw = not isinstance(pattern.get("Regex"), str)
        return _Split(_regex_finder(compiled, invert), behavior, kind, None if invert else compiled, raw=raw)
    if kind == "Whitespace":
        return _Split(_regex_finder(_compile(r"\w+|[^\w\s]+"), True), "Removed")
    if kind == "Digits":  # Rust's char::is_numeric, in the library's Unicode version (not Oniguruma's \p{N})
        numbers = f"[{char_class(NUMERIC)}]"
        compiled = _compile(numbers if obj.get("individual_digits") else numbers + "+")
        return _Split(_regex_finder(compiled, False), "Isolated", kind, compiled, raw=True)
    if kind == "Punctuation":
        compiled = _compile(f"[{char_class(PUNCTUATION)}]")
        return _Split(_regex_finder(compiled, False), obj.get("behavior", "Isolated"), kind, compiled, raw=True)
    if kind == "CharDelimiterSplit":
        delimiter = obj.get("delimiter")
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise TokenizerFileError(f"a CharDelimiterSplit delimiter is one character, not {delimiter!r}")
        compiled = regex.compile(regex.escape(delimiter))
        return _Split(_regex_finder(compiled, False), "Removed", kind, compiled, raw=True)
    if kind == "FixedLength":
        length = obj.get("length", 5)
        if not isinstance(length, int) or isinstance(length, bool) or length < 1:
            raise UnsupportedTokenizerError(
                f"a FixedLength pre-tokenizer of length {length!r} cannot cut text (the library fails on it)"
            )
        return _Split(_fixed_length(length), "Isolated", kind)
    raise UnsupportedTokenizerError(f"the {kind} pre-tokenizer is not supported yet")


class PreTokenizer:
    """``pre_tokenizer(text) -> [(start, end), ...]``: the pre-tokens of ``text`` as character spans.

    >>> pre = PreTokenizer({"type": "Split", "pattern": {"Regex": "\\\\p{N}{1,3}"}, "behavior": "Isolated"})
    >>> [("a12345b"[a:b]) for a, b in pre("a12345b")]
    ['a', '123', '45', 'b']

    A pipeline with a step that rewrites pieces (``Metaspace``, ``ByteLevel``: :attr:`transforms`) gives its
    pre-tokens with :meth:`pieces`, their text as the model sees it; its spans (``pre(text)``) are then the stretches
    of the text each pre-token stands for. ``map_bytes=False`` leaves a final ``ByteLevel`` step's byte alphabet out
    (the byte-level BPE engine encodes the text's own UTF-8, which is the same).

    >>> pre = PreTokenizer({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True})
    >>> pre.pieces("Hi  you")
    [('▁Hi', [0, 0, 1]), ('▁', [2]), ('▁you', [3, 4, 5, 6])]
    """

    def __init__(self, spec: dict | None, *, map_bytes: bool = True):
        self.spec = spec  # as the file wrote it (the explain view names the rules)
        self.map_bytes = map_bytes
        stages = [s for obj in pipeline_steps(spec, "pretokenizers") for s in _steps(obj)]
        if not map_bytes and stages and isinstance(stages[-1], ByteAlphabet):
            stages.pop()
        self.stages = stages
        #: Whether some step rewrites the pieces it cuts (then :meth:`pieces` gives the pre-tokens' text).
        self.transforms = any(not isinstance(stage, _Split) for stage in stages)
        #: Whether the pre-tokens are written in the byte alphabet (a ``ByteLevel`` step's, kept).
        self.byte_alphabet = any(isinstance(stage, ByteAlphabet) for stage in stages)
        self.steps = [stage for stage in stages if isinstance(stage, _Split)]
        #: Whether the pre-tokens always cover the whole text as it is (nothing dropped, nothing rewritten).
        self.keeps_text = not self.transforms and all(step.behavior != "Removed" for step in self.steps)

    def __reduce__(self):  # the steps hold closures, made again from the spec and options (a tokenizer's table)
        return _pre_tokenizer, (self.spec, self.map_bytes)

    def __call__(self, text: str) -> list[Span]:
        if not text:
            return []
        if self.transforms:
            return [(pos[0], pos[-1] + 1) for _, pos in self.pieces(text)]
        spans = [(0, len(text))]
        if self.steps:
            view = regex_view(text)
            for step in self.steps:
                spans = step(text if step.raw else view, spans)
        return spans

    def texts(self, text: str) -> list[str]:
        """The pre-tokens' text, for a pipeline that does not rewrite them (``text[a:b]`` for each span of
        ``self(text)``); one regex that tiles the text gives them as its matches, with no span made."""
        if len(self.steps) == 1 and not self.transforms and self.steps[0].tiles_with is not None:
            step = self.steps[0]
            if step.raw or regex_view(text) is text:
                found = _tiles(step.tiles_with, text)
                if found is not None:
                    return found
        return [text[a:b] for a, b in self(text)]

    def pieces(self, text: str, origin: Origin | None = None) -> list[Piece]:
        """The pre-tokens of ``text`` as the model sees them, each with the position in ``text`` of each of its
        characters; ``origin(position)`` is the input offset a position of ``text`` came from (``Metaspace``'s
        ``first`` scheme asks; default: ``text`` is the input)."""
        return [(piece, pos) for piece, pos, _ in self.cut_pieces(text, origin)]

    def cut_pieces(self, text: str, origin: Origin | None = None) -> list[tuple[str, list[int], Cut | None]]:
        """:meth:`pieces`, each with the last cut that made it (None: no step cut it out of a larger piece), for
        the explain view to name that step's rule."""
        if not text:
            return []
        if origin is None:
            origin = _same
        pieces: list[tuple[str, list[int], Cut | None]] = [(text, list(range(len(text))), None)]
        for k, stage in enumerate(self.stages):
            if isinstance(stage, _Split):
                out: list[tuple[str, list[int], Cut | None]] = []
                for piece, pos, cut in pieces:
                    seen = piece if stage.raw else regex_view(piece)
                    parts = stage(seen, [(0, len(piece))])
                    if parts == [(0, len(piece))]:
                        out.append((piece, pos, cut))
                    else:
                        out.extend((piece[a:b], pos[a:b], Cut(k, seen, a, b)) for a, b in parts)
                pieces = out
            else:
                cuts = [cut for _, _, cut in pieces]
                pieces = [(piece, pos, cut) for (piece, pos), cut in zip(stage.apply([p[:2] for p in pieces], origin), cuts)]
        return pieces


class Cut(NamedTuple):
    """Where a step cut a pre-token: the step's index in :attr:`PreTokenizer.stages`, the piece it cut (as that
    step saw it) and the pre-token's span in it."""

    stage: int
    parent: str
    start: int
    end: int


def _same(position: int) -> int:
    return position


def _pre_tokenizer(spec: dict | None, map_bytes: bool) -> PreTokenizer:
    """A pickled :class:`PreTokenizer` made again."""
    return PreTokenizer(spec, map_bytes=map_bytes)
