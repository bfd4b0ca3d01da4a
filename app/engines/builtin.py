"""The tokenizers shipped with Tokenplay, registered by name. Importing this module registers them."""

from __future__ import annotations

from .openai import ENCODINGS, TiktokenTokenizer
from .registry import TokenizerSpec, register

for _name, _enc in ENCODINGS.items():
    register(
        TokenizerSpec(
            name=_name,
            label=f"{_name} (tiktoken)",
            family="tiktoken",
            factory=lambda n=_name: TiktokenTokenizer(n),
            description=_enc.description,
        )
    )

from .bpe.model import CUSTOM_BPE_DESCRIPTION, NativeOpenAITokenizer, custom_bpe  # noqa: E402

for _name, _enc in ENCODINGS.items():
    register(
        TokenizerSpec(
            name=f"native-{_name}",
            label=f"{_name} (tokenplay engine)",
            family="tokenplay-bpe",
            factory=lambda n=_name: NativeOpenAITokenizer(n),
            description=f"{_enc.description}; the same ranks run by Tokenplay's own BPE engine",
        )
    )
register(
    TokenizerSpec(
        name="custom-bpe",
        label="custom-bpe (trained by Tokenplay)",
        family="tokenplay-bpe",
        factory=custom_bpe,
        description=CUSTOM_BPE_DESCRIPTION,
    )
)

from .sentencepiece.model import SentencePieceTokenizer  # noqa: E402

register(
    TokenizerSpec(
        name="mistral-7b",
        label="Mistral 7B v0.1 (SentencePiece, tokenplay engine)",
        family="sentencepiece",
        factory=lambda: SentencePieceTokenizer.from_data_file(
            "sentencepiece/mistral-7b-v0.1.model",
            description="Mistral 7B v0.1: SentencePiece BPE, 32,000 pieces, byte fallback",
        ),
        description="Mistral 7B v0.1: SentencePiece BPE, 32,000 pieces, byte fallback",
    )
)
