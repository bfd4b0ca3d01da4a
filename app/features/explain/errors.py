"""Why a token cannot be explained. Both are :class:`~app.engines.errors.TokenplayError` s (the web answers 422)."""

from __future__ import annotations

from app.engines.errors import TokenplayError


class NotExplainableError(TokenplayError):
    """A tokenizer whose cuts are not BPE merges (or a BPE variant the explainer does not retrace); the message
    says which and why."""


class TokenIndexError(TokenplayError):
    """A token index outside the text's tokens."""
