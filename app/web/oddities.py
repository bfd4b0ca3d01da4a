"""The oddities gallery (``/oddities``): the tokenization surprises people learn from, each computed live.

Each entry of :func:`app.features.oddities.oddities` shows its rows (a text in a model) as coloured tokens with
their count, explains one row's focus token (:mod:`app.features.explain`), and links every row to the playground
with that text, tokenizer and explained token open. Nothing on the page is fixed but the input texts: counts,
cuts, explanations and the prefix examples come from the engines when the page is built. The entries themselves
(texts, models) are engine data (:mod:`app.features.oddities`); this module only lays them out.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.engines.errors import TokenplayError
from app.features.explain import Explainer
from app.features.oddities import Oddity, Row, oddities

from .deps import SettingsDep, TokenizersDep, run_cpu
from .pickers import Tokenizers
from .playground import Choice
from .render import page_or_block
from .tokenview import token_window

router = APIRouter(include_in_schema=False)


def token_at(result, offset: int) -> int:
    """The index of the first token of ``result`` that ends after character ``offset``."""
    tokens = result.tokens
    return next((i for i, t in enumerate(tokens) if t.end > offset), max(0, len(tokens) - 1))


def _row(tokenizers: Tokenizers, row: Row, explained: bool, url_text_limit: int) -> dict:
    tok = tokenizers.get(row.tokenizer)
    result = tok.tokenize(row.text)
    index = token_at(result, row.focus_offset())
    view = {
        "tokenizer": tok.name,
        "text": row.text,
        "window": token_window(result),
        "count": result.count,
        "index": index,
        "href": Choice(tok.name, row.text, explain=index).url(url_text_limit),
        "explanation": None,
        "error": None,
    }
    if explained:
        try:
            view["explanation"] = Explainer(tok, row.text, result=result).explain(index)
        except TokenplayError as exc:
            view["error"] = str(exc)
    return view


def _entry(tokenizers: Tokenizers, oddity: Oddity, url_text_limit: int) -> dict:
    rows = [_row(tokenizers, row, k == oddity.explained, url_text_limit) for k, row in enumerate(oddity.rows)]
    return {"oddity": oddity, "rows": rows, "explained": rows[oddity.explained] if rows else None}


@router.get("/oddities")
async def oddities_page(request: Request, settings: SettingsDep, tokenizers: TokenizersDep):
    def work():
        entries = [_entry(tokenizers, o, settings.url_text_limit) for o in oddities()]
        return page_or_block(request, "oddities.html", "gallery", {"entries": entries, "active_nav": "oddities"})

    return await run_cpu(request, work)
