"""Hostile files shared by the tests of issue 38 and the chaos run (bench/chaos.py)."""

from __future__ import annotations

import json


def split_tokenizer(pattern: str) -> bytes:
    """A tiny BPE tokenizer.json whose pre-tokenizer is a ``Split`` on ``pattern`` (a user's regex)."""
    vocab = {c: i for i, c in enumerate("ab!xy c")}
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        "post_processor": None, "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": []},
    }).encode()
