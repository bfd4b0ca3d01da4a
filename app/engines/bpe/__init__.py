"""Tokenplay's own byte-level BPE: a fast trainer that records every step, and a tiktoken-exact encoder.

- :mod:`.patterns` — pre-tokenizer names (``none``, ``gpt2``, ``gpt4``, ``o200k``) and splitting (the shipped
  patterns and the loop over pre-tokens run compiled in ``_pieces.c``);
- :mod:`.trainer` — :func:`train` and the incremental :class:`BPETrainerState` (step records as data);
- :mod:`.encoder` — rank-based encoding with tiktoken's semantics;
- :mod:`.model` — :class:`BPETokenizer` (save/load/export to ``.tiktoken``) and the OpenAI ranks run natively;
- :mod:`.json_model` — byte-level ``tokenizer.json`` files (Llama 3, Qwen3, DeepSeek V3) run by the same encoder;
- :mod:`.word_end_model` — BPE ``tokenizer.json`` files whose words end with a suffix (openai-gpt's ``</w>``).

It does not download anything, print, or depend on the web layer.
"""

from .encoder import RankEncoder
from .model import BPEModelError, BPETokenizer, NativeOpenAITokenizer, RankTokenizer
from .patterns import PATTERNS, pretokenize
from .trainer import BPETrainerState, BPETrainingError, train, train_words, vocab_from_merges

__all__ = [
    "PATTERNS",
    "BPEModelError",
    "BPETokenizer",
    "BPETrainerState",
    "BPETrainingError",
    "NativeOpenAITokenizer",
    "RankEncoder",
    "RankTokenizer",
    "pretokenize",
    "train",
    "train_words",
    "vocab_from_merges",
]
