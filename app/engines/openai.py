"""OpenAI's encodings (gpt2, p50k_base, cl100k_base, o200k_base) as data, run by tiktoken.

An encoding is its name, split pattern, ranks file and special tokens; the ranks come from ``tokenizers/openai``
with their sha256 checked, so nothing is downloaded. :data:`ENCODINGS` is shared with our own engine,
which runs the very same data (``app.engines.bpe``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from functools import cache

import tiktoken

from .base import Tokenizer, check_text
from .datafiles import verified_bytes

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"
IM_START, IM_END, IM_SEP = "<|im_start|>", "<|im_end|>", "<|im_sep|>"

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]"""
    r"""|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@dataclass(frozen=True)
class EncodingSpec:
    name: str
    file: str  # relative to the data directory
    pattern: str
    special_tokens: dict[str, int]
    description: str


ENCODINGS: dict[str, EncodingSpec] = {
    spec.name: spec
    for spec in [
        EncodingSpec("gpt2", "openai/gpt2.tiktoken", GPT2_PATTERN, {ENDOFTEXT: 50256}, "GPT-2 (same ranks as r50k_base)"),
        EncodingSpec(
            "p50k_base", "openai/p50k_base.tiktoken", GPT2_PATTERN, {ENDOFTEXT: 50256}, "text-davinci-003, Codex"
        ),
        EncodingSpec(
            "cl100k_base",
            "openai/cl100k_base.tiktoken",
            CL100K_PATTERN,
            {
                ENDOFTEXT: 100257,
                FIM_PREFIX: 100258,
                FIM_MIDDLE: 100259,
                FIM_SUFFIX: 100260,
                IM_START: 100264,
                IM_END: 100265,
                IM_SEP: 100266,
                ENDOFPROMPT: 100276,
            },
            "GPT-3.5-turbo, GPT-4 (with chat markup tokens)",
        ),
        EncodingSpec(
            "o200k_base",
            "openai/o200k_base.tiktoken",
            O200K_PATTERN,
            {ENDOFTEXT: 199999, IM_START: 200264, IM_END: 200265, IM_SEP: 200266, ENDOFPROMPT: 200018},
            "GPT-4o (with chat markup tokens)",
        ),
    ]
}


def parse_tiktoken_file(data: bytes) -> dict[bytes, int]:
    """``base64(token) rank`` lines to a ranks dict (the .tiktoken format)."""
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@cache
def mergeable_ranks(name: str) -> dict[bytes, int]:
    """The hash-checked ranks of one encoding (cached: several tokenizers share them)."""
    return parse_tiktoken_file(verified_bytes(ENCODINGS[name].file))


class TiktokenTokenizer(Tokenizer):
    """One of OpenAI's encodings, run by tiktoken itself (the reference our own engine is tested against)."""

    def __init__(self, name: str):
        spec = ENCODINGS[name]
        self.name = name
        self._spec = spec
        self.encoding = tiktoken.Encoding(
            name=f"tokenplay-{name}",
            pat_str=spec.pattern,
            mergeable_ranks=mergeable_ranks(name),
            special_tokens=spec.special_tokens,
        )

    @property
    def n_vocab(self) -> int:
        return self.encoding.n_vocab

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._spec.special_tokens)

    def _has_gaps(self) -> bool:
        return self.encoding.max_token_value + 1 != len(mergeable_ranks(self.name)) + len(self._spec.special_tokens)

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        check_text(text)  # tiktoken would silently turn a lone surrogate into U+FFFD
        if allow_special:
            return self.encoding.encode(text, allowed_special="all")
        return self.encoding.encode_ordinary(text)

    def token_bytes(self, token_id: int) -> bytes:
        return self.encoding.decode_single_token_bytes(token_id)
