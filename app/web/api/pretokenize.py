"""``POST /api/pretokenize``: a text cut by one of the lab's pre-tokenizers, as its training cuts a corpus (the
lab page's pattern box previews the same). A user's regex runs under the request's time budget."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from app.engines.bpe.pretokens import MAX_PATTERN_CHARS
from app.lab.splits import MAX_PREVIEW_CHARS
from app.services import lab as service

from ..deps import run_cpu
from ..render import FastJSON
from .schemas import PatternName

router = APIRouter(tags=["lab"])


class PretokenizeRequest(BaseModel):
    text: str = Field(max_length=MAX_PREVIEW_CHARS, description="the text to cut")
    pattern: PatternName = Field("gpt4", description="one of the lab's pre-tokenizers")
    pattern_regex: str | None = Field(None, max_length=MAX_PATTERN_CHARS, description="the regex of pattern 'custom'")


@router.post(
    "/pretokenize",
    summary="Cut a text into the lab's pre-tokens",
    description="The matches of the pattern and the stretches of text between them, in order (as Hugging Face's "
    "Split with behavior isolated cuts), so no character is lost: `{'pieces': [...], 'count': n}`. A custom "
    "pattern (`pattern_regex`, the regex module's syntax) that does not compile, only matches empty strings or "
    "runs past the request's time budget answers 422 in words.",
)
async def api_pretokenize(request: Request, body: PretokenizeRequest):
    # orjson, not FastAPI's encoder: 100 KB of text is some 22,000 pieces, which jsonable_encoder walks one by one
    return FastJSON(await run_cpu(request, service.cut_text, body.text, body.pattern, body.pattern_regex))
