"""HTML pages: the playground (``/``) and the fragments its htmx form asks for.

Routes (every page route answers with :func:`page_or_block`: the whole page normally, the named block of the
page template for htmx requests):

- ``GET /?tokenizer=&text=&special=1&ws=1&offset=`` (offset: first token of the coloured window) the playground, showing the result for the query, so a
  copied link reproduces the view.
- ``POST /render`` the live update: block ``result`` (counts, coloured tokens, ids) with an ``HX-Replace-Url``
  header carrying the tokenizer, the flags and the text when it is short enough for a URL.
- ``POST /decode`` block ``decoded``: ids pasted as ``1, 2 3`` or ``[1, 2, 3]`` back to text.
- ``POST /ids`` every id of the text as plain text, for the "copy all ids" button of very long inputs.

Form handlers read the form themselves (to allow fields as long as the longest accepted text) and then run the
work in the thread pool, as the plain ``def`` page handler does: a long text never blocks the event loop.
Engine errors raised by htmx requests become an escaped 4xx fragment (``app.web.errors``) that the page swaps
into the result area; a full-page request renders the page with the message there instead, and the text area
keeps the user's text either way.
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse
from starlette.concurrency import run_in_threadpool
from starlette.formparsers import MultiPartException

from app.engines.base import check_text
from app.engines.errors import InvalidIdsError, TokenplayError

from .deps import SettingsDep, check_text_size, run_cpu
from .errors import TooLargeError, status_for
from .pickers import get_tokenizer, picker_specs
from .render import is_htmx, page_or_block
from .tokenview import window_view

router = APIRouter(include_in_schema=False)

SAMPLE_TEXT = (
    "Tokenplay shows how a language model cuts text into tokens.\n"
    "Type here: every token gets a colour, and hovering one shows its id and bytes.\n"
    "日本語も一文字ずつ見えます。Emoji too: 🙂👍🏽"
)


def text_area_value(text: str) -> str:
    """The text as a text area holds it: browsers turn CRLF and lone CR into LF (and send CRLF in forms).

    Normalising here keeps the view, the counts and the URL equal to what the user sees and edits.
    """
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "on", "yes")


def _page_url(tokenizer: str, text: str, special: bool, ws: bool, url_text_limit: int) -> str:
    params: list[tuple[str, str]] = [("tokenizer", tokenizer)]
    if text and len(text) <= url_text_limit:
        params.append(("text", text))
    if special:
        params.append(("special", "1"))
    if ws:
        params.append(("ws", "1"))
    return "/?" + urlencode(params)


def _tokenizer_options(request: Request, chosen: str) -> list[dict]:
    """The picker's entries grouped by family, in registry order: ``[{"family", "tokenizers": [spec dicts]}]``.

    Lab tokenizers are listed only for the browser that put them in the playground (see ``pickers``).
    """
    groups: dict[str, list[dict]] = {}
    for spec in picker_specs(request, [chosen]):
        groups.setdefault(spec.family or "other", []).append(spec.to_dict())
    return [{"family": family, "tokenizers": specs} for family, specs in groups.items()]


def _result_context(request: Request, settings, tokenizer: str, text: str, special: bool, ws: bool, offset: int):
    """Tokenize and build the template context; engine errors propagate to the caller."""
    check_text_size(text, settings)
    tok = get_tokenizer(request, tokenizer)
    # Exact ids and counts for the whole text; Token records only for the window on screen.
    view = window_view(tok, text, offset=offset, limit=settings.render_tokens, allow_special=special)
    # SentencePiece models spell characters outside their vocabulary as <0xNN> pieces: count them (whole text).
    count_fallback = getattr(tok, "count_byte_fallback", None)
    byte_fallback = count_fallback(view.result.ids) if count_fallback else None
    return {"tokenizer": tok.name, "result": view.result, "view": view, "byte_fallback": byte_fallback}


def _playground(
    request: Request,
    settings,
    *,
    tokenizer: str,
    text: str,
    special: bool,
    ws: bool,
    offset: int = 0,
    headers: dict[str, str] | None = None,
):
    context = {
        "tokenizers": _tokenizer_options(request, tokenizer),
        "tokenizer": tokenizer,
        "text": text,
        "special": special,
        "ws": ws,
        "offset": offset,
        "result": None,
        "view": None,
        "byte_fallback": None,
        "error": None,
    }
    status = 200
    try:
        context |= _result_context(request, settings, tokenizer, text, special, ws, offset)
    except TokenplayError as exc:
        if is_htmx(request):
            raise  # app.web.errors answers with an escaped fragment and the right status
        context["error"] = str(exc)
        status = status_for(exc)
    url = _page_url(context["tokenizer"], text, special, ws, settings.url_text_limit)
    if headers is not None and status == 200:
        headers["HX-Replace-Url"] = url
    return page_or_block(request, "playground.html", "result", context, status_code=status, headers=headers)


@router.get("/")
def playground(
    request: Request,
    settings: SettingsDep,
    tokenizer: str | None = None,
    text: str | None = None,
    special: Annotated[str | None, Query()] = None,
    ws: Annotated[str | None, Query()] = None,
    offset: int = 0,
):
    if text is None:
        text = "" if request.url.query else SAMPLE_TEXT
    text = text_area_value(text)
    return _playground(
        request,
        settings,
        tokenizer=tokenizer or settings.default_tokenizer,
        text=text,
        special=_flag(special),
        ws=_flag(ws),
        offset=offset,
    )


async def _form(request: Request, settings) -> dict[str, str]:
    """The posted form fields, allowing one field as long as the longest accepted text.

    Starlette caps a form field at 1 MB by default; a text of ``max_chars`` characters can be several times
    that once UTF-8- and percent-encoded, so the cap follows the setting (the size check proper comes after).
    """
    try:
        form = await request.form(max_part_size=settings.max_chars * 12 + 1024, max_fields=50, max_files=0)
    except MultiPartException as exc:
        raise TooLargeError(f"the form is too large ({exc.message}); the limit is {settings.max_chars:,} characters")
    return {key: value for key, value in form.items() if isinstance(value, str)}


def _offset(raw: str | None) -> int:
    try:
        return max(0, int(raw or 0))
    except ValueError:
        return 0


@router.post("/render")
async def render(request: Request, settings: SettingsDep):
    """Fields: ``text``, ``tokenizer``, ``special``, ``ws`` (checkboxes), ``offset`` (first token of the coloured window)."""
    form = await _form(request, settings)
    text = text_area_value(form.get("text", ""))
    return await run_cpu(
        request,
        _playground,
        request,
        settings,
        tokenizer=form.get("tokenizer") or settings.default_tokenizer,
        text=text,
        special=_flag(form.get("special")),
        ws=_flag(form.get("ws")),
        offset=_offset(form.get("offset")),
        headers={},
    )


_ID_SEPARATORS = re.compile(r"[\s,;\[\]()]+")


def parse_ids(raw: str) -> list[int]:
    """Ids from ``1, 2 3``, ``[1,2,3]`` or one id a line; anything else raises :class:`InvalidIdsError`."""
    ids = []
    for part in _ID_SEPARATORS.split(raw):
        if not part:
            continue
        if not re.fullmatch(r"\d{1,12}", part):
            shown = part if len(part) <= 20 else part[:20] + "…"
            raise InvalidIdsError(f"{shown!r} is not a token id; paste whole numbers separated by commas or spaces")
        ids.append(int(part))
    return ids


@router.post("/decode")
async def decode(request: Request, settings: SettingsDep):
    """Fields: ``ids`` (as typed or pasted) and ``tokenizer``."""
    form = await _form(request, settings)
    return await run_in_threadpool(_decode, request, settings, form.get("ids", ""), form.get("tokenizer", ""))


def _decode(request: Request, settings, ids: str, tokenizer: str):
    tokenizer = tokenizer or settings.default_tokenizer
    parsed = parse_ids(ids)
    if len(parsed) > settings.max_ids:
        raise TooLargeError(f"{len(parsed):,} ids; the limit is {settings.max_ids:,}")
    tok = get_tokenizer(request, tokenizer)
    decoded = tok.decode(parsed) if parsed else None
    context = {
        "tokenizers": _tokenizer_options(request, tok.name),
        "tokenizer": tok.name,
        "text": "",
        "special": False,
        "ws": False,
        "offset": 0,
        "result": None,
        "view": None,
        "byte_fallback": None,
        "error": None,
        "ids_input": ids,
        "decoded": decoded,
        "decoded_count": len(parsed),
    }
    return page_or_block(request, "playground.html", "decoded", context)


@router.post("/ids")
async def all_ids(request: Request, settings: SettingsDep):
    """Every token id of the text, comma-separated, as plain text (the page shows only a window of them)."""
    form = await _form(request, settings)
    text = text_area_value(form.get("text", ""))
    ids = await run_in_threadpool(
        _encode, request, settings, text, form.get("tokenizer") or settings.default_tokenizer, _flag(form.get("special"))
    )
    return PlainTextResponse(", ".join(map(str, ids)))


def _encode(request: Request, settings, text: str, tokenizer: str, special: bool) -> list[int]:
    check_text_size(text, settings)
    check_text(text)
    return get_tokenizer(request, tokenizer).encode(text, allow_special=special)
