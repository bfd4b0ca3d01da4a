"""Chat prompts: messages rendered the way each model sees them, and tokenized.

- :mod:`.prompt` — the three formats (the model's own template, harmony, ChatML), chosen per tokenizer, and
  :func:`~.prompt.tokenize_prompt`, which encodes the markup as special tokens and the messages as text;
- :mod:`.template` — a model's chat template run as ``transformers`` runs it (sandboxed Jinja2), and gpt-oss's
  harmony format.
"""
