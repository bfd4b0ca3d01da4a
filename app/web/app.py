"""``create_app()`` builds the FastAPI application: settings, templates, static files, error mapping, and the
routers of every page (:mod:`app.web.pages`) and of the JSON API (:mod:`app.web.api`), which never import each
other."""

from __future__ import annotations

import gc
import os
import threading
import time
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from app import __version__
from app.classroom.service import Classroom
from app.engines import budget as budgets
from app.engines.registry.loaders import MAX_FILE_BYTES
from app.lab.service import Lab
from app.services.errors import NotFoundError
from app.services.measure import Measurements
from app.services.uploads import Uploads
from app.settings import Settings

from . import api, errors
from .api import chat as api_chat
from .api import compare as api_compare
from .api import explain as api_explain
from .api import languages as api_languages
from .api import measure as api_measure
from .api import sessions as api_sessions
from .api import tokenize as api_tokenize
from .api import pretokenize as api_pretokenize
from .api import train as api_train
from .deps import lanes_of
from .api import vocab as api_vocab
from .pages import (
    add_tokenizer,
    chat,
    compare,
    follow,
    lab,
    languages,
    measure,
    oddities,
    playground,
    share,
    side_by_side,
    vocab,
)
from .render import make_environment, page_or_block
from .security import CrossSite, SecurityHeaders

#: The routers of the pages, in the order their routes are matched.
PAGES = (playground, compare, oddities, chat, lab, side_by_side, add_tokenizer, languages, vocab, measure, follow, share)
#: The routers of the JSON API under ``/api``, in the order of ``/docs``.
API = (api_tokenize, api_explain, api_compare, api_chat, api_train, api_pretokenize, api_languages, api_vocab, api_measure,
       api_sessions)

#: The files of npm's swagger-ui-dist that /docs loads, and their media types.
SWAGGER_FILES = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}


class BodyTooLarge(Exception):
    """Raised to the app from its ``receive`` once a body passes its limit (:class:`BodyLimit`)."""


class BodyLimit:
    """Refuse request bodies far beyond any accepted text (413, not a slow parse), counting the bytes as they
    arrive, whatever the headers say.

    A ``Content-Length`` over the limit is answered before anything is read. A body sent without one (chunked) or
    with a false one is counted as the app reads it: once more than the limit has arrived the app's next read
    raises :class:`BodyTooLarge` (so it stops reading: at most the limit is ever held), and whatever the app then
    answers is replaced by the 413. Pure ASGI middleware (like :class:`ServerTiming`): Starlette's
    ``BaseHTTPMiddleware`` streams every response through an extra task and queue, which cost ~7% of a busy
    worker's time.
    """

    def __init__(self, app, max_bytes: int, larger: dict[str, int] | None = None):
        self.app = app
        self.max_bytes = max_bytes
        self.larger = larger or {}  # path -> its own limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.larger.get(scope["path"], self.max_bytes)
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            return await self._refuse(scope, receive, send, f"request body is {int(length):,} bytes; the limit is {limit:,}")
        seen = 0
        over = False
        started = False

        async def counted_receive():
            nonlocal seen, over
            if over:
                raise BodyTooLarge()
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    over = True
                    message["body"] = b""  # not handed on: the app never holds more than the limit
                    raise BodyTooLarge()
            return message

        async def guarded_send(message):
            nonlocal started
            if over and not started:
                return  # the app's answer to a body it could not finish reading: the 413 goes instead
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except BodyTooLarge:
            pass
        except Exception:
            if not over:
                raise
        if over and not started:
            await self._refuse(scope, receive, send, f"request body is more than {limit:,} bytes; the limit is {limit:,}")

    @staticmethod
    async def _refuse(scope, receive, send, message: str):
        response = errors.answer(Request(scope), 413, message, headers={"Connection": "close"})
        await response(scope, receive, send)


class Budgets:
    """Pure ASGI middleware: every request's work on what a user brought runs under a budget of
    ``seconds`` (:mod:`app.engines.budget`; started when such work first runs, so waiting costs nothing)."""

    def __init__(self, app, seconds: float):
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        with budgets.use(budgets.Budget(self.seconds)):
            await self.app(scope, receive, send)


class ServerTiming:
    """Pure ASGI middleware: a ``Server-Timing: app;dur=<ms>`` header on every answer (seen in browser devtools,
    read by bench/bench_api.py). Measures from the request's arrival to the response start."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()

        async def timed_send(message):
            if message["type"] == "http.response.start":
                dur = (time.perf_counter() - start) * 1000
                message["headers"] = [*message.get("headers", []), (b"server-timing", f"app;dur={dur:.2f}".encode())]
            await send(message)

        await self.app(scope, receive, timed_send)


def _settle_memory(settings: Settings) -> None:
    """Load the default tokenizer, then move everything alive into the GC's permanent generation.

    The ranks and caches of a loaded tokenizer live for the whole process; without this every full collection
    walks them again, and those pauses were most of the playground's p95 (37 ms -> 13 ms for a 10 KB text).
    Fewer gen-0 collections help too: a request allocates thousands of short-lived token objects.
    """
    if not settings.gc_tuning:
        return
    from app.engines import registry

    registry.get(settings.default_tokenizer)
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 50)


@asynccontextmanager
async def _lifespan(app: FastAPI):
    """Load the default tokenizer, and own the lab (run store + training pool) and the measurements (their store and
    pool) while the app serves.

    The lab is shared by every server running this app object (the tests run a TestClient and a live server on
    one app): the first to start creates it, the last to stop shuts it down.
    """
    state = app.state
    _settle_memory(state.settings)
    with state.lab_lock:
        if state.lab_users == 0:
            state.lab = Lab.from_settings(state.settings)
            state.measurements = Measurements.from_settings(state.settings)
        state.lab_users += 1
    try:
        yield
    finally:
        await state.classroom.aclose()  # this server's class-session streams and watcher
        with state.lab_lock:
            state.lab_users -= 1
            if state.lab_users == 0:
                state.lab.shutdown()
                state.measurements.shutdown()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(
        lifespan=_lifespan,
        title="Tokenplay",
        version=__version__,
        description="See how language models cut text into tokens.",
        openapi_tags=api.TAGS,
        docs_url=None,  # served below from our own copy of Swagger UI: the default page loads it from a CDN
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.jinja = make_environment(settings.templates_dir, auto_reload=settings.template_reload)
    app.state.lab_lock = threading.Lock()
    app.state.lab_users = 0
    app.state.uploads = Uploads.from_settings(settings)
    app.state.classroom = Classroom.from_settings(settings)
    # Four UTF-8 bytes a character at most, JSON-escaped up to 12 bytes (\ud83d\ude00 for two): room for any
    # accepted text plus the JSON around it.
    # An uploaded tokenizer file may be larger: up to the loaders' limit, and the form around it.
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.max_chars * 12 + 1_000_000,
        larger={path: MAX_FILE_BYTES + 1_000_000 for path in ("/api/tokenizers", "/tokenizers")}
        | {path: settings.measure_max_upload_bytes + 1_000_000 for path in ("/api/measure", "/measure")},
    )
    app.add_middleware(CrossSite, public_url=settings.public_url)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(ServerTiming)
    app.add_middleware(Budgets, seconds=settings.user_code_seconds)
    errors.install(app)

    app.mount("/static", StaticFiles(directory=settings.static_dir), name="static")

    @app.get("/vendor/htmx.min.js", include_in_schema=False)
    def htmx_js():
        path = settings.vendor_dir / "htmx.min.js"
        if not path.is_file():
            return PlainTextResponse("htmx is not installed: run `make install` (or `python3 scripts/fetch_npm.py`) in the repository", status_code=503)
        return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "public, max-age=86400"})

    swagger_dir = settings.npm_dir / "swagger-ui-dist"

    @app.get("/docs", include_in_schema=False)
    def api_docs(request: Request):
        """Swagger UI in the site's page (its header, its theme): templates/docs.html, started by static/docs.js."""
        return page_or_block(request, "docs.html", "content", {"openapi_url": app.openapi_url, "active_nav": "docs"})

    @app.get("/redoc", include_in_schema=False)
    def redoc():  # ReDoc is not shipped (its npm package pulls in dozens more): the one API page is /docs
        return RedirectResponse("/docs", status_code=308)

    @app.get("/vendor/swagger-ui/{name}", include_in_schema=False)
    def swagger_asset(name: str):
        if name not in SWAGGER_FILES:
            raise NotFoundError(f"no file {name!r} here")
        path = swagger_dir / name
        if not path.is_file():
            return PlainTextResponse("Swagger UI is not installed: run `make install` (or `python3 scripts/fetch_npm.py`) in the repository", status_code=503)
        return FileResponse(path, media_type=SWAGGER_FILES[name], headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/healthz", include_in_schema=False)
    async def healthz():  # pid: which worker process answered (bench/bench_tables.py reads each worker's memory)
        # Answered by the event loop itself (a loop that answers is serving); a CPU lane holding one request
        # longer than any request may take is stuck, and says so: the process manager then replaces the worker.
        busy = lanes_of(app).oldest()
        if busy > settings.stuck_after_seconds:
            return JSONResponse({"status": "stuck", "pid": os.getpid(), "detail": f"one request has held the CPU "
                                 f"lane for {busy:.0f} s"}, status_code=503)
        return {"status": "ok", "version": __version__, "pid": os.getpid(), "busy": round(busy, 3)}

    for page in PAGES:
        app.include_router(page.router)
    for part in API:
        app.include_router(part.router, prefix="/api")
    return app
