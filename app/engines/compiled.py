"""Which compiled twins of hot loops this process runs: the C extensions setup.py builds next to their Python loops
(``app/engines/_merge.c``, ``_lattice.c``, ``_train.c``, ``_unigram_train.c``).

Each twin is optional: a machine without a C compiler installs without it, and ``TOKENPLAY_PURE_PYTHON=1`` turns
them all off (the tests run both ways). This module only finds them; the modules that own the loops choose between
the twin and their Python loop, which give the same results.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any


def twin(module: str, name: str) -> Callable[..., Any] | None:
    """The function ``name`` of the compiled module ``app.engines.<module>``, or None when that was not built or
    ``TOKENPLAY_PURE_PYTHON=1``.

    >>> twin("_no_such_module", "merge") is None
    True
    """
    if os.environ.get("TOKENPLAY_PURE_PYTHON") == "1":
        return None
    try:
        return getattr(importlib.import_module(f"{__package__}.{module}"), name)
    except ImportError:  # built without a C compiler: the Python loop does the same, slower
        return None
