"""OpenAI's encodings (gpt2, p50k_base, p50k_edit, cl100k_base, o200k_base, o200k_harmony) as data, run by tiktoken.

An encoding is its name, split pattern, ranks file and special tokens; the ranks come from ``tokenizers/openai``
with their sha256 checked, so nothing is downloaded. :data:`ENCODINGS` is shared with our own engine,
which runs the very same data (``app.engines.bpe``). ``o200k_harmony`` (gpt-oss) is tiktoken's own definition:
the o200k ranks and pattern with the special tokens of the harmony chat format (``<|start|>``, ``<|channel|>``,
``<|message|>``, ``<|end|>``, ...) and 1,075 reserved ones; like tiktoken, its ``<|endofprompt|>`` and
``<|reserved_200018|>`` share id 200018, which decodes as the former.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import tiktoken

from ..base import Tokenizer, check_text
from ..datafiles import verified_bytes

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"
IM_START, IM_END, IM_SEP = "<|im_start|>", "<|im_end|>", "<|im_sep|>"
#: The harmony format's special tokens (gpt-oss), as tiktoken's ``o200k_harmony`` defines them.
HARMONY_SPECIAL_TOKENS = {
    ENDOFTEXT: 199999,
    ENDOFPROMPT: 200018,
    "<|startoftext|>": 199998,
    "<|reserved_200000|>": 200000,
    "<|reserved_200001|>": 200001,
    "<|return|>": 200002,
    "<|constrain|>": 200003,
    "<|reserved_200004|>": 200004,
    "<|channel|>": 200005,
    "<|start|>": 200006,
    "<|end|>": 200007,
    "<|message|>": 200008,
    "<|reserved_200009|>": 200009,
    "<|reserved_200010|>": 200010,
    "<|reserved_200011|>": 200011,
    "<|call|>": 200012,
} | {f"<|reserved_{i}|>": i for i in range(200013, 201088)}

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
    #: Special tokens Tokenplay adds beyond tiktoken's own definition of the encoding (the ChatML markup of the chat
    #: models): encoded and decoded like the others, but not part of the vocabulary tiktoken counts in ``n_vocab``.
    markup: tuple[str, ...] = ()

    def reference_n_vocab(self, ranks: dict[bytes, int]) -> int:
        """tiktoken's ``n_vocab`` for this encoding as tiktoken defines it: one more than its largest rank or special
        token id, the markup Tokenplay adds left out (o200k_base: 200,019, though ``<|im_sep|>`` is 200266)."""
        ids = [i for s, i in self.special_tokens.items() if s not in self.markup]
        return max([*ids, max(ranks.values())]) + 1


ENCODINGS: dict[str, EncodingSpec] = {
    spec.name: spec
    for spec in [
        EncodingSpec("gpt2", "openai/gpt2.tiktoken", GPT2_PATTERN, {ENDOFTEXT: 50256}, "GPT-2 (same ranks as r50k_base)"),
        EncodingSpec(
            "p50k_base", "openai/p50k_base.tiktoken", GPT2_PATTERN, {ENDOFTEXT: 50256}, "text-davinci-003, Codex"
        ),
        EncodingSpec(
            "p50k_edit",
            "openai/p50k_base.tiktoken",
            GPT2_PATTERN,
            {ENDOFTEXT: 50256, FIM_PREFIX: 50281, FIM_MIDDLE: 50282, FIM_SUFFIX: 50283},
            "text-davinci-edit-001, code-davinci-edit-001 (p50k ranks with fill-in-the-middle tokens)",
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
            markup=(IM_START, IM_END, IM_SEP),
        ),
        EncodingSpec(
            "o200k_base",
            "openai/o200k_base.tiktoken",
            O200K_PATTERN,
            {ENDOFTEXT: 199999, IM_START: 200264, IM_END: 200265, IM_SEP: 200266, ENDOFPROMPT: 200018},
            "GPT-4o (with chat markup tokens)",
            markup=(IM_START, IM_END, IM_SEP),
        ),
        EncodingSpec(
            "o200k_harmony",
            "openai/o200k_base.tiktoken",
            O200K_PATTERN,
            HARMONY_SPECIAL_TOKENS,
            "gpt-oss: the o200k ranks with the special tokens of the harmony chat format",
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


def mergeable_ranks(name: str) -> dict[bytes, int]:
    """The hash-checked ranks of one encoding (cached per file: several tokenizers and encodings share them)."""
    return _ranks_of_file(ENCODINGS[name].file)


@cache
def _ranks_of_file(rel: str) -> dict[bytes, int]:
    return parse_tiktoken_file(verified_bytes(rel))


def release_parsed_ranks() -> None:
    """Forget the parsed rank files (a server that has built every encoding needs them no more)."""
    _ranks_of_file.cache_clear()


class TiktokenTokenizer(Tokenizer):
    """One of OpenAI's encodings, run by tiktoken itself (the reference our own engine is tested against)."""

    def __init__(self, name: str):
        spec = ENCODINGS[name]
        self.name = name
        self._spec = spec
        ranks = mergeable_ranks(name)
        self._n_ranks = len(ranks)
        self._n_vocab = spec.reference_n_vocab(ranks)
        self.encoding = tiktoken.Encoding(
            name=f"tokenplay-{name}",
            pat_str=spec.pattern,
            mergeable_ranks=ranks,
            special_tokens=spec.special_tokens,
        )

    @property
    def n_vocab(self) -> int:
        """tiktoken's own figure for the encoding (the chat markup Tokenplay adds beyond it is not counted)."""
        return self._n_vocab

    @property
    def id_bound(self) -> int:
        return self.encoding.n_vocab

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._spec.special_tokens)

    def _has_gaps(self) -> bool:
        ids = self._n_ranks + len(set(self._spec.special_tokens.values()))
        return self.encoding.max_token_value + 1 != ids

    def drop_python_ranks(self) -> None:
        """Let go of the ranks dict the ``tiktoken.Encoding`` keeps beside its Rust core (which has its own copy and
        never reads it; tiktoken uses it only to pickle an Encoding, which nothing here does): 25 MB for o200k,
        kept otherwise by every server process."""
        self.encoding._mergeable_ranks = {}

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        check_text(text)  # tiktoken would silently turn a lone surrogate into U+FFFD
        if allow_special:
            return self.encoding.encode(text, allowed_special="all")
        return self.encoding.encode_ordinary(text)

    def encode_batch(self, texts: Sequence[str], *, allow_special: bool = False) -> list[list[int]]:
        """tiktoken's batch encoder: a thread per core, each encoding outside the GIL."""
        for text in texts:
            check_text(text)
        threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        if allow_special:
            return self.encoding.encode_batch(list(texts), num_threads=threads, allowed_special="all")
        return self.encoding.encode_ordinary_batch(list(texts), num_threads=threads)

    def token_bytes(self, token_id: int) -> bytes:
        return self.encoding.decode_single_token_bytes(token_id)

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """tiktoken's own decode, once every id is checked: a million ids in a few hundredths of a second, where
        joining them a token at a time holds a worker for a second."""
        return self.encoding.decode_bytes(self.check_ids(ids))
