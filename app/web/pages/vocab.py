"""The vocabulary pages: browse a vocabulary and walk its merge tree, the ladder, health, two vocabularies, the
characters table and numbers.

- ``GET /vocab?tokenizer=&q=&kind=&offset=`` the browser (block ``results`` for htmx); ``GET /vocab/token?tokenizer=&id=``
  one token (block ``token``; the whole browser page without htmx, the token chosen);
- ``GET``/``POST /vocab/ladder?t=..&text=`` the ladder chart for up to 4 tokenizers (block ``chart``);
- ``GET /vocab/health`` every shipped tokenizer's report (block ``table``, asked again while some are computing),
  ``GET /vocab/health.csv``; ``GET /vocab/health/{name}``, ``POST`` with ``text`` for what it leaves unused;
- ``GET /vocab/overlap?a=&b=`` (block ``results``); ``GET``/``POST /vocab/characters`` (block ``table``);
- ``GET /numbers?tokenizer=`` (block ``facts``).

The numbers come from :mod:`app.services.vocab` (which the JSON API calls too); this module lays them out: token
texts made readable, the chart's coordinates, the links.
"""

from __future__ import annotations

import math
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request

from app.engines import registry
from app.engines.errors import TokenplayError
from app.features.explain.trace import shown as shown_bytes
from app.features.vocab.characters import MAX_CHARS
from app.features.vocab.health import FIGURES, MEANINGS
from app.features.vocab.tokens import KINDS
from app.services import vocab as service
from app.services.catalog import Tokenizers

from ..deps import FormDep, SettingsDep, TokenizersDep, run_cpu
from ..errors import status_for
from ..render import download, page_or_block
from ..rendering.pickers import ENGINE_NAMES, picker_groups

router = APIRouter(include_in_schema=False)

DEFAULT = "o200k_base"
PAGE = 100
LADDER_DEFAULTS = ("cl100k_base", "o200k_base")
LADDER_TEXT = (
    "Tokenizers cut text into pieces a model can read. A bigger vocabulary learns longer pieces, so the same text "
    "takes fewer tokens: here is how many, merge by merge.\n東京の天気は晴れです。\ndef area(r):\n    return 3.14159 * r * r\n"
)
CHARS_TEXT = "naïve café 東京 🙂 👩‍💻"


def _shown(hex_or_bytes) -> str:
    data = bytes.fromhex(hex_or_bytes) if isinstance(hex_or_bytes, str) else hex_or_bytes
    return shown_bytes(data)


def _token_url(name: str, token_id: int) -> str:
    return "/vocab/token?" + urlencode({"tokenizer": name, "id": token_id})


def _with_links(name: str, record: dict) -> dict:
    return {**record, "shown": _shown(record["bytes_hex"]), "url": _token_url(name, record["id"])}


def _reference(tokenizers: Tokenizers, name: str) -> str:
    """The library whose count n_vocab is: the reference engine of the tokenizer's model."""
    spec = next((s for s in tokenizers.listed() if s.name == name), None)
    entry = next((s for s in tokenizers.listed() if spec is not None and s.name == spec.entry), spec)
    engine = entry.engine if entry is not None else ""
    if engine == "huggingface":
        return "Hugging Face tokenizers"
    if entry is not None and entry.family == "sentencepiece" and engine == "tokenplay":
        return "sentencepiece"
    return ENGINE_NAMES.get(engine, engine or "Tokenplay")


# -- the browser -------------------------------------------------------------------------------------------------------
def _browser_context(tokenizers: Tokenizers, settings, name: str, q: str, kind: str, offset: int,
                     token_id: int | None) -> dict:
    context = {
        "active_nav": "vocab", "vocab_tab": "browse", "tokenizer": name, "label": name, "q": q, "kind": kind,
        "kinds": KINDS, "offset": offset, "limit": PAGE, "token": None, "token_error": None, "error": None,
        "status": 200, "results": {"total": 0, "rows": []}, "prev_url": None, "next_url": None, "facts": {},
    }
    try:
        name = service.resolve(tokenizers, name)
        context["tokenizer"], context["label"] = name, tokenizers.label(name)
        facts = service.facts(tokenizers, name, settings)
        context["facts"] = {**facts, "reference": _reference(tokenizers, name)}
        found = service.page(tokenizers, name, settings, offset=offset, limit=PAGE, q=q, kind=kind)
        rows = [_with_links(name, r) for r in found["tokens"]]
        context["results"] = {"total": found["total"], "rows": rows, "pieces": any(r.get("piece") for r in rows)}

        def at(k: int) -> str:
            return "/vocab?" + urlencode({"tokenizer": name, "q": q, "kind": kind, "offset": k})

        context["prev_url"] = at(max(0, offset - PAGE)) if offset > 0 else None
        context["next_url"] = at(offset + PAGE) if offset + PAGE < found["total"] else None
    except TokenplayError as exc:
        context["error"], context["status"] = str(exc), status_for(exc)
        return context
    if token_id is not None:
        try:
            record = service.token(tokenizers, name, token_id, settings)
        except TokenplayError as exc:
            context["token_error"], context["status"] = str(exc), status_for(exc)
        else:
            for key in ("parents", "children"):
                if record.get(key):
                    record[key] = [_with_links(name, r) for r in record[key]]
            context["token"] = _with_links(name, record)
    return context


@router.get("/vocab")
async def vocab_page(
    request: Request, tokenizers: TokenizersDep, settings: SettingsDep,
    tokenizer: str = DEFAULT, q: Annotated[str, Query(max_length=200)] = "", kind: str = "",
    offset: Annotated[int, Query(ge=0)] = 0,
):
    context = await run_cpu(request, _browser_context, tokenizers, settings, tokenizer, q, kind, offset, None)
    context["picker_groups"] = picker_groups(tokenizers.listed())
    return page_or_block(request, "vocab.html", "results", context, status_code=context["status"])


@router.get("/vocab/token")
async def vocab_token_page(request: Request, tokenizers: TokenizersDep, settings: SettingsDep,
                           tokenizer: str = DEFAULT, id: int = 0):
    offset = (id // PAGE) * PAGE
    context = await run_cpu(request, _browser_context, tokenizers, settings, tokenizer, "", "", offset, id)
    context["picker_groups"] = picker_groups(tokenizers.listed())
    return page_or_block(request, "vocab.html", "token", context, status_code=context["status"])


# -- the ladder --------------------------------------------------------------------------------------------------------
CHART_W, CHART_H = 1000, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 16, 14, 44


def ladder_chart(series: list[dict], labels: dict[str, str]) -> dict | None:
    """Coordinates of the ladder chart: x the size on a log scale, y the tokens from 0."""
    points = [p for s in series for p in s["points"]]
    if not points:
        return None
    lo, hi = min(p["size"] for p in points), max(p["size"] for p in points)
    lo_log, hi_log = math.log10(lo), math.log10(max(hi, lo * 1.01))
    top = max(p["tokens"] for p in points) or 1
    step = 10 ** math.floor(math.log10(top))
    top = math.ceil(top / step) * step
    plot_w, plot_h = CHART_W - LEFT - RIGHT, CHART_H - TOP - BOTTOM

    def x(size: int) -> float:
        return round(LEFT + plot_w * (math.log10(size) - lo_log) / (hi_log - lo_log), 1)

    def y(tokens: int) -> float:
        return round(TOP + plot_h * (1 - tokens / top), 1)

    out = []
    for k, s in enumerate(series):
        dots = [{"x": x(p["size"]), "y": y(p["tokens"]), **p} for p in s["points"]]
        out.append({"name": s["tokenizer"], "label": labels.get(s["tokenizer"], s["tokenizer"]), "index": k,
                    "points": " ".join(f"{d['x']},{d['y']}" for d in dots), "dots": dots})
    xticks = []
    for size in (256, 1_000, 4_000, 16_000, 32_000, 64_000, 128_000, 256_000):
        if lo <= size <= hi:
            xticks.append({"x": x(size), "label": f"{size // 1000}k" if size >= 1000 else str(size)})
    yticks = [{"y": y(v), "label": f"{v:,}"} for v in range(0, top + 1, max(1, top // 5))]
    return {"width": CHART_W, "height": CHART_H, "left": LEFT, "right": CHART_W - RIGHT, "top": TOP,
            "bottom": CHART_H - BOTTOM, "series": out, "xticks": xticks, "yticks": yticks}


def _ladder_context(tokenizers: Tokenizers, settings, names: list[str], text: str) -> dict:
    context = {"active_nav": "vocab", "vocab_tab": "ladder", "text": text, "chars": len(text), "chart": None,
               "skipped": [], "error": None, "status": 200, "max_tokenizers": service.MAX_LADDER_TOKENIZERS,
               "tokenizer": names[0] if names else ""}
    try:
        chosen = list(dict.fromkeys(service.resolve(tokenizers, n) for n in names if n))
        context["chosen"] = set(chosen)
        merge_based = [n for n in chosen if service.facts(tokenizers, n, settings)["merge_based"]]
        context["skipped"] = [tokenizers.label(n) for n in chosen if n not in merge_based]
        series = service.ladders(tokenizers, merge_based, text, settings) if text and merge_based else []
        context["chart"] = ladder_chart(series, tokenizers.labels())
    except TokenplayError as exc:
        context["error"], context["status"] = str(exc), status_for(exc)
    return context


async def _ladder(request: Request, tokenizers: Tokenizers, settings, names: list[str], text: str):
    context = await run_cpu(request, _ladder_context, tokenizers, settings, names, text)
    context.setdefault("chosen", set(names))
    context["picker_groups"] = picker_groups(tokenizers.listed())
    return page_or_block(request, "vocab_ladder.html", "chart", context, status_code=context["status"])


@router.get("/vocab/ladder")
async def ladder_page(request: Request, tokenizers: TokenizersDep, settings: SettingsDep,
                      t: Annotated[list[str] | None, Query()] = None, text: str = LADDER_TEXT):
    names = [n for n in (t or []) if n] or list(LADDER_DEFAULTS)
    return await _ladder(request, tokenizers, settings, names, text)


@router.post("/vocab/ladder")
async def ladder_post(request: Request, tokenizers: TokenizersDep, settings: SettingsDep, form: FormDep):
    names = [n for n in form.getlist("t") if n]
    return await _ladder(request, tokenizers, settings, names, str(form.get("text") or ""))


# -- health ------------------------------------------------------------------------------------------------------------
@router.get("/vocab/health")
async def health_page(request: Request, settings: SettingsDep):
    table = await run_cpu(request, service.health_table, settings)
    rows = [{**r, "url": f"/vocab/health/{r['tokenizer']}"} for r in table["rows"]]
    context = {"active_nav": "vocab", "vocab_tab": "health", "tokenizer": "", "rows": rows,
               "pending": table["pending"], "figures": FIGURES, "meanings": MEANINGS}
    return page_or_block(request, "vocab_health.html", "table", context)


@router.get("/vocab/health.csv")
async def health_csv(request: Request, settings: SettingsDep):
    body = await run_cpu(request, service.health_csv, settings)
    return download(body, "text/csv; charset=utf-8", "vocabulary-health.csv")


def _examples(name: str, examples: list[dict]) -> list[dict]:
    return [_with_links(name, e) for e in examples]


def _health_one_context(tokenizers: Tokenizers, settings, name: str, text: str | None) -> dict:
    name = service.resolve(tokenizers, name)
    report = service.health(tokenizers, name, settings)
    for figure in report["figures"].values():
        figure["examples"] = _examples(name, figure["examples"])
    context = {"active_nav": "vocab", "vocab_tab": "health", "tokenizer": name, "label": tokenizers.label(name),
               "report": report, "figures": FIGURES, "meanings": MEANINGS, "text": text or "", "usage": None,
               "usage_error": None, "usage_url": f"/vocab/health/{name}",
               "browse_url": "/vocab?" + urlencode({"tokenizer": name}), "status": 200}
    if text:
        try:
            usage = service.health(tokenizers, name, settings, text)
            usage["unused"]["examples"] = _examples(name, usage["unused"]["examples"])
            context["usage"] = usage
        except TokenplayError as exc:
            context["usage_error"], context["status"] = str(exc), status_for(exc)
    return context


@router.get("/vocab/health/{name}")
async def health_one(request: Request, tokenizers: TokenizersDep, settings: SettingsDep, name: str):
    context = await run_cpu(request, _health_one_context, tokenizers, settings, name, None)
    context["picker_groups"] = picker_groups(tokenizers.listed())
    return page_or_block(request, "vocab_health_one.html", "usage", context)


@router.post("/vocab/health/{name}")
async def health_one_usage(request: Request, tokenizers: TokenizersDep, settings: SettingsDep, name: str,
                           form: FormDep):
    context = await run_cpu(request, _health_one_context, tokenizers, settings, name, str(form.get("text") or ""))
    return page_or_block(request, "vocab_health_one.html", "usage", context, status_code=context["status"])


# -- two vocabularies --------------------------------------------------------------------------------------------------
def _overlap_context(tokenizers: Tokenizers, a: str, b: str) -> dict:
    context = {"active_nav": "vocab", "vocab_tab": "overlap", "tokenizer": "", "a": a, "b": b, "result": None,
               "error": None, "status": 200, "label_a": a, "label_b": b}
    try:
        a, b = service.resolve(tokenizers, a), service.resolve(tokenizers, b)
        context.update(a=a, b=b, label_a=tokenizers.label(a), label_b=tokenizers.label(b))
        result = service.overlap(tokenizers, a, b)
        for side in ("shared", "only_a", "only_b"):
            result["examples"][side] = [{**e, "shown": _shown(e["bytes_hex"])} for e in result["examples"][side]]
        for s in result["scripts"]:
            for side in ("only_a", "only_b"):
                s["examples"][side] = [{**e, "shown": _shown(e["bytes_hex"])} for e in s["examples"][side]]
        context["result"] = result
    except TokenplayError as exc:
        context["error"], context["status"] = str(exc), status_for(exc)
    return context


@router.get("/vocab/overlap")
async def overlap_page(request: Request, tokenizers: TokenizersDep, a: str = "o200k_base", b: str = "cl100k_base"):
    context = await run_cpu(request, _overlap_context, tokenizers, a, b)
    context["picker_groups"] = picker_groups(tokenizers.listed())
    return page_or_block(request, "vocab_overlap.html", "results", context, status_code=context["status"])


# -- characters --------------------------------------------------------------------------------------------------------
def _characters_context(tokenizers: Tokenizers, settings, names: list[str], text: str) -> dict:
    context = {"active_nav": "vocab", "vocab_tab": "characters", "tokenizer": "", "text": text, "table": None,
               "error": None, "status": 200, "chosen": set(names), "labels": tokenizers.labels(),
               "max_tokenizers": service.MAX_CHARACTER_TOKENIZERS, "max_chars": MAX_CHARS}
    try:
        if text:
            table = service.characters(tokenizers, text, names)
            for row in table["rows"]:
                row["shown"] = _shown(row["char"].encode())
                for cell in row["tokens"].values():
                    for t in cell["tokens"]:
                        t["shown"] = t["text"].replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")
            context["table"] = table
    except TokenplayError as exc:
        context["error"], context["status"] = str(exc), status_for(exc)
    return context


async def _characters(request, tokenizers, settings, names, text):
    context = await run_cpu(request, _characters_context, tokenizers, settings, names, text)
    context["picker_groups"] = picker_groups(tokenizers.listed())
    return page_or_block(request, "vocab_characters.html", "table", context, status_code=context["status"])


@router.get("/vocab/characters")
async def characters_page(request: Request, tokenizers: TokenizersDep, settings: SettingsDep,
                          t: Annotated[list[str] | None, Query()] = None, text: str = CHARS_TEXT):
    names = [n for n in (t or []) if n] or ["gpt2", "o200k_base", "gemma-3"]
    return await _characters(request, tokenizers, settings, names, text)


@router.post("/vocab/characters")
async def characters_post(request: Request, tokenizers: TokenizersDep, settings: SettingsDep, form: FormDep):
    return await _characters(request, tokenizers, settings, [n for n in form.getlist("t") if n],
                             str(form.get("text") or ""))


# -- numbers -----------------------------------------------------------------------------------------------------------
def _numbers_context(tokenizers: Tokenizers, settings, name: str) -> dict:
    context = {"active_nav": "numbers", "vocab_tab": "numbers", "tokenizer": name, "facts": None, "error": None,
               "status": 200}
    try:
        name = service.resolve(tokenizers, name)
        context["tokenizer"] = name
        context["facts"] = service.numbers(tokenizers, name, settings)
    except TokenplayError as exc:
        context["error"], context["status"] = str(exc), status_for(exc)
    table = service.numbers_table()
    context["table"] = {
        **table,
        "groups": [
            {**group, "rows": [
                {**row, "cuts": {n: {**cut, "shown": [p.replace(" ", "␣") for p in cut["pieces"]]}
                                 for n, cut in row["cuts"].items()}}
                for row in group["rows"]
            ]}
            for group in table["groups"]
        ],
    }
    context["labels"] = {s.name: s.entry_title for s in registry.specs()}
    return context


@router.get("/numbers")
async def numbers_page(request: Request, tokenizers: TokenizersDep, settings: SettingsDep, tokenizer: str = DEFAULT):
    context = await run_cpu(request, _numbers_context, tokenizers, settings, tokenizer)
    context["picker_groups"] = picker_groups(tokenizers.listed())
    return page_or_block(request, "numbers.html", "facts", context, status_code=context["status"])
