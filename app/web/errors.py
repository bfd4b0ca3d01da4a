"""Engine errors to HTTP answers, in one place.

JSON requests get ``{"detail": message}``; htmx requests get the message as an escaped HTML fragment so the page
shows it where the result would be, and the user's text stays in the text area.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from markupsafe import escape

from app.engines.errors import (
    DataFileError,
    InvalidIdsError,
    InvalidTextError,
    SpecialTokenError,
    TokenplayError,
    UnknownTokenizerError,
)


class TooLargeError(TokenplayError):
    """Input over a configured size limit (answered with 413)."""


STATUS = {
    UnknownTokenizerError: 404,
    TooLargeError: 413,
    InvalidTextError: 422,
    InvalidIdsError: 422,
    SpecialTokenError: 422,
    DataFileError: 500,
}


def status_for(exc: Exception) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 422


def answer(request: Request, status: int, message: str, extra: dict | None = None):
    """The error as an escaped HTML fragment for htmx, as ``{"detail": message}`` JSON otherwise."""
    if request.headers.get("HX-Request") == "true":
        html = f'<div class="error" role="alert">{escape(message)}</div>'
        # htmx ignores 4xx bodies by default; the page opts in to swapping them (see static/app.js).
        return HTMLResponse(html, status_code=status, headers={"Vary": "HX-Request"})
    body = {"detail": message} | (extra or {})
    return JSONResponse(body, status_code=status)


def install(app: FastAPI) -> None:
    @app.exception_handler(TokenplayError)
    async def _engine_error(request: Request, exc: TokenplayError):
        extra = {"valid": exc.valid} if isinstance(exc, UnknownTokenizerError) else None
        return answer(request, status_for(exc), str(exc), extra)

    try:
        from redis.exceptions import RedisError
    except ImportError:  # redis is only needed when REDIS_URL is set
        RedisError = None

    if RedisError is not None:

        @app.exception_handler(RedisError)
        async def _store_unavailable(request: Request, exc: Exception):
            message = "the run store (Redis) is unavailable right now; try again in a moment"
            response = answer(request, 503, message)
            response.headers["Retry-After"] = "5"
            return response

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        errors = exc.errors()
        parts = []
        for err in errors[:5]:
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
        message = "invalid request: " + "; ".join(parts)
        if request.headers.get("HX-Request") == "true":
            return answer(request, 422, message)
        safe = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors]
        return JSONResponse({"detail": message, "errors": safe}, status_code=422)
