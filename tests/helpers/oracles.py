"""The referees the tests compare our engines with, built from the shipped files (no download)."""

from __future__ import annotations

import functools

import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public as openai_public

from app.engines import datafiles
from app.engines.openai.encodings import ENCODINGS, mergeable_ranks


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


LOCAL = {
    "r50k_base.tiktoken": "openai/gpt2.tiktoken",
    "p50k_base.tiktoken": "openai/p50k_base.tiktoken",
    "cl100k_base.tiktoken": "openai/cl100k_base.tiktoken",
    "o200k_base.tiktoken": "openai/o200k_base.tiktoken",
}
CONSTRUCTORS = {
    "gpt2": "r50k_base",
    "p50k_base": "p50k_base",
    "p50k_edit": "p50k_edit",
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "o200k_harmony": "o200k_harmony",
}


@functools.cache
def tiktoken_reference(name: str) -> tiktoken.Encoding:
    """tiktoken's own definition of encoding ``name`` (``tiktoken_ext.openai_public``: its pattern, special tokens
    and expected hash), with the ranks read from our local files instead of the network."""

    def local_load(url: str, expected_hash: str | None = None):
        path = datafiles.data_dir() / LOCAL[url.rsplit("/", 1)[1]]
        return tiktoken.load.load_tiktoken_bpe(str(path), expected_hash=expected_hash)

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = local_load
    try:
        spec = getattr(openai_public, CONSTRUCTORS[name])()
    finally:
        openai_public.load_tiktoken_bpe = original
    spec.pop("explicit_n_vocab", None)
    return tiktoken.Encoding(**spec)
