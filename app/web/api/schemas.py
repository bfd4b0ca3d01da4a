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


class AddedSpecialOut(BaseModel):
    id: int
    text: str = Field(description="the token, e.g. <bos> or [CLS]")
    at: str = Field(description="start or end: before or after the text's own tokens")


class TokenizeResponse(BaseModel):
    tokenizer: str
    count: int = Field(description="the text's tokens, as encode(text) without the model's own additions")
    chars: int
    bytes: int
    added_specials: list[AddedSpecialOut] = Field(
        description="the tokens the model's own default encoding adds around the text (a beginning-of-text token, "
        "BERT's [CLS] and [SEP]): what Hugging Face's encode(text) adds with its defaults, or sentencepiece with "
        "add_bos as the model's configuration says; empty for tiktoken's encodings"
    )
    count_with_specials: int = Field(description="count + the added specials: what the model reads")
    context_window: int | None = Field(
        None, description="called with a model name (gpt-4o, llama-3.1, a Hugging Face repository id): its context "
        "window in tokens (null when not known); absent for an encoding or a file"
    )
    price_per_million_input: float | None = Field(
        None, description="called with a model name: its list price of a million input tokens in USD, from the dated "
        "data file (null when the maker has no public price); absent for an encoding or a file"
    )
    prices_date: str | None = Field(None, description="called with a model name: when the prices were read")
    prices_note: str | None = Field(
        None, description="why there are no context windows or prices: the data file is missing or malformed"
    )
    ids: list[int]
    tokens: list[TokenOut]
