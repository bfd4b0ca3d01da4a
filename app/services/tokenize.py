"""Cut a text into tokens and back, for the playground and ``/api/tokenize``, ``/api/decode``, ``/api/tokenizers``.

Every function takes the request's :class:`~app.services.catalog.Tokenizers` (which names it may use) and the
app's :class:`~app.settings.Settings` (its limits), and returns data: the pages draw it, the API writes it as JSON.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

import orjson

from app.engines import registry
from app.engines.base import Tokenizer
from app.engines.errors import InvalidIdsError
from app.engines.result import TokenizeResult, result_json
from app.settings import Settings

from . import model_counts
from .catalog import Tokenizers
from .errors import TooLargeError, check_ids_count, check_text_size, export_format


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


def tokenize_json(tokenizers: Tokenizers, name: str, text: str, settings: Settings, *, allow_special: bool = False) -> bytes:
    """``POST /api/tokenize``'s answer: the ids, each token (bytes, place, flags), the tokens the model adds and,
    for a model name, its context window and price."""
    return _as_json(tokenize(tokenizers, name, text, settings, allow_special=allow_special), name, settings)


def _as_json(cut: Tokenized, name: str, settings: Settings) -> bytes:
    extra = model_counts.added(cut.tokenizer, cut.result.count) | model_counts.facts(name, settings)
    return result_json(cut.result, extra)


#: The playground's downloads of its tokens, and the columns of the CSV (one row a token, in order).
DOWNLOAD_FORMATS = ("json", "csv")
CSV_COLUMNS = ("index", "id", "text", "bytes", "start", "end", "special", "valid_utf8", "byte_fallback")


def download(tokenizers: Tokenizers, name: str, text: str, settings: Settings, fmt: str, *,
             allow_special: bool = False) -> tuple[bytes, str, str]:
    """The playground's tokens as a file: its body, media type and file name. ``json``: the same JSON as
    ``POST /api/tokenize``; ``csv``: a header row of :data:`CSV_COLUMNS`, then one row a token (``bytes`` in hex,
    ``start``/``end`` character offsets in the text, flags as true/false)."""
    fmt = export_format(fmt, DOWNLOAD_FORMATS)
    cut = tokenize(tokenizers, name, text, settings, allow_special=allow_special)
    body = _as_json(cut, name, settings)
    stem = "tokens-" + re.sub(r"[^A-Za-z0-9._-]+", "_", cut.tokenizer.name)
    if fmt == "json":
        return body, "application/json", f"{stem}.json"
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for i, token in enumerate(orjson.loads(body)["tokens"]):
        writer.writerow([i, *(str(v).lower() if isinstance(v, bool) else v for v in (token[c] for c in CSV_COLUMNS[1:]))])
    return out.getvalue().encode("utf-8"), "text/csv; charset=utf-8", f"{stem}.csv"


def encode(tokenizers: Tokenizers, name: str, text: str, settings: Settings, *, allow_special: bool = False) -> list[int]:
    """Every id of ``text`` (the playground's "copy all ids")."""
    check_text_size(text, settings)
    return tokenizers.get(name).encode(text, allow_special=allow_special)


def decode(tokenizers: Tokenizers, name: str, ids: list[int], settings: Settings) -> str:
    """``ids`` back to text; bytes that are not valid UTF-8 on their own come back as U+FFFD."""
    check_ids_count(ids, settings)
    return tokenizers.get(name).decode(ids)


#: Commas a JSON body of ids may hold beyond one per id (between its other fields) before it is refused unread.
_OTHER_COMMAS = 16


def check_ids_json(raw: bytes, settings: Settings) -> bytes:
    """A JSON body of ids, or :class:`~app.services.errors.TooLargeError` when its commas alone say it holds more
    than ``settings.max_ids`` values: counted before it is parsed (a count of one byte is a hundredth of the parse, and
    parsing holds the GIL), so a body of millions of ids is refused without being read into a list. A body just
    over the limit is parsed and then refused (:func:`~app.services.errors.check_ids_count`)."""
    commas = raw.count(b",")
    if commas >= settings.max_ids + _OTHER_COMMAS:
        raise TooLargeError(f"more than {settings.max_ids:,} ids (the body holds {commas + 1:,} comma-separated values); "
                            f"the limit is {settings.max_ids:,}")
    return raw


#: What a pasted id list holds between the ids: spaces, commas, semicolons, brackets.
_ID_PARTS = re.compile(r"[^\s,;\[\]()]+")
_ID = re.compile(r"\d{1,12}")


def parse_ids(raw: str, limit: int | None = None) -> list[int]:
    """Ids from ``1, 2 3``, ``[1,2,3]`` or one id a line; anything else raises :class:`InvalidIdsError`, and more
    than ``limit`` ids :class:`~app.services.errors.TooLargeError` as soon as the one past it is read (a paste of
    millions of ids is refused after reading the limit, not all of it).

    >>> parse_ids("[9906, 1917]")
    [9906, 1917]
    """
    ids = []
    for found in _ID_PARTS.finditer(raw):
        part = found.group()
        if not _ID.fullmatch(part):
            shown = part if len(part) <= 20 else part[:20] + "…"
            raise InvalidIdsError(f"{shown!r} is not a token id; paste whole numbers separated by commas or spaces")
        if limit is not None and len(ids) == limit:
            raise TooLargeError(f"more than {limit:,} ids; the limit is {limit:,}")
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
