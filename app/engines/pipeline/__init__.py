"""A tokenizer's pipeline around its model, as a ``tokenizer.json`` file describes it, run exactly as Hugging Face
``tokenizers`` runs it; every engine family that runs such a file imports it from here (none imports another
family's pipeline): byte-level BPE (:mod:`app.engines.bpe.json_model`), BPE over characters
(:mod:`app.engines.sentencepiece.json_model`), WordPiece (:mod:`app.engines.wordpiece.model`), Unigram
(:mod:`app.engines.sentencepiece.unigram_json`), WordLevel (:mod:`app.engines.wordpiece.wordlevel`), and the
``tokenizers`` library's own engine (:mod:`app.engines.huggingface.library`).

- :mod:`.tokenizer_json` — read a file into plain data, refusing what Tokenplay cannot run exactly;
- :mod:`.added_tokens` — find the added tokens in text before the model runs;
- :mod:`.normalizers`, :mod:`.pretokenizers` — the file's pipeline steps, cutting where ``tokenizers`` cuts
  (:mod:`.normalizer_steps`, :mod:`.pretokenizer_steps`: the steps beyond Unicode forms, BERT's and plain splits;
  :mod:`.step_tables`: character tables asked of the library; :mod:`.onig_regex`, :mod:`.onig_matches`: a file's
  regex as Oniguruma reads it and finds its matches);
- :mod:`.decoders` — the file's decoder, ids back to text as the library decodes them;
- :mod:`.post_processor` — the tokens the model's default encoding adds around a text (BOS, ``[CLS]``/``[SEP]``), as
  the file's post-processor adds them; what every tokenizer's ``added_specials`` holds;
- :mod:`.unicode` — characters as ``tokenizers`` sees them (its Unicode tables, older than Python's);
- :mod:`.bert_text` — characters as BERT's normalizer and pre-tokenizer see them, and that normalizer;
- :mod:`.charsmap`, :mod:`.pieces` — what SentencePiece's own engines share with these files: the precompiled
  character map of a normalizer, ``▁`` for a space and ``<0xNN>`` byte pieces.
"""
