"""Small corpora of real text for the measure tests, written to a temporary folder in every format measure reads.

Documents are pieces of the five real-text corpora (:mod:`helpers.realtext`), whole lines each, tagged with their
language; the same documents can be written as .jsonl, .txt files, Parquet, gzip and zstd.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from helpers import realtext


def documents(per_language: int = 12, chars: int = 600, seed: int = 0) -> list[dict]:
    """``per_language`` documents of about ``chars`` characters from each corpus, interleaved: ``{"text", "lang"}``."""
    realtext.require()
    by_lang = {name: realtext.slices(name, per_language, chars, seed) for name in realtext.NAMES}
    out = []
    for k in range(per_language):
        for name in realtext.NAMES:
            out.append({"text": by_lang[name][k], "lang": name})
    return out


def jsonl_bytes(docs: list[dict]) -> bytes:
    return b"".join(orjson.dumps(d) + b"\n" for d in docs)


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    data = jsonl_bytes(docs)
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    elif path.name.endswith((".zst", ".zstd")):
        import zstandard

        data = zstandard.ZstdCompressor().compress(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def write_parquet(path: Path, docs: list[dict], row_group_size: int = 7) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"text": [d["text"] for d in docs], "lang": [d["lang"] for d in docs]})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def write_texts(folder: Path, docs: list[dict]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, d in enumerate(docs):
        p = folder / f"{k:03d}-{d['lang']}.txt"
        p.write_text(d["text"], encoding="utf-8")
        paths.append(p)
    return paths


def fixtures():
    """A test module's ``docs`` (five documents of about 500 characters per language) and ``corpus`` (them as one
    .jsonl file with their language) fixtures: ``docs, corpus = measure_corpus.fixtures()``."""

    @pytest.fixture(scope="module")
    def docs() -> list[dict]:
        return documents(per_language=5, chars=500)

    @pytest.fixture(scope="module")
    def corpus(tmp_path_factory, docs) -> Path:
        return write_jsonl(tmp_path_factory.mktemp("measure") / "docs.jsonl", docs)

    return docs, corpus
