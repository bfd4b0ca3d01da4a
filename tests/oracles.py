"""The referees the tests compare our engines with, built from the shipped files (no download)."""

from __future__ import annotations

import functools

import tiktoken

from app.engines.openai import ENCODINGS, mergeable_ranks


@functools.cache
def tiktoken_encoding(name: str) -> tiktoken.Encoding:
    """tiktoken itself on the shipped ranks, pattern and special tokens of encoding ``name``."""
    spec = ENCODINGS[name]
    return tiktoken.Encoding(
        name=f"test-{name}",
        pat_str=spec.pattern,
        mergeable_ranks=mergeable_ranks(name),
        special_tokens=spec.special_tokens,
    )
