"""``POST /api/explain``: why one token of a text is what it is (:mod:`app.features.explain`).

The answer is :meth:`~app.features.explain.Explanation.to_dict`: the token record of ``/api/tokenize``, the
pre-token and its rule, the merge steps with their candidates, the token's merge tree, and notes. A token index
out of range, or a tokenizer whose cuts are not BPE merges, answers 422 saying so. The explaining is the
engine's (:mod:`app.features.explain`); this module only validates, resolves the tokenizer and answers.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.features.explain import explain as explain_token

from ..deps import SettingsDep, TokenizersDep, check_text_size, run_cpu
from ..render import FastJSON
from .tokenize import TokenOut

router = APIRouter()


class ExplainRequest(BaseModel):
    text: str = Field(description="the text the token is part of")
    tokenizer: str = Field("cl100k_base", description="a name from GET /api/tokenizers, or a model alias")
    index: int = Field(description="the token's index in the text's tokens (as /api/tokenize lists them)")
    allow_special: bool = Field(False, description="parse special-token text as special, as /api/tokenize does")


class Window(BaseModel):
    start: int
    end: int


class PreTokenOut(BaseModel):
    start: int = Field(description="character offset of the pre-token in the text")
    end: int
    text: str = Field(description="the pre-token as the model merges it (after normalization; ▁ for a space)")
    rule: str = Field(description="the split rule that cut it: the named alternative of the split pattern, ...")
    pattern: str | None = Field(description="that alternative's regex, when there is one")
    source: str = Field(description="which splitter the rule belongs to")
    whole: bool = Field(description="taken whole without merging (it is itself a token)")
    window: Window | None = Field(description="for a long pre-token: the symbols the steps retrace")
    tokens: list[int] = Field(description="[first, end) indexes of its tokens")


class Pair(BaseModel):
    left: str = Field(description="hex")
    right: str = Field(description="hex")
    rank: int


class StepOut(BaseModel):
    left: str = Field(description="hex")
    right: str = Field(description="hex")
    merged: str = Field(description="hex")
    rank: int = Field(description="the merge's rank in the model (lower merges first)")
    in_token: bool = Field(description="this merge built the explained token")
    candidates: list[Pair] = Field(description="the pairs that could merge at that moment; the winner is lowest")


class TreeOut(BaseModel):
    bytes: str = Field(description="hex")
    rank: int | None = Field(description="the rank of the merge that made it; null for a leaf")
    children: list[TreeOut]


class ExplainResponse(BaseModel):
    tokenizer: str
    engine: str = Field(description="the engine that retraced the merges (our engine's twin of the model)")
    index: int
    kind: str = Field(description="merge, special, added, byte_fallback, unknown or plain")
    token: TokenOut
    pretoken: PreTokenOut
    steps: list[StepOut]
    tree: TreeOut
    notes: list[str]


@router.post(
    "/explain",
    response_model=ExplainResponse,
    tags=["tokens"],
    summary="Explain why a token was cut where it is",
    description="For a BPE tokenizer: the token's pre-token and the split rule that cut it, the merges that built "
    "it with the pairs they beat, and its merge tree. An index out of range or a tokenizer that is not BPE is a 422.",
)
async def explain(body: ExplainRequest, settings: SettingsDep, tokenizers: TokenizersDep, request: Request):
    check_text_size(body.text, settings)

    def work() -> Response:
        tokenizer = tokenizers.get(body.tokenizer)
        return FastJSON(explain_token(tokenizer, body.text, body.index, allow_special=body.allow_special).to_dict())

    return await run_cpu(request, work)
