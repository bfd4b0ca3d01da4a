"""SentencePiece's text normalization, as a model's ``NormalizerSpec`` says, with a map back to the input.

Normalization turns the input into the string the BPE merges run on: an optional precompiled character map
(NFKC-style rules stored as a Darts double-array trie; empty for ``identity`` models such as Mistral and LLaMA),
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
import struct
from array import array
from collections.abc import Iterable, Iterator

from ..compiled import twin
from ..errors import TokenplayError

SPACE_SYMBOL = "\u2581"  # ▁ LOWER ONE EIGHTH BLOCK
_SPACES = re.compile(" {2,}")
_compiled = twin("_lattice", "normalize")  # the unit loop of normalize()'s compiled twin, when built


class CharsMapError(TokenplayError, ValueError):
    """A precompiled character map that is broken (a damaged ``.model`` file or ``Precompiled`` normalizer)."""

    def __init__(self, what: str):
        self.what = what
        super().__init__(f"this SentencePiece .model file is damaged: its normalization rules (the precompiled "
                         f"character map) are broken: {what}")

    def __reduce__(self):
        return self.__class__, (self.what,)


class CharsMap:
    """A precompiled character map: ``<uint32 trie size><Darts double-array trie><NUL-terminated outputs>``.

    ``longest(data, pos)`` returns ``(byte length, replacement)`` of the longest rule matching the UTF-8
    ``data`` at ``pos``, or ``(0, "")``.
    """

    def __init__(self, blob: bytes):
        if len(blob) <= 4:
            raise CharsMapError("too short")
        (trie_size,) = struct.unpack_from("<I", blob, 0)
        if trie_size >= len(blob):
            raise CharsMapError("its trie is larger than the map")
        self.units = struct.unpack_from(f"<{trie_size // 4}I", blob, 4)
        self.native_units = array("I", self.units).tobytes()  # for the compiled twin: native-endian uint32s
        self.strings = blob[4 + trie_size :]
        # every output a leaf points to starts inside the outputs and ends with a NUL (else a walk would read past)
        leaves = [u & 0x7FFFFFFF for u in self.units if u >> 31]
        if leaves and (max(leaves) >= len(self.strings) or not self.strings.endswith(b"\x00")):
            raise CharsMapError("a rule's output lies outside the map")
        self._cache: dict[int, str] = {}
        self._starts: dict[str, bool] = {}

    def output(self, value: int) -> str:
        """The output that starts at ``value`` (as :meth:`matches` gives it)."""
        out = self._cache.get(value)
        if out is None:
            end = self.strings.index(b"\x00", value)
            out = self._cache[value] = self.strings[value:end].decode("utf-8", "replace")
        return out

    def may_start(self, ch: str) -> bool:
        """Whether some rule begins with the character ``ch`` (when not, ``longest`` finds nothing there: most
        characters of most texts, which then skip the trie walk)."""
        found = self._starts.get(ch)
        if found is None:
            units = self.units
            unit = units[0]
            node = (unit >> 10) << ((unit & 0x200) >> 6)
            found = True
            for c in ch.encode("utf-8"):
                node ^= c
                if node >= len(units) or units[node] & 0x800000FF != c:
                    found = False
                    break
                unit = units[node]
                node ^= (unit >> 10) << ((unit & 0x200) >> 6)
            self._starts[ch] = found
        return found

    def matches(self, data: bytes, pos: int = 0) -> Iterator[tuple[int, int]]:
        """Every rule matching a beginning of ``data[pos:]``, shortest first: its byte length and where its output
        starts (for :meth:`output`), as the walk down the trie meets them."""
        units = self.units
        unit = units[0]
        node = (unit >> 10) << ((unit & 0x200) >> 6)
        for i in range(pos, len(data)):
            c = data[i]
            node ^= c
            if node >= len(units):
                return
            unit = units[node]
            if unit & 0x800000FF != c:
                return
            node ^= (unit >> 10) << ((unit & 0x200) >> 6)
            if (unit >> 8) & 1:
                yield i + 1 - pos, units[node] & 0x7FFFFFFF

    def longest(self, data: bytes, pos: int) -> tuple[int, str]:
        best_len, best_value = 0, -1
        for best_len, best_value in self.matches(data, pos):
            pass
        if best_len == 0:
            return 0, ""
        return best_len, self.output(best_value)

    def shortest(self, data: bytes) -> str | None:
        """The output of the shortest rule matching a beginning of ``data``, or None."""
        for _, value in self.matches(data):
            return self.output(value)
        return None


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
