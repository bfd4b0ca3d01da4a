"""SentencePiece tokenization, written for Tokenplay: run real ``.model`` files and train our own exactly as
``sentencepiece`` trains them.

- ``proto``: read and write the ``ModelProto`` protobuf by hand (no ``protobuf``/``sentencepiece`` at run time);
- ``normalizer``: the model's text normalization, with offsets back to the input;
- ``model``: :class:`SentencePieceTokenizer`, BPE encode/decode identical to the ``sentencepiece`` library;
- ``json_model``: SentencePiece-style ``tokenizer.json`` files (Gemma 3), and every BPE ``tokenizer.json`` that is
  not byte-level over all 256 bytes, in the same engine, identical to Hugging Face ``tokenizers``;
- ``unigram``, ``unigram_json``: unigram ``.model`` files (identical to ``sentencepiece``) and Unigram
  ``tokenizer.json`` files (identical to ``tokenizers``, whose Viterbi pass is its own);
- ``trainer_options``, ``training_corpus``, ``bpe_trainer``, ``unigram_trainer``: sentencepiece's own trainers
  (its options, its corpus loading, its BPE and unigram training) followed step for step: the same pieces, in the
  same order, with the same scores; every merge or round recorded as data for the lab.

The ``sentencepiece`` package is only the referee in tests and benchmarks; nothing here imports it.
"""

from .model import ModelLoadError, SentencePieceTokenizer

__all__ = ["ModelLoadError", "SentencePieceTokenizer"]
