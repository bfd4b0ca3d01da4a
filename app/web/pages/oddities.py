"""The oddities gallery (``/oddities``): the tokenization surprises people learn from, each computed live.

Each entry of :func:`app.features.oddities.oddities` shows its rows (a text in a model) as coloured tokens with
their count, explains one row's focus token (:mod:`app.features.explain`), and links every row to the playground
with that text, tokenizer and explained token open. Nothing on the page is fixed but the input texts: counts,
cuts, explanations and the prefix examples come from the engines when the page is built
(:mod:`app.services.oddities`); this module only lays them out.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.services.oddities import ShownRow, gallery

from ..deps import SettingsDep, TokenizersDep, run_cpu
from ..render import page_or_block
from ..rendering.links import playground_url
from ..rendering.tokenview import token_window

router = APIRouter(include_in_schema=False)


def _row(row: ShownRow, url_text_limit: int) -> dict:
    return {
        "tokenizer": row.tokenizer,
        "text": row.text,
        "window": token_window(row.result),
        "count": row.result.count,
        "index": row.index,
        "href": playground_url(row.tokenizer, row.text, url_text_limit=url_text_limit, explain=row.index),
        "explanation": row.explanation,
        "error": row.error,
    }


@router.get("/oddities")
async def oddities_page(request: Request, settings: SettingsDep, tokenizers: TokenizersDep):
    def work():
        entries = []
        for oddity, rows in gallery(tokenizers):
            shown = [_row(row, settings.url_text_limit) for row in rows]
            entries.append({"oddity": oddity, "rows": shown, "explained": shown[oddity.explained] if shown else None})
        return page_or_block(request, "oddities.html", "gallery", {"entries": entries, "active_nav": "oddities"})

    return await run_cpu(request, work)
