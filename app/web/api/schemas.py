"""The response models that several areas of the API answer with: a token, and a text's tokens (what
``POST /api/tokenize`` answers, ``POST /api/chat`` answers beside its prompt, and ``POST /api/explain`` answers for
the explained token). They document the answers in ``/docs``; the answers themselves are written as ready JSON
(:func:`app.engines.result.result_json`)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class TokenOut(BaseModel):
    id: int
    bytes: str = Field(description="the token's bytes in hex")
    start: int = Field(description="character offset of the token in the input")
    end: int
    text: str = Field(description="what to display; bytes escaped as \\xNN when not valid UTF-8 on their own")
    special: bool
    valid_utf8: bool
    byte_fallback: bool


class TokenizeResponse(BaseModel):
    tokenizer: str
    count: int
    chars: int
    bytes: int
    ids: list[int]
    tokens: list[TokenOut]
