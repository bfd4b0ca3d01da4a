"""The one result shape every tokenizer returns, and the helpers that build it.

A :class:`TokenizeResult` carries the ids and, per token, its bytes, its character span in the input, the text
to display and whether it is special. Tokens that split one character (a CJK character or an emoji cut into
byte tokens) get overlapping spans; :func:`group_segments` folds them into *segments*, each a whole run of
characters with all its token indexes, so a view never has to show a half character.

Invariants (checked by the tests for every registered tokenizer):
- ``"".join(seg.text for seg in segments) == text``;
- for byte-level tokenizers, ``b"".join(tok.bytes for tok in tokens) == text.encode("utf-8")``.

:func:`result_json` writes a result as ``POST /api/tokenize`` answers it, column-wise (see its section below).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate, chain
from operator import attrgetter, sub
from weakref import WeakKeyDictionary

import orjson


def escape_bytes(data: bytes) -> str:
    r"""Show bytes as text: valid UTF-8 as itself, anything else as ``\xNN`` escapes.

    >>> escape_bytes("あ".encode()[:2])
    '\\xe3\\x81'
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(f"\\x{b:02x}" for b in data)


def hex_bytes(data: bytes) -> str:
    """Upper-case hex pairs separated by spaces, as shown in a token's detail: ``E3 81``."""
    return data.hex(" ").upper()


@dataclass(slots=True)
class Token:
    id: int
    bytes: bytes
    start: int  # character offset into the input (inclusive)
    end: int  # character offset into the input (exclusive)
    text: str  # what to display: the token's own text, or its escaped bytes when not valid UTF-8 alone
    special: bool = False
    valid_utf8: bool = True
    byte_fallback: bool = False  # a SentencePiece <0xNN> piece

    def to_dict(self) -> dict:
        return tokens_to_dicts([self])[0]


@dataclass(slots=True)
class Segment:
    """A run of whole characters of the input and the tokens that cover it (one token, or several partial ones)."""

    start: int
    end: int
    text: str
    tokens: list[int] = field(default_factory=list)  # indexes into TokenizeResult.tokens

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "text": self.text, "tokens": self.tokens}


PlaceFn = Callable[[int, "int | None"], "list[Token]"]


@dataclass(slots=True)
class Columns:
    """Every token of a result as columns, for writing its JSON without a :class:`Token` per token: ``spans``
    (each token's ``(start, end)`` in characters, in order) and ``info``, which gives for a token id what its
    Token records say about it, the same for every token with that id: ``(bytes, text, special, valid_utf8,
    byte_fallback)``."""

    spans: Iterable[tuple[int, int]]
    info: Callable[[int], tuple[bytes, str, bool, bool, bool]]


ColumnsFn = Callable[[], "Columns | None"]


class TokenizeResult:
    """Every id of a text, and its :class:`Token` records placed in the text when first asked for.

    ``tokens`` places them all; ``window(offset, limit)`` only those of ``ids[offset:offset + limit]`` (spans still
    offsets into the whole text), which is what a view of a 1 MB text needs. An engine passes either the tokens
    or ``place(offset, limit)``, which places a window (``limit`` None: to the end). ``byte_table`` is set when
    the tokens' bytes join up to the text's UTF-8 (byte-level BPE): a view can then place tokens from the ids
    alone (:mod:`app.web.rendering.tokenview`). ``columns`` (optional) gives every token as :class:`Columns` (or None when it
    cannot for this text), what :func:`result_json` writes from instead of the Token records.
    """

    __slots__ = ("tokenizer", "text", "ids", "byte_table", "columns", "_tokens", "_place")

    def __init__(
        self,
        tokenizer: str,
        text: str,
        ids: list[int],
        tokens: list[Token] | None = None,
        *,
        place: PlaceFn | None = None,
        byte_table: ByteTable | None = None,
        columns: ColumnsFn | None = None,
    ):
        if (tokens is None) == (place is None):
            raise ValueError("give the tokens or a function that places them, not both")
        self.tokenizer = tokenizer
        self.text = text
        self.ids = ids
        self.byte_table = byte_table
        self.columns = columns
        self._tokens = tokens
        self._place = place

    @property
    def tokens(self) -> list[Token]:
        if self._tokens is None:
            self._tokens = self._place(0, None)
        return self._tokens

    def window(self, offset: int, limit: int) -> list[Token]:
        """The Token records of ``ids[offset:offset + limit]``, placed without placing the others."""
        offset, limit = max(0, offset), max(0, limit)
        if self._tokens is not None:
            return self._tokens[offset : offset + limit]
        return self._place(offset, limit)

    @property
    def count(self) -> int:
        return len(self.ids)

    @property
    def chars(self) -> int:
        return len(self.text)

    @property
    def n_bytes(self) -> int:
        return len(self.text.encode("utf-8", "surrogatepass"))

    def segments(self) -> list[Segment]:
        return group_segments(self.text, self.tokens)

    def stats(self) -> dict:
        count, chars, n_bytes = self.count, self.chars, self.n_bytes
        return {
            "count": count,
            "chars": chars,
            "bytes": n_bytes,
            "chars_per_token": round(chars / count, 3) if count else 0.0,
            "bytes_per_token": round(n_bytes / count, 3) if count else 0.0,
        }

    def to_dict(self) -> dict:
        return {
            "tokenizer": self.tokenizer,
            "count": self.count,
            "chars": self.chars,
            "bytes": self.n_bytes,
            "ids": self.ids,
            "tokens": tokens_to_dicts(self.tokens),
        }


def tokens_to_dicts(tokens: Iterable[Token]) -> list[dict]:
    """Each token as the API writes it, with the per-id part (hex bytes, text) computed once per id."""
    shared: dict[tuple[int, bool], tuple[str, str]] = {}
    out = []
    for t in tokens:
        key = (t.id, t.special)
        hex_text = shared.get(key)
        if hex_text is None:
            hex_text = shared[key] = (t.bytes.hex(), t.text)
        out.append({"id": t.id, "bytes": hex_text[0], "start": t.start, "end": t.end, "text": hex_text[1],
                    "special": t.special, "valid_utf8": t.valid_utf8, "byte_fallback": t.byte_fallback})
    return out


def group_segments(text: str, tokens: Sequence[Token], whole: bool = True) -> list[Segment]:
    """Fold tokens whose character spans overlap into one segment; segments tile the input exactly.

    Characters that no token covers (spaces a SentencePiece model normalises away, the text between the words
    of a lab corpus) form segments of their own, without tokens, so the segments still join back to ``text``.
    With ``whole=False`` (a window of the tokens) the segments tile only the window's own characters.

    >>> [(s.text, s.tokens) for s in group_segments("ab  c", [Token(1, b"ab", 0, 2, "ab"), Token(2, b"c", 4, 5, "c")])]
    [('ab', [0]), ('  ', []), ('c', [1])]
    """
    segments: list[Segment] = []
    end = 0 if whole else (tokens[0].start if tokens else 0)
    for index, token in enumerate(tokens):
        if segments and segments[-1].tokens and token.start < end:
            last = segments[-1]
            last.tokens.append(index)
            last.end = end = max(end, token.end)
            continue
        if token.start > end:
            segments.append(Segment(end, token.start, "", []))
            end = token.start
        segments.append(Segment(end, max(end, token.end), "", [index]))
        end = segments[-1].end
    if whole and end < len(text):
        segments.append(Segment(end, len(text), "", []))
    for seg in segments:
        seg.text = text[seg.start : seg.end]
    return segments


class ByteInfo:
    """Per-id facts needed to place a byte token in the text (kept in a :class:`ByteTable`: ids repeat a lot)."""

    __slots__ = ("data", "leads", "starts_mid", "text", "valid")

    def __init__(self, data: bytes):
        self.data = data
        self.leads = sum(1 for b in data if not 0x80 <= b < 0xC0)  # characters that start in this token
        self.starts_mid = bool(data) and 0x80 <= data[0] < 0xC0
        try:
            self.text = data.decode("utf-8")
            self.valid = True
        except UnicodeDecodeError:
            self.text = escape_bytes(data)
            self.valid = False


class ByteTable(dict):
    """Token id -> :class:`ByteInfo` of one byte-level tokenizer, filled on first sight of an id."""

    def __init__(self, token_bytes: Callable[[int], bytes], special_ids: frozenset[int]):
        super().__init__()
        self.token_bytes = token_bytes
        self.special_ids = special_ids

    def __missing__(self, token_id: int) -> ByteInfo:
        info = self[token_id] = ByteInfo(self.token_bytes(token_id))
        return info


_TABLES: WeakKeyDictionary = WeakKeyDictionary()


def byte_table(tokenizer) -> ByteTable:
    """The :class:`ByteTable` of a byte-level tokenizer (one per tokenizer object, dropped with it)."""
    table = _TABLES.get(tokenizer)
    if table is None:
        table = _TABLES[tokenizer] = ByteTable(tokenizer.token_bytes, tokenizer.special_ids)
    return table


def byte_level_result(name: str, text: str, ids: list[int], table: ByteTable) -> TokenizeResult:
    """The result of a byte-level tokenizer: tokens placed from the ids alone (see :func:`place_byte_tokens`)."""
    return TokenizeResult(name, text, ids, place=partial(place_byte_tokens, ids, table), byte_table=table)


def place_byte_tokens(ids: list[int], table: ByteTable, offset: int = 0, limit: int | None = None) -> list[Token]:
    """:class:`Token` records for the byte-level ``ids[offset:offset + limit]``.

    The ids' bytes must join up to the input's UTF-8. Character spans come from counting UTF-8 lead bytes, so a
    token cut inside a character shares that character's span with its neighbour (and both end up in one
    segment). The spans are offsets into the whole text.
    """
    stop = len(ids) if limit is None else min(len(ids), offset + limit)
    chars = sum(table[tid].leads for tid in ids[:offset])  # characters whose first byte came before the window
    return tokens_after(ids[offset:stop], chars, table)


def tokens_after(ids: Iterable[int], chars: int, table: ByteTable) -> list[Token]:
    """:class:`Token` records for byte-level ``ids`` whose text starts after ``chars`` characters of the input
    (the loop of :func:`place_byte_tokens`, also used for one segment at a time)."""
    tokens: list[Token] = []
    special_ids = table.special_ids
    for tid in ids:
        info = table[tid]
        start = chars - 1 if info.starts_mid else chars
        chars += info.leads
        tokens.append(Token(tid, info.data, start, chars, info.text, tid in special_ids, info.valid))
    return tokens


# -- its JSON --------------------------------------------------------------------------------------------------------
# The JSON of a TokenizeResult (what ``POST /api/tokenize`` answers), written column-wise.
#
# :func:`result_json` gives exactly the bytes of ``orjson.dumps(result.to_dict())``, without a dict per token: a
# 1 MB text has up to a million tokens, and building a dict for each (and a :class:`~app.engines.result.Token`
# record first) takes longer than tokenizing. Tokens repeat, so everything about a token that depends only on its
# id is serialised once per distinct id, by orjson (same escaping), as a template with ``%d`` for its offsets; the
# offsets are columns computed with C-level loops that fill the templates; one ``bytes.join`` joins them. A
# byte-level result (``result.byte_table``) is written from its ids alone, any other from its placed Token records.
# It deliberately does not stream: the answer has a ``Content-Length``, and the time is in building it.


def result_json(result: TokenizeResult, extra: dict | None = None) -> bytes:
    """``orjson.dumps(result.to_dict())``, byte for byte, built column-wise; ``extra`` members (what a caller adds
    about the text: the tokens the model adds, its context window) come after ``bytes``, before the ids.

    >>> from app.engines.result import Token, TokenizeResult
    >>> result = TokenizeResult("demo", "ab", [1, 2], [Token(1, b"a", 0, 1, "a"), Token(2, b"b", 1, 2, "b")])
    >>> result_json(result) == orjson.dumps(result.to_dict())
    True
    """
    head = orjson.dumps(
        {"tokenizer": result.tokenizer, "count": result.count, "chars": result.chars, "bytes": result.n_bytes}
        | (extra or {}) | {"ids": result.ids}
    )
    if not result.ids:
        return head[:-1] + b',"tokens":[]}'
    if result.byte_table is not None:
        tokens = _byte_level_tokens(result)
    elif result.columns is not None and (columns := result.columns()) is not None:
        tokens = _column_tokens(result.ids, columns)
    else:
        tokens = _placed_tokens(result)
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
    templates = {}
    for tid in set(ids):
        info = table[tid]
        templates[tid] = _template(tid, info.data, info.text, tid in special_ids, info.valid, False)
    return _fill(ids, templates, zip(*byte_spans(ids, table)))


def byte_spans(ids: list[int], table: ByteTable) -> tuple[Iterable[int], list[int]]:
    """Every byte-level token's (starts, ends), as :func:`tokens_after` places them, with C-level loops: a token's
    end counts the characters that start up to it; one that starts inside a character shares it with the one
    before."""
    leads, mids = {}, {}
    for tid in set(ids):
        info = table[tid]
        leads[tid] = info.leads
        mids[tid] = int(info.starts_mid)
    ends = list(accumulate(map(leads.__getitem__, ids)))
    return map(sub, chain((0,), ends), map(mids.__getitem__, ids)), ends


def _column_tokens(ids: list[int], columns: Columns) -> Iterator[bytes]:
    """A result from its :class:`Columns`: one template per distinct id, filled with each token's span."""
    info = columns.info
    templates = {tid: _template(tid, *info(tid)) for tid in set(ids)}
    return _fill(ids, templates, columns.spans)


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
