"""WordPiece (BERT and its family), run and trained by Tokenplay's own code.

- :mod:`.model` — :class:`~.model.WordPieceTokenizer`, id for id with Hugging Face ``tokenizers``, on a
  ``tokenizer.json`` or BERT's ``vocab.txt``;
- :mod:`.trainer` — a WordPiece trainer that merges the pair of highest score and records every step;
- :mod:`.wordlevel` — :class:`~.wordlevel.WordLevelTokenizer`, a ``tokenizer.json`` of whole words, id for id with
  Hugging Face ``tokenizers``.

The text pipeline BERT runs before the model (normalizer, pre-tokenizer) is the ``tokenizer.json`` pipeline's
(:mod:`app.engines.huggingface`).
"""
