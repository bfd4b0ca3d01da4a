"""Deterministic benchmark texts, built from material in this repository (no downloads).

``mixed_text(n)`` gives n characters of English prose, Python code, Japanese, Korean and emoji lines, shuffled
with a fixed seed so every run measures the same text.
"""

from __future__ import annotations

import random
from pathlib import Path

from helpers.samples import ALL

ROOT = Path(__file__).resolve().parents[2]


def _lines() -> list[str]:
    lines: list[str] = []
    for name, text in ALL.items():
        if name in ("mixed", "long_run"):
            continue
        lines.extend(line + "\n" for line in text.splitlines())
    for path in sorted((ROOT / "app").rglob("*.py")):
        lines.extend(line + "\n" for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line.strip()]


def mixed_text(n_chars: int, seed: int = 1234, lines: list[str] | None = None) -> str:
    """``n_chars`` characters of ``lines`` (default: the samples and this project's code) in a seeded shuffle."""
    rng = random.Random(seed)
    lines = _lines() if lines is None else lines
    out: list[str] = []
    size = 0
    while size < n_chars:
        line = rng.choice(lines)
        out.append(line)
        size += len(line)
    return "".join(out)[:n_chars]
