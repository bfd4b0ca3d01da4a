"""SentencePiece-style tokenization, written for Tokenplay: run real ``.model`` files and train our own.

- ``proto``: read and write the ``ModelProto`` protobuf by hand (no ``protobuf``/``sentencepiece`` at run time);
- ``normalizer``: the model's text normalization, with offsets back to the input;
- ``model``: :class:`SentencePieceTokenizer`, BPE encode/decode identical to the ``sentencepiece`` library;
- ``json_model``: SentencePiece-style ``tokenizer.json`` files (Gemma 3), and every BPE ``tokenizer.json`` that is
  not byte-level over all 256 bytes, in the same engine, identical to Hugging Face ``tokenizers``;
- ``unigram``, ``unigram_json``: unigram ``.model`` files (identical to ``sentencepiece``) and Unigram
  ``tokenizer.json`` files (identical to ``tokenizers``, whose Viterbi pass is its own);
- ``trainer``: a SentencePiece-style BPE trainer that records its merges as ``MergeStep`` data and saves a real
  ``.model`` file.

The ``sentencepiece`` package is only the referee in tests and benchmarks; nothing here imports it.
"""

from .model import ModelLoadError, SentencePieceTokenizer
from .trainer import (
    SentencePieceTrainerState,
    SentencePieceTrainingError,
    TrainedSentencePiece,
    train_sentencepiece,
)

__all__ = [
    "ModelLoadError",
    "SentencePieceTokenizer",
    "SentencePieceTrainerState",
    "SentencePieceTrainingError",
    "TrainedSentencePiece",
    "train_sentencepiece",
]
