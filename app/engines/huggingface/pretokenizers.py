"""The pre-tokenizer of a tokenizer.json, cutting text exactly where Hugging Face ``tokenizers`` cuts it.

Supported steps (and ``Sequence`` of them, each step cutting the pieces of the one before): ``Split`` with a
regex or string pattern and any of its behaviours (``Isolated``, ``Removed``, ``MergedWithPrevious``,
``MergedWithNext``, ``Contiguous``; ``invert``), ``Digits``, ``ByteLevel`` (its GPT-2 regex when
``use_regex``; the byte mapping itself is the model's business), and the WordPiece models' ``BertPreTokenizer``,
``Whitespace`` and ``WhitespaceSplit`` (characters classified as :mod:`.bert_text` says). Any other step raises
:class:`~app.engines.huggingface.tokenizer_json.UnsupportedTokenizerError` naming it.

Regexes are written for Oniguruma; they run here on the ``regex`` module, against :func:`.unicode.regex_view`
of the text so that characters are classified with Oniguruma's Unicode tables. Text that no pattern matches is
kept as pieces of its own (as ``tokenizers`` keeps it), unlike ``findall``. The result is a list of
``(start, end)`` character spans. This module does not encode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import regex

from .bert_text import PUNCTUATION, SPLIT_SPACE, char_class
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
        for m in pattern.finditer(piece):
            a, b = m.span()
            if a > pos:
                yield start + pos, start + a, invert
            yield start + a, start + b, not invert
            pos = b
        if pos < len(piece):
            yield start + pos, end, invert

    return find


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
    def __init__(self, find: Finder, behavior: str, kind: str = "Split", pattern: regex.Pattern | None = None):
        if behavior not in ("Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"):
            raise UnsupportedTokenizerError(f"the Split behavior {behavior!r} is not supported")
        self.find = find
        self.behavior = behavior
        self.kind = kind  # the step's type and regex, for the explain view to name the rule that cut a pre-token
        self.pattern = pattern

    def __call__(self, view: str, spans: list[Span]) -> list[Span]:
        out: list[Span] = []
        for start, end in spans:
            out.extend(p for p in _merge(list(self.find(view, start, end)), self.behavior) if p[0] < p[1])
        return out


def _compile(pattern: str) -> regex.Pattern:
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise TokenizerFileError(f"the split regex {pattern!r} cannot be compiled: {exc}") from None


def _steps(obj: dict) -> list[_Split]:
    """The splits one pipeline step makes, in order (none for a ``ByteLevel`` step without its regex)."""
    kind = obj.get("type")
    if kind == "BertPreTokenizer":  # cut at whitespace, then each punctuation mark alone
        return [_whitespace_split(), _Split(_regex_finder(_compile(f"[{char_class(PUNCTUATION)}]"), False), "Isolated")]
    if kind == "WhitespaceSplit":
        return [_whitespace_split()]
    step = _step(obj)
    return [] if step is None else [step]


def _whitespace_split() -> _Split:
    """Cut at every whitespace character (Rust's ``char::is_whitespace``) and drop it."""
    return _Split(_regex_finder(_compile(f"[{char_class(SPLIT_SPACE)}]"), False), "Removed")


def _step(obj: dict) -> _Split | None:
    kind = obj.get("type")
    if kind == "Split":
        pattern = obj.get("pattern") or {}
        if "Regex" in pattern:
            compiled = _compile(pattern["Regex"])
        elif "String" in pattern:
            compiled = regex.compile(regex.escape(pattern["String"]))
        else:
            raise TokenizerFileError(f"Split pre-tokenizer without a pattern: {obj!r}")
        invert = bool(obj.get("invert"))
        return _Split(_regex_finder(compiled, invert), obj.get("behavior", "Isolated"), kind, None if invert else compiled)
    if kind == "ByteLevel":
        if obj.get("add_prefix_space"):
            raise UnsupportedTokenizerError("ByteLevel pre-tokenizers with add_prefix_space are not supported yet")
        if obj.get("use_regex", True):
            compiled = _compile(BYTE_LEVEL_PATTERN)
            return _Split(_regex_finder(compiled, False), "Isolated", kind, compiled)
        return None
    if kind == "Whitespace":
        return _Split(_regex_finder(_compile(r"\w+|[^\w\s]+"), True), "Removed")
    if kind == "Digits":
        compiled = _compile(r"\p{N}" if obj.get("individual_digits") else r"\p{N}+")
        return _Split(_regex_finder(compiled, False), "Isolated", kind, compiled)
    raise UnsupportedTokenizerError(f"the {kind} pre-tokenizer is not supported yet")


class PreTokenizer:
    """``pre_tokenizer(text) -> [(start, end), ...]``: the pre-tokens of ``text`` as character spans.

    >>> pre = PreTokenizer({"type": "Split", "pattern": {"Regex": "\\\\p{N}{1,3}"}, "behavior": "Isolated"})
    >>> [("a12345b"[a:b]) for a, b in pre("a12345b")]
    ['a', '123', '45', 'b']
    """

    def __init__(self, spec: dict | None):
        self.spec = spec  # as the file wrote it (the explain view names the rules)
        self.steps = [s for obj in pipeline_steps(spec, "pretokenizers") for s in _steps(obj)]
        #: Whether the pre-tokens always cover the whole text (no ``Removed`` split drops any of it).
        self.keeps_text = all(step.behavior != "Removed" for step in self.steps)

    def __reduce__(self):  # the steps hold closures, made again from the spec (a tokenizer's table)
        return PreTokenizer, (self.spec,)

    def __call__(self, text: str) -> list[Span]:
        if not text:
            return []
        spans = [(0, len(text))]
        if self.steps:
            view = regex_view(text)
            for step in self.steps:
                spans = step(view, spans)
        return spans
