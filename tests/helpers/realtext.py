"""The real-text corpora that tests and benchmarks read: English, Spanish, Japanese and Chinese technical prose,
and C code, 1 MB each (see the README next to them for their sources and licences).

They are never copied into the repository: they are looked for in ``$TOKENPLAY_CORPORA``, else in
``<repo>/../shared/corpora``, else in ``/work/shared/corpora``. A test that needs them calls :func:`require`
(it skips, saying where it looked, when they are absent); a benchmark checks :func:`available` and says so.
``bench/`` puts ``tests/`` on ``sys.path`` to share this module.
"""

from __future__ import annotations

import functools
import os
import random
from pathlib import Path

NAMES = ("en", "es", "ja", "zh", "c")


def _corpora_dir() -> Path:
    env = os.environ.get("TOKENPLAY_CORPORA")
    if env:
        return Path(env)
    beside = Path(__file__).resolve().parents[3] / "shared" / "corpora"
    return beside if beside.is_dir() else Path("/work/shared/corpora")


CORPORA_DIR = _corpora_dir()


def path(name: str) -> Path:
    return CORPORA_DIR / f"{name}.txt"


def available() -> bool:
    """True when every corpus file is there."""
    return all(path(name).is_file() for name in NAMES)


def require() -> None:
    """In a test: skip it, saying where the corpora were looked for, when they are absent."""
    if not available():
        import pytest

        pytest.skip(f"the real-text corpora ({', '.join(NAMES)}) are not in {CORPORA_DIR}; set TOKENPLAY_CORPORA")


@functools.cache
def read(name: str) -> str:
    """The whole corpus ``name`` (one of :data:`NAMES`)."""
    return path(name).read_text(encoding="utf-8")


@functools.cache
def _utf8(name: str) -> bytes:
    return read(name).encode("utf-8")


def excerpt(name: str, offset: int, size: int) -> str:
    """The text of ``size`` bytes of corpus ``name`` from byte ``offset`` (taken modulo what fits, so any offset
    gives a whole excerpt), without the pieces of characters cut at either end.

    Byte sizes, as "10 KB of ja.txt" means: about 3,300 Japanese characters, 10,000 English ones.
    """
    data = _utf8(name)
    start = offset % max(1, len(data) - size)
    return data[start : start + size].decode("utf-8", "ignore")


def slices(name: str, count: int, chars: int, seed: int = 0) -> list[str]:
    """``count`` pieces of corpus ``name`` of about ``chars`` characters each, made of whole lines, from
    positions drawn by a generator seeded with ``seed`` (the same pieces every time).

    A piece is at least one line: the lines from a drawn one for as long as they fit in ``chars``.
    """
    lines = read(name).splitlines(keepends=True)
    rng = random.Random(f"{name}/{seed}")
    out: list[str] = []
    for _ in range(count):
        i = rng.randrange(len(lines))
        piece = [lines[i]]
        size = len(lines[i])
        for line in lines[i + 1 :]:
            if size + len(line) > chars:
                break
            piece.append(line)
            size += len(line)
        out.append("".join(piece))
    return out


def unspaced(name: str, chars: int, seed: int = 0) -> str:
    """About ``chars`` characters of corpus ``name`` from a position drawn with ``seed``, every whitespace character
    taken out: one long run of words, as a hostile input pastes it."""
    text = read(name)
    start = random.Random(f"{name}/unspaced/{seed}").randrange(max(1, len(text) - 2 * chars))
    return "".join(text[start : start + 2 * chars].split())[:chars]


def long_runs(chars: int = 20_000) -> dict[str, str]:
    """Texts that an engine meets as one long run (no pre-tokenizer or chunking cut inside): one character
    ``chars`` times, and about ``chars`` characters of each corpus file with its whitespace taken out."""
    require()
    runs = {f"{c!r} x {chars:,}": c * chars for c in ("a", "ア", "😀", "=", "\u200d")}
    return runs | {f"{name}.txt, no whitespace": unspaced(name, chars) for name in NAMES}


def en_ja(chars: int = 7_500, seed: int = 0) -> str:
    """Exactly ``chars`` characters of real prose: English, then Japanese (half each), whole lines of each corpus
    from a position drawn with ``seed`` (the text ends wherever ``chars`` falls). The compare page's typing
    benchmark (bench/bench_compare.py) and its fragment-size test use it."""
    out = []
    for name, want in (("en", chars // 2), ("ja", chars - chars // 2)):
        lines = read(name).splitlines(keepends=True)
        i = random.Random(f"{name}/en_ja/{seed}").randrange(len(lines) // 2)
        piece = ""
        while len(piece) < want:
            piece += lines[i]
            i += 1
        out.append(piece[:want])
    return "".join(out)
