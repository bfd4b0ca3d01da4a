"""The errors the services raise for what a request asks beyond the app's limits or names that do not exist, and
the size checks every door (pages, the JSON API) makes the same way. The web layer's one table
(:mod:`app.web.errors`) gives each its status."""

from __future__ import annotations

from app.engines.errors import TokenplayError
from app.settings import Settings


class TooLargeError(TokenplayError):
    """Input over a configured size limit."""


class NotFoundError(TokenplayError):
    """Something named in the URL that does not exist (an export format, a token id of a run)."""


def check_text_size(text: str, settings: Settings) -> str:
    """``text``, or :class:`TooLargeError` when it has more characters than ``settings.max_chars``."""
    if len(text) > settings.max_chars:
        raise TooLargeError(f"the text is {len(text):,} characters; the limit is {settings.max_chars:,}")
    return text


def check_ids_count(ids: list[int], settings: Settings) -> list[int]:
    """``ids``, or :class:`TooLargeError` when there are more than ``settings.max_ids``."""
    if len(ids) > settings.max_ids:
        raise TooLargeError(f"{len(ids):,} ids; the limit is {settings.max_ids:,}")
    return ids


def export_format(fmt: str, formats: tuple[str, ...]) -> str:
    """``fmt`` if it is one of ``formats`` (a file ending in a URL), else :class:`NotFoundError`."""
    if fmt not in formats:
        raise NotFoundError(f"unknown export format {fmt!r}; choose one of: {', '.join(formats)}")
    return fmt
