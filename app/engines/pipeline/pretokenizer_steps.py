"""The pre-tokenizer steps of a tokenizer.json that change the text they cut, run as Hugging Face ``tokenizers`` runs
them: ``Metaspace`` and ``ByteLevel`` (its prefix space and its byte alphabet).

``tokenizers`` pre-tokenizes a list of pieces ("splits"), each step working on the pieces the step before left,
and a step may rewrite a piece as well as cut it. :class:`~.pretokenizers.PreTokenizer` runs the steps that only cut
on character spans of the text; when a pipeline has a step of this module it runs every step on
:data:`Piece` values instead: a piece's text as the model will see it and, for each of its characters, the position
in the pre-tokenized text it stands for (an inserted ``▁`` or space stands for the character it was put before; each
byte-alphabet character for the character whose byte it is). The steps here:

- :class:`Prefix` (``ByteLevel`` with ``add_prefix_space``): a space before every piece that does not start with
  one;
- :class:`ByteAlphabet` (``ByteLevel``): each UTF-8 byte of a piece written as GPT-2's character for it (so the steps
  after it, and the model, see those characters);
- :class:`Metaspace`: spaces written as the replacement character (``▁``), and the replacement put before a piece
  that does not start with it: every piece (``prepend_scheme`` ``always``), only the piece that begins the input
  (``first``: the input offset its first character came from is 0), or none (``never``); it is followed by a cut
  before each replacement character (:class:`~.pretokenizers.PreTokenizer` adds that step when ``split`` is on).

It does not cut by patterns (the cutting steps are :mod:`.pretokenizers`') and does not encode.
"""

from __future__ import annotations

from collections.abc import Callable

from .normalizer_steps import _CHAR_OF_BYTE

#: A piece: its text as the model sees it, and for each character the position in the pre-tokenized text it stands for.
Piece = tuple[str, list[int]]
#: ``origin(position)``: the input offset the pre-tokenized text's character at ``position`` came from.
Origin = Callable[[int], int]


class Prefix:
    """``ByteLevel``'s ``add_prefix_space``: a space before each piece that does not start with one."""

    kind = "ByteLevel"

    def apply(self, pieces: list[Piece], origin: Origin) -> list[Piece]:
        return [(text, pos) if text.startswith(" ") else (" " + text, pos[:1] + pos) for text, pos in pieces]


class ByteAlphabet:
    """``ByteLevel``'s byte alphabet: each UTF-8 byte written as GPT-2's character standing for it."""

    kind = "ByteLevel"

    def apply(self, pieces: list[Piece], origin: Origin) -> list[Piece]:
        out: list[Piece] = []
        for text, pos in pieces:
            if text.isascii() and "".join(_CHAR_OF_BYTE[ord(c)] for c in text) == text:
                out.append((text, pos))  # printable ASCII stands for itself
                continue
            chars: list[str] = []
            where: list[int] = []
            for ch, p in zip(text, pos):
                data = ch.encode("utf-8")
                chars.extend(_CHAR_OF_BYTE[b] for b in data)
                where.extend([p] * len(data))
            out.append(("".join(chars), where))
        return out


class Metaspace:
    """``Metaspace``: spaces written as ``replacement``, which is put before pieces as ``prepend_scheme`` says."""

    kind = "Metaspace"

    def __init__(self, replacement: str, prepend_scheme: str):
        self.replacement = replacement
        self.prepend_scheme = prepend_scheme

    def apply(self, pieces: list[Piece], origin: Origin) -> list[Piece]:
        rep, scheme = self.replacement, self.prepend_scheme
        out: list[Piece] = []
        for text, pos in pieces:
            text = text.replace(" ", rep)
            if scheme != "never" and not text.startswith(rep) and (scheme == "always" or origin(pos[0]) == 0):
                text, pos = rep + text, pos[:1] + pos
            out.append((text, pos))
        return out
