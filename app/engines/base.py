"""The small contract every tokenizer implements, with the shared checks.

Subclasses provide ``encode``, ``token_bytes`` and the vocabulary facts; ``tokenize`` (the rich result),
``decode`` and input checking come from here. SentencePiece-style tokenizers, whose pieces are not the input
bytes, override ``tokenize`` to place their pieces in the text themselves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterable, Sequence

from .errors import InvalidIdsError, InvalidTextError
from .result import TokenizeResult, byte_level_tokens


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
    """One tokenizer. ``name`` is its registry name; ``label`` is what a picker shows."""

    name: str = ""
    label: str = ""
    family: str = ""
    description: str = ""

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
        """One more than the largest id."""

    @property
    def special_tokens(self) -> dict[str, int]:
        return {}

    # -- shared behaviour --------------------------------------------------------------------------------
    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset(self.special_tokens.values())

    def has_id(self, token_id: int) -> bool:
        if not 0 <= token_id < self.n_vocab:
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
                f"{self.name} has no token with id {shown}; valid ids are 0..{self.n_vocab - 1}"
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
        check_text(text)
        ids = self.encode(text, allow_special=allow_special)
        tokens = byte_level_tokens(ids, self.token_bytes, self.special_ids, self._byte_info_cache())
        return TokenizeResult(self.name, text, ids, tokens)

    def tokenize_window(
        self, text: str, *, offset: int = 0, limit: int = 2000, allow_special: bool = False
    ) -> TokenizeResult:
        """All ids, but Token records only for ``ids[offset:offset + limit]``: what a view of a long text needs.

        Byte-level tokenizers build just the window; others (which override ``tokenize``) are sliced.
        """
        if type(self).tokenize is not Tokenizer.tokenize:
            full = self.tokenize(text, allow_special=allow_special)
            window = full.tokens[offset : offset + limit]
            return TokenizeResult(full.tokenizer, text, full.ids, window, offset, len(window) == len(full.ids))
        check_text(text)
        ids = self.encode(text, allow_special=allow_special)
        tokens = byte_level_tokens(
            ids, self.token_bytes, self.special_ids, self._byte_info_cache(), offset=offset, limit=limit
        )
        return TokenizeResult(self.name, text, ids, tokens, offset, len(tokens) == len(ids))

    def _byte_info_cache(self) -> dict:
        cache = self.__dict__.get("_token_info_cache")
        if cache is None:
            cache = self.__dict__["_token_info_cache"] = {}
        return cache

    def info(self) -> dict:
        return {
            "name": self.name,
            "label": self.label or self.name,
            "family": self.family,
            "description": self.description,
            "n_vocab": self.n_vocab,
            "special_tokens": self.special_tokens,
        }
