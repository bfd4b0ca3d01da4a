"""Every tokenizer the app knows, by name: one table of what to show about it and how to build it.

``registry.get("gpt-4o")`` is the tokenizer (built on first use), ``registry.specs()`` what the pickers list;
the shipped entries are registered the first time anything is looked up, and the lab and uploads add theirs
with :func:`register`.

- :mod:`.specs` — the table itself: :class:`TokenizerSpec`, :func:`register`, the aliases (OpenAI's model names);
- :mod:`.repo_ids` — Hugging Face repository ids of the shipped models (``meta-llama/Llama-3.1-8B-Instruct``);
- :mod:`.builtin` — the shipped entries (one per model and engine), registered on first use;
- :mod:`.files` — tokenizer files on disk used by name (``tokenplay serve --tokenizer``);
- :mod:`.loaders` — a tokenizer from the bytes of any file format (uploads, files, the lab's exports);
- :mod:`.memory` — memory freed after loading a big model, given back to the operating system;
- :mod:`.table_files` — tokenizers stored as table files, built once and memory-mapped by every process.
"""

from __future__ import annotations

import threading

from . import specs as _specs
from .specs import (
    ALIAS_PREFIXES,
    ALIASES,
    ENCODING_ENTRIES,
    TokenizerSpec,
    alias_target,
    aliases_of,
    entries,
    register,
    unregister,
)
from .repo_ids import REPO_IDS, looks_like_repo_id, repo_entry
from ..base import Tokenizer

__all__ = [
    "ALIAS_PREFIXES",
    "ALIASES",
    "ENCODING_ENTRIES",
    "REPO_IDS",
    "TokenizerSpec",
    "alias_target",
    "aliases_of",
    "closest_names",
    "entries",
    "get",
    "looks_like_repo_id",
    "names",
    "register",
    "repo_entry",
    "resolve",
    "spec",
    "specs",
    "unregister",
]


def names() -> list[str]:
    _ensure_builtins()
    return _specs.names()


def specs() -> list[TokenizerSpec]:
    _ensure_builtins()
    return _specs.specs()


def resolve(name: str) -> str:
    """The registered name for ``name`` or an alias of it."""
    _ensure_builtins()
    return _specs.resolve(name)


def closest_names(name: str, valid: list[str] | None = None) -> list[str]:
    """The names (``valid``, default every registered one), aliases and repository ids nearest to ``name``."""
    _ensure_builtins()
    return _specs.closest_names(name, valid)


def spec(name: str) -> TokenizerSpec:
    _ensure_builtins()
    return _specs.spec(name)


def get(name: str) -> Tokenizer:
    _ensure_builtins()
    return _specs.get(name)


_builtins_loaded = False
_BUILTINS_LOCK = threading.Lock()  # not the table's lock: registering the built-ins takes that one


def _ensure_builtins() -> None:
    """Register the shipped tokenizers once (imports are local so that importing this module stays cheap).

    The flag is set only after every built-in is registered, so a thread arriving meanwhile waits on the lock
    instead of seeing a half-filled registry.
    """
    global _builtins_loaded
    if _builtins_loaded:
        return
    with _BUILTINS_LOCK:
        if _builtins_loaded:
            return
        from . import builtin  # noqa: F401  (registers on import)

        # Every shipped tokenizer our own engines run is stored as a table (files named on the command line are
        # stored by their bytes instead, and the reference libraries build their own structures).
        _specs.store_registered(s.name for s in _specs.specs() if s.engine == "tokenplay" and s.family != "file")
        _builtins_loaded = True
