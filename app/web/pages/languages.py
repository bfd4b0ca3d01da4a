"""The languages page (``/languages``): the token tax of every language, for the tokenizers a user picks.

- ``GET /languages?t=..&t=..&q=&script=&sort=&order=`` the page (block ``results`` for htmx: the table, the chart,
  the worst and best languages; the picker and the filters are never swapped);
- ``GET /languages/export.{csv,json}`` with the same parameters: the languages the table shows, in its order
  (JSON: the shape of ``POST /api/languages``);
- ``GET /languages/{code}`` one language's counted text, with its ``lang`` and ``dir``, and where it leads.

The counting is :mod:`app.features.languages`, for the request's tokenizers through :mod:`app.services.languages`
(which ``/api/languages`` calls too); this module lays out the table, the chart and the extremes.
``/compare?lang=CODE`` opens a language's text in compare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request

from app.engines.errors import TokenplayError
from app.features import languages as feature
from app.features.udhr import corpus
from app.services.catalog import Tokenizers
from app.services.languages import count_table, default_selection, descending, export, language

from ..deps import TokenizersDep, run_cpu
from ..errors import status_for
from ..render import download, page_or_block
from ..rendering.links import compare_language_url, languages_url
from ..rendering.pickers import picker_groups

router = APIRouter(include_in_schema=False)

#: Worst and best languages shown per tokenizer.
EXTREMES = 5


# -- the page -----------------------------------------------------------------------------------------------------


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _tier(premium: float | None) -> int:
    """How dear a premium is, for its cell's shade: 0 under 1.5×, then 1.5×, 2×, 4×, 8× and up.

    >>> [_tier(p) for p in (None, 1.0, 1.5, 3.9, 4.0, 20.5)]
    [0, 0, 1, 2, 3, 4]
    """
    if premium is None:
        return 0
    return sum(premium >= bound for bound in (1.5, 2, 4, 8))


def _cpt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


# The premium chart: an SVG drawn in these units (its viewBox), the plot inside the margins.
CHART_W, CHART_H = 1000, 320
CHART_LEFT, CHART_RIGHT, CHART_TOP, CHART_BOTTOM = 56, 12, 14, 34


def chart(rows: list[feature.Row], names: list[str], labels: dict[str, str]) -> dict | None:
    """The premium of every row (in the table's order) for every tokenizer: one polyline each on a log scale, a
    line at 1× (English), and per language a column whose tooltip names the language and its premiums."""
    values = [r.results[n].premium for r in rows for n in names if r.results[n].premium]
    if not values:
        return None
    lo = 2.0 ** math.floor(math.log2(min(values)))
    hi = 2.0 ** math.ceil(math.log2(max(values)))
    if hi <= lo:
        hi = lo * 2
    plot_w = CHART_W - CHART_LEFT - CHART_RIGHT
    plot_h = CHART_H - CHART_TOP - CHART_BOTTOM
    step = plot_w / len(rows)

    def y(premium: float) -> float:
        return CHART_TOP + plot_h * (1 - (math.log2(premium) - math.log2(lo)) / (math.log2(hi) - math.log2(lo)))

    series = []
    for k, name in enumerate(names):
        points = [
            f"{CHART_LEFT + (i + 0.5) * step:.1f},{y(r.results[name].premium):.1f}"
            for i, r in enumerate(rows)
            if r.results[name].premium
        ]
        series.append({"name": name, "label": labels.get(name, name), "points": " ".join(points), "index": k})
    ticks = []
    tick = lo
    while tick <= hi * 1.0001:
        ticks.append({"y": round(y(tick), 1), "label": f"{tick:g}×", "english": tick == 1})
        tick *= 2
    columns = [
        {
            "x": round(CHART_LEFT + i * step, 2),
            "code": r.declaration.code,
            "title": f"{r.declaration.name}: " + ", ".join(f"{n} {_times(r.results[n].premium)}" for n in names),
        }
        for i, r in enumerate(rows)
    ]
    return {
        "width": CHART_W,
        "height": CHART_H,
        "left": CHART_LEFT,
        "right": CHART_W - CHART_RIGHT,
        "top": CHART_TOP,
        "bottom": CHART_H - CHART_BOTTOM,
        "plot_height": plot_h,
        "step": round(step, 3),
        "series": series,
        "ticks": ticks,
        "columns": columns,
        "english_y": round(y(1.0), 1) if lo <= 1 <= hi else None,
    }


def results_context(tokenizers: Tokenizers, names: list[str], *, q: str, script: str, sort: str, order: str | None) -> dict:
    """Everything the results block shows; a problem (no tokenizer, one that fails) becomes its message."""
    context: dict = {"error": None, "status": 200, "table": None}
    chosen = tokenizers.known(names)  # unknown names in a shared URL are dropped, as on compare
    if not chosen:
        context["error"] = "Pick at least one tokenizer to count the 527 translations with."
        return context
    try:
        table = count_table(tokenizers, chosen)
    except TokenplayError as exc:
        context.update(error=str(exc), status=status_for(exc))
        return context
    chosen = list(table.tokenizers)
    sort = feature.sort_key(sort, chosen)
    desc = descending(order, sort)
    rows = feature.view(table.rows, q=q, script=script, sort=sort, descending=desc)
    incomplete = feature.view(table.incomplete, q=q, script=script, sort="name")
    labels = tokenizers.labels()

    def sort_href(key: str) -> str:
        """The table sorted by ``key``: the other way round when it is already sorted by it."""
        flip = (not desc) if key == sort else descending(None, key)
        return languages_url(chosen, q=q, script=script, sort=key, descending=flip)

    def aria_sort(key: str) -> str:
        return ("descending" if desc else "ascending") if key == sort else "none"

    body = []
    tail = urlencode([("t", n) for n in chosen])  # the codes are letters, digits and "_": nothing to quote
    for row in rows:
        cells = []
        for name in chosen:
            r = row.results[name]
            cells.append(
                {
                    "name": name,
                    "tokens": r.tokens,
                    "premium": r.premium,
                    "premium_shown": _times(r.premium),
                    "cpt": r.chars_per_token,
                    "cpt_shown": _cpt(r.chars_per_token),
                    "tier": _tier(r.premium),
                }
            )
        body.append({"d": row.declaration, "cells": cells, "compare": f"/compare?lang={row.declaration.code}&{tail}"})
    extremes = []
    for name in chosen:
        worst, best = feature.extremes(rows, name, EXTREMES)
        extremes.append({"name": name, "label": labels.get(name, name), "worst": worst, "best": best})
    params = {"q": q, "script": script, "sort": sort, "descending": desc}
    context.update(
        table=table,
        chosen=chosen,
        labels=labels,
        rows=body,
        shown=len(rows),
        total=len(table.rows),
        incomplete=incomplete,
        sort=sort,
        sort_label=_sort_label(sort, labels),
        descending=desc,
        sort_href=sort_href,
        aria_sort=aria_sort,
        chart=chart(rows, chosen, labels),
        extremes=extremes,
        english=table.english,
        export_csv=languages_url(chosen, path="/languages/export.csv", **params),
        export_json=languages_url(chosen, path="/languages/export.json", **params),
        compare_href=compare_language_url,
        url=languages_url(chosen, **params),
    )
    return context


def _sort_label(sort: str, labels: dict[str, str]) -> str:
    """``premium:gpt2`` -> ``GPT-2's premium`` (the caption's words for a sort key)."""
    measure, _, name = sort.partition(":")
    words = {"tokens": "tokens", "premium": "premium", "cpt": "characters per token", "name": "language", "code": "code"}
    what = words.get(measure, measure)
    return f"{labels.get(name, name)}'s {what}" if name else what


@dataclass(frozen=True)
class LanguagesQuery:
    """What /languages and its exports are asked (the same URL parameters): the tokenizers (``t``, repeated; none
    given: the default selection), a filter ``q``, a ``script``, a ``sort`` key and an ``order``."""

    names: list[str]
    q: str
    script: str
    sort: str
    order: str | None


async def languages_query(
    tokenizers: TokenizersDep,
    t: Annotated[list[str] | None, Query()] = None,
    q: str = "",
    script: str = "",
    sort: str = "",
    order: str | None = None,
) -> LanguagesQuery:
    return LanguagesQuery(t if t is not None else default_selection(tokenizers), q, script, sort, order)


LanguagesQueryDep = Annotated[LanguagesQuery, Depends(languages_query)]


@router.get("/languages")
async def languages_page(request: Request, tokenizers: TokenizersDep, query: LanguagesQueryDep):
    names, q, script = query.names, query.q, query.script
    context = await run_cpu(
        request, results_context, tokenizers, names, q=q, script=script, sort=query.sort, order=query.order
    )
    context |= {
        "picker_groups": picker_groups(tokenizers.listed(), missing=names),
        "picked": set(tokenizers.known(names)),
        "q": q,
        "script": script,
        "scripts": feature.scripts(corpus().complete),
        "complete": len(corpus().complete),
        "active_nav": "languages",
    }
    headers = {"HX-Push-Url": context["url"]} if context.get("url") else {}
    return page_or_block(request, "languages.html", "results", context, status_code=context["status"], headers=headers)


@router.get("/languages/export.{fmt}")
async def languages_export(request: Request, fmt: str, tokenizers: TokenizersDep, query: LanguagesQueryDep):
    body, media = await run_cpu(
        request, export, fmt, tokenizers, query.names, q=query.q, script=query.script, sort=query.sort,
        order=query.order,
    )
    return download(body, media, f"tokenplay-languages.{fmt}")


@router.get("/languages/{code}")
def language_page(request: Request, code: str, tokenizers: TokenizersDep, t: Annotated[list[str] | None, Query()] = None):
    declaration = language(code)
    names = tokenizers.known(t) if t is not None else default_selection(tokenizers)
    context = {
        "d": declaration,
        "paragraphs": declaration.text.split("\n"),
        "compare": compare_language_url(declaration.code, names),
        "back": languages_url(names),
        "active_nav": "languages",
    }
    return page_or_block(request, "language.html", "content", context)
