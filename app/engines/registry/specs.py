"""The table of tokenizers: one :class:`TokenizerSpec` per name, and the tokenizers built from them.

A :class:`TokenizerSpec` is the whole description of a tokenizer, available without loading anything: its name,
its label, who made the model, which engine runs it, its vocabulary size. ``get("gpt-4o")`` resolves the alias
to ``o200k_base``, builds the tokenizer with the spec's zero-argument factory the first time, and returns the
same object afterwards (like tiktoken's registry). Every OpenAI model name tiktoken knows is an alias of the
encoding tiktoken gives it, exact names and name beginnings alike (``gpt-4o-2024-05-13`` too). An unknown name
raises :class:`UnknownTokenizerError`, which lists the valid names. This module is the table alone: the shipped
entries (:mod:`.builtin`) and tokenizer files (:mod:`.files`) register into it, and the app reads it through
:mod:`app.engines.registry`, which registers the shipped entries on first use.

A model can be run by more than one engine (OpenAI's ranks by tiktoken and by our own BPE engine): each engine
is its own registry entry, and ``spec.model`` names the entry it is an engine of, so pickers show one row per
model with the engine as a secondary choice.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace as _with
from typing import Callable, Iterable

from ..base import Tokenizer
from ..errors import UnknownTokenizerError
from ..openai.model_names import MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING
from .repo_ids import closest, repo_entry


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
    stored: bool = False  # built once into a table file that every process maps (.tables), not by each process
    caveat: str = ""  # what a page must say beside its counts, in words (counts for other models are estimates)

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
_LOADING: dict[str, threading.Lock] = {}  # one lock per name being built: others load meanwhile

#: tiktoken's encodings that are registered under another name: r50k_base is gpt2's ranks, pattern and special token.
ENCODING_ENTRIES = {"r50k_base": "gpt2"}


def _entry_of(encoding: str) -> str:
    return ENCODING_ENTRIES.get(encoding, encoding)


#: Other names of registered tokenizers: every OpenAI model name tiktoken maps to an encoding (``gpt-4o``,
#: ``text-embedding-3-small``, ``davinci``...; :mod:`..openai.model_names`, copied from tiktoken), then a few of our own.
ALIASES: dict[str, str] = {
    model: _entry_of(encoding) for model, encoding in MODEL_TO_ENCODING.items() if model != _entry_of(encoding)
} | {
    "gpt-4o-mini": "o200k_base",  # tiktoken maps it by its beginning (gpt-4o-); named here, it is listed too
    "r50k_base": "gpt2",
    "gpt-oss": "o200k_harmony",
}
#: Beginnings of OpenAI model names (``gpt-4o-`` for ``gpt-4o-2024-05-13``), tried in tiktoken's order when a name is
#: neither registered nor an alias: the first that the name starts with wins.
ALIAS_PREFIXES: dict[str, str] = {prefix: _entry_of(encoding) for prefix, encoding in MODEL_PREFIX_TO_ENCODING.items()}


def alias_target(name: str) -> str | None:
    """The tokenizer an alias, an OpenAI model name or a Hugging Face repository id stands for, or None (registered
    names are not looked at).

    >>> alias_target("gpt-4o"), alias_target("gpt-4o-2024-05-13"), alias_target("gpt-oss-120b"), alias_target("x")
    ('o200k_base', 'o200k_base', 'o200k_harmony', None)
    >>> alias_target("meta-llama/Llama-3.1-8B-Instruct"), alias_target("deepseek-ai/DeepSeek-V3")
    ('llama-3.1', 'deepseek-v3')
    """
    target = ALIASES.get(name)
    if target is None:
        target = next((entry for prefix, entry in ALIAS_PREFIXES.items() if name.startswith(prefix)), None)
    if target is None and "/" in name:
        target = repo_entry(name)
    return target


def aliases_of(name: str) -> tuple[list[str], list[str]]:
    """The aliases and the model name beginnings that resolve to ``name``, each in table order.

    >>> aliases_of("o200k_harmony")
    (['gpt-oss'], ['gpt-oss-'])
    """
    return [a for a, t in ALIASES.items() if t == name], [p for p, t in ALIAS_PREFIXES.items() if t == name]


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
    """The registered name for ``name``, an alias of it or an OpenAI model name (as tiktoken maps them:
    ``gpt-4o-2024-05-13`` is ``o200k_base``)."""
    if name in _SPECS:
        return name
    target = alias_target(name)
    if target is not None and target in _SPECS:
        return target
    raise UnknownTokenizerError(name, names(), closest_names(name))


def closest_names(name: str, valid: list[str] | None = None) -> list[str]:
    """The names, aliases and repository ids nearest to an unknown ``name`` (what a 404 suggests)."""
    known = [*(names() if valid is None else valid), *ALIASES]
    return closest(name, known)


def spec(name: str) -> TokenizerSpec:
    return _SPECS[resolve(name)]


def get(name: str) -> Tokenizer:
    """The tokenizer ``name`` stands for, built the first time: once per process however many threads ask at once
    (each name has its own lock, so one tokenizer loading holds up no other)."""
    canonical = resolve(name)
    tok = _BUILT.get(canonical)
    if tok is not None:
        return tok
    with _LOCK:
        loading = _LOADING.setdefault(canonical, threading.Lock())
    with loading:
        tok = _BUILT.get(canonical)
        if tok is None:
            spec = _SPECS[canonical]
            if spec.stored:
                from .table_files import load_registered  # a table file, built once for every process

                tok = load_registered(canonical, spec.factory)
            else:
                tok = spec.factory()
            tok.name = canonical
            with _LOCK:
                if _SPECS.get(canonical) is spec:  # not unregistered or replaced meanwhile
                    _BUILT[canonical] = tok
    return tok


def store_registered(names) -> None:
    """Mark the tokenizers ``names`` as stored in tables (:mod:`.table_files`): the shipped ones our engines run."""
    with _LOCK:
        for name in names:
            _SPECS[name] = _with(_SPECS[name], stored=True)
