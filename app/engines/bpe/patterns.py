"""Pre-tokenizer choices for the BPE engine, by name: ``none``, ``gpt2``, ``gpt4`` (cl100k), ``o200k``, and two
variants of ``gpt4`` that cut numbers otherwise: ``digits`` (every digit alone) and ``digits-r2l`` (groups of
three from the right, ``1234567`` -> ``1``, ``234``, ``567``).

A pre-tokenizer cuts text into *pre-tokens*; BPE merges never cross a pre-token boundary. ``none`` keeps the
text whole (raw bytes, as in the classic lecture code). The pattern strings are OpenAI's, shared with
:mod:`app.engines.openai` so there is one copy of each. This module only splits text; it does not encode.

Text is split as tiktoken splits it, which reads Unicode as its own (older) tables say, not as the ``regex``
module does: every split here classifies characters with tiktoken's tables (:mod:`app.engines.openai.unicode`),
through :class:`ExactPattern` and the fast :class:`Splitter`.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

import regex

from ..budget import UserPattern
from ..compiled import twin
from ..openai import unicode as tiktoken_unicode
from ..openai.encodings import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN

_GPT4_NUMBERS = r"\p{N}{1,3}+"
#: Digits in groups of three from the right: a group of one to three digits followed by whole groups of three up
#: to the end of the number.
DIGITS_R2L = r"\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N}))"
assert CL100K_PATTERN.count(_GPT4_NUMBERS) == 1
#: ``gpt4`` with every digit a pre-token of its own (as Llama's and DeepSeek's pre-tokenizers cut numbers).
DIGITS_PATTERN = CL100K_PATTERN.replace(_GPT4_NUMBERS, r"\p{N}")
#: ``gpt4`` with numbers cut in groups of three from the right.
DIGITS_R2L_PATTERN = CL100K_PATTERN.replace(_GPT4_NUMBERS, DIGITS_R2L)
#: Superword BPE's stage two (SuperBPE): each line whole, digits in groups of three from the right, nothing else
#: cut. Not in :data:`PATTERNS`: its pieces hold letters followed by spaces, so it may not be cut where those
#: patterns may (see "a faster exact split" below).
LINES_DIGITS_R2L_PATTERN = DIGITS_R2L + r"|[\r\n]+|[^\p{N}\r\n]+"

#: Pattern name -> split regex (``None``: no pre-tokenizer, the whole text is one pre-token).
PATTERNS: dict[str, str | None] = {
    "none": None,
    "gpt2": GPT2_PATTERN,
    "gpt4": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
    "digits": DIGITS_PATTERN,
    "digits-r2l": DIGITS_R2L_PATTERN,
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
    """The compiled ``regex`` pattern as written, with the ``regex`` module's own Unicode tables (it checks that a
    pattern is valid; the ``regex`` module supports the possessive quantifiers OpenAI uses). To split text as
    tiktoken does, use :func:`exact`."""
    return regex.compile(pattern)


class ExactPattern:
    """A split regex run by the ``regex`` module with tiktoken's character classes.

    On a text whose every character the ``regex`` module classifies as tiktoken does (nearly every text:
    :func:`~app.engines.openai.unicode.agrees`), the pattern as written; otherwise the pattern with its classes
    spelled out as tiktoken's ranges (:func:`~app.engines.openai.unicode.spell_out`, compiled on first need),
    which the ``regex`` module runs 10-30x slower. For a pattern that text may be cut in (``cut_safe``: the
    shipped ones, see "a faster exact split" below), only a block around each character that needs it gets the
    spelled-out pattern. Matches are of the text itself, with the pattern's groups.
    """

    def __init__(self, pattern: str, cut_safe: bool = False):
        self.pattern = pattern
        self.cut_safe = cut_safe
        # a pattern we did not ship (a user's): every match under the request's budget
        self.plain = compiled(pattern) if cut_safe else UserPattern(compiled(pattern), "this tokenizer's split regex")
        self._spelled: regex.Pattern | UserPattern | None = None

    @property
    def spelled(self) -> regex.Pattern:
        if self._spelled is None:
            try:
                spelled = regex.compile(tiktoken_unicode.spell_out(self.pattern))
                self._spelled = spelled if self.cut_safe else UserPattern(spelled, "this tokenizer's split regex")
            except regex.error:  # a custom pattern the spelling breaks (V1 set operations): the regex module's view
                self._spelled = self.plain
        return self._spelled

    def finditer(self, text: str) -> Iterator[regex.Match]:
        if tiktoken_unicode.agrees(text):
            return self.plain.finditer(text)
        if not self.cut_safe:
            return self.spelled.finditer(text)
        return self._blocks(text)

    def findall(self, text: str) -> list[str]:
        """The matched texts (the shipped patterns have no capturing groups; a custom one gets ``regex``'s
        ``findall``, as before)."""
        if tiktoken_unicode.agrees(text):
            return self.plain.findall(text)
        if not self.cut_safe:
            return self.spelled.findall(text)
        return [m.group() for m in self._blocks(text)]

    def _blocks(self, text: str) -> Iterator[regex.Match]:
        pos, n = 0, len(text)
        for q in tiktoken_unicode.disagreements(text):
            if q < pos:  # inside the block just spelled out
                continue
            cut = last_cut(text, pos, q)
            if cut > pos:
                yield from self.plain.finditer(text, pos, cut)
            after = _CUT.search(text, q)
            end = after.end() if after is not None else n
            yield from self.spelled.finditer(text, cut, end)
            pos = end
        if pos < n:
            yield from self.plain.finditer(text, pos, n)


@lru_cache(maxsize=64)
def exact(pattern: str, cut_safe: bool | None = None) -> ExactPattern:
    """The shared :class:`ExactPattern` of a split regex (``cut_safe``: by default, whether it is a shipped one):
    ``exact(GPT2_PATTERN).findall("a\u0558's")`` cuts ``\u0558'`` (unassigned for tiktoken) from ``s``."""
    return ExactPattern(pattern, name_of_regex(pattern) is not None if cut_safe is None else cut_safe)


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


# --- a faster exact split -----------------------------------------------------------------------------------
# Python's ``re`` is 2-3x faster than ``regex`` but has no \p{...} classes. Each pattern has an exact *BMP pattern*
# for ``re`` in which every \p{L}, \p{N}, \p{M}, \p{Lu}... and \s is spelled out as the ranges of code points
# tiktoken puts in that class (app.engines.openai.unicode), over the first 65,536 code points (``re`` runs a
# class of ranges above them as a slow linear list). Above them, the BMP pattern sees every character as "something
# else", which is exact for all but the letters, numbers and marks there (𝐀, 𠀀; emoji are symbols): around each
# of those, the text is cut into a block that gets the exact pattern (:class:`ExactPattern`). A text may be cut at
# any position just after an ASCII letter followed by a space: no match of these patterns holds a letter followed
# by whitespace, none looks behind, and a block never ends in whitespace, so every block is matched exactly as in
# the whole text.
_CLASS_NAMES = ("L", "N", "M", "Lu", "Lt", "Lm", "Lo", "Ll")


@lru_cache(maxsize=1)
def _bmp_classes() -> dict[str, str]:
    r"""``re`` class bodies (ranges) of the code points below U+10000 in each \p{X} class and in \s, as tiktoken
    sees them."""
    return {name: tiktoken_unicode.char_class(name, below=0x10000) for name in (*_CLASS_NAMES, "s")}


_CLASS_ESCAPE = regex.compile(r"\\(?:p\{(\w+)\}|([sS]))|\\.|(\[)|(\])|.", regex.S)


def bmp_pattern(pattern: str) -> str:
    r"""``pattern`` for ``re``: its Unicode classes written as explicit ranges of the first 65,536 code points.

    Raises ``ValueError`` for a class it does not know (the pattern is then run by ``regex`` alone).

    >>> bmp_pattern(r"\p{N}{1,3}").startswith("[0-9")
    True
    """
    classes = _bmp_classes()
    out: list[str] = []
    in_class = False
    for m in _CLASS_ESCAPE.finditer(pattern):
        name, space, opened, closed = m.groups()
        if name is not None or space == "s":
            body = classes.get(name or "s")
            if body is None:
                raise ValueError(f"no BMP pattern for \\p{{{name}}}")
            out.append(body if in_class else f"[{body}]")
        elif space == "S":
            if in_class:
                raise ValueError("no BMP pattern for \\S inside a class")
            out.append(f"[^{classes['s']}]")
        else:
            if opened and not in_class:
                in_class = True
            elif closed and in_class:
                in_class = False
            out.append(m.group())
    return "".join(out)


_CUT = re.compile(r"[A-Za-z](?= )")  # a match ends at a position where the text may be cut
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


class _Wordy(dict):
    """Character above U+FFFF -> whether tiktoken sees a letter, number or mark in it: what the BMP pattern may see
    differently (filled on first sight, bounded)."""

    def __missing__(self, ch: str) -> bool:
        if len(self) >= 65_536:
            self.clear()
        wordy = self[ch] = tiktoken_unicode.category(ch)[0] in "LNM"
        return wordy


_IS_WORDY = _Wordy()


def next_astral_wordy(text: str, pos: int) -> int:
    """The position of the first letter, number or mark above U+FFFF at or after ``pos``, or -1.

    >>> next_astral_wordy("🙂 𝐀", 0)
    2
    """
    find, wordy = _ASTRAL.search, _IS_WORDY
    while True:
        m = find(text, pos)
        if m is None:
            return -1
        pos = m.start()
        if wordy[text[pos]]:
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


# --- the compiled split ----------------------------------------------------------------------------------------
# The three shipped patterns are written out as code in bpe/_pieces.c (``Split``), which reads every character's
# classes from one table of tiktoken's: a code point's general category (Lu, Ll, Lt, Lm, Lo, M, N) and whether it
# is white space, one bit each, in blocks of 256 code points (the same blocks stored once).
_CompiledSplit = twin("_pieces", "Split")
_SPLIT_PATTERNS = {"gpt2": 0, "gpt4": 1, "o200k": 2}
_CLASS_BITS = {"Lu": 1, "Ll": 2, "Lt": 4, "Lm": 8, "Lo": 16, "Mn": 32, "Mc": 32, "Me": 32, "Nd": 64, "Nl": 64, "No": 64}
_WHITE_SPACE_BIT = 128


@lru_cache(maxsize=1)
def class_table() -> tuple[bytes, bytes]:
    """tiktoken's classes of every code point for ``_pieces.Split``: the block number of each 256 code points
    (``uint16``, native order) and the distinct blocks (a byte a code point: the bits of :data:`_CLASS_BITS`, and
    128 for white space)."""
    classes = bytearray(0x110000)
    for name, bit in _CLASS_BITS.items():
        for a, b in tiktoken_unicode.ranges(name):  # general categories do not overlap
            classes[a : b + 1] = bytes([bit]) * (b - a + 1)
    for a, b in tiktoken_unicode.ranges("s"):
        for c in range(a, b + 1):
            classes[c] |= _WHITE_SPACE_BIT
    blocks: dict[bytes, int] = {}
    index = array("H", (blocks.setdefault(bytes(classes[k : k + 256]), len(blocks)) for k in range(0, 0x110000, 256)))
    return index.tobytes(), b"".join(blocks)


def compiled_split(pattern: str | None) -> Callable[[str], list[str]] | None:
    """The compiled split of a shipped pattern (``Split``), or None for another pattern or without the twin."""
    name = name_of_regex(pattern) if pattern is not None else None
    if _CompiledSplit is None or name not in _SPLIT_PATTERNS:
        return None
    return _CompiledSplit(_SPLIT_PATTERNS[name], *class_table())


class Splitter:
    """``Splitter(pattern)(text)`` equals ``exact(pattern).findall(text)`` (the text split as tiktoken splits it),
    faster: compiled for the shipped patterns (:func:`compiled_split`; ``compiled=False``: not), else with ``re``
    (see :func:`bmp_pattern`)."""

    def __init__(self, pattern: str | None, *, compiled: bool = True):
        self.pattern = pattern
        self._findall = exact(pattern).findall if pattern is not None else None
        self._bmp_findall = None
        self._may_compile = compiled
        self._compiled = compiled_split(pattern) if compiled else None
        if self._compiled is None and pattern is not None and name_of_regex(pattern) is not None:  # cut-safe (above)
            try:
                self._bmp_findall = re.compile(bmp_pattern(pattern)).findall
            except (ValueError, re.error):
                pass

    def __reduce__(self):  # its compiled regexes and bound methods are made again (a tokenizer's table)
        if not self._may_compile and self.pattern is not None:
            return _plain_splitter, (self.pattern,)
        return splitter if self.pattern is not None else Splitter, (self.pattern,)

    def __call__(self, text: str) -> list[str]:
        if self._compiled is not None:
            return self._compiled(text)
        if self._findall is None:
            return [text] if text else []
        fast = self._bmp_findall
        if fast is None:
            return self._findall(text)
        q = next_astral_wordy(text, 0)
        if q < 0:
            return fast(text)
        out: list[str] = []
        pos, n = 0, len(text)
        while pos < n:
            if q < 0:
                out.extend(fast(text[pos:] if pos else text))
                break
            cut = last_cut(text, pos, q)
            if cut > pos:
                out.extend(fast(text[pos:cut]))
            after = _CUT.search(text, q)
            end = after.end() if after is not None else n
            out.extend(self._findall(text[cut:end]))
            pos = end
            q = next_astral_wordy(text, pos) if pos < n else -1
        return out


@lru_cache(maxsize=32)
def _plain_splitter(pattern: str) -> Splitter:
    """A :class:`Splitter` without the compiled split (what ``Splitter(pattern, compiled=False)`` pickles as)."""
    return Splitter(pattern, compiled=False)


def splitter(pattern: str) -> Splitter:
    """The shared :class:`Splitter` for a split regex."""
    return Splitter(pattern)
