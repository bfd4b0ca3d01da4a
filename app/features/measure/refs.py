"""Tokenizers named so that any worker process, on any machine, can build them: :class:`TokenizerRef`.

A ref carries the name the report uses, a key saying *what* the tokenizer is (two names for one file share it),
and a picklable recipe that builds it: a registry name (:func:`registry_ref`: the shipped tokenizers and their
aliases, run the same everywhere Tokenplay is installed) or a tokenizer file's bytes and load options
(:func:`bytes_ref`: a file given by path, an uploaded tokenizer, a lab run's export), so a worker needs no access to
the files or stores of the machine that started the job. Each worker process builds a ref once
(:func:`encoders_for` keeps them by key).

The callers above this layer resolve names (uploads, lab runs) into refs; nothing here knows where those live.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from app.engines import registry
from app.engines.base import Tokenizer

from .encoders import Encoder, encoder_for


@dataclass(frozen=True)
class TokenizerRef:
    """A tokenizer to measure: ``name`` in the report, ``key`` what it is, ``build()`` makes it (picklable)."""

    name: str
    key: str
    build: Callable[[], Tokenizer] = field(compare=False, repr=False)


def registry_ref(name: str) -> TokenizerRef:
    """A registered tokenizer or alias (:class:`~app.engines.errors.UnknownTokenizerError` for another name); the
    report calls it by its registered name."""
    canonical = registry.resolve(name)
    return TokenizerRef(canonical, "registry:" + canonical, partial(registry.get, canonical))


def _load_bytes(data: bytes, name: str, options: dict) -> Tokenizer:
    from app.engines.registry.table_files import load_bytes

    return load_bytes(data, name=name, **options)


def bytes_ref(name: str, data: bytes, **options) -> TokenizerRef:
    """A tokenizer file's bytes, loaded with :func:`app.engines.registry.table_files.load_bytes` and ``options``
    (``engine``, ``pattern``, ``special_tokens``, ``filename``)."""
    digest = hashlib.sha256(data).hexdigest()
    shown = ",".join(f"{k}={v}" for k, v in sorted(options.items()) if k != "filename")
    return TokenizerRef(name, f"bytes:{digest}:{shown}", partial(_load_bytes, data, name, dict(options)))


def callable_ref(name: str, key: str, build: Callable[[], Tokenizer]) -> TokenizerRef:
    """Any picklable recipe (a lab run's own tokenizer, built from the run)."""
    return TokenizerRef(name, key, build)


_BUILT: dict[tuple[str, str], Encoder] = {}
_LOCK = threading.Lock()
#: Tokenizers kept built per process (each may hold a large vocabulary).
KEPT = 16


def encoders_for(refs: Sequence[TokenizerRef]) -> list[Encoder]:
    """An :class:`~.encoders.Encoder` for each ref, built once per process (by key and name)."""
    out = []
    for ref in refs:
        with _LOCK:
            enc = _BUILT.get((ref.key, ref.name))
        if enc is None:
            enc = encoder_for(ref.build(), ref.name)
            with _LOCK:
                _BUILT[(ref.key, ref.name)] = enc
                while len(_BUILT) > KEPT:
                    _BUILT.pop(next(iter(_BUILT)))
        out.append(enc)
    return out
