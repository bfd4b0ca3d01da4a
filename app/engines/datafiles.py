"""Find the shipped tokenizer data files and check them against ``tokenizers/manifest.json``.

The data directory defaults to ``tokenizers/`` at the repository root; ``TOKENPLAY_DATA_DIR`` overrides it.
A file whose sha256 does not match the manifest refuses to load.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from pathlib import Path

from .errors import DataFileError

REPO_ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    return Path(os.environ.get("TOKENPLAY_DATA_DIR") or REPO_ROOT / "tokenizers")


@cache
def manifest() -> dict[str, dict]:
    path = data_dir() / "manifest.json"
    try:
        return json.loads(path.read_text())["files"]
    except FileNotFoundError:
        raise DataFileError(f"tokenizer manifest not found at {path}; set TOKENPLAY_DATA_DIR") from None


def expected_sha256(rel: str) -> str:
    try:
        return manifest()[rel]["sha256"]
    except KeyError:
        raise DataFileError(f"{rel} is not listed in tokenizers/manifest.json") from None


def data_path(rel: str) -> Path:
    path = data_dir() / rel
    if not path.is_file():
        raise DataFileError(f"tokenizer data file {path} is missing; run scripts/build_tokenizer_data.py")
    return path


def verified_bytes(rel: str) -> bytes:
    """The file's bytes, after checking its sha256 against the manifest."""
    data = data_path(rel).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected_sha256(rel):
        raise DataFileError(
            f"{rel}: sha256 is {digest} but the manifest expects {expected_sha256(rel)}; "
            "the file is corrupt or was replaced, restore it (scripts/build_tokenizer_data.py)"
        )
    return data
