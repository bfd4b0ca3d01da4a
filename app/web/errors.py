"""Every error the app answers, mapped to an HTTP status in one table and answered in one place.

Library code raises :class:`~app.engines.errors.TokenplayError` subclasses whose message says what to do;
:data:`STATUS` gives each class its status (the most specific class listed wins, anything else is 422).
An error is answered in the form its asker reads (:func:`answer`):

- htmx requests get the message as the ``_error.html`` fragment, which the page swaps in where the result would
  be, so the text the user typed stays in its text area;
- a browser that opened a page or posted a plain form (a page route, ``Accept: text/html``) gets a whole page,
  ``error.html`` (the site's frame, the message, a way back), never a bare JSON document;
- the JSON API, and any client that does not ask for HTML, gets ``{"detail": message}``.

Pages that answer their own page on error (the playground, the lab's form) render it with the message and take
the status from :func:`status_for`. Beyond the engines' errors: the store unreachable (Redis down) is a 503 with
``Retry-After``, a full disk or a Redis out of memory a 507 (:class:`~app.engines.errors.StorageFull`), and input
nested too deeply to read (JSON nested 100,000 levels) a 422 in words, never a 500.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException

from app.classroom.sessions import (
    NotAuthenticated,
    NotJoined,
    NotTeacher,
    SessionNotFound,
    TooManyJoins,
    TooManyVotes,
    VoteRefused,
)
from app.engines.errors import DataFileError, StorageFull, TokenplayError, UnknownTokenizerError
from app.engines.registry.loaders import FileTooLargeError
from app.features.vocab.browser import TokenNotFoundError
from app.features.vocab.characters import CharactersTooLongError
from app.lab.jobs import QueueFull
from app.lab.service import CorpusTooLarge, RunNotFound, RunNotReady
from app.services.errors import NotFoundError, TooLargeError
from app.services.measure import MeasurementFinished

from .render import is_htmx


#: What input nested too deeply to read answers (422).
TOO_DEEP = ("the request nests too deeply to be read (JSON or a file nested thousands of levels deep); send it "
            "with fewer levels of nesting")

STATUS: dict[type[Exception], int] = {
    UnknownTokenizerError: 404,
    RunNotFound: 404,
    NotFoundError: 404,
    RunNotReady: 409,
    MeasurementFinished: 409,
    TooLargeError: 413,
    TokenNotFoundError: 404,
    CharactersTooLongError: 413,
    CorpusTooLarge: 413,
    FileTooLargeError: 413,
    QueueFull: 429,
    SessionNotFound: 404,
    NotAuthenticated: 401,
    NotTeacher: 403,
    NotJoined: 403,
    VoteRefused: 409,
    TooManyJoins: 429,
    TooManyVotes: 429,
    DataFileError: 500,
    StorageFull: 507,
    TokenplayError: 422,
}


#: What a string field with a lone surrogate (``"\\ud800"`` in JSON, a character with no UTF-8) is told, in the
#: words the engines use for the same text (:func:`app.engines.base.check_text`).
_UNICODE_WORDS = ("has a character that cannot be encoded as UTF-8 (a lone surrogate such as \\ud800); remove it or "
                  "replace it with a real character")


def status_for(exc: Exception) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 422


def headers_for(exc: Exception) -> dict[str, str]:
    """``Retry-After`` for a full training queue or too many wrong session codes: the client may try again then;
    ``WWW-Authenticate`` for a teacher's action without the teacher token."""
    if isinstance(exc, (QueueFull, TooManyJoins, TooManyVotes)):
        return {"Retry-After": str(exc.retry_after)}
    if isinstance(exc, NotAuthenticated):
        return {"WWW-Authenticate": "Bearer"}
    return {}


#: Paths that are no page (assets, the API's documents, the health check): their errors are never a page.
_NOT_PAGES = ("/api/", "/static/", "/vendor/", "/healthz", "/docs", "/openapi.json", "/redoc")
#: Where "back" leads from an error on a page, by the first part of its path.
_BACK = {"compare": "compare", "chat": "chat", "lab": "the lab", "oddities": "the oddities",
         "languages": "the languages", "follow": "following a class", "tokenizers": "the playground"}


def is_page(request: Request) -> bool:
    """Whether the request went to an HTML page (a route of :mod:`app.web.pages`; before routing, by its path)."""
    endpoint = request.scope.get("endpoint")
    if endpoint is not None and getattr(endpoint, "__module__", None):
        return endpoint.__module__.startswith("app.web.pages.")
    path = request.url.path
    return path != "/api" and not path.startswith(_NOT_PAGES)


def wants_page(request: Request) -> bool:
    """A browser on a page: a page route, asked for as HTML (a navigation or a plain form's post says
    ``Accept: text/html``), not by htmx (which swaps a fragment)."""
    return not is_htmx(request) and is_page(request) and "text/html" in request.headers.get("accept", "")


def error_page(request: Request, status: int, message: str, headers: dict | None = None) -> HTMLResponse:
    """The whole error page: the site's frame, the message, "Try again" (the same address, for a page that was
    opened and may answer in a moment) and a way back to the page the address belongs to."""
    section = request.url.path.strip("/").split("/", 1)[0]
    back = f"/{section}" if section in _BACK and section != "tokenizers" else "/"
    context = {
        "title": _TITLES.get(status, "Something went wrong" if status >= 500 else "This request cannot be served"),
        "message": message,
        # a page that may answer in a moment (the store back, the queue shorter) can be tried again as it was
        "again": str(request.url.path) + (f"?{request.url.query}" if request.url.query else "")
        if request.method == "GET" and (status >= 500 or status in (409, 429)) else None,
        "back": back,
        "back_label": f"Back to {_BACK.get(section, 'the playground')}",
    }
    html = request.app.state.jinja.get_template("error.html").render(context)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"} | (headers or {}))


_TITLES = {
    403: "Refused",
    404: "Not found",
    413: "Too large",
    429: "Too many requests",
    503: "Unavailable for a moment",
    507: "The server's storage is full",
}


def answer(request: Request, status: int, message: str, extra: dict | None = None, headers: dict | None = None):
    """The error as the ``_error.html`` fragment for htmx, as the ``error.html`` page for a browser on a page
    (:func:`wants_page`), as ``{"detail": message}`` JSON otherwise."""
    if is_htmx(request):
        html = request.app.state.jinja.get_template("_error.html").render(message=message)
        # htmx ignores 4xx bodies by default; the page opts in to swapping them (the htmx-config of base.html).
        return HTMLResponse(html, status_code=status, headers={"Vary": "HX-Request"} | (headers or {}))
    if wants_page(request):
        return error_page(request, status, message, headers)
    return JSONResponse({"detail": message} | (extra or {}), status_code=status, headers=headers)


def error_response(request: Request, exc: TokenplayError) -> Response:
    """The error's answer; JSON also says ``field``, the option to blame, when the error names one."""
    extra = {"valid": exc.valid, "closest": exc.closest} if isinstance(exc, UnknownTokenizerError) else {}
    if getattr(exc, "field", None):
        extra["field"] = exc.field
    return answer(request, status_for(exc), str(exc), extra, headers_for(exc))


def install(app: FastAPI) -> None:
    @app.exception_handler(TokenplayError)
    async def _engine_error(request: Request, exc: TokenplayError):
        return error_response(request, exc)

    try:
        from redis.exceptions import RedisError
    except ImportError:  # pragma: no cover - redis is a dependency, but only needed when REDIS_URL is set
        RedisError = None

    if RedisError is not None:

        @app.exception_handler(RedisError)
        async def _store_unavailable(request: Request, exc: Exception):
            if str(exc).startswith("OOM"):  # Redis at its maxmemory refuses writes: the store is full
                return answer(request, 507, str(StorageFull.about("what this request changes")))
            message = "the run store (Redis) is unavailable right now; try again in a moment"
            return answer(request, 503, message, headers={"Retry-After": "5"})

    @app.exception_handler(RecursionError)
    async def _too_deep(request: Request, exc: RecursionError):
        return answer(request, 422, TOO_DEEP)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException):
        if isinstance(exc.__cause__, RecursionError):  # FastAPI's "error parsing the body": JSON nested too deeply
            return answer(request, 422, TOO_DEEP)
        if exc.status_code == 404 and wants_page(request):
            return error_page(request, 404, f"there is no page at {request.url.path}", exc.headers)
        return await http_exception_handler(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        errors = exc.errors()
        parts = []
        for err in errors[:5]:
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            msg = _UNICODE_WORDS if err.get("type") == "string_unicode" else err.get("msg")
            parts.append(f"{loc}: {msg}" if loc else str(msg))
        message = "invalid request: " + "; ".join(parts)
        safe = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors]
        return answer(request, 422, message, {"errors": safe})
