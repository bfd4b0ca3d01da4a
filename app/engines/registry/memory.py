"""Give memory freed while loading a big tokenizer back to the operating system.

Reading a tokenizer.json builds large temporary structures (Python's JSON objects, the Rust library's own parse);
glibc keeps the freed heap for later use, so a worker that loaded Gemma 3 would hold some 300 MB it no longer uses.
:func:`release_freed_memory` asks glibc to return it (``malloc_trim``); elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache


@cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc
        return None


def release_freed_memory() -> None:
    """Return the free heap to the operating system where the C library can."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
