"""The JSON API: list tokenizers, tokenize, decode. Same engine and result shape as the pages and the CLI.

Handlers are plain ``def`` so FastAPI runs them in its thread pool: a large text never blocks the event loop.
"""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from app.engines import registry

from .deps import SettingsDep, check_text_size, run_cpu
from .errors import TooLargeError
from .pickers import get_tokenizer

router = APIRouter(prefix="/api", tags=["api"])


class FastJSON(JSONResponse):
    """JSON via orjson: a 1 MB text gives ~250k token objects, which the stdlib encoder serialises slowly."""

    def render(self, content) -> bytes:
        return orjson.dumps(content)


class TokenizeRequest(BaseModel):
    text: str = Field(description="the text to tokenize")
    tokenizer: str = Field("cl100k_base", description="a name from GET /api/tokenizers, or a model alias")
    allow_special: bool = Field(False, description="parse special-token text such as <|endoftext|> as special")


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


class DecodeRequest(BaseModel):
    tokenizer: str = "cl100k_base"
    ids: list[int]


class DecodeResponse(BaseModel):
    text: str


class TokenizerInfo(BaseModel):
    name: str
    label: str
    family: str
    description: str


class TokenizerList(BaseModel):
    tokenizers: list[TokenizerInfo]
    aliases: dict[str, str]


@router.get("/tokenizers", response_model=TokenizerList)
def list_tokenizers() -> dict:
    valid = set(registry.names())
    return {
        "tokenizers": [s.to_dict() for s in registry.specs()],
        "aliases": {alias: target for alias, target in registry.ALIASES.items() if target in valid},
    }


@router.post("/tokenize", response_model=TokenizeResponse)
async def tokenize(req: TokenizeRequest, settings: SettingsDep, request: Request) -> Response:
    check_text_size(req.text, settings)

    def work() -> Response:
        tok = get_tokenizer(request, req.tokenizer)
        # Returned as a ready response: re-validating 250k token dicts through the model would dominate the time.
        return FastJSON(tok.tokenize(req.text, allow_special=req.allow_special).to_dict())

    return await run_cpu(request, work)


@router.post("/decode", response_model=DecodeResponse)
def decode(req: DecodeRequest, settings: SettingsDep, request: Request) -> dict:
    if len(req.ids) > settings.max_ids:
        raise TooLargeError(f"{len(req.ids):,} ids; the limit is {settings.max_ids:,}")
    tok = get_tokenizer(request, req.tokenizer)
    return {"text": tok.decode(req.ids)}
