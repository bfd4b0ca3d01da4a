"""Errors raised by the engines. All are ``ValueError`` subclasses whose message says what to do.

The web layer maps each class to an HTTP status in one place (``app.web.errors``).
"""

from __future__ import annotations


class TokenplayError(ValueError):
    """Base class: a request the engines cannot serve, with a message meant for the user."""


class UnknownTokenizerError(TokenplayError, LookupError):
    """A name that is no tokenizer: ``valid`` lists the names there are, ``closest`` the few nearest to it (names,
    aliases or repository ids; computed from ``valid`` when not given), said first."""

    def __init__(self, name: str, valid: list[str], closest: list[str] | None = None):
        import difflib

        self.name = name
        self.valid = valid
        self.closest = closest if closest is not None else difflib.get_close_matches(name, valid, n=5, cutoff=0.6)
        nearest = f"; the closest are: {', '.join(self.closest)}" if self.closest else ""
        super().__init__(f"unknown tokenizer {name!r}{nearest}; valid names are: {', '.join(valid)}")


class InvalidTextError(TokenplayError):
    """Text that cannot be encoded, e.g. a lone surrogate that has no UTF-8 form."""


class InvalidIdsError(TokenplayError):
    """Token ids that the tokenizer does not have."""


class DataFileError(TokenplayError):
    """A shipped data file is missing or its sha256 does not match the manifest."""


class StorageFull(TokenplayError):
    """A write that found the disk (or the store's memory) full: nothing of it was kept, and the action it was part
    of did not happen (507). Made by :meth:`about`."""

    @classmethod
    def about(cls, what: str) -> StorageFull:
        return cls(f"the server's storage is full: {what} was not saved, and nothing changed; try again in a while "
                   "(whoever runs this server needs to free some space)")
