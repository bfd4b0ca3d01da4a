"""The ``.model`` file of a SentencePiece-style run (written by the SentencePiece-style trainer at the end)."""

from __future__ import annotations

from .export import ExportError
from .runs import Run


def model_bytes(run: Run) -> bytes:
    if not run.model:
        raise ExportError("this run has no SentencePiece .model (only SentencePiece-style runs do)")
    return run.model
