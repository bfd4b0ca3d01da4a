"""Errors raised by the engines. All are ``ValueError`` subclasses whose message says what to do.

The web layer maps each class to an HTTP status in one place (``app.web.errors``).
"""

from __future__ import annotations


class TokenplayError(ValueError):
    """Base class: a request the engines cannot serve, with a message meant for the user."""


class UnknownTokenizerError(TokenplayError, LookupError):
    def __init__(self, name: str, valid: list[str]):
        self.name = name
        self.valid = valid
        super().__init__(f"unknown tokenizer {name!r}; valid names are: {', '.join(valid)}")


class InvalidTextError(TokenplayError):
    """Text that cannot be encoded, e.g. a lone surrogate that has no UTF-8 form."""


class InvalidIdsError(TokenplayError):
    """Token ids that the tokenizer does not have."""


class DataFileError(TokenplayError):
    """A shipped data file is missing or its sha256 does not match the manifest."""
