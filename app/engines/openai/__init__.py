"""OpenAI's encodings (gpt2, p50k_base, cl100k_base, o200k_base, o200k_harmony): the family of tiktoken.

- :mod:`.encodings` — each encoding as data (split pattern, ranks file, special tokens: :data:`~.encodings.ENCODINGS`)
  and :class:`~.encodings.TiktokenTokenizer`, which runs it with tiktoken.

Our own BPE engine runs the very same data (:class:`app.engines.bpe.model.NativeOpenAITokenizer`), and the split
patterns are named for every engine in :mod:`app.engines.bpe.patterns`.
"""
