"""The normalizer steps of a tokenizer.json beyond Unicode forms, ``Replace`` with a string, ``Prepend`` and BERT's:
``Strip``, ``StripAccents``, ``Nmt``, ``Precompiled`` (a SentencePiece character map), ``Replace`` with a regex and
``ByteLevel``, each run as Hugging Face ``tokenizers`` runs it, with the input span of every output character.

:func:`step` builds one of them from its JSON object (see :mod:`.normalizers`, which asks this module for the step
types it does not build itself) and raises
:class:`~app.engines.pipeline.tokenizer_json.UnsupportedTokenizerError` naming any other type.

What the library does that is easy to get wrong, and is done here as it does it:

- ``Strip`` removes the characters Rust calls whitespace (``char::is_whitespace``), not Python's ``str.isspace``;
- ``StripAccents`` removes the characters its normalization crate calls combining marks (Unicode 9.0, so some
  marks Python knows are kept: :data:`.step_tables.COMBINING_MARKS`); it does not decompose first;
- ``Precompiled`` walks the text grapheme cluster by grapheme cluster: a cluster shorter than 6 bytes that some
  rule of the map *begins* is replaced whole by the shortest such rule's output (even when the rule covers only
  part of the cluster); otherwise each character of the cluster is replaced by the shortest rule it begins, or
  kept. That is not SentencePiece's own longest-match normalizer (:mod:`app.engines.sentencepiece.normalizer`), whose
  trie reader this module reuses;
- ``Replace`` with a regex replaces every match of the Oniguruma regex (run here on the ``regex`` module against
  :func:`.unicode.regex_view`), empty matches included, with the literal content;
- ``ByteLevel`` writes each UTF-8 byte as the character standing for it (GPT-2's byte alphabet).

It does not split or tokenize.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

import regex

from ..budget import UserPattern
from .charsmap import CharsMap
from .bert_text import SPLIT_SPACE, _member
from .onig_matches import spans as onig_spans
from .onig_regex import translate
from .step_tables import COMBINING_MARKS
from .tokenizer_json import TokenizerFileError, UnsupportedTokenizerError
from .unicode import regex_view

Spans = list[tuple[int, int]] | None
Step = Callable[[str, Spans], tuple[str, Spans]]

_is_space = _member(SPLIT_SPACE)
_is_mark = _member(COMBINING_MARKS)


def _positions(text: str, spans: Spans) -> list[tuple[int, int]]:
    return [(i, i + 1) for i in range(len(text))] if spans is None else spans


def _keep(text: str, spans: Spans, keep: Callable[[str], bool]) -> tuple[str, Spans]:
    """``text`` with only the characters ``keep`` says yes to, and their spans."""
    source = _positions(text, spans)
    kept = [i for i, ch in enumerate(text) if keep(ch)]
    if len(kept) == len(text):
        return text, spans
    return "".join(text[i] for i in kept), [source[i] for i in kept]


def strip(left: bool, right: bool) -> Step:
    """``Strip``: whitespace (Rust's definition) removed from the start, the end, or both.

    >>> strip(True, True)(" \\u3000a b\\u2003", None)
    ('a b', [(2, 3), (3, 4), (4, 5)])
    """

    def apply(text: str, spans: Spans) -> tuple[str, Spans]:
        a, b = 0, len(text)
        if left:
            while a < b and _is_space(text[a]):
                a += 1
        if right:
            while b > a and _is_space(text[b - 1]):
                b -= 1
        if (a, b) == (0, len(text)):
            return text, spans
        return text[a:b], _positions(text, spans)[a:b]

    return apply


def strip_accents(text: str, spans: Spans) -> tuple[str, Spans]:
    """``StripAccents``: every combining mark removed (nothing decomposed first).

    >>> strip_accents("e\\u0301te\\u0301", None)
    ('ete', [(0, 1), (2, 3), (3, 4)])
    """
    return _keep(text, spans, lambda ch: not _is_mark(ch))


#: ``Nmt``: control characters it removes, and characters it turns into a space.
_NMT_REMOVED = frozenset([*range(0x01, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, 0x8F, 0x9F])
_NMT_SPACE = frozenset([0x09, 0x0A, 0x0C, 0x0D, 0x1680, *range(0x200B, 0x2010), 0x2028, 0x2029, 0x2581, 0xFEFF, 0xFFFD])
_NMT_MAP = {**{c: None for c in _NMT_REMOVED}, **{c: " " for c in _NMT_SPACE}}


def nmt(text: str, spans: Spans) -> tuple[str, Spans]:
    """``Nmt``: ASCII control characters removed, other line breaks and odd spaces made a space.

    >>> nmt("a\\x01b\\tc\\u200bd", None)
    ('ab c d', [(0, 1), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7)])
    """
    if not any(ord(ch) in _NMT_MAP for ch in text):
        return text, spans
    text, spans = _keep(text, spans, lambda ch: ord(ch) not in _NMT_REMOVED)
    return text.translate(_NMT_MAP), spans


def _byte_chars() -> list[str]:
    from .tokenizer_json import BYTE_OF_CHAR

    out = [""] * 256
    for ch, b in BYTE_OF_CHAR.items():
        out[b] = ch
    return out


_CHAR_OF_BYTE = _byte_chars()


def byte_level(text: str, spans: Spans) -> tuple[str, Spans]:
    """``ByteLevel``: each UTF-8 byte written as its character of GPT-2's byte alphabet.

    >>> byte_level("a é", None)
    ('aĠÃ©', [(0, 1), (1, 2), (2, 3), (2, 3)])
    """
    source = _positions(text, spans)
    out: list[str] = []
    out_spans: list[tuple[int, int]] = []
    for ch, span in zip(text, source):
        data = ch.encode("utf-8")
        out.extend(_CHAR_OF_BYTE[b] for b in data)
        out_spans.extend([span] * len(data))
    return "".join(out), out_spans


def replace_regex(pattern: str, content: str) -> Step:
    """``Replace`` with a regex pattern: every match (empty ones too) replaced by ``content``.

    >>> replace_regex(r"\\s+", "_")("a  b c", None)
    ('a_b_c', [(0, 1), (2, 3), (3, 4), (4, 5), (5, 6)])
    """
    try:
        # with Oniguruma's \w, \b, \h; a regex the file brings runs under the request's budget
        compiled = UserPattern(translate(pattern), "this tokenizer's normalizer regex (Replace)")
    except regex.error as exc:
        raise TokenizerFileError(f"the Replace regex {pattern!r} cannot be compiled: {exc}") from None

    def apply(text: str, spans: Spans) -> tuple[str, Spans]:
        if not text:
            return text, spans
        found = list(onig_spans(compiled, regex_view(text)))
        if not found:
            return text, spans
        source = _positions(text, spans)
        out: list[str] = []
        out_spans: list[tuple[int, int]] = []
        pos = 0
        for a, b in found:
            out.append(text[pos:a])
            out_spans.extend(source[pos:a])
            # what it puts in is aligned as the library aligns it: to the last character it replaces, or for an
            # empty match to the character before it
            span = source[b - 1] if b else (source[0][0], source[0][0])
            out.append(content)
            out_spans.extend([span] * len(content))
            pos = b
        out.append(text[pos:])
        out_spans.extend(source[pos:])
        return "".join(out), out_spans

    return apply


class _Charsmap:
    """A ``Precompiled`` normalizer's map, read for the shortest rule that begins a string."""

    def __init__(self, blob: bytes):
        try:
            self.map = CharsMap(blob)
        except (ValueError, IndexError) as exc:
            raise TokenizerFileError(f"the Precompiled normalizer's character map is broken: {getattr(exc, 'what', exc)}") from None
        self._found: dict[str, str | None] = {}

    def first(self, chunk: str) -> str | None:
        """The output of the shortest rule matching a beginning of ``chunk`` (the walk stops at a NUL), or None."""
        found = self._found.get(chunk, False)
        if found is not False:
            return found
        found = self.map.shortest(chunk.encode("utf-8").split(b"\0", 1)[0])
        if len(self._found) < 100_000:
            self._found[chunk] = found
        return found


_GRAPHEME = regex.compile(r"\X", regex.DOTALL)


def precompiled(blob: bytes) -> Step:
    """``Precompiled``: SentencePiece's character map, applied cluster by cluster as ``tokenizers`` applies it (see
    the module docstring); characters are aligned to the input as the library aligns them (a character removed at the
    very start shifts the alignment of the ones after it, which ``Metaspace``'s ``first`` scheme then sees)."""
    charsmap = _Charsmap(blob)
    may_start = charsmap.map.may_start

    def apply(text: str, spans: Spans) -> tuple[str, Spans]:
        if not any(map(may_start, set(text))):
            return text, spans
        changes: list[list] = []  # [character, change], as the library's transformations
        for m in _GRAPHEME.finditer(regex_view(text)):
            a, b = m.span()
            grapheme = text[a:b]
            if may_start(grapheme[0]) and len(grapheme.encode("utf-8")) < 6:
                rule = charsmap.first(grapheme)
                if rule is not None:
                    _replaced(changes, b - a, rule)
                    continue
            for ch in grapheme:
                rule = charsmap.first(ch) if may_start(ch) else None
                if rule is None:
                    changes.append([ch, 0])
                else:
                    _replaced(changes, 1, rule)
        return "".join(ch for ch, _ in changes), aligned(changes, _positions(text, spans))

    return apply


def _replaced(changes: list[list], old_count: int, new: str) -> None:
    """The library's changes for ``old_count`` characters replaced by ``new``: added characters are the last ones,
    removed ones are counted on the last change made so far (which may be an earlier character's, or none)."""
    changes.extend([ch, 0] for ch in new)
    diff = len(new) - old_count
    if diff > 0:
        for change in changes[-diff:]:
            change[1] = 1
    elif diff < 0 and changes:
        changes[-1][1] += diff


def aligned(changes, source: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The input span of each output character of a transformation given as (character, change), as the library's
    ``NormalizedString.transform`` aligns them: a change of 0 replaces the next input character, -n replaces it
    and removes n more, +1 is inserted after the last one replaced (sharing its span).

    >>> aligned([("x", 0), ("y", 1), ("z", -1)], [(0, 1), (1, 2), (2, 3)])
    [(0, 1), (0, 1), (1, 2)]
    """
    out: list[tuple[int, int]] = []
    consumed, last = 0, len(source) - 1
    for _, change in changes:
        if change > 0:
            out.append(source[min(consumed, last + 1) - 1] if consumed else (source[0][0], source[0][0]))
        else:
            out.append(source[min(consumed, last)])
            consumed += 1 - change
    return out


def step(obj: dict) -> Step:
    """The step of a normalizer JSON object of a type :mod:`.normalizers` does not build itself."""
    kind = obj.get("type")
    if kind == "Strip":
        return strip(bool(obj.get("strip_left", True)), bool(obj.get("strip_right", True)))
    if kind == "StripAccents":
        return strip_accents
    if kind == "Nmt":
        return nmt
    if kind == "ByteLevel":
        return byte_level
    if kind == "Replace":
        pattern = obj.get("pattern") if isinstance(obj.get("pattern"), dict) else {}
        if not isinstance(pattern.get("Regex"), str):
            raise TokenizerFileError(f"a Replace normalizer needs a String or Regex pattern: {obj!r}")
        content = obj.get("content", "")
        if not isinstance(content, str):
            raise TokenizerFileError(f"a Replace normalizer's content must be text, not {content!r}")
        return replace_regex(pattern["Regex"], content)
    if kind == "Precompiled":
        data = obj.get("precompiled_charsmap")
        try:
            blob = base64.b64decode(data or "", validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise TokenizerFileError("the Precompiled normalizer's character map is not base64") from None
        return precompiled(blob)
    raise UnsupportedTokenizerError(f"the {kind} normalizer is not supported yet")
