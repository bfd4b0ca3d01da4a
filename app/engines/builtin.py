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
