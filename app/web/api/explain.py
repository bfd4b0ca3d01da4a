"""``POST /api/explain``: why one token of a text is what it is (:mod:`app.features.explain`).

The answer is :meth:`~app.features.explain.Explanation.to_dict`: the token record of ``/api/tokenize``, the
pre-token and its rule, what the normalizer changed, and by algorithm: for BPE the merge steps with their
candidates and the token's merge tree; for WordPiece (``kind: wordpiece``) the walk of the token's word; for Unigram
(``kind: unigram``) the best segmentation of the span around the token, its lattice and the n best segmentations.
A token index out of range, or a tokenizer none of these explain, answers 422 saying so. The explaining is the
feature's (:mod:`app.features.explain`, through :mod:`app.services.explain`); this module only validates and
answers.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.services import explain as service

from ..deps import SettingsDep, TokenizersDep, run_cpu
from ..render import FastJSON
from .schemas import TokenOut

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


class ChangeOut(BaseModel):
    start: int = Field(description="character offset in the text of what the normalizer rewrote")
    end: int
    before: str = Field(description="the input characters")
    after: str = Field(description="what they became (empty: removed)")
    what: list[str] = Field(description="why: lowercased, accents stripped, NFKC, space → ▁, dummy prefix ▁, removed...")


class NormalizerOut(BaseModel):
    steps: list[str] = Field(description="what the model's normalizer does, in words (empty: it has none)")
    changes: list[ChangeOut] = Field(description="what it changed in the pre-token's characters")
    summary: str = Field(description="one sentence saying so (or that it changed nothing, or that there is none)")


class WalkOut(BaseModel):
    piece: str = Field(description="the vocabulary entry (## after a word's first piece)")
    start: int = Field(description="character offset into `normalized`")
    end: int
    tried: int = Field(description="longer candidates looked up at `start` and missed before this piece")


class StuckOut(BaseModel):
    start: int = Field(description="where in `normalized` no piece of the vocabulary begins")
    found: list[WalkOut] = Field(description="the pieces found before it")


class SegmentOut(BaseModel):
    piece: str = Field(description="the piece (an unknown character as itself)")
    start: int = Field(description="character offset into `normalized`")
    end: int
    score: float = Field(description="the score the piece adds to a path (its log-probability)")
    id: int
    unknown: bool = False
    byte_pieces: list[str] = Field([], description="an unknown character's byte-fallback pieces")


class SpanOut(BaseModel):
    start: int = Field(description="character offset in the text of the span whose lattice is shown")
    end: int
    tokens: list[int] = Field(description="[first, end) indexes of its tokens")


class NBestOut(BaseModel):
    pieces: list[str]
    score: float


class LatticeNodeOut(BaseModel):
    piece: str
    start: int
    end: int
    score: float
    best: bool = Field(description="on the encoder's path")


class ExplainResponse(BaseModel):
    tokenizer: str
    engine: str = Field(description="the engine that retraced the cut (our own engine of the model)")
    index: int
    kind: str = Field(description="merge, special, added, byte_fallback, unknown or plain (BPE), wordpiece, unigram")
    token: TokenOut
    pretoken: PreTokenOut
    steps: list[StepOut] = Field(description="BPE: the merges of the pre-token in order (else empty)")
    tree: TreeOut = Field(description="BPE: the token's merge tree (else the token alone)")
    notes: list[str]
    normalized: str = Field(description="the text the model cut: the pre-token, the word, or the unigram span")
    normalizer: NormalizerOut
    walk: list[WalkOut] | None = Field(None, description="WordPiece: the pieces of the token's word, in order")
    stuck: StuckOut | None = Field(None, description="WordPiece: where the walk found no piece (the word is [UNK])")
    span: SpanOut | None = Field(None, description="Unigram: the span around the token (its `normalized` text)")
    best: list[SegmentOut] | None = Field(None, description="Unigram: the encoder's segmentation of the span")
    best_score: float | None = Field(None, description="Unigram: the sum of the best segmentation's scores")
    nbest: list[NBestOut] | None = Field(None, description="Unigram: the best segmentations of the span, in order")
    lattice: list[LatticeNodeOut] | None = Field(None, description="Unigram: every piece found in the span")
    token_piece: int | None = Field(None, description="which entry of `walk` or `best` the token is")


@router.post(
    "/explain",
    response_model=ExplainResponse,
    tags=["tokens"],
    summary="Explain why a token was cut where it is",
    description="The token's pre-token and the rule that cut it, what the normalizer changed, and: for BPE the "
    "merges that built it with the pairs they beat and its merge tree; for WordPiece its word's greedy walk; for "
    "Unigram the lattice of the span around it, its best path and the n best segmentations. An index out of range "
    "or a tokenizer none of these explain is a 422.",
)
async def explain(body: ExplainRequest, settings: SettingsDep, tokenizers: TokenizersDep, request: Request):
    def work() -> Response:
        explanation = service.explain(
            tokenizers, body.tokenizer, body.text, body.index, settings, allow_special=body.allow_special
        )
        return FastJSON(explanation.to_dict())

    return await run_cpu(request, work)
