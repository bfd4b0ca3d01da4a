"""The vocabulary API: ``GET /api/vocab/{name}`` (a page of tokens), ``GET /api/vocab/{name}/{id}`` (one token, its
parents and children), ``POST /api/vocab/{name}/ladder``, ``GET``/``POST /api/vocab/{name}/health``,
``GET /api/vocab/overlap?a=&b=``, ``POST /api/vocab/characters`` and ``GET /api/numbers?tokenizer=``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.features.vocab.merges import MAX_SIZES
from app.features.vocab.tokens import KINDS, MAX_LIMIT
from app.services import vocab as service

from ..deps import SettingsDep, TokenizersDep, run_cpu
from ..render import FastJSON

router = APIRouter()


class LadderRequest(BaseModel):
    text: str = Field(description="the text to count")
    sizes: list[int] | None = Field(
        None, max_length=MAX_SIZES,
        description="vocabulary sizes (the first k ranks, base tokens included); default: a grid within its range",
    )


class HealthRequest(BaseModel):
    text: str = Field(description="a text or corpus: the report adds the tokens it leaves unused and the share it used")


class CharactersRequest(BaseModel):
    text: str
    tokenizers: list[str] = Field(default_factory=list, max_length=service.MAX_CHARACTER_TOKENIZERS)


# Fixed paths first: /vocab/overlap and /vocab/characters are not tokenizer names.
@router.get("/vocab/overlap", tags=["vocabulary"], summary="Two vocabularies compared by their tokens' bytes")
async def vocab_overlap(request: Request, tokenizers: TokenizersDep, a: str, b: str) -> Response:
    """``shared``, ``only_a``, ``only_b`` and ``jaccard`` over the tokens' bytes (special tokens apart), with
    examples and the same per script (a word's script, else its kind)."""
    return FastJSON(await run_cpu(request, service.overlap, tokenizers, a, b))


@router.post("/vocab/characters", tags=["vocabulary"], summary="A text character by character, with its tokens")
async def vocab_characters(request: Request, body: CharactersRequest, tokenizers: TokenizersDep) -> Response:
    """Per character: code point, name, category, script, UTF-8/16/32 bytes, and per tokenizer the tokens that
    cover it (``split`` when it is cut between several)."""
    return FastJSON(await run_cpu(request, service.characters, tokenizers, body.text, body.tokenizers))


@router.get("/vocab/{name}", tags=["vocabulary"], summary="A page of a tokenizer's vocabulary")
async def vocab_page(
    request: Request,
    tokenizers: TokenizersDep,
    settings: SettingsDep,
    name: str,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
    q: Annotated[str, Query(max_length=200, description="a substring of the token's text, or /regex/")] = "",
    kind: Annotated[str, Query(description=f"one of: {', '.join(KINDS)}")] = "",
) -> Response:
    """``{"total", "tokens"}``: the tokens matching ``q`` and ``kind``, ordered by id, each ``{"id", "text",
    "bytes_hex", "kind", "rank"}`` (``script`` for a word, ``piece`` where the vocabulary writes it otherwise)."""
    found = await run_cpu(request, service.page, tokenizers, name, settings, offset=offset, limit=limit, q=q, kind=kind)
    return FastJSON(found)


@router.get("/vocab/{name}/health", tags=["vocabulary"], summary="A vocabulary's health report")
async def vocab_health(request: Request, tokenizers: TokenizersDep, settings: SettingsDep, name: str) -> Response:
    """Each figure's count and examples: ``unreachable_bpe``, ``unreachable_pretokenizer``, ``partial_utf8``,
    ``never_valid_bytes``, ``duplicates``, ``special_reachable`` (computed once per vocabulary, then kept)."""
    return FastJSON(await run_cpu(request, service.health, tokenizers, name, settings))


@router.post("/vocab/{name}/health", tags=["vocabulary"], summary="A health report with what a text leaves unused")
async def vocab_health_of_text(
    request: Request, body: HealthRequest, tokenizers: TokenizersDep, settings: SettingsDep, name: str
) -> Response:
    """The report of ``GET``, with ``unused`` (tokens the text never produces, special tokens apart), ``used`` and
    ``share`` (the share of the vocabulary it used)."""
    return FastJSON(await run_cpu(request, service.health, tokenizers, name, settings, body.text))


@router.post("/vocab/{name}/ladder", tags=["vocabulary"], summary="How many tokens a text takes with the first k ranks")
async def vocab_ladder(
    request: Request, body: LadderRequest, tokenizers: TokenizersDep, settings: SettingsDep, name: str
) -> Response:
    """``{"points": [{"size": k, "tokens": n}]}``: the text's tokens with only the first k ranks of a merge-based
    tokenizer (for a tiktoken encoding, exactly ``tiktoken.Encoding`` with the ranks below k)."""
    return FastJSON(await run_cpu(request, service.ladder, tokenizers, name, body.text, body.sizes, settings))


@router.get("/vocab/{name}/{token_id}", tags=["vocabulary"], summary="One token: its rank, parents and children")
async def vocab_token(
    request: Request, tokenizers: TokenizersDep, settings: SettingsDep, name: str, token_id: int
) -> Response:
    """The token's record, ``rank``, ``parents`` (the two tokens whose merge made it) and ``children`` (the tokens one
    more merge makes from it); both null for a tokenizer without merges."""
    return FastJSON(await run_cpu(request, service.token, tokenizers, name, token_id, settings))


@router.get("/numbers", tags=["vocabulary"], summary="How a tokenizer cuts numbers")
async def numbers(request: Request, tokenizers: TokenizersDep, settings: SettingsDep, tokenizer: str) -> Response:
    """``single_tokens_0_9999``, ``largest_single_token`` (of 0–9999), ``largest_single_token_any`` and
    ``grouping`` (one digit, threes from the left, threes from the right, learned)."""
    return FastJSON(await run_cpu(request, service.numbers, tokenizers, tokenizer, settings))
