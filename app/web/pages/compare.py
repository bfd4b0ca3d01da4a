"""The compare page (``/compare``): one text, every chosen tokenizer, and their downloads.

- ``GET /compare?t=..&t=..&text=&preset=&ref=&special=`` the page (block ``main`` for htmx: a preset chosen);
- ``POST /compare/results`` the live part on every input: block ``results`` (stats table and panes), with an
  ``HX-Replace-Url`` header carrying the choice and the text when it is short; the text area is never swapped.
  Counts, stats and boundary differences cover the whole text; each pane draws one window of its tokens
  (``settings.compare_pane_tokens``, from the form's ``start:NAME`` field, so typing keeps the window a pane shows);
- ``POST /compare/pane`` block ``pane``: one pane's window from token ``start`` (its pager's buttons);
- ``GET|POST /compare/export.{json,csv}`` the results as a download;
- ``POST /compare/explain`` block ``explain_pair``: where two tokenizers cut differently (a pane's boundary mark,
  or any of its tokens, clicked), why each cut there: the explanations of the token covering character ``at`` in
  that pane's tokenizer and in the reference, side by side.

The comparison itself is :mod:`app.services.compare`'s, which ``POST /api/compare`` calls too: both resolve the
names through the request's :class:`~app.services.catalog.Tokenizers`, like every other route.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request

from app.engines.errors import TokenplayError
from app.features import presets
from app.features.compare import COLUMN_LABELS, COLUMNS, CompareError, check_selection, segment_marks
from app.services import model_counts
from app.services.catalog import Tokenizers
from app.services.compare import default_selection, export, pane_result, reference_of, run_compare
from app.services.errors import check_text_size
from app.services.explain import explain_at
from app.services.languages import language
from app.settings import Settings

from ..deps import FormDep, SettingsDep, TokenizersDep, checked, text_area_value
from ..errors import status_for
from ..render import download, is_htmx, page_or_block
from ..rendering.pickers import picker_groups
from ..rendering.tokenview import TokenWindow, token_window, with_marks

router = APIRouter(include_in_schema=False)

DEFAULT_PRESET = "english"


def _fmt(value, column: str) -> str:
    if value is None:
        return "–"
    if column == "partial_share":
        return f"{value * 100:.1f}%"
    if isinstance(value, float):
        return f"{value:.2f}"
    return f"{value:,}"


_CLASSES = {(False, False): "", (True, False): "diff-extra", (False, True): "diff-missing",
            (True, True): "diff-extra diff-missing"}


def pane_window(
    result, start: int, limit: int, ref_bounds: set[int] | None, ordered: list[int] | None = None
) -> TokenWindow:
    """The tokens ``[start, start + limit)`` of ``result`` as coloured spans, marked against the reference's
    boundaries (``None``: this is the reference; ``ordered``: them sorted, shared by the panes)."""
    window = token_window(result, start, limit)
    if ref_bounds is None:
        return window
    marks = segment_marks(window.spans, ref_bounds, ordered)
    return with_marks(window, ((_CLASSES[extra, bool(cuts)], tuple(cuts)) for extra, cuts in marks))


def pane_context(
    result, label: str, window: TokenWindow, *, is_reference: bool, diff_count: int, seen: dict | None = None
) -> dict:
    """What the ``pane`` block draws: the pane's title, its count (and what the model adds to it, its window, a
    caveat: ``seen``), its window of tokens and its pager."""
    return {
        "seen": seen,
        "name": result.tokenizer,
        "label": label,
        "result": result,
        "window": window,
        "first_char": window.spans[0].start if window.spans else 0,
        "is_reference": is_reference,
        "diff_count": diff_count,
    }


def results_context(
    tokenizers: Tokenizers,
    text: str,
    names: list[str],
    *,
    allow_special: bool,
    reference: str | None,
    settings,
    starts: dict[str, int] | None = None,
) -> dict:
    """Everything the results block needs; a selection problem becomes a message in place of the results.
    ``starts``: the first token of each pane's window (by tokenizer name; 0 when absent)."""
    context: dict = {"error": None, "status": 200, "comparison": None, "panes": [], "rows": []}
    try:
        # unknown names in a URL are dropped, not an error; one tokenizer shows its pane (and says why two)
        chosen = check_selection(tokenizers.known(names), minimum=1)
    except CompareError as exc:
        context["error"] = str(exc)
        return context
    reference = reference_of(chosen, tokenizers.first_known(reference))
    try:
        comparison = run_compare(
            tokenizers, text, chosen, allow_special=allow_special, reference=reference, settings=settings, minimum=1
        )
    except TokenplayError as exc:  # too long, bad text: say so where the results would be, keep the form
        context["error"] = str(exc)
        context["status"] = status_for(exc)
        return context
    labels = tokenizers.labels()
    starts = starts or {}
    ordered = sorted(comparison.reference_boundaries)
    panes = []
    for result in comparison.results:
        is_ref = result.tokenizer == comparison.reference
        ref_bounds = None if is_ref else comparison.reference_boundaries
        start = starts.get(result.tokenizer, 0)
        window = pane_window(result, start, settings.compare_pane_tokens, ref_bounds, ordered)
        diff = comparison.diffs.get(result.tokenizer)
        label = labels.get(result.tokenizer, result.tokenizer)
        seen = model_counts.page_view(tokenizers.get(result.tokenizer), result.count, settings)
        pane = pane_context(result, label, window, is_reference=is_ref, diff_count=len(diff.offsets) if diff else 0,
                            seen=seen)
        panes.append(pane | {"stats": comparison.stats[result.tokenizer]})
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
                    "shown": _fmt(pane["stats"].exact(column), column),  # exact, then rounded once
                    # Marked only when it tells something: not when every tokenizer ties.
                    "best": pane["name"] in winners and len(winners) < n,
                }
            )
        rows.append(pane | {"cells": cells})
    context.update(comparison=comparison, panes=panes, rows=rows)
    return context


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


def page_context(
    tokenizers: Tokenizers,
    text: str,
    names: list[str],
    *,
    allow_special: bool,
    reference,
    preset_key,
    settings,
    starts: dict[str, int] | None = None,
) -> dict:
    context = results_context(
        tokenizers, text, names, allow_special=allow_special, reference=reference, settings=settings, starts=starts
    )
    comparison = context["comparison"]
    chosen_names = tokenizers.known(names)
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
        "picker_groups": picker_groups(tokenizers.listed()),
        "chosen": set(chosen_names),
        "reference": ref_name,
        "allow_special": allow_special,
        "presets": presets.PRESETS,
        "preset_key": preset_key,
        "columns": COLUMNS,
        "column_labels": COLUMN_LABELS,
        "active_nav": "compare",
    }


@router.get("/compare")
def compare_page(
    request: Request,
    settings: SettingsDep,
    tokenizers: TokenizersDep,
    t: Annotated[list[str] | None, Query()] = None,
    text: str | None = None,
    preset: str | None = None,
    ref: str | None = None,
    special: bool = False,
    lang: str | None = None,
):
    if lang is not None and text is None and preset is None:  # a language's UDHR text (the languages page's link)
        text = language(lang).text
    chosen_preset = presets.get_preset(preset) if preset else None
    if chosen_preset is not None:
        text = chosen_preset.text
    elif text is None:
        chosen_preset = presets.get_preset(DEFAULT_PRESET)
        text = chosen_preset.text
    else:  # as the text area will hold it (a link made before the page read forms so, or a form sent by GET)
        text = text_area_value(text)
    context = page_context(
        tokenizers,
        text,
        t or default_selection(tokenizers),
        allow_special=special,
        reference=ref,
        preset_key=chosen_preset.key if chosen_preset else None,
        settings=settings,
    )
    return page_or_block(request, "compare.html", "main", context, status_code=context["status"])


def _fields(form) -> tuple[str, list[str], str | None, bool]:
    """The compare form (read by :func:`~app.web.deps.read_form`, so the text is the text area's): text, the
    ticked tokenizers, the reference, the special-token switch."""
    return form.get("text") or "", form.getlist("t"), form.get("ref") or None, checked(form.get("special"))


START_FIELD = "start:"  # + a tokenizer's name: the first token of its pane's window (sent only when not 0)


def _token_index(raw: object) -> int:
    """A token index or character offset from a form field (0 when empty or not a number)."""
    return int(raw) if isinstance(raw, str) and raw.isdigit() else 0


def _starts(form) -> dict[str, int]:
    """Each pane's window start, from the ``start:NAME`` fields the panes put in the form."""
    return {k[len(START_FIELD) :]: _token_index(v) for k, v in form.items() if k.startswith(START_FIELD)}


@router.post("/compare/results")
def compare_results(request: Request, settings: SettingsDep, tokenizers: TokenizersDep, form: FormDep):
    """Fields: the compare form's. Block ``results``; also what a block-only form sent without htmx answers (the
    whole page for the form's text and tokenizers)."""
    text, t, ref, special = _fields(form)
    context = page_context(
        tokenizers, text, t, allow_special=special, reference=ref, preset_key=None, settings=settings,
        starts=_starts(form),
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


@router.post("/compare/pane")
def compare_pane(request: Request, settings: SettingsDep, tokenizers: TokenizersDep, form: FormDep):
    """Fields: the compare form's, ``pane`` (a tokenizer) and ``start`` (the first token of the window to show).
    Block ``pane``: that pane alone, its tokens marked against the reference the table uses."""
    if not is_htmx(request):
        return compare_results(request, settings, tokenizers, form)
    text, t, ref, special = _fields(form)
    result, ref_bounds, diff_count = pane_result(
        tokenizers, str(form.get("pane") or ""), text, tokenizers.known(t), ref, allow_special=special,
        settings=settings,
    )
    window = pane_window(result, _token_index(form.get("start")), settings.compare_pane_tokens, ref_bounds)
    label = tokenizers.label(result.tokenizer)
    seen = model_counts.page_view(tokenizers.get(result.tokenizer), result.count, settings)
    pane = pane_context(result, label, window, is_reference=ref_bounds is None, diff_count=diff_count, seen=seen)
    return page_or_block(request, "compare.html", "pane", {"pane": pane})


@router.post("/compare/explain")
def compare_explain(request: Request, settings: SettingsDep, tokenizers: TokenizersDep, form: FormDep):
    """Fields: the compare form's, ``pane`` (the clicked pane's tokenizer) and ``at`` (a character offset)."""
    if not is_htmx(request):
        return compare_results(request, settings, tokenizers, form)
    text, t, ref, special = _fields(form)
    check_text_size(text, settings)
    offset = _token_index(form.get("at"))
    chosen = tokenizers.known(t)
    if chosen:  # the reference the table uses
        ref = reference_of(chosen, tokenizers.first_known(ref))
    names = tokenizers.known([n for n in (form.get("pane"), ref) if n])
    sides = explain_at(tokenizers, names, text, offset, allow_special=special)
    sides = [side | {"reference": side["name"] == ref} for side in sides]
    return page_or_block(request, "compare.html", "explain_pair", {"sides": sides, "at": offset})


@router.get("/compare/export.{fmt}")
def export_get(
    fmt: str,
    settings: SettingsDep,
    tokenizers: TokenizersDep,
    t: Annotated[list[str] | None, Query()] = None,
    text: str = "",
    ref: str | None = None,
    special: bool = False,
):
    return download(*export(fmt, tokenizers, text_area_value(text), t or [], ref, special, settings), "tokenplay-compare." + fmt)


@router.post("/compare/export.{fmt}")
def export_post(fmt: str, settings: SettingsDep, tokenizers: TokenizersDep, form: FormDep):
    text, t, ref, special = _fields(form)
    return download(*export(fmt, tokenizers, text, t, ref, special, settings), "tokenplay-compare." + fmt)
