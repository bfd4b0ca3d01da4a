"""A tokenizer as the measure sees it: a document's ids as a NumPy array, and the token count of words alone.

:func:`encoder_for` wraps any :class:`~app.engines.base.Tokenizer`. The ids are the engine's ``encode`` with
special-token text as plain text (tiktoken's ``encode_ordinary``, Hugging Face ``encode(..., add_special_tokens=False)``
with special tokens matched as text, sentencepiece's ``encode``): the same ids every page shows. tiktoken's own
buffer is read without making a Python list (``encode_to_numpy`` with no special token allowed, which is
``encode_ordinary``); every other engine's list becomes an array.

It also knows which ids are *byte-fallback* pieces (``<0x0A>``: SentencePiece-style models that spell a character
they lack in bytes) and which is the *unknown* token, for the tokenizers that have them (None otherwise), read from
the engine (``unk_id``, the byte pieces) or from Hugging Face's model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.engines.base import Tokenizer


@dataclass
class Encoder:
    """One tokenizer, measuring: ``ids(text)``, ``word_counts(words)`` and what its ids are."""

    name: str
    tokenizer: Tokenizer
    n_vocab: int
    unk_id: int | None
    fallback_ids: np.ndarray | None  # sorted ids of the byte-fallback pieces, or None

    def ids(self, text: str) -> np.ndarray:
        return np.asarray(self.tokenizer.encode(text), dtype=np.uint32)

    def word_counts(self, words: Sequence[str]) -> list[int]:
        """Tokens of each word encoded alone."""
        return self.tokenizer.count_batch(list(words))


class _TiktokenEncoder(Encoder):
    def __init__(self, *args):
        super().__init__(*args)
        self._encoding = self.tokenizer.encoding
        self._ordinary = self._encoding.encode_ordinary

    def ids(self, text: str) -> np.ndarray:
        # no special token allowed and none refused: every special token's text is plain text (encode_ordinary)
        return self._encoding.encode_to_numpy(text, disallowed_special=())

    def word_counts(self, words: Sequence[str]) -> list[int]:
        ordinary = self._ordinary
        return [len(ordinary(w)) for w in words]


class _LibraryEncoder(Encoder):
    """Hugging Face ``tokenizers``: a document through the library's batch encoder, which skips the offsets and
    token strings ``encode`` also builds (the same ids)."""

    def ids(self, text: str) -> np.ndarray:
        return np.asarray(self.tokenizer.encode_batch([text])[0], dtype=np.uint32)


def encoder_for(tokenizer: Tokenizer, name: str | None = None) -> Encoder:
    """The :class:`Encoder` of ``tokenizer`` (``name``: what the report calls it; default its registry name)."""
    from app.engines.huggingface.library import HuggingFaceTokenizer
    from app.engines.openai.encodings import TiktokenTokenizer

    unk, fallback = token_classes(tokenizer)
    kind = type(tokenizer)
    cls = _TiktokenEncoder if kind is TiktokenTokenizer else _LibraryEncoder if kind is HuggingFaceTokenizer else Encoder
    return cls(name or tokenizer.name, tokenizer, tokenizer.n_vocab, unk, fallback)


def token_classes(tokenizer: Tokenizer) -> tuple[int | None, np.ndarray | None]:
    """``(unknown id, byte-fallback ids)`` of a tokenizer; None for what it does not have."""
    from app.engines.sentencepiece.model import piece_to_byte

    library = getattr(tokenizer, "library", None)
    if library is not None and hasattr(library, "get_vocab"):  # Hugging Face tokenizers
        model = library.model
        unk_token = getattr(model, "unk_token", None)
        unk = library.token_to_id(unk_token) if unk_token else None
        fallback = None
        if getattr(model, "byte_fallback", False) and not getattr(tokenizer, "byte_level", False):
            vocab = library.get_vocab(with_added_tokens=False)
            fallback = np.array(sorted(i for piece, i in vocab.items() if piece_to_byte(piece) >= 0), dtype=np.uint32)
        return unk, fallback
    unk = getattr(tokenizer, "unk_id", None)
    unk = unk if isinstance(unk, int) and not isinstance(unk, bool) and unk >= 0 else None
    fallback = None
    id_byte = getattr(tokenizer, "_id_byte", None)
    if getattr(tokenizer, "byte_fallback", False) is True and isinstance(id_byte, dict):
        fallback = np.array(sorted(id_byte), dtype=np.uint32)
    return unk, fallback
