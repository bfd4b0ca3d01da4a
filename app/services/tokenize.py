"""Cut a text into tokens and back, for the playground and ``/api/tokenize``, ``/api/decode``, ``/api/tokenizers``.

Every function takes the request's :class:`~app.services.catalog.Tokenizers` (which names it may use) and the
app's :class:`~app.settings.Settings` (its limits), and returns data: the pages draw it, the API writes it as JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.engines import registry
from app.engines.base import Tokenizer
from app.engines.errors import InvalidIdsError
from app.engines.result import TokenizeResult
from app.settings import Settings

from .catalog import Tokenizers
from .errors import check_ids_count, check_text_size


@dataclass(slots=True)
class Tokenized:
    """A text cut by one tokenizer: the tokenizer (its canonical name is ``tokenizer.name``) and the result."""

    tokenizer: Tokenizer
    result: TokenizeResult

    @property
    def byte_fallback(self) -> int | None:
        """How many of the tokens are ``<0xNN>`` byte pieces (SentencePiece models spell characters outside their
        vocabulary so); None for a tokenizer without them."""
        count = getattr(self.tokenizer, "count_byte_fallback", None)
        return count(self.result.ids) if count else None


def tokenize(tokenizers: Tokenizers, name: str, text: str, settings: Settings, *, allow_special: bool = False) -> Tokenized:
    """``text`` cut by the tokenizer ``name``: every id, and Token records placed in the text when asked."""
    check_text_size(text, settings)
    tok = tokenizers.get(name)
    return Tokenized(tok, tok.tokenize(text, allow_special=allow_special))


def encode(tokenizers: Tokenizers, name: str, text: str, settings: Settings, *, allow_special: bool = False) -> list[int]:
    """Every id of ``text`` (the playground's "copy all ids")."""
    check_text_size(text, settings)
    return tokenizers.get(name).encode(text, allow_special=allow_special)


def decode(tokenizers: Tokenizers, name: str, ids: list[int], settings: Settings) -> str:
    """``ids`` back to text; bytes that are not valid UTF-8 on their own come back as U+FFFD."""
    check_ids_count(ids, settings)
    return tokenizers.get(name).decode(ids)


_ID_SEPARATORS = re.compile(r"[\s,;\[\]()]+")


def parse_ids(raw: str) -> list[int]:
    """Ids from ``1, 2 3``, ``[1,2,3]`` or one id a line; anything else raises :class:`InvalidIdsError`.

    >>> parse_ids("[9906, 1917]")
    [9906, 1917]
    """
    ids = []
    for part in _ID_SEPARATORS.split(raw):
        if not part:
            continue
        if not re.fullmatch(r"\d{1,12}", part):
            shown = part if len(part) <= 20 else part[:20] + "…"
            raise InvalidIdsError(f"{shown!r} is not a token id; paste whole numbers separated by commas or spaces")
        ids.append(int(part))
    return ids


def listing(tokenizers: Tokenizers) -> dict:
    """The tokenizers this browser may use, with the model aliases that name them (``GET /api/tokenizers``)."""
    valid = set(registry.names())
    return {
        "tokenizers": [s.to_dict() for s in tokenizers.listed()],
        "aliases": {alias: target for alias, target in registry.ALIASES.items() if target in valid},
        "prefixes": {prefix: target for prefix, target in registry.ALIAS_PREFIXES.items() if target in valid},
        "repositories": {repo: target for repo, target in registry.REPO_IDS.items() if target in valid},
    }
