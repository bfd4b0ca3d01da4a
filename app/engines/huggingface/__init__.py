"""Hugging Face ``tokenizer.json`` files, read and run exactly as Hugging Face ``tokenizers`` runs them.

- :mod:`.tokenizer_json` — read a file into plain data, refusing what Tokenplay cannot run exactly;
- :mod:`.added_tokens` — find the added tokens in text before the model runs;
- :mod:`.normalizers`, :mod:`.pretokenizers` — the file's pipeline steps, cutting where ``tokenizers`` cuts;
- :mod:`.unicode` — characters as ``tokenizers`` sees them (its Unicode tables, older than Python's);
- :mod:`.bert_text` — characters as BERT's normalizer and pre-tokenizer see them, and that normalizer;
- :mod:`.library` — a file run by the ``tokenizers`` library itself: the reference our engines are held to;
- :mod:`.npm_models` — the models shipped through npm (Llama 3 and 3.1, Llama 2, Qwen3 and Qwen2.5, DeepSeek V3 and
  V4, Gemma 3 and 2, Mistral Nemo, Claude's early vocabulary), as data.

Our own engines run the models on this pipeline: byte-level BPE (:mod:`app.engines.bpe.json_model`),
SentencePiece-style BPE (:mod:`app.engines.sentencepiece.json_model`) and WordPiece
(:mod:`app.engines.wordpiece.model`).
"""
