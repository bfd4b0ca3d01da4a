"""What the vocabulary views compute once and keep: JSON documents by key, in memory and, given a directory, on
disk, so a second worker process or a restarted server reads them back instead of computing them again.

Keys name what was computed and the vocabulary's fingerprint (:attr:`~.tokens.Vocabulary.fingerprint`), so a
document is never served for another vocabulary. Files are written to a temporary name and renamed; a damaged or
unreadable file is computed again; a directory that cannot be written leaves the document in memory only. Two
processes asked for the same document compute it once: the second waits on a lock file, then reads it.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from weakref import WeakKeyDictionary

from app.engines.errors import TokenplayError


class JSONStore:
    """JSON documents by key; :meth:`get_or_compute` computes each once however many threads ask at once."""

    def __init__(self, directory: Path | str | None = None):
        self.directory = Path(directory) if directory is not None else None
        self._docs: dict[str, object] = {}
        self._lock = threading.Lock()
        self._busy: dict[str, threading.Lock] = {}

    def _path(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / f"{key}.json"

    def get(self, key: str):
        """The document of ``key`` if it was computed (here or by another process), else None."""
        found = self._docs.get(key)
        if found is None:
            found = self._read(key)
            if found is not None:
                self._docs[key] = found
        return found

    def get_or_compute(self, key: str, compute: Callable[[], object]):
        found = self._docs.get(key)
        if found is not None:
            return found
        with self._lock:
            busy = self._busy.setdefault(key, threading.Lock())
        with busy, self._file_lock(key):  # another process computing the same document: wait for it, then read it
            found = self.get(key)
            if found is None:
                found = compute()
                self._write(key, found)
                self._docs[key] = found
        return found

    @contextmanager
    def _file_lock(self, key: str):
        """An exclusive lock on ``key`` across processes (flock on a file beside the document), or none without a
        directory (or where it cannot be made)."""
        path = self._path(key)
        handle = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                handle = open(path.with_name(f".{path.name}.lock"), "a+b")
                fcntl.flock(handle, fcntl.LOCK_EX)
            except OSError:
                if handle is not None:
                    handle.close()
                handle = None
        try:
            yield
        finally:
            if handle is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()

    def _read(self, key: str):
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # a damaged file is computed again

    def _write(self, key: str, doc) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only directory: the document stays in memory


class PerTokenizer:
    """A value computed once per tokenizer object and dropped with it, each tokenizer under a lock of its own (one
    slow vocabulary holds up no other). A :class:`~app.engines.errors.TokenplayError` the computation raises is kept
    and raised again, so a tokenizer that has no merges is not looked at again on every request."""

    def __init__(self, build: Callable):
        self.build = build
        self._values: WeakKeyDictionary = WeakKeyDictionary()
        self._locks: WeakKeyDictionary = WeakKeyDictionary()
        self._lock = threading.Lock()

    def __call__(self, tok):
        found = self._values.get(tok)
        if found is None:
            with self._lock:
                lock = self._locks.setdefault(tok, threading.Lock())
            with lock:
                found = self._values.get(tok)
                if found is None:
                    try:
                        found = (self.build(tok), None)
                    except TokenplayError as exc:
                        found = (None, exc)
                    self._values[tok] = found
        value, error = found
        if error is not None:
            raise error
        return value
