"""Request-scoped dependencies as ``Annotated`` aliases, and the size limits checked at the HTTP boundary."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from fastapi import Depends, Request

from app.settings import Settings

from .errors import TooLargeError


def _settings(request: Request) -> Settings:
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(_settings)]


def check_text_size(text: str, settings: Settings) -> str:
    if len(text) > settings.max_chars:
        raise TooLargeError(
            f"text is {len(text):,} characters; the limit is {settings.max_chars:,} "
            "(set TOKENPLAY_MAX_CHARS to change it)"
        )
    return text


T = TypeVar("T")


async def run_cpu(request: Request, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run CPU-bound work (tokenizing, rendering) in a thread of the app's small *CPU lane*.

    The lane holds ``settings.cpu_threads`` threads per process; more requests wait their turn, first come
    first served. With FastAPI's default pool (40 threads) every waiting request would hold a thread and
    share the GIL with the others, so under load all of them finish late together. Lab requests that only
    wait (for a training to start) keep using the default pool, so they never hold up the lane.
    """
    limiter = getattr(request.app.state, "cpu_limiter", None)
    if limiter is None:  # created on first use: a limiter belongs to the running event loop
        limiter = request.app.state.cpu_limiter = anyio.CapacityLimiter(request.app.state.settings.cpu_threads)
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs), limiter=limiter)
