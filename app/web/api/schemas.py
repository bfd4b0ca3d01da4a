"""The models that several areas of the API share: a token, and a text's tokens (what ``POST /api/tokenize``
answers, ``POST /api/chat`` answers beside its prompt, and ``POST /api/explain`` answers for the explained token),
which document the answers in ``/docs`` (the answers themselves are written as ready JSON:
:func:`app.engines.result.result_json`); and the names of the lab's pre-tokenizers, which ``/api/train`` and
``/api/pretokenize`` take."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

#: The lab's pre-tokenizers (:data:`app.lab.splits.PATTERNS`), as a request names them.
PatternName = Literal["none", "whitespace", "gpt2", "gpt4", "o200k", "digits", "digits-r2l", "lines-digits-r2l", "custom"]


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
