"""How SentencePiece spells pieces, as the ``tokenizer.json`` models of its kind spell them too (Llama 2, Gemma,
Mistral...): ``▁`` for a space (:data:`SPACE_SYMBOL`), and ``<0xNN>`` for a byte under byte fallback
(:func:`byte_piece`, :func:`piece_to_byte`). The SentencePiece engines, the tokenizer.json pipeline and the
``tokenizers`` library's engine read pieces with these.
"""

from __future__ import annotations

import re

SPACE_SYMBOL = "\u2581"  # ▁ LOWER ONE EIGHTH BLOCK


def byte_piece(b: int) -> str:
    """The piece that stands for one byte under byte fallback.

    >>> byte_piece(0xE3)
    '<0xE3>'
    """
    return f"<0x{b:02X}>"


_BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")


def piece_to_byte(piece: str) -> int:
    """The byte a ``<0xNN>`` piece stands for, or -1.

    >>> piece_to_byte("<0x0A>"), piece_to_byte("▁a")
    (10, -1)
    """
    m = _BYTE_PIECE.fullmatch(piece)
    return int(m.group(1), 16) if m else -1
