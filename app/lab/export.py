"""Downloads of a run (our JSON; ``.tiktoken`` for byte-level, ``.model`` for SentencePiece BPE and unigram,
``tokenizer.json`` for WordPiece) and its chart."""

from __future__ import annotations

import json

from app.engines.errors import TokenplayError
from app.engines.result import escape_bytes

from .runs import Run


class ExportError(TokenplayError):
    """A run that cannot be written in the asked format."""


def to_json(run: Run) -> dict:
    vocab = run.vocab()
    if run.unigram:
        return {
            "format": "tokenplay-lab",
            "version": 1,
            "id": run.id,
            "options": run.options.to_dict(),
            "rounds": [r.to_dict() for r in run.steps],
            "vocab": {str(i): escape_bytes(vocab[i]) for i in range(run.extra["n_final"])},
        }
    return {
        "format": "tokenplay-lab",
        "version": 1,
        "id": run.id,
        "options": run.options.to_dict(),
        "base_vocab": {str(i): escape_bytes(b) for i, b in sorted(run.base.items())},
        "merges": [
            {"step": s.step, "pair": list(s.pair), "left": escape_bytes(s.left), "right": escape_bytes(s.right),
             "id": s.new_id, "token": escape_bytes(vocab[s.new_id]), "count": s.count, "forced": s.forced}
            for s in run.steps
        ],
        "vocab": {str(i): escape_bytes(b) for i, b in sorted(vocab.items())},
    }


def export(run: Run, fmt: str) -> tuple[bytes, str, str]:
    """(body, media type, file extension) of ``run`` in ``fmt``: ``json``, ``tiktoken`` or ``model``."""
    if fmt == "json":
        return json.dumps(to_json(run), ensure_ascii=False, indent=1).encode(), "application/json", "json"
    if fmt == "tiktoken":
        if run.options.algorithm != "byte":
            raise ExportError("the .tiktoken format holds byte-level vocabularies only; export this run as json")
        from app.engines.bpe import BPEModelError, BPETokenizer

        try:
            body = BPETokenizer([s.pair for s in run.steps], "none").tiktoken_ranks_text()
        except BPEModelError as exc:
            raise ExportError(str(exc)) from None
        return body.encode("ascii"), "text/plain", "tiktoken"
    if fmt == "model":
        if not run.model or run.options.algorithm not in ("sentencepiece", "unigram"):
            raise ExportError("the .model format is for SentencePiece BPE and unigram runs; export this run as json")
        return run.model, "application/octet-stream", "model"
    if fmt == "tokenizer.json":
        if run.options.algorithm != "wordpiece":
            raise ExportError("the tokenizer.json format is for WordPiece runs; export this run as json")
        return run.model, "application/json", "tokenizer.json"
    raise ExportError(f"unknown export format {fmt!r}; choose json, tiktoken, model or tokenizer.json")


# -- chart ---------------------------------------------------------------------------------------------------

W, H, PAD = 600, 180, 36


def chart(run: Run, k: int) -> dict:
    """An SVG line chart of compression (base units per token) against merges, with step ``k`` marked."""
    n = run.n_steps
    points = list(range(0, n + 1, max(1, n // 300)))
    if points[-1] != n:
        points.append(n)
    ys = [run.compression_at(i) for i in points]
    y_max = max(ys + [1.0])
    y_min = min(ys + [1.0]) if ys else 0.0
    y_min = min(y_min, 1.0)
    span = (y_max - y_min) or 1.0

    def x(i: int) -> float:
        return PAD + (W - 2 * PAD) * (i / n if n else 0)

    def y(v: float) -> float:
        return H - PAD + -(H - 2 * PAD) * ((v - y_min) / span)

    return {
        "w": W,
        "h": H,
        "pad": PAD,
        "points": " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in zip(points, ys)),
        "mx": round(x(k), 1),
        "my": round(y(run.compression_at(k)), 1),
        "value": round(run.compression_at(k), 3),
        "y_max": round(y_max, 2),
        "y_min": round(y_min, 2),
        "n": n,
        "unit": "bytes" if run.options.algorithm == "byte" else "characters",
        "steps": "rounds" if run.unigram else "merges",
    }
