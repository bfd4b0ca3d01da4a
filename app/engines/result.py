"""The one result shape every tokenizer returns, and the helpers that build it.

A :class:`TokenizeResult` carries the ids and, per token, its bytes, its character span in the input, the text
to display and whether it is special. Tokens that split one character (a CJK character or an emoji cut into
byte tokens) get overlapping spans; :func:`group_segments` folds them into *segments*, each a whole run of
characters with all its token indexes, so a view never has to show a half character.

Invariants (checked by the tests for every registered tokenizer):
- ``"".join(seg.text for seg in segments) == text``;
- for byte-level tokenizers, ``b"".join(tok.bytes for tok in tokens) == text.encode("utf-8")``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence


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
        return {
            "id": self.id,
            "bytes": self.bytes.hex(),
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "special": self.special,
            "valid_utf8": self.valid_utf8,
            "byte_fallback": self.byte_fallback,
        }


@dataclass(slots=True)
class Segment:
    """A run of whole characters of the input and the tokens that cover it (one token, or several partial ones)."""

    start: int
    end: int
    text: str
    tokens: list[int] = field(default_factory=list)  # indexes into TokenizeResult.tokens

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "text": self.text, "tokens": self.tokens}


@dataclass(slots=True)
class TokenizeResult:
    tokenizer: str
    text: str
    ids: list[int]
    tokens: list[Token]
    offset: int = 0  # index in ``ids`` of tokens[0]; a windowed result holds only some tokens
    complete: bool = True  # tokens covers every id


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
        if self.complete:
            return group_segments(self.text, self.tokens)
        return group_segments(self.text, self.tokens, whole=False)

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
    """``Token.to_dict`` for many tokens, with the per-id part (hex bytes, flags) computed once per id."""
    shared: dict[tuple[int, bool], dict] = {}
    out = []
    for t in tokens:
        key = (t.id, t.special)
        base = shared.get(key)
        if base is None:
            base = shared[key] = {
                "id": t.id,
                "bytes": t.bytes.hex(),
                "text": t.text,
                "special": t.special,
                "valid_utf8": t.valid_utf8,
                "byte_fallback": t.byte_fallback,
            }
        out.append({"id": t.id, "bytes": base["bytes"], "start": t.start, "end": t.end, "text": base["text"],
                    "special": t.special, "valid_utf8": t.valid_utf8, "byte_fallback": t.byte_fallback})
    return out


def group_segments(text: str, tokens: Sequence[Token], whole: bool = True) -> list[Segment]:
    """Fold tokens whose character spans overlap into one segment; segments tile the input exactly.

    A segment starts where the previous one ended, so characters that no token covers (possible only for
    tokenizers that normalise text away) join the next segment and the segments still join back to ``text``.
    With ``whole=False`` (a window of the tokens) the segments tile only the window's own characters.
    """
    segments: list[Segment] = []
    for index, token in enumerate(tokens):
        if segments and token.start < segments[-1].end:
            last = segments[-1]
            last.tokens.append(index)
            last.end = max(last.end, token.end)
        else:
            start = segments[-1].end if segments else (0 if whole else token.start)
            segments.append(Segment(start, max(start, token.end), "", [index]))
    if segments and whole:
        segments[-1].end = max(segments[-1].end, len(text))
    elif text and whole:
        segments.append(Segment(0, len(text), "", []))
    for seg in segments:
        seg.text = text[seg.start : seg.end]
    return segments


class _ByteInfo:
    """Per-id facts needed to place a byte token in the text, cached because ids repeat a lot."""

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


def byte_level_tokens(
    ids: Iterable[int],
    token_bytes,
    special_ids: frozenset[int] | set[int] = frozenset(),
    cache: dict[int, _ByteInfo] | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[Token]:
    """Build :class:`Token` records for a byte-level tokenizer from its ids.

    ``token_bytes(id) -> bytes`` gives each token's bytes; their concatenation must be the input's UTF-8.
    Character spans come from counting UTF-8 lead bytes, so a token cut inside a character shares that
    character's span with its neighbour (and both end up in one segment).
    ``offset``/``limit`` build only the tokens ``ids[offset:offset + limit]`` (a window of a long text); the
    spans stay offsets into the whole text.
    """
    cache = {} if cache is None else cache
    ids = ids if isinstance(ids, list) else list(ids)
    stop = len(ids) if limit is None else min(len(ids), offset + limit)
    chars = 0  # characters whose first byte has been seen
    for tid in ids[:offset]:
        info = cache.get(tid)
        if info is None:
            info = cache[tid] = _ByteInfo(token_bytes(tid))
        chars += info.leads
    return tokens_after(ids[offset:stop], chars, token_bytes, cache, special_ids)


def tokens_after(
    ids: Iterable[int], chars: int, token_bytes, cache: dict[int, _ByteInfo], special_ids: frozenset[int] | set[int]
) -> list[Token]:
    """:class:`Token` records for byte-level ``ids`` whose text starts after ``chars`` characters of the input
    (the loop of :func:`byte_level_tokens`, also used for one segment at a time)."""
    tokens: list[Token] = []
    for tid in ids:
        info = cache.get(tid)
        if info is None:
            info = cache[tid] = _ByteInfo(token_bytes(tid))
        start = chars - 1 if info.starts_mid else chars
        chars += info.leads
        tokens.append(Token(tid, info.data, start, chars, info.text, tid in special_ids, info.valid))
    return tokens
