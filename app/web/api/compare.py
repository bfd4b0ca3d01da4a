"""The compare page's API: ``POST /api/compare``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.services.compare import run_compare

from ..deps import SettingsDep, TokenizersDep
from ..render import FastJSON

router = APIRouter()


class CompareRequest(BaseModel):
    text: str = Field(description="the text every tokenizer encodes")
    tokenizers: list[str] = Field(description="two or more names from GET /api/tokenizers (or model aliases)")
    allow_special: bool = Field(False, description="parse special-token text such as <|endoftext|> as special")
    reference: str | None = Field(None, description="boundaries are compared to this one (default: the first)")


@router.post("/compare", tags=["tokens"], summary="Compare tokenizers on one text")
def api_compare(body: CompareRequest, settings: SettingsDep, tokenizers: TokenizersDep) -> Response:
    """Every chosen tokenizer's result and stats, the best value per column and boundary differences."""
    comparison = run_compare(
        tokenizers,
        body.text,
        body.tokenizers,
        allow_special=body.allow_special,
        reference=body.reference,
        settings=settings,
    )
    return FastJSON(comparison.to_dict())
