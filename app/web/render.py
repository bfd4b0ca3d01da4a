"""Render a page, or just one named block of it for htmx requests.

A fragment is a named ``{% block %}`` of its page template, so the full page and the partial that htmx swaps in
can never diverge. :func:`page_or_block` decides between them on the ``HX-Request`` header and always sends
``Vary: HX-Request`` so caches keep the two apart.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from app.features.explain.normalization import tally
from app.features.explain.trace import shown

from .rendering.tokenview import install


def make_environment(templates_dir, auto_reload: bool = False) -> Environment:
    """Templates from ``templates_dir``. Without ``auto_reload`` a template is read once per process: checking
    its file on every use costs a ``stat`` call per macro call, which showed up under load."""
    env = Environment(
        loader=FileSystemLoader(str(templates_dir)),
        auto_reload=auto_reload,
        autoescape=select_autoescape(["html", "htm", "xml", "j2"], default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["counted"] = counted
    env.filters["shown"] = shown
    env.filters["tally"] = tally
    install(env)
    return env


def counted(n: int, noun: str) -> str:
    """``1 character``, ``2,000 characters``: a count with its noun, for templates (``n|counted("character")``).

    >>> counted(1, "character"), counted(2000, "token")
    ('1 character', '2,000 tokens')
    """
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def render_block(env: Environment, template: str, block: str, context: dict[str, Any]) -> str:
    tmpl = env.get_template(template)
    ctx = tmpl.new_context(context)
    return "".join(tmpl.blocks[block](ctx))


def without_unchanged_url(request: Request, headers: dict[str, str]) -> dict[str, str]:
    """``headers`` without an ``HX-Replace-Url`` that names the address the page already has (htmx sends it as
    ``HX-Current-URL``). A page that keeps its address up to date while someone types (compare, the playground,
    chat) would otherwise have htmx replace the browser's history entry, twice, with the same address on every
    keystroke, which costs Chromium tens of milliseconds on a page of ten token panes."""
    url, current = headers.get("HX-Replace-Url"), request.headers.get("HX-Current-URL")
    if url is None or not current:
        return headers
    here = urlsplit(current)
    if urlunsplit(("", "", here.path, here.query, "")) != url:
        return headers
    return {name: value for name, value in headers.items() if name != "HX-Replace-Url"}


def is_htmx(request: Request) -> bool:
    """An htmx request for a block: not htmx restoring a page from history after a miss in its cache (it sends
    ``HX-Request`` too, and swaps the answer in as the whole page)."""
    headers = request.headers
    return headers.get("HX-Request") == "true" and headers.get("HX-History-Restore-Request") != "true"


def page_or_block(
    request: Request,
    template: str,
    block: str,
    context: dict[str, Any],
    *,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    """The whole page for a normal request, only ``block`` for an htmx request."""
    env: Environment = request.app.state.jinja
    full_context = {"request": request, "settings": request.app.state.settings} | context
    headers = without_unchanged_url(request, headers or {})
    if is_htmx(request):
        html = render_block(env, template, block, full_context)
    else:
        html = env.get_template(template).render(full_context)
    return HTMLResponse(html, status_code=status_code, headers={"Vary": "HX-Request"} | headers)


class FastJSON(JSONResponse):
    """JSON via orjson: a 1 MB text gives ~250k token objects, which the stdlib encoder serialises slowly."""

    def render(self, content) -> bytes:
        return orjson.dumps(content)


def download(body: bytes | str, media_type: str, filename: str) -> Response:
    """``body`` as a file the browser saves as ``filename``."""
    return Response(body, media_type=media_type, headers={"Content-Disposition": f'attachment; filename="{filename}"'})
