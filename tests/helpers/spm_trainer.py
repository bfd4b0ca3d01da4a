"""The referee of the lab's and the engine's SentencePiece trainers: ``sentencepiece``'s own trainer, single-threaded,
on a corpus written one sentence a line (what ``SentencePieceTrainer.train`` reads)."""

from __future__ import annotations

import io

import sentencepiece as spm

from app.engines.sentencepiece.proto import ModelProto


def reference_model(tmp_path, text: str, vocab_size: int, model_type: str, **options) -> bytes:
    """The ``.model`` sentencepiece trains on ``text`` with ``options`` (its own names), as bytes; raises the
    ``RuntimeError`` it raises for a size or options it refuses."""
    path = tmp_path / f"corpus-{model_type}-{vocab_size}.txt"
    path.write_text(text, encoding="utf-8")
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(input=str(path), model_type=model_type, vocab_size=vocab_size, num_threads=1,
                                   model_writer=out, minloglevel=2, **options)
    return out.getvalue()


def reference(tmp_path, text: str, vocab_size: int, model_type: str, **options) -> ModelProto:
    """:func:`reference_model`, parsed."""
    return ModelProto.parse(reference_model(tmp_path, text, vocab_size, model_type, **options))


def processor(model: bytes) -> spm.SentencePieceProcessor:
    return spm.SentencePieceProcessor(model_proto=model)
