"""Pre-tokenizer choices for the BPE engine, by name: ``none``, ``gpt2``, ``gpt4`` (cl100k) and ``o200k``.

A pre-tokenizer cuts text into *pre-tokens*; BPE merges never cross a pre-token boundary. ``none`` keeps the
text whole (raw bytes, as in the classic lecture code). The pattern strings are OpenAI's, shared with
:mod:`app.engines.openai` so there is one copy of each. This module only splits text; it does not encode.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

import regex

from ..openai import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN

#: Pattern name -> split regex (``None``: no pre-tokenizer, the whole text is one pre-token).
PATTERNS: dict[str, str | None] = {
    "none": None,
    "gpt2": GPT2_PATTERN,
    "gpt4": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
}

#: Names accepted for the same patterns (the encoding each one comes from).
PATTERN_ALIASES = {"cl100k": "gpt4", "cl100k_base": "gpt4", "o200k_base": "o200k", "p50k_base": "gpt2", "r50k": "gpt2"}


def pattern_name(name: str) -> str:
    """The canonical pattern name: ``pattern_name("cl100k") == "gpt4"``; raise ``ValueError`` when unknown."""
    key = PATTERN_ALIASES.get(name, name)
    if key not in PATTERNS:
        raise ValueError(f"unknown pattern {name!r}; choose one of: {', '.join(PATTERNS)}")
    return key


def pattern_regex(name: str) -> str | None:
    """The split regex for a pattern name (``None`` for ``none``): ``pattern_regex("none") is None``."""
    return PATTERNS[pattern_name(name)]


def name_of_regex(pattern: str | None) -> str | None:
    """The name of a known split regex, or ``None`` for a custom one: ``name_of_regex(GPT2_PATTERN) == "gpt2"``."""
    for name, pat in PATTERNS.items():
        if pat == pattern:
            return name
    return None


@lru_cache(maxsize=32)
def compiled(pattern: str) -> regex.Pattern:
    """The compiled ``regex`` pattern (the ``regex`` module supports the possessive quantifiers OpenAI uses)."""
    return regex.compile(pattern)


def split_text(text: str, pattern: str | None) -> list[str]:
    """Pre-tokens of ``text`` for a split regex: ``split_text("hi there", GPT2_PATTERN) == ["hi", " there"]``."""
    if not text:
        return []
    if pattern is None:
        return [text]
    return splitter(pattern)(text)


def special_splitter(special_tokens: Iterable[str]) -> regex.Pattern | None:
    """A regex that finds special-token text (longest first), or ``None`` when there are none."""
    tokens = sorted(set(special_tokens), key=lambda s: (-len(s), s))
    if not tokens:
        return None
    return regex.compile("|".join(regex.escape(t) for t in tokens))


def split_specials(text: str, specials: regex.Pattern | None) -> list[tuple[str, bool]]:
    """Cut text at special-token text: ``[(segment, is_special), ...]``; empty segments are left out."""
    if specials is None:
        return [(text, False)] if text else []
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in specials.finditer(text):
        if m.start() > pos:
            out.append((text[pos : m.start()], False))
        out.append((m.group(), True))
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], False))
    return out


def pretokenize(text: str, pattern: str | None, special_tokens: Iterable[str] = ()) -> list[str]:
    """Pre-tokens for training: special-token text is cut out and never part of a pre-token.

    >>> pretokenize("a b<|x|>c", GPT2_PATTERN, ["<|x|>"])
    ['a', ' b', 'c']
    """
    chunks: list[str] = []
    for segment, is_special in split_specials(text, special_splitter(special_tokens)):
        if not is_special:
            chunks.extend(split_text(segment, pattern))
    return chunks


# --- a faster exact split for ASCII stretches --------------------------------------------------------------
# Python's ``re`` is 2-3x faster than ``regex`` but has no \p{...} classes. On ASCII text each OpenAI pattern
# has an exact twin with ASCII classes (``regex``'s \s on ASCII is [\t\n\v\f\r ]). A text may be cut into
# blocks at any position just after an ASCII letter followed by a space: no match of these patterns contains a
# letter followed by whitespace, none looks behind, and a block never ends in whitespace, so every block is
# matched exactly as in the whole text. Around each non-ASCII character the text is cut at the nearest such
# positions on either side; that block gets the original pattern, the ASCII stretches between get the twin.
# A non-ASCII character that is no letter, number, mark or whitespace for ``regex`` (curly quotes, dashes, most
# emoji) needs no block of its own: the twins' negated classes take it exactly as the original's "anything
# else" classes do, so the ASCII stretches run through it (:class:`_Plain`).
_S = r"[\t\n\x0b\x0c\r ]"
_NS = r"[^\t\n\x0b\x0c\r ]"
_OTHER = r"[^\t\n\x0b\x0c\r A-Za-z0-9]"
_CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
ASCII_TWINS: dict[str, str] = {
    GPT2_PATTERN: rf"""'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]++| ?[0-9]++| ?{_OTHER}++|{_S}++\Z|{_S}+(?!{_NS})|{_S}""",
    CL100K_PATTERN: (
        rf"""'(?i:[sdmt]|ll|ve|re)|[^\r\nA-Za-z0-9]?+[A-Za-z]++|[0-9]{{1,3}}+| ?{_OTHER}++[\r\n]*+|{_S}++\Z"""
        rf"""|{_S}*[\r\n]|{_S}+(?!{_NS})|{_S}"""
    ),
    O200K_PATTERN: "|".join(
        [
            rf"""[^\r\nA-Za-z0-9]?[A-Z]*[a-z]+{_CONTRACTION}""",
            rf"""[^\r\nA-Za-z0-9]?[A-Z]+[a-z]*{_CONTRACTION}""",
            r"""[0-9]{1,3}""",
            rf""" ?{_OTHER}+[\r\n/]*""",
            rf"""{_S}*[\r\n]+""",
            rf"""{_S}+(?!{_NS})""",
            rf"""{_S}+""",
        ]
    ),
}
_CUT = re.compile(r"[A-Za-z](?= )")  # a match ends at a position where the text may be cut
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
#: What the original patterns may treat differently from the twins: letters, numbers, marks, whitespace.
_SPECIAL_CLASS = regex.compile(r"[\p{L}\p{N}\p{M}\s]")


class _Plain(dict):
    """Character -> True when it is punctuation, a symbol or a format character that no pattern class treats
    apart from plain ASCII punctuation (``_SPECIAL_CLASS`` does not match it); filled on first sight."""

    def __missing__(self, ch: str) -> bool:
        if len(self) >= 65_536:  # a text of every code point must not grow it without end
            self.clear()
        plain = self[ch] = _SPECIAL_CLASS.match(ch) is None and unicodedata.category(ch)[0] in "PSC"
        return plain


_PLAIN = _Plain()


def next_wide(text: str, pos: int) -> int:
    """The position of the first non-ASCII character at or after ``pos`` that needs the original pattern (see
    :class:`_Plain`), or -1.

    >>> next_wide("“quoted” naïve", 0)
    11
    """
    find, plain = _NON_ASCII.search, _PLAIN
    while True:
        m = find(text, pos)
        if m is None:
            return -1
        pos = m.start()
        if not plain[text[pos]]:
            return pos
        pos += 1


_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def last_cut(text: str, start: int, end: int) -> int:
    """The last position in ``(start, end)`` where ``text`` may be cut (a space after an ASCII letter), else start.

    >>> last_cut("ab cd", 0, 5)
    2
    """
    j = text.rfind(" ", start + 1, end)
    while j > start and text[j - 1] not in _ASCII_LETTERS:
        j = text.rfind(" ", start + 1, j)
    return j if j > start else start


class Splitter:
    """``Splitter(pattern)(text)`` equals ``regex.findall(pattern, text)``, faster on ASCII-heavy text."""

    def __init__(self, pattern: str | None):
        self.pattern = pattern
        self._findall = compiled(pattern).findall if pattern is not None else None
        twin = ASCII_TWINS.get(pattern) if pattern is not None else None
        self._ascii_findall = re.compile(twin).findall if twin is not None else None

    def __call__(self, text: str) -> list[str]:
        if self._findall is None:
            return [text] if text else []
        fast = self._ascii_findall
        if fast is None:
            return self._findall(text)
        if text.isascii():
            return fast(text)
        out: list[str] = []
        pos, n = 0, len(text)
        find_cut = _CUT.search
        while pos < n:
            q = next_wide(text, pos)
            if q < 0:
                out.extend(fast(text[pos:] if pos else text))
                break
            cut = last_cut(text, pos, q)
            if cut > pos:
                out.extend(fast(text[pos:cut]))
            after = find_cut(text, q)
            end = after.end() if after is not None else n
            out.extend(self._findall(text[cut:end]))
            pos = end
        return out


@lru_cache(maxsize=32)
def splitter(pattern: str) -> Splitter:
    """The shared :class:`Splitter` for a split regex."""
    return Splitter(pattern)
