"""How a directory store sweeps what has expired: at most one sweep at a time in a process, and at most one a
minute unless forced (a request may ask for one each time; most find nothing to do).

Shared by the lab's run store (stores.DirectoryStore) and the class session store (session_stores.
DirectorySessionStore); what a sweep removes is each store's own business. Nothing here touches Redis, which
expires keys itself.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path


def entries(directory: Path) -> list[os.DirEntry] | None:
    """The entries of `directory`, or None when it cannot be read (not made yet, or gone)."""
    try:
        return list(os.scandir(directory))
    except OSError:
        return None


class Sweeps:
    """The gate in front of a store's sweep: `run(now, force, sweep)` calls `sweep(now)` and answers what it does,
    or answers 0 without calling it when the last sweep was less than `every` seconds ago (unless `force`) or
    another thread is sweeping now."""

    def __init__(self, every: float = 60.0):
        self.every = every
        self._last = float("-inf")
        self._lock = threading.Lock()

    def run(self, now: float, force: bool, sweep: Callable[[float], int]) -> int:
        if not force and now - self._last < self.every:
            return 0
        if not self._lock.acquire(blocking=False):
            return 0
        try:
            self._last = now
            return sweep(now)
        finally:
            self._lock.release()
