"""The playground's API: list tokenizers, add one of your own, tokenize, decode."""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, ValidationError

from app.services import tokenize as service

from ..cookies import remember_upload
from ..deps import SettingsDep, TokenizersDep, read_upload, run_cpu
from .schemas import TokenizeResponse

router = APIRouter()


class TokenizeRequest(BaseModel):
    text: str = Field(description="the text to tokenize")
    tokenizer: str = Field("cl100k_base", description="a name from GET /api/tokenizers, or a model alias")
    allow_special: bool = Field(False, description="parse special-token text such as <|endoftext|> as special")


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
    maker: str
    n_vocab: int | None
    model: str = Field(description="the picker entry it belongs to (itself, or the model another engine runs)")
    engine: str


class TokenizerList(BaseModel):
    tokenizers: list[TokenizerInfo]
    aliases: dict[str, str] = Field(description="other names of the tokenizers: every OpenAI model name tiktoken maps")
    prefixes: dict[str, str] = Field(
        description="model name beginnings (gpt-4o- for gpt-4o-2024-05-13), tried in this order as tiktoken does"
    )
    repositories: dict[str, str] = Field(
        description="Hugging Face repository ids -> the tokenizer their model publishes (matched without regard to "
        "case, with or without https://huggingface.co/ before them)"
    )


@router.get(
    "/tokenizers",
    response_model=TokenizerList,
    tags=["tokenizers"],
    summary="List the tokenizers you can use",
    description="Every shipped tokenizer, its `native-*` engine, and those this client added or chose in the lab, "
    "with the model aliases: the names the other operations take.",
)
def list_tokenizers(tokenizers: TokenizersDep) -> dict:
    return service.listing(tokenizers)


class AddedTokenizer(BaseModel):
    name: str = Field(description="the name to use it by (for this client: the cookie tp_tok lists it)")
    label: str
    family: str
    n_vocab: int
    engines: dict[str, str] = Field(
        description="each name it is used by -> the engine that runs it: a tokenizer.json is run by huggingface "
        "(the tokenizers library) under its name and by tokenplay as native-<name>; any other file by tokenplay"
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="what the file was found to risk, in words: a regex that backtracks catastrophically on some "
        "texts (requests on such texts are stopped at their time budget and answer 422)",
    )


@router.post(
    "/tokenizers", status_code=201, response_model=AddedTokenizer, tags=["tokenizers"], summary="Add a tokenizer file"
)
async def add_tokenizer(request: Request, tokenizers: TokenizersDep):
    """Multipart: ``file`` (a tokenizer.json, a .tiktoken file, a SentencePiece .model or a Tokenplay BPE model),
    optional ``config`` (a second file: the model's tokenizer_config.json, whose chat template then renders this
    tokenizer's chats in POST /api/chat and on /chat), optional ``name`` (default: from the file name), optional
    ``pattern`` (.tiktoken files: a pattern name such as gpt4, or a regex) and ``special`` (.tiktoken files: special
    tokens, one per line). A tokenizer.json is run by Hugging Face tokenizers under its name and by Tokenplay's
    engine as ``native-<name>``; one that uses something Tokenplay's engine cannot run exactly answers 422 naming it.
    Bad files answer 4xx and nothing is kept."""
    form = await read_upload(request)
    upload = await run_in_threadpool(
        tokenizers.add_upload, form.data, name=form.name, filename=form.filename,
        pattern=form.fields.get("pattern") or None, special_tokens=form.special, config=form.config,
    )
    response = JSONResponse(
        {"name": upload.name, "label": upload.label, "family": upload.family, "n_vocab": upload.n_vocab,
         "engines": upload.engines, "warnings": upload.warnings},
        status_code=201,
    )
    return remember_upload(request, response, upload.id)


@router.post(
    "/tokenize",
    response_model=TokenizeResponse,
    tags=["tokens"],
    summary="Cut a text into tokens",
    description="The ids, and per token its bytes, its place in the text (character offsets) and its flags.",
)
async def tokenize(body: TokenizeRequest, settings: SettingsDep, tokenizers: TokenizersDep, request: Request):
    def work() -> Response:
        # Returned as ready JSON, written without a dict per token: a 1 MB text can have a million tokens, and
        # building (or re-validating through the model) a dict for each would dominate the time.
        body_json = service.tokenize_json(tokenizers, body.tokenizer, body.text, settings, allow_special=body.allow_special)
        return Response(body_json, media_type="application/json")

    return await run_cpu(request, work)


@router.post(
    "/decode",
    response_model=DecodeResponse,
    tags=["tokens"],
    summary="Turn token ids back into text",
    description="Bytes that are not valid UTF-8 on their own come back as U+FFFD; an id the tokenizer lacks is a 422; more than `TOKENPLAY_MAX_IDS` ids (1,000,000 by default) a 413.",
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": DecodeRequest.model_json_schema()}}}},
)
async def decode(request: Request, settings: SettingsDep, tokenizers: TokenizersDep) -> Response:
    raw = await request.body()

    def work() -> Response:
        # read here, not on the event loop: a million ids is a second of parsing (pydantic, as FastAPI would);
        # more than max_ids is refused before
        try:
            body = DecodeRequest.model_validate_json(service.check_ids_json(raw, settings) or b"null")
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_context=False)
            raise RequestValidationError([e | {"loc": ("body", *e["loc"])} for e in errors]) from None
        text = service.decode(tokenizers, body.tokenizer, body.ids, settings)
        return Response(orjson.dumps({"text": text}), media_type="application/json")

    return await run_cpu(request, work, heavy=len(raw) > HEAVY_BODY)


#: A body longer than this (bytes) is read and decoded in the heavy lane (:mod:`app.web.lanes`).
HEAVY_BODY = 200_000
