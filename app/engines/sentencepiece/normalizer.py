"""SentencePiece's text normalization, as a model's ``NormalizerSpec`` says, with a map back to the input.

Normalization turns the input into the string the BPE merges run on: an optional precompiled character map
(:class:`~app.engines.pipeline.charsmap.CharsMap`: NFKC-style rules stored as a Darts double-array trie; empty for
``identity`` models such as Mistral and LLaMA),
optional removal of extra spaces, the dummy prefix ``▁`` and spaces escaped as ``▁``. Alongside the normalized
string it returns, for every normalized character, the index of the input character it came from (plus one
final entry for the end), so pieces can be placed in the original text.

Text with a charsmap or user-defined symbols is normalized by the compiled twin in
``app/engines/sentencepiece/_lattice.c`` when it is built (the Python loop here does the same, step for step; the tests
hold them equal).

It works on Python strings (code points), not bytes; offsets are character offsets. It does not do the
denormalization some models carry for decoding, and it does not run BPE (``model.py`` does).

>>> n = Normalizer(add_dummy_prefix=True, remove_extra_whitespaces=False)
>>> n.normalize("Hi  you")
('▁Hi▁▁you', [0, 0, 1, 2, 3, 4, 5, 6, 7])
>>> Normalizer(add_dummy_prefix=True, remove_extra_whitespaces=True).normalize("  Hi  you ")
('▁Hi▁you', [2, 2, 3, 4, 6, 7, 8, 9])
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..compiled import twin
from ..pipeline.charsmap import CharsMap, CharsMapError
from ..pipeline.pieces import SPACE_SYMBOL

_SPACES = re.compile(" {2,}")
_compiled = twin("_lattice", "normalize")  # the unit loop of normalize()'s compiled twin, when built


class Normalizer:
    """Normalize text the way a SentencePiece model's spec says; see :meth:`normalize`."""

    def __init__(
        self,
        *,
        add_dummy_prefix: bool = True,
        remove_extra_whitespaces: bool = True,
        escape_whitespaces: bool = True,
        treat_whitespace_as_suffix: bool = False,
        charsmap: bytes = b"",
        user_defined: Iterable[str] = (),
    ):
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.escape_whitespaces = escape_whitespaces
        self.treat_whitespace_as_suffix = treat_whitespace_as_suffix
        self.charsmap = CharsMap(charsmap) if charsmap else None
        self.user_defined = sorted(set(user_defined), key=len, reverse=True)
        self.space = SPACE_SYMBOL if escape_whitespaces else " "
        self.simple = self.charsmap is None and not self.user_defined
        self._flags = (add_dummy_prefix | remove_extra_whitespaces << 1 | escape_whitespaces << 2
                       | treat_whitespace_as_suffix << 3)

    # -- the fast path, no offsets -----------------------------------------------------------------------------
    def normalize_text(self, text: str) -> str:
        """The normalized string only (what ``encode`` needs); same result as ``normalize(text)[0]``.

        >>> Normalizer(remove_extra_whitespaces=False).normalize_text(" a b")
        '▁▁a▁b'
        """
        if not self.simple or self.treat_whitespace_as_suffix:
            return self.normalize(text)[0]
        if self.remove_extra_whitespaces:
            text = _SPACES.sub(" ", text.lstrip(" "))
        if not text:
            return ""
        if self.escape_whitespaces:
            text = text.replace(" ", SPACE_SYMBOL)
        if self.add_dummy_prefix:
            text = self.space + text
        if self.remove_extra_whitespaces:
            text = text.rstrip(self.space)
        return text

    # -- the full path, with offsets ---------------------------------------------------------------------------
    def normalize(self, text: str) -> tuple[str, list[int]]:
        """Return ``(normalized, norm_to_orig)``; ``norm_to_orig`` has one entry per normalized character plus
        a final one, each the input character offset it comes from (the dummy prefix maps to where the text
        starts after any removed leading spaces)."""
        if not text:
            return "", [0]
        if self.simple and not self.remove_extra_whitespaces and not self.treat_whitespace_as_suffix:
            # one normalized character per input character, after the optional dummy prefix
            n2o = list(range(len(text) + 1))
            if self.add_dummy_prefix:
                n2o.insert(0, 0)
            return self.normalize_text(text), n2o
        if _compiled is not None and not self.simple:
            charsmap = self.charsmap
            trie, strings = (charsmap.native_units, charsmap.strings) if charsmap is not None else (b"", b"")
            try:
                return _compiled(text, tuple(self.user_defined), trie, strings, self._flags)
            except ValueError:  # a rule's output past the map: only a damaged map has one
                raise CharsMapError("a rule's output lies outside the map") from None
        return self._normalize_python(text)

    def _normalize_python(self, text: str) -> tuple[str, list[int]]:
        units = self._units(text)
        i = 0
        if self.remove_extra_whitespaces:
            while i < len(units) and units[i][0] == " ":
                i += 1
        if i == len(units):
            return "", [len(text)]
        out: list[str] = []
        n2o: list[int] = []
        consumed = units[i][1]
        space = self.space
        if self.add_dummy_prefix and not self.treat_whitespace_as_suffix:
            out.append(space)
            n2o.append(consumed)
        is_prev_space = self.remove_extra_whitespaces
        for unit, start, end in units[i:]:
            if is_prev_space:
                unit = unit.lstrip(" ")
            if unit:
                escaped = unit.replace(" ", SPACE_SYMBOL) if self.escape_whitespaces else unit
                out.append(escaped)
                n2o.extend([start] * len(escaped))
                is_prev_space = unit.endswith(" ")
            consumed = end
            if not self.remove_extra_whitespaces:
                is_prev_space = False
        normalized = "".join(out)
        if self.remove_extra_whitespaces:
            while normalized.endswith(space):
                length = len(normalized) - len(space)
                consumed = n2o[length]
                normalized = normalized[:length]
                del n2o[length:]
        if self.add_dummy_prefix and self.treat_whitespace_as_suffix:
            normalized += space
            n2o.extend([consumed] * len(space))
        n2o.append(consumed)
        return normalized, n2o

    def _units(self, text: str) -> list[tuple[str, int, int]]:
        """Split ``text`` into normalization units ``(replacement, start, end)``: user-defined symbols (longest
        first, kept as they are), charsmap rules (longest match), otherwise single characters."""
        if self.simple:
            return [(c, i, i + 1) for i, c in enumerate(text)]
        units: list[tuple[str, int, int]] = []
        data = text.encode("utf-8")
        bpos = 0
        i, n = 0, len(text)
        charsmap, user = self.charsmap, self.user_defined
        user_first = {u[0] for u in user}
        while i < n:
            ch = text[i]
            matched = next((u for u in user if text.startswith(u, i)), None) if ch in user_first else None
            if matched is not None:
                units.append((matched, i, i + len(matched)))
                i += len(matched)
                bpos += len(matched.encode("utf-8"))
                continue
            if charsmap is not None and charsmap.may_start(ch):
                blen, rep = charsmap.longest(data, bpos)
                if blen:
                    nchars = len(data[bpos : bpos + blen].decode("utf-8", "ignore")) or 1
                    units.append((rep, i, i + nchars))
                    i += nchars
                    bpos += blen
                    continue
            units.append((ch, i, i + 1))
            bpos += 1 if ch < "\x80" else len(ch.encode("utf-8"))
            i += 1
        return units
