"""Hugging Face ``tokenizers`` as an engine, and the models shipped through npm.

- :mod:`.library` — a ``tokenizer.json`` run by the ``tokenizers`` library itself: the reference our engines are
  held to;
- :mod:`.npm_models` — the models shipped through npm (Llama 3 and 3.1, Llama 2, Qwen3 and Qwen2.5, DeepSeek V3 and
  V4, Gemma 3 and 2, Mistral Nemo, Claude's early vocabulary), as data.

Reading a ``tokenizer.json`` and its pipeline (normalizers, pre-tokenizers, added tokens, decoders), which our own
engines run too, is :mod:`app.engines.pipeline`.
"""
