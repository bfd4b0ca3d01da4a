r"""Which characters a byte-level token's bytes belong to, for tokens that are not text on their own.

A byte-level BPE run merges UTF-8 bytes, so its early tokens are often pieces of one character: in Japanese text
``E3`` + ``81`` -> ``E3 81``, the first two of the three bytes of ``の`` (and of ``は``, ``で``...). The lab's
chips show such a token as hex; :func:`byte_hint` says, from the corpus the run was trained on, which bytes of
which characters it is. A byte sequence can be a piece of several characters (``E3 81`` starts many), so the hint
names the characters in the order the corpus first has them, up to a few, and counts them all among the
corpus's distinct characters (:class:`CorpusBytes`), so a frequent piece of a 1 MB corpus costs no full scan.

Only where the bytes stand in the corpus decides what they are; nothing here knows about merges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Characters a hint names (the rest are counted).
NAMED = 3
#: Occurrences looked at for the characters a hint names (a frequent piece of a 1 MB corpus has many more).
SCAN = 500
_SHOWN = str.maketrans({" ": "·", "\n": "↵", "\t": "→"})  # whitespace as the lab's chips draw it


class CorpusBytes:
    """A corpus as UTF-8, and its distinct characters of more than one byte (with their bytes)."""

    def __init__(self, text: str):
        self.data = text.encode("utf-8")
        self.multibyte = [(c, c.encode("utf-8")) for c in set(text) if ord(c) > 0x7F]

    def chars_holding(self, token: bytes) -> int:
        """How many distinct characters of the corpus have ``token`` among their bytes."""
        return sum(token in b for _, b in self.multibyte)


def _continuation(b: int) -> bool:
    return 0x80 <= b < 0xC0


@dataclass(frozen=True, slots=True)
class Part:
    """``char``'s UTF-8 bytes ``first`` (from 0) up to ``end`` (excluded) of its ``size``."""

    char: str
    first: int
    end: int
    size: int

    @property
    def whole(self) -> bool:
        return self.first == 0 and self.end == self.size

    def phrase(self) -> str:
        """``the first 2 of the 3 UTF-8 bytes of 「の」``, or ``「の」`` for the whole character.

        >>> Part("の", 0, 2, 3).phrase(), Part("の", 2, 3, 3).phrase(), Part("😀", 1, 3, 4).phrase()
        ('the first 2 of the 3 UTF-8 bytes of 「の」', 'the last of the 3 UTF-8 bytes of 「の」', 'bytes 2–3 of the 4 UTF-8 bytes of 「😀」')
        """
        n = self.end - self.first
        char = self.char.translate(_SHOWN)
        of = f"of the {self.size} UTF-8 bytes of 「{char}」"
        if self.whole:
            return f"「{char}」"
        if self.first == 0:
            return f"the first {of}" if n == 1 else f"the first {n} {of}"
        if self.end == self.size:
            return f"the last {of}" if n == 1 else f"the last {n} {of}"
        return f"byte {self.end} {of}" if n == 1 else f"bytes {self.first + 1}–{self.end} {of}"


@dataclass(frozen=True, slots=True)
class ByteHint:
    """Where a token's bytes stand in the corpus: the characters of its first occurrence (``parts``), and, when
    the token is a piece of one character, the first characters it is a piece of (``chars``, first seen first)
    and how many distinct characters of the corpus hold its bytes (``total``)."""

    parts: tuple[Part, ...]
    chars: tuple[str, ...]
    total: int

    @property
    def sentence(self) -> str:
        """``the first 2 of the 3 UTF-8 bytes of 「の」 (also of 「は」, 「で」 and 4 more characters)``."""
        main = " + ".join(p.phrase() for p in self.parts)
        others = [c for c in self.chars if c != self.parts[0].char][: NAMED - 1]
        if not others:
            return main
        rest = self.total - 1 - len(others)
        named = [f"「{c.translate(_SHOWN)}」" for c in others]
        if rest > 0:
            return f"{main} (also of {', '.join(named)} and {rest:,} more character{'s' if rest > 1 else ''})"
        return f"{main} (also of {' and '.join(named)})"

    @property
    def short(self) -> str:
        """``of 「の」`` or ``of 「の」, 「は」…``: for a pair table row or a list entry."""
        if len(self.parts) > 1:
            return "of 「" + "".join(p.char for p in self.parts).translate(_SHOWN) + "」"
        shown = ", ".join(f"「{c.translate(_SHOWN)}」" for c in self.chars[:NAMED])
        return f"of {shown}{'…' if self.total > NAMED else ''}"


def byte_hint(token: bytes, corpus: CorpusBytes) -> ByteHint | None:
    """Which characters of ``corpus`` the bytes ``token`` are part of; ``None`` when ``token`` is valid UTF-8 on
    its own (it shows as text) or does not occur.

    >>> byte_hint(bytes.fromhex("e381"), CorpusBytes("東京の天気は")).sentence
    'the first 2 of the 3 UTF-8 bytes of 「の」 (also of 「は」)'
    >>> byte_hint(bytes.fromhex("ae20"), CorpusBytes("の 天")).sentence
    'the last of the 3 UTF-8 bytes of 「の」 + 「·」'
    >>> byte_hint("の".encode(), CorpusBytes("の")) is None
    True
    """
    try:
        token.decode("utf-8")
        return None
    except UnicodeDecodeError:
        pass
    first: tuple[Part, ...] | None = None
    chars: dict[str, None] = {}
    for n, m in enumerate(re.finditer(re.escape(token), corpus.data)):
        parts = _parts(corpus.data, m.start(), m.end())
        if first is None:
            first = parts
        if len(first) > 1:
            return ByteHint(first, (), 0)  # a piece of several characters: its first occurrence says which
        chars.setdefault(parts[0].char)
        if len(chars) > NAMED or n >= SCAN:
            break
    if first is None:
        return None
    return ByteHint(first, tuple(chars)[:NAMED], max(corpus.chars_holding(token), len(chars)))


def _parts(corpus: bytes, start: int, end: int) -> tuple[Part, ...]:
    """The characters whose bytes overlap ``corpus[start:end]``, and which of their bytes it covers."""
    a = start
    while a > 0 and _continuation(corpus[a]):
        a -= 1
    b = end
    while b < len(corpus) and _continuation(corpus[b]):
        b += 1
    out = []
    pos = a
    for ch in corpus[a:b].decode("utf-8"):
        size = len(ch.encode("utf-8"))
        out.append(Part(ch, max(start, pos) - pos, min(end, pos + size) - pos, size))
        pos += size
    return tuple(out)
