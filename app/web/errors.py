"""Every error the app answers, mapped to an HTTP status in one table and answered in one place.

Library code raises :class:`~app.engines.errors.TokenplayError` subclasses whose message says what to do;
:data:`STATUS` gives each class its status (the most specific class listed wins, anything else is 422).
JSON requests get ``{"detail": message}``; htmx requests get the message as the ``_error.html`` fragment, which
the page swaps in where the result would be, so the text the user typed stays in its text area. Pages that
answer a full HTML page on error (the playground, the lab's form) render their own page with the message and
take the status from :func:`status_for`.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response

from app.classroom.sessions import NotAuthenticated, NotTeacher, SessionNotFound, TooManyJoins, VoteRefused
from app.engines.errors import DataFileError, TokenplayError, UnknownTokenizerError
from app.engines.registry.loaders import FileTooLargeError
from app.features.vocab.browser import TokenNotFoundError
from app.features.vocab.characters import CharactersTooLongError
from app.lab.jobs import QueueFull
from app.lab.service import CorpusTooLarge, RunNotFound, RunNotReady
from app.services.errors import NotFoundError, TooLargeError
from app.services.measure import MeasurementFinished

from .render import is_htmx


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
    VoteRefused: 409,
    TooManyJoins: 429,
    DataFileError: 500,
    TokenplayError: 422,
}


def status_for(exc: Exception) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 422


def headers_for(exc: Exception) -> dict[str, str]:
    """``Retry-After`` for a full training queue or too many wrong session codes: the client may try again then;
    ``WWW-Authenticate`` for a teacher's action without the teacher token."""
    if isinstance(exc, (QueueFull, TooManyJoins)):
        return {"Retry-After": str(exc.retry_after)}
    if isinstance(exc, NotAuthenticated):
        return {"WWW-Authenticate": "Bearer"}
    return {}


def answer(request: Request, status: int, message: str, extra: dict | None = None, headers: dict | None = None):
    """The error as the ``_error.html`` fragment for htmx, as ``{"detail": message}`` JSON otherwise."""
    if is_htmx(request):
        html = request.app.state.jinja.get_template("_error.html").render(message=message)
        # htmx ignores 4xx bodies by default; the page opts in to swapping them (the htmx-config of base.html).
        return HTMLResponse(html, status_code=status, headers={"Vary": "HX-Request"} | (headers or {}))
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
            message = "the run store (Redis) is unavailable right now; try again in a moment"
            return answer(request, 503, message, headers={"Retry-After": "5"})

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        errors = exc.errors()
        parts = []
        for err in errors[:5]:
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
        message = "invalid request: " + "; ".join(parts)
        safe = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors]
        return answer(request, 422, message, {"errors": safe})
