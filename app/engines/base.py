"""The small contract every tokenizer implements, with the shared checks.

Subclasses provide ``encode``, ``token_bytes`` and the vocabulary facts; ``tokenize`` (the rich result),
``decode`` and input checking come from here. The default ``tokenize`` is for byte-level tokenizers, whose
tokens' bytes join up to the input's UTF-8; SentencePiece-style tokenizers, whose pieces are not the input
bytes, override it to place their pieces in the text themselves. What a tokenizer shows in a picker (label,
description, maker) is registry data (:mod:`app.engines.registry`), not part of the tokenizer.
:class:`VocabFacts` answers the vocabulary facts for a tokenizer that knows them once it is built;
:class:`TokenStrings` adds ``id_to_token`` for one whose ids each stand for a token string.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterable, Sequence

from .errors import InvalidIdsError, InvalidTextError
from .result import TokenizeResult, byte_level_result, byte_table
from .pipeline.post_processor import NOTHING, AddedSpecials


def check_text(text: str) -> bytes:
    """Return the UTF-8 of ``text`` or raise :class:`InvalidTextError` (lone surrogates have no UTF-8)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end]
        raise InvalidTextError(
            f"text has a character that cannot be encoded as UTF-8 at offset {exc.start} "
            f"({ascii(bad)}, a lone surrogate); remove it or replace it with a real character"
        ) from None


class Tokenizer(ABC):
    """One tokenizer. ``name`` is its registry name (set by the registry when it builds the tokenizer)."""

    name: str = ""
    #: The tokens the model's own default encoding adds around a text (BOS, ``[CLS]``/``[SEP]``): ``encode`` never
    #: adds them; a loader sets them from the file (:mod:`.pipeline.post_processor`), tiktoken's encodings add none.
    added_specials: AddedSpecials = NOTHING

    # -- what subclasses provide -------------------------------------------------------------------------
    @abstractmethod
    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Token ids for ``text``. Special-token text is plain text unless ``allow_special``."""

    @abstractmethod
    def token_bytes(self, token_id: int) -> bytes:
        """The bytes one token stands for (raises ``KeyError`` for an id the tokenizer does not have)."""

    @property
    @abstractmethod
    def n_vocab(self) -> int:
        """The vocabulary size as the tokenizer's reference library gives it: tiktoken's ``n_vocab``, Hugging Face
        ``tokenizers``' ``get_vocab_size(with_added_tokens=True)``, sentencepiece's ``get_piece_size()``. Usually one
        more than the largest id; see :attr:`id_bound` for the ids themselves."""

    @property
    def id_bound(self) -> int:
        """One more than the largest id. It can differ from :attr:`n_vocab`: ids the reference library does not count
        (the ChatML markup Tokenplay adds to o200k_base), or a file whose ids leave gaps."""
        return self.n_vocab

    @property
    def special_tokens(self) -> dict[str, int]:
        return {}

    def encode_batch(self, texts: Sequence[str], *, allow_special: bool = False) -> list[list[int]]:
        """``encode`` of each text. Engines whose library encodes several texts at once outside the GIL (tiktoken,
        Hugging Face ``tokenizers``) override this to use every core; the ids are the same."""
        return [self.encode(text, allow_special=allow_special) for text in texts]

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """How many tokens each text is (special-token text plain, as ``encode``): ``len`` of each of
        :meth:`encode_batch`'s lists. An engine that can count without building the ids overrides it."""
        return [len(ids) for ids in self.encode_batch(texts)]

    # -- shared behaviour --------------------------------------------------------------------------------
    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset(self.special_tokens.values())

    def has_id(self, token_id: int) -> bool:
        if not 0 <= token_id < self.id_bound:
            return False
        try:
            self.token_bytes(token_id)
        except (KeyError, IndexError, ValueError, OverflowError):
            return False
        return True

    def check_ids(self, ids: Iterable[int]) -> list[int]:
        ids = list(ids)
        bad = sorted({i for i in set(ids) if not isinstance(i, int) or not self.has_id(i)})
        if bad:
            shown = ", ".join(str(i) for i in bad[:10]) + (" ..." if len(bad) > 10 else "")
            raise InvalidIdsError(
                f"{self.name} has no token with id {shown}; valid ids are 0..{self.id_bound - 1}"
                + (" (some ids in that range are unused)" if self._has_gaps() else "")
            )
        return ids

    def _has_gaps(self) -> bool:
        return False

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        ids = self.check_ids(ids)
        return b"".join(self.token_bytes(i) for i in ids)

    def decode(self, ids: Sequence[int]) -> str:
        """Text for ``ids``; invalid UTF-8 (an id list cut inside a character) shows as U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        """Every id of ``text``; Token records are placed from the ids when first asked for."""
        ids = self.encode(text, allow_special=allow_special)
        return byte_level_result(self.name, text, ids, byte_table(self))


class VocabFacts:
    """The vocabulary facts of a tokenizer that knows them once it is built: its size, special tokens, unused ids.

    A mixin for :class:`Tokenizer` subclasses: put it first among the bases and set ``_n_vocab``, ``_special``
    and ``_holes`` in ``__init__``.
    """

    _n_vocab: int
    _special: dict[str, int]
    _holes: bool  # some ids below n_vocab stand for no token
    _id_bound: int | None = None  # one more than the largest id, when that is not n_vocab

    @property
    def n_vocab(self) -> int:
        return self._n_vocab

    @property
    def id_bound(self) -> int:
        return self._n_vocab if self._id_bound is None else self._id_bound

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special)

    def _has_gaps(self) -> bool:
        return self._holes


class TokenStrings(VocabFacts):
    """VocabFacts for a tokenizer whose every id stands for one token string (WordPiece, WordLevel), kept in a list
    by id: ``_set_tokens`` it in ``__init__`` (None for an id with no token) and set ``_special``."""

    _tokens: list[str | None]

    def _set_tokens(self, tokens: list[str | None]) -> None:
        self._tokens = tokens
        self._n_vocab = len(tokens)
        self._holes = None in tokens

    def id_to_token(self, token_id: int) -> str:
        token = self._tokens[token_id] if 0 <= token_id < self._n_vocab else None
        if token is None:
            raise KeyError(token_id)
        return token
