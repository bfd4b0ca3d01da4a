"""The JSON of a :class:`~app.engines.result.TokenizeResult` (what ``POST /api/tokenize`` answers), written
column-wise.

:func:`result_json` gives exactly the bytes of ``orjson.dumps(result.to_dict())``, without a dict per token: a
1 MB text has up to a million tokens, and building a dict for each (and a :class:`~app.engines.result.Token`
record first) takes longer than tokenizing. Tokens repeat, so everything about a token that depends only on its
id is serialised once per distinct id, by orjson (same escaping), as a template with ``%d`` for its offsets; the
offsets are columns computed with C-level loops that fill the templates; one ``bytes.join`` joins them. A
byte-level result (``result.byte_table``) is written from its ids alone, any other from its placed Token records.
It deliberately does not stream: the answer has a ``Content-Length``, and the time is in building it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import accumulate, chain
from operator import attrgetter, sub
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from .result import TokenizeResult


def result_json(result: TokenizeResult) -> bytes:
    """``orjson.dumps(result.to_dict())``, byte for byte, built column-wise.

    >>> from app.engines.result import Token, TokenizeResult
    >>> result = TokenizeResult("demo", "ab", [1, 2], [Token(1, b"a", 0, 1, "a"), Token(2, b"b", 1, 2, "b")])
    >>> result_json(result) == orjson.dumps(result.to_dict())
    True
    """
    head = orjson.dumps(
        {"tokenizer": result.tokenizer, "count": result.count, "chars": result.chars, "bytes": result.n_bytes,
         "ids": result.ids}
    )
    if not result.ids:
        return head[:-1] + b',"tokens":[]}'
    tokens = _byte_level_tokens(result) if result.byte_table is not None else _placed_tokens(result)
    return b"".join(chain((head[:-1], b',"tokens":['), tokens, (b"]}",)))


def _template(tid: int, data: bytes, text: str, special: bool, valid: bool, byte_fallback: bool) -> bytes:
    """A token's JSON with ``%d`` for its start and end, after a comma (what separates it from the token
    before it): ``,{"id":…,"bytes":…,"start":%d,"end":%d,"text":…}``."""
    before = orjson.dumps({"id": tid, "bytes": data.hex()})
    after = orjson.dumps({"text": text, "special": special, "valid_utf8": valid, "byte_fallback": byte_fallback})
    return b"," + before[:-1].replace(b"%", b"%%") + b',"start":%d,"end":%d,' + after[1:].replace(b"%", b"%%")


def _fill(keys: list, templates: dict, offsets: Iterable[tuple[int, int]]) -> Iterator[bytes]:
    """Each token's JSON, in order: its key's template filled with its (start, end); the first without its
    leading comma. Every step is a C-level loop."""
    filled = map(bytes.__mod__, map(templates.__getitem__, keys), offsets)
    first = next(filled)[1:]
    return chain((first,), filled)


def _byte_level_tokens(result: TokenizeResult) -> Iterator[bytes]:
    """A byte-level result from its ids and :class:`~app.engines.result.ByteTable`: a token's offsets come from
    counting the characters that start before it (as :func:`~app.engines.result.tokens_after` places them)."""
    ids, table = result.ids, result.byte_table
    special_ids = table.special_ids
    templates, leads, mids = {}, {}, {}
    for tid in set(ids):
        info = table[tid]
        templates[tid] = _template(tid, info.data, info.text, tid in special_ids, info.valid, False)
        leads[tid] = info.leads
        mids[tid] = int(info.starts_mid)  # a token that starts inside a character shares it with the one before
    ends = list(accumulate(map(leads.__getitem__, ids)))
    starts = map(sub, chain((0,), ends), map(mids.__getitem__, ids))
    return _fill(ids, templates, zip(starts, ends))


_KEY = attrgetter("id", "special", "valid_utf8", "byte_fallback")
_OFFSETS = attrgetter("start", "end")


def _placed_tokens(result: TokenizeResult) -> Iterator[bytes]:
    """Any result, from its Token records. A token's bytes and text are those of the first token with the same
    id and special flag, as :func:`~app.engines.result.tokens_to_dicts` takes them."""
    tokens = result.tokens
    keys = list(map(_KEY, tokens))
    first = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))  # key -> where it first occurs
    shared: dict[tuple[int, bool], tuple[bytes, str]] = {}
    templates = {}
    for key in sorted(first, key=first.__getitem__):
        tok = tokens[first[key]]
        data, text = shared.setdefault(key[:2], (tok.bytes, tok.text))
        templates[key] = _template(key[0], data, text, *key[1:])
    return _fill(keys, templates, map(_OFFSETS, tokens))
