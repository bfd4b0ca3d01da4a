"""Request-scoped dependencies as ``Annotated`` aliases, and the size limits checked at the HTTP boundary."""

from __future__ import annotations

from typing import Annotated

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
