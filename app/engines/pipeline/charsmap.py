"""SentencePiece's precompiled character map (``precompiled_charsmap``): the NFKC-style rules of a ``.model`` file's
normalizer, and of a ``tokenizer.json``'s ``Precompiled`` normalizer, which carries the same bytes. Both the
SentencePiece engines (:mod:`app.engines.sentencepiece.normalizer`) and the tokenizer.json pipeline
(:mod:`.normalizer_steps`) read it here; the compiled twin of its walk is in
``app/engines/sentencepiece/_lattice.c``, which reads :attr:`CharsMap.native_units`.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator

from ..errors import TokenplayError


class CharsMapError(TokenplayError, ValueError):
    """A precompiled character map that is broken (a damaged ``.model`` file or ``Precompiled`` normalizer);
    ``what`` says how."""

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
