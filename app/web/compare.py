"""Compare view (``/compare``), chat markup (``/chat``), their JSON API and downloads.

One text drives every chosen tokenizer: the page's form posts to ``/compare/results`` on input and htmx swaps only
the results (panes and stats table), never the text area. The server answers the URL to show
(``HX-Replace-Url``): the chosen tokenizers, and the text when it is short. Handlers are plain ``def`` so the
tokenizing runs in the thread pool.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.engines import chat, presets, registry
from app.engines.compare import (
    COLUMN_LABELS,
    COLUMNS,
    CompareError,
    Comparison,
    boundaries,
    check_selection,
    compare,
    mark_segments,
    unk_id_of,
)
from app.engines.errors import TokenplayError
from app.engines.result import Segment, TokenizeResult, group_segments
from app.lab.tokenizers import is_lab_name
from app.settings import Settings

from .api import FastJSON
from .deps import SettingsDep, check_text_size
from .errors import status_for
from .pickers import picker_specs
from .render import page_or_block
from .tokenview import token_view

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api", tags=["api"])

PREFERRED_DEFAULTS = ("gpt2", "cl100k_base", "o200k_base", "mistral-7b", "custom-bpe")
DEFAULT_PRESET = "english"


# -- shared logic -----------------------------------------------------------------------------------------------


def default_selection() -> list[str]:
    valid = set(registry.names())
    chosen = [n for n in PREFERRED_DEFAULTS if n in valid]
    return chosen if len(chosen) >= 2 else registry.names()[:3]


def resolve_names(names: list[str]) -> list[str]:
    """Canonical names (aliases resolved, so ``gpt-4`` and ``cl100k_base`` count once), de-duplicated, >= 2."""
    return check_selection([registry.resolve(n) for n in names])


def run_compare(
    text: str, names: list[str], *, allow_special: bool, reference: str | None, settings: Settings
) -> Comparison:
    check_text_size(text, settings)
    names = resolve_names(names)
    if reference:
        reference = registry.resolve(reference)
    tokenizers = [registry.get(n) for n in names]
    results = [t.tokenize(text, allow_special=allow_special) for t in tokenizers]
    unk_ids = {t.name: unk_id_of(t) for t in tokenizers}
    return compare(text, results, unk_ids=unk_ids, reference=reference)


def page_url(names: list[str], text: str, *, reference: str | None, allow_special: bool, settings: Settings) -> str:
    """``/compare?t=..&t=..`` with the reference, the special-token switch, and the text when it is short."""
    params: list[tuple[str, str]] = [("t", n) for n in names]
    if reference:
        params.append(("ref", reference))
    if allow_special:
        params.append(("special", "true"))
    if len(text) <= settings.url_text_limit:
        params.append(("text", text))
    return "/compare?" + urlencode(params)


def _fmt(value, column: str) -> str:
    if value is None:
        return "–"
    if column == "partial_share":
        return f"{value * 100:.1f}%"
    if isinstance(value, float):
        return f"{value:.2f}"
    return f"{value:,}"


def leading_segments(result: TokenizeResult, limit: int) -> list[Segment]:
    """The segments of about the first ``limit`` tokens (all of them for a short result): what a pane shows."""
    if result.count <= limit:
        return result.segments()
    segments = group_segments(result.text, result.tokens[:limit], whole=False)
    return segments[:-1]  # the last one may be a character cut short by the limit


def results_context(
    text: str,
    names: list[str],
    *,
    allow_special: bool,
    reference: str | None,
    settings: Settings,
) -> dict:
    """Everything the results block needs; a selection problem becomes a message in place of the results."""
    context: dict = {"error": None, "status": 200, "comparison": None, "panes": [], "rows": []}
    try:
        chosen = check_selection(_safe_resolve(names))  # unknown names in a URL are dropped, not an error page
    except CompareError as exc:
        context["error"] = str(exc)
        return context
    if reference:
        try:
            reference = registry.resolve(reference)
        except TokenplayError:
            reference = None
    if reference not in chosen:
        reference = chosen[0]
    try:
        comparison = run_compare(text, chosen, allow_special=allow_special, reference=reference, settings=settings)
    except TokenplayError as exc:  # too long, bad text: say so where the results would be, keep the form
        context["error"] = str(exc)
        context["status"] = status_for(exc)
        return context
    ref_result = next(r for r in comparison.results if r.tokenizer == comparison.reference)
    ref_bounds = boundaries(ref_result)
    panes = []
    for result in comparison.results:
        is_ref = result.tokenizer == comparison.reference
        segments = leading_segments(result, settings.render_tokens)
        view = token_view(result, segments=segments)
        marks = None if is_ref else mark_segments(result, ref_bounds, segments=segments)
        diff = comparison.diffs.get(result.tokenizer)
        panes.append(
            {
                "name": result.tokenizer,
                "label": registry.spec(result.tokenizer).label or result.tokenizer,
                "result": result,
                "view": view,
                "marks": marks,
                "hidden_tokens": result.count - view.token_stop,
                "is_reference": is_ref,
                "diff_count": len(diff.offsets) if diff else 0,
                "stats": comparison.stats[result.tokenizer],
            }
        )
    n = len(comparison.results)
    rows = []
    for pane in panes:
        cells = []
        for column in COLUMNS:
            value = pane["stats"].value(column)
            winners = comparison.best.get(column, [])
            cells.append(
                {
                    "column": column,
                    "value": value,
                    "shown": _fmt(value, column),
                    # Marked only when it tells something: not when every tokenizer ties.
                    "best": pane["name"] in winners and len(winners) < n,
                }
            )
        rows.append(
            {
                "name": pane["name"],
                "label": pane["label"],
                "cells": cells,
                "stats": pane["stats"],
                "diff_count": pane["diff_count"],
                "is_reference": pane["is_reference"],
            }
        )
    context.update(comparison=comparison, panes=panes, rows=rows)
    return context


def page_context(
    request: Request,
    text: str,
    names: list[str],
    *,
    allow_special: bool,
    reference: str | None,
    preset_key: str | None,
    settings,
) -> dict:
    context = results_context(text, names, allow_special=allow_special, reference=reference, settings=settings)
    comparison = context["comparison"]
    chosen_names = _safe_resolve(names)
    ref_name = comparison.reference if comparison else reference

    def preset_href(key: str) -> str:
        """A plain link to a preset with the current choice (what the htmx request asks for, without JavaScript)."""
        params = [("preset", key), *(("t", n) for n in chosen_names)]
        if ref_name:
            params.append(("ref", ref_name))
        if allow_special:
            params.append(("special", "true"))
        return "/compare?" + urlencode(params)

    return context | {
        "preset_href": preset_href,
        "text": text,
        "specs": picker_specs(request, chosen_names),
        "chosen": set(chosen_names),
        "reference": ref_name,
        "allow_special": allow_special,
        "presets": presets.PRESETS,
        "preset_key": preset_key,
        "columns": COLUMNS,
        "column_labels": COLUMN_LABELS,
        "active_nav": "compare",
    }


def _safe_resolve(names: list[str]) -> list[str]:
    out = []
    for n in names:
        try:
            out.append(registry.resolve(n))
        except TokenplayError:
            pass
    return out


# -- pages ---------------------------------------------------------------------------------------------------------


@router.get("/compare")
def compare_page(
    request: Request,
    settings: SettingsDep,
    t: Annotated[list[str] | None, Query()] = None,
    text: str | None = None,
    preset: str | None = None,
    ref: str | None = None,
    special: bool = False,
):
    chosen_preset = presets.get_preset(preset) if preset else None
    if chosen_preset is not None:
        text = chosen_preset.text
    elif text is None:
        chosen_preset = presets.get_preset(DEFAULT_PRESET)
        text = chosen_preset.text
    context = page_context(
        request,
        text,
        t or default_selection(),
        allow_special=special,
        reference=ref,
        preset_key=chosen_preset.key if chosen_preset else None,
        settings=settings,
    )
    return page_or_block(request, "compare.html", "main", context, status_code=context["status"])


@router.post("/compare/results")
def compare_results(
    request: Request,
    settings: SettingsDep,
    text: Annotated[str, Form()] = "",
    t: Annotated[list[str] | None, Form()] = None,
    ref: Annotated[str | None, Form()] = None,
    special: Annotated[bool, Form()] = False,
):
    context = page_context(
        request, text, t or [], allow_special=special, reference=ref, preset_key=None, settings=settings
    )
    headers = {}
    if context["comparison"] is not None:
        headers["HX-Replace-Url"] = page_url(
            [r.tokenizer for r in context["comparison"].results],
            text,
            reference=context["reference"],
            allow_special=special,
            settings=settings,
        )
    return page_or_block(request, "compare.html", "results", context, status_code=context["status"], headers=headers)


# -- downloads -----------------------------------------------------------------------------------------------------

CSV_FIELDS = [
    "tokenizer",
    "tokens",
    "chars",
    "bytes",
    "words",
    "chars_per_token",
    "bytes_per_token",
    "fertility",
    "partial",
    "partial_share",
    "unknown",
    "special",
    "boundary_diffs",
    "ids",
]


def export_dict(comparison: Comparison, allow_special: bool) -> dict:
    """The downloadable results: the text, ids and stats per tokenizer, the best values, boundary differences."""
    return {
        "text": comparison.text,
        "allow_special": allow_special,
        "reference": comparison.reference,
        "words": comparison.words,
        "results": [
            {
                "tokenizer": r.tokenizer,
                "count": r.count,
                "ids": r.ids,
                "stats": comparison.stats[r.tokenizer].to_dict(),
                "boundary_diff": comparison.diffs[r.tokenizer].offsets if comparison.diffs else [],
            }
            for r in comparison.results
        ],
        "best": comparison.best,
    }


def export_csv(comparison: Comparison) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for r in comparison.results:
        stats = comparison.stats[r.tokenizer].to_dict()
        row = {k: ("" if stats.get(k) is None else stats.get(k)) for k in CSV_FIELDS if k in stats}
        row["tokenizer"] = r.tokenizer
        row["boundary_diffs"] = len(comparison.diffs[r.tokenizer].offsets) if comparison.diffs else 0
        row["ids"] = " ".join(str(i) for i in r.ids)
        writer.writerow(row)
    return out.getvalue()


def _export(fmt: str, text: str, names: list[str], ref: str | None, special: bool, settings: Settings) -> Response:
    comparison = run_compare(text, names, allow_special=special, reference=ref, settings=settings)
    if fmt == "csv":
        body, media = export_csv(comparison), "text/csv; charset=utf-8"
    else:
        body, media = json.dumps(export_dict(comparison, special), ensure_ascii=False, indent=1), "application/json"
    return Response(
        body, media_type=media, headers={"Content-Disposition": f'attachment; filename="tokenplay-compare.{fmt}"'}
    )


@router.get("/compare/export.{fmt}")
def export_get(
    fmt: str,
    settings: SettingsDep,
    t: Annotated[list[str] | None, Query()] = None,
    text: str = "",
    ref: str | None = None,
    special: bool = False,
):
    return _export(_check_fmt(fmt), text, t or [], ref, special, settings)


@router.post("/compare/export.{fmt}")
def export_post(
    fmt: str,
    settings: SettingsDep,
    text: Annotated[str, Form()] = "",
    t: Annotated[list[str] | None, Form()] = None,
    ref: Annotated[str | None, Form()] = None,
    special: Annotated[bool, Form()] = False,
):
    return _export(_check_fmt(fmt), text, t or [], ref, special, settings)


class ExportFormatError(TokenplayError):
    pass


def _check_fmt(fmt: str) -> str:
    if fmt not in ("json", "csv"):
        raise ExportFormatError(f"unknown export format {fmt!r}; use export.json or export.csv")
    return fmt


# -- chat markup ---------------------------------------------------------------------------------------------------


def chat_tokenizers() -> list[str]:
    """Registered tokenizers that have the chat markup tokens (building each one the first time)."""
    names = []
    for name in registry.names():
        if is_lab_name(name):  # trained in the lab: no chat markup tokens, and not worth building to find out
            continue
        try:
            if chat.supports_chat(registry.get(name)):
                names.append(name)
        except TokenplayError:
            continue
    return names


def chat_context(messages: list[chat.Message], settings: Settings) -> dict:
    rendered = chat.render_chat(messages)
    check_text_size(rendered, settings)
    panes = []
    for name in chat_tokenizers():
        tok = registry.get(name)
        result = chat.tokenize_chat(tok, messages)
        view = token_view(result, limit=settings.render_tokens)
        panes.append(
            {
                "name": name,
                "label": registry.spec(name).label or name,
                "result": result,
                "view": view,
                "hidden_tokens": result.count - view.token_stop,
                "special": sum(1 for t in result.tokens if t.special),
            }
        )
    return {
        "messages": messages,
        "rendered": rendered,
        "panes": panes,
        "roles": chat.ROLES,
        "active_nav": "chat",
    }


def _apply_op(messages: list[chat.Message], op: str | None) -> list[chat.Message]:
    if not op:
        return messages
    if op == "add":
        last = messages[-1].role if messages else "assistant"
        role = "assistant" if last == "user" else "user"
        return messages + [chat.Message(role, "")]
    if op.startswith("remove:"):
        try:
            index = int(op.split(":", 1)[1])
        except ValueError:
            return messages
        return [m for i, m in enumerate(messages) if i != index]
    return messages


@router.get("/chat")
def chat_page(request: Request, settings: SettingsDep):
    context = chat_context(list(chat.DEFAULT_MESSAGES), settings)
    return page_or_block(request, "chat.html", "editor", context)


@router.post("/chat")
def chat_edit(
    request: Request,
    settings: SettingsDep,
    role: Annotated[list[str] | None, Form()] = None,
    content: Annotated[list[str] | None, Form()] = None,
    op: Annotated[str | None, Form()] = None,
):
    """Add or remove a message row (or, without JavaScript, re-render the page): answers the whole editor."""
    messages = _apply_op(chat.parse_messages(role or [], content or []), op)
    context = chat_context(messages, settings) | {"focus_last": op == "add"}
    return page_or_block(request, "chat.html", "editor", context)


@router.post("/chat/result")
def chat_result(
    request: Request,
    settings: SettingsDep,
    role: Annotated[list[str] | None, Form()] = None,
    content: Annotated[list[str] | None, Form()] = None,
):
    """The live part: rendered markup and the tokens, for the messages as typed."""
    messages = chat.parse_messages(role or [], content or [])
    return page_or_block(request, "chat.html", "result", chat_context(messages, settings))


# -- JSON API ------------------------------------------------------------------------------------------------------


class CompareRequest(BaseModel):
    text: str = Field(description="the text every tokenizer encodes")
    tokenizers: list[str] = Field(description="two or more names from GET /api/tokenizers (or model aliases)")
    allow_special: bool = Field(False, description="parse special-token text such as <|endoftext|> as special")
    reference: str | None = Field(None, description="boundaries are compared to this one (default: the first)")


@api_router.post("/compare")
def api_compare(req: CompareRequest, settings: SettingsDep) -> Response:
    """Every chosen tokenizer's result and stats, the best value per column and boundary differences."""
    comparison = run_compare(
        req.text, req.tokenizers, allow_special=req.allow_special, reference=req.reference, settings=settings
    )
    return FastJSON(comparison.to_dict())


class ChatMessageIn(BaseModel):
    role: str = Field(description="system, user or assistant")
    content: str


class ChatRequest(BaseModel):
    messages: list[ChatMessageIn]
    tokenizers: list[str] | None = Field(None, description="default: every tokenizer with the chat markup tokens")
    content_special: bool = Field(False, description="also parse special-token text inside messages as special")
    primer: bool = Field(True, description="end with <|im_start|>assistant<|im_sep|>")


@api_router.post("/chat")
def api_chat(req: ChatRequest, settings: SettingsDep) -> Response:
    """The rendered chat markup and its tokens per tokenizer (markup tokens as special tokens)."""
    messages = chat.check_messages(chat.Message(m.role, m.content) for m in req.messages)
    rendered = chat.render_chat(messages, primer=req.primer)
    check_text_size(rendered, settings)
    names = [registry.resolve(n) for n in req.tokenizers] if req.tokenizers else chat_tokenizers()
    results = []
    for name in dict.fromkeys(names):
        result = chat.tokenize_chat(
            registry.get(name), messages, primer=req.primer, content_special=req.content_special
        )
        results.append(result.to_dict() | {"special": sum(1 for t in result.tokens if t.special)})
    return FastJSON({"rendered": rendered, "results": results})
