"""The table of tokenizers: one :class:`TokenizerSpec` per name, and the tokenizers built from them.

A :class:`TokenizerSpec` is the whole description of a tokenizer, available without loading anything: its name,
its label, who made the model, which engine runs it, its vocabulary size. ``get("gpt-4o")`` resolves the alias
to ``o200k_base``, builds the tokenizer with the spec's zero-argument factory the first time, and returns the
same object afterwards (like tiktoken's registry). An unknown name raises :class:`UnknownTokenizerError`, which
lists the valid names. This module is the table alone: the shipped entries (:mod:`.builtin`) and tokenizer
files (:mod:`.files`) register into it, and the app reads it through :mod:`app.engines.registry`, which
registers the shipped entries on first use.

A model can be run by more than one engine (OpenAI's ranks by tiktoken and by our own BPE engine): each engine
is its own registry entry, and ``spec.model`` names the entry it is an engine of, so pickers show one row per
model with the engine as a secondary choice.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Iterable

from ..base import Tokenizer
from ..errors import UnknownTokenizerError


@dataclass(frozen=True)
class TokenizerSpec:
    name: str
    label: str  # what a picker shows
    family: str  # the kind of engine that runs it: tiktoken, tokenplay-bpe, sentencepiece, lab, ...
    factory: Callable[[], Tokenizer]
    description: str = ""
    maker: str = ""  # who made the model (pickers group by it)
    n_vocab: int | None = None  # known before loading (checked against the loaded tokenizer by the tests)
    model: str = ""  # the entry this is another engine of ("" when it is its own entry)
    engine: str = ""  # which engine runs it, as a picker names it: "tiktoken", "tokenplay", ...
    title: str = ""  # the model as its picker entry names it, without the engine ("Llama 3"); default: the label

    @property
    def entry(self) -> str:
        """The picker entry this spec belongs to: ``model`` for a second engine, else its own name."""
        return self.model or self.name

    @property
    def entry_title(self) -> str:
        return self.title or self.label

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "label": self.label,
            "family": self.family,
            "description": self.description,
            "maker": self.maker,
            "n_vocab": self.n_vocab,
            "model": self.entry,
            "engine": self.engine,
        }


_SPECS: dict[str, TokenizerSpec] = {}
_BUILT: dict[str, Tokenizer] = {}
_LOCK = threading.Lock()

ALIASES: dict[str, str] = {
    "gpt-4o": "o200k_base",
    "gpt-4o-mini": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5-turbo": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base",
    "text-davinci-003": "p50k_base",
    "code-davinci-002": "p50k_base",
    "gpt-2": "gpt2",
    "r50k_base": "gpt2",
    "gpt-oss": "o200k_harmony",
}


def register(spec: TokenizerSpec, *, replace: bool = False) -> None:
    with _LOCK:
        if spec.name in _SPECS and not replace:
            raise ValueError(f"tokenizer {spec.name!r} is already registered")
        _SPECS[spec.name] = spec
        _BUILT.pop(spec.name, None)


def unregister(name: str) -> None:
    with _LOCK:
        _SPECS.pop(name, None)
        _BUILT.pop(name, None)


def names() -> list[str]:
    return list(_SPECS)


def specs() -> list[TokenizerSpec]:
    return list(_SPECS.values())


def entries(listed: Iterable[TokenizerSpec]) -> dict[str, list[TokenizerSpec]]:
    """``listed`` by picker entry, in order of first appearance: each model once, the spec named like the entry
    (its reference engine) first, then its other engines.

    >>> a, b = TokenizerSpec("m", "m", "x", list), TokenizerSpec("native-m", "m!", "y", list, model="m")
    >>> {entry: [s.name for s in engines] for entry, engines in entries([b, a]).items()}
    {'m': ['m', 'native-m']}
    """
    out: dict[str, list[TokenizerSpec]] = {}
    for spec in listed:
        out.setdefault(spec.entry, []).append(spec)
    for engines in out.values():
        engines.sort(key=lambda s: s.name != s.entry)  # stable: the other engines keep their order
    return out


def resolve(name: str) -> str:
    """The registered name for ``name`` or an alias of it."""
    if name in _SPECS:
        return name
    target = ALIASES.get(name)
    if target is not None and target in _SPECS:
        return target
    raise UnknownTokenizerError(name, names())


def spec(name: str) -> TokenizerSpec:
    return _SPECS[resolve(name)]


def get(name: str) -> Tokenizer:
    canonical = resolve(name)
    tok = _BUILT.get(canonical)
    if tok is not None:
        return tok
    with _LOCK:
        tok = _BUILT.get(canonical)
        if tok is None:
            tok = _SPECS[canonical].factory()
            tok.name = canonical
            _BUILT[canonical] = tok
    return tok
