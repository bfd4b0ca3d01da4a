"""Tokenizers a user brings ("Add a tokenizer…" in the pickers, ``POST /api/tokenizers``).

A file is checked by building its tokenizer (:func:`app.engines.registry.loaders.load_tokenizer`: a ``tokenizer.json``,
a ``.tiktoken`` with a split pattern and special tokens, a SentencePiece ``.model``, a Tokenplay BPE model): a file that
does not build is refused with the loader's message and nothing is stored. A ``tokenizer.json`` gets the two engines a
shipped one has: its name runs it with Hugging Face ``tokenizers``, ``native-<name>`` with Tokenplay's engine (the
native engine the explain view retraces), and it is kept only when both build, so every view of it works or none is offered.
A file that builds is kept as an :class:`Upload` in a store of the lab's kind (:mod:`app.lab.stores`: a directory,
or Redis; bounded in count and bytes; expiring), so every worker process and machine can serve it, and the browser
that brought it gets its id in a cookie (``tp_tok``). Tokenplay's engine of it is built once, in a process of its
own, into a table keyed by the file's bytes, which every worker maps (:mod:`app.engines.registry.table_files`). Only
that browser sees it listed and may use it, by the name it chose (:mod:`app.services.catalog`): nothing enters
the process-wide registry, so nobody else's pickers or API see it.

A tokenizer may come with its model's ``tokenizer_config.json`` (the ``config`` file): checked to hold a chat template
that compiles (:func:`app.features.chat.template.read_chat_config`), kept beside the tokenizer, and rendered by the
chat page and ``POST /api/chat`` for it (:meth:`Upload.chat_config`).
"""

from __future__ import annotations

import base64
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property, partial

from app.engines import budget as budgets
from app.engines import registry
from app.engines.base import Tokenizer
from app.engines.budget import run_isolated
from app.engines.errors import TokenplayError
from app.engines.registry.loaders import detect_format, regex_warnings
from app.engines.registry.table_files import load_bytes
from app.engines.registry import TokenizerSpec
from app.features.chat.template import read_chat_config

#: What goes before an uploaded tokenizer.json's name to name its Tokenplay engine (as ``native-llama-3``).
NATIVE = "native-"
#: Built tokenizers kept per process (each may hold a large vocabulary); older ones are rebuilt from the store.
BUILT_PER_PROCESS = 16
#: The largest tokenizer_config.json accepted (Gemma 3's, which lists its 6,415 added tokens, has 1.2 MB).
MAX_CONFIG_BYTES = 8 << 20
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class UploadError(TokenplayError):
    """An upload that cannot be kept: a name that is taken or not a name."""


@dataclass
class Upload:
    """A tokenizer file one browser brought, with what is needed to build it again."""

    id: str
    name: str  # what its browser calls it
    format: str  # tokenizer.json, tiktoken, sentencepiece or tokenplay-bpe
    data: bytes
    family: str
    n_vocab: int
    pattern: str | None = None  # .tiktoken files: the split pattern
    special_tokens: list[str] = field(default_factory=list)  # .tiktoken files
    created: float = field(default_factory=time.time)
    config: bytes | None = None  # the model's tokenizer_config.json, brought for its chat template
    #: What the upload's answer warns of (a regex that backtracks catastrophically); not stored.
    warnings: list[str] = field(default_factory=list, compare=False)

    finished = True  # what the stores ask of a record: an upload is complete when it is stored
    STORED_AS = "the tokenizer file"  # what a store's message calls it (a full disk)

    @property
    def label(self) -> str:
        return f"{self.name} (yours, {self.format}{' with its chat template' if self.config else ''})"

    @cached_property
    def chat_config(self) -> dict | None:
        """The tokenizer_config.json brought with the file, parsed (its chat template renders chats), or None."""
        return read_chat_config(self.config) if self.config is not None else None

    @property
    def engines(self) -> dict[str, str]:
        """Each name it is used by -> the engine that runs it (a tokenizer.json: the library's, and our native engine)."""
        if self.format == "tokenizer.json":
            return {self.name: "huggingface", NATIVE + self.name: "tokenplay"}
        return {self.name: "tokenplay"}

    def specs(self) -> list[TokenizerSpec]:
        """Its registry specs, one per engine (the reference library's first)."""
        out = []
        for name, engine in self.engines.items():
            native = name != self.name
            out.append(
                TokenizerSpec(
                    name=name,
                    label=f"{self.name} (yours, {self.format}, tokenplay engine)" if native else self.label,
                    family=self.family,
                    factory=lambda name=name: self.build(name),
                    description=f"uploaded {self.format} file"
                    + (" with its tokenizer_config.json" if self.config else "")
                    + (", run by Tokenplay's own engine" if native else ", run by Hugging Face tokenizers" if engine == "huggingface" else ""),
                    maker="yours",
                    n_vocab=self.n_vocab,
                    model=self.name if native else "",
                    engine=engine,
                    title=self.name,  # its picker group already says "yours"
                )
            )
        return out

    def build(self, name: str | None = None) -> Tokenizer:
        """The tokenizer of one of its names (default: its own name's engine); Tokenplay's engine from the table of
        its bytes (built once, in a process of its own, for every worker)."""
        name = name or self.name
        return load_bytes(
            self.data, name=name, pattern=self.pattern, special_tokens=self.special_tokens, engine=self.engines[name],
            untrusted=True,
        )

    def estimated_bytes(self) -> int:
        return 500 + len(self.data) + len(self.config or b"")

    def to_json(self, *, with_steps: bool = True) -> dict:
        return {
            "format": "tokenplay-upload/1",
            "id": self.id,
            "name": self.name,
            "file_format": self.format,
            "data": base64.b64encode(self.data).decode("ascii"),
            "family": self.family,
            "n_vocab": self.n_vocab,
            "pattern": self.pattern,
            "special_tokens": self.special_tokens,
            "created": self.created,
            "config": base64.b64encode(self.config).decode("ascii") if self.config is not None else None,
        }

    @classmethod
    def from_json(cls, d: dict) -> Upload:
        return cls(
            id=d["id"],
            name=d["name"],
            format=d["file_format"],
            data=base64.b64decode(d["data"]),
            family=d["family"],
            n_vocab=d["n_vocab"],
            pattern=d.get("pattern"),
            special_tokens=list(d.get("special_tokens") or []),
            created=d.get("created", 0.0),
            config=base64.b64decode(d["config"]) if d.get("config") is not None else None,
        )


_GENERIC = {"tokenizer", "model", "vocab", "spiece", "sentencepiece", "merges", "ranks"}


def default_name(filename: str) -> str:
    """A name from an uploaded file's name: its stem made a name, ``my-`` before a generic one.

    >>> default_name("my bpe.json"), default_name("tokenizer.json"), default_name("o200k_base.tiktoken")
    ('my-bpe', 'my-tokenizer', 'o200k_base')
    """
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", filename.rsplit("/", 1)[-1].split(".", 1)[0]).strip("-._")[:60]
    return f"my-{stem or 'tokenizer'}" if not stem or stem.lower() in _GENERIC else stem


def free_name(base: str, taken) -> str:
    """``base``, or ``base-2``, ``base-3``... whichever ``taken`` says is free first.

    >>> free_name("gpt2", {"gpt2", "gpt2-2"}.__contains__)
    'gpt2-3'
    """
    name, n = base, 1
    while taken(name):
        n += 1
        if n > 1000:  # every numbered name taken (or all naming one model): ask for a name rather than loop on
            raise UploadError(f"no free name like {base!r}; give the tokenizer a name")
        name = f"{base[:60]}-{n}"
    return name


class Uploads:
    """The uploads of the app: a store of :class:`Upload` records and the tokenizers built from them."""

    def __init__(self, store, budget_seconds: float | None = None):
        self.store = store
        self.budget_seconds = budget_seconds  # what a request on a user's file may take (said in warnings)
        self._built: OrderedDict[tuple[str, str], Tokenizer] = OrderedDict()  # (upload id, name) -> tokenizer
        self._lock = threading.Lock()
        self._loading: dict[tuple[str, str], threading.Lock] = {}  # one per (upload, name) being built: one build

    @classmethod
    def from_settings(cls, settings) -> Uploads:
        from app.lab.stores import DirectoryStore, RedisStore, redis_url

        common = {"max_runs": 64, "max_bytes": settings.uploads_memory_bytes, "ttl": settings.uploads_ttl_seconds}
        url = redis_url(settings)
        if url:
            store = RedisStore(url, prefix="tokenplay:uploads:", max_store_bytes=settings.uploads_store_bytes,
                               record=Upload, **common)
        else:
            store = DirectoryStore(settings.uploads_dir, max_store_bytes=settings.uploads_store_bytes, record=Upload,
                                   **common)
        return cls(store, settings.user_code_seconds)

    def add(
        self,
        data: bytes,
        *,
        name: str | None = None,
        filename: str = "",
        taken: set[str],
        pattern: str | None = None,
        special_tokens: list[str] = (),
        config: bytes | None = None,
    ) -> Upload:
        """Check ``data`` by building its tokenizer, then keep it as ``name`` (``taken``: the names the browser
        can already use). Without a name, one is made from ``filename`` (``gpt2.tiktoken`` is ``gpt2-2`` when
        ``gpt2`` is taken). ``config``, a tokenizer_config.json, must hold a chat template. Raises the loader's
        error, the config's (:class:`~app.features.chat.template.ChatConfigError`), or :class:`UploadError`; stores
        nothing then."""
        kind = detect_format(data)
        native = kind == "tokenizer.json"  # its Tokenplay engine is named too

        def is_taken(n: str) -> bool:
            return n in taken or _is_registered(n) or (native and (NATIVE + n in taken or _is_registered(NATIVE + n)))

        if name is None:
            base = default_name(filename)
            if registry.alias_target(base) is not None:  # gpt-4o-x.json: every gpt-4o-x-N would name a model too
                base = f"my-{base}"
            name = free_name(base, is_taken)
        if not _NAME.fullmatch(name):
            raise UploadError(
                f"{name!r} is not a tokenizer name: use letters, digits, '.', '_' and '-' (up to 64), starting "
                "with a letter or digit"
            )
        if name in taken or _is_registered(name):
            raise UploadError(f"the name {name!r} is taken (a shipped tokenizer or one of yours); choose another name")
        if is_taken(name):
            raise UploadError(
                f"the name {name!r} is taken: its Tokenplay engine would be {NATIVE + name!r}, which is taken (a shipped "
                "tokenizer or one of yours); choose another name"
            )
        if config is not None:
            read_chat_config(config)  # before the (slower) tokenizer: a config without a template is refused
        built = {}
        if native:  # both engines must run it: Tokenplay's (its message names what it cannot model) and the library's
            built[NATIVE + name] = load_bytes(data, name=NATIVE + name, filename=filename)
            built[name] = load_bytes(data, name=name, engine="huggingface", filename=filename, untrusted=True)
        else:
            built[name] = load_bytes(
                data, name=name, pattern=pattern, special_tokens=list(special_tokens), filename=filename
            )
        tok = built[name]
        warnings = _regex_warnings(data, kind, pattern, self.budget_seconds)
        upload = Upload(
            id=secrets.token_hex(6),
            name=name,
            format=kind,
            data=data,
            family="upload",
            n_vocab=tok.n_vocab,
            pattern=pattern if kind == "tiktoken" else None,
            special_tokens=list(special_tokens) if kind == "tiktoken" else [],
            config=config,
            warnings=warnings,
        )
        try:
            self.store.put(upload)
        except BaseException:
            self.store.mem.drop(upload.id)  # not stored (a full disk): not kept here either
            raise
        for built_name, built_tok in built.items():
            self._keep(upload, built_name, built_tok)
        return upload

    def mine(self, ids: list[str]) -> list[Upload]:
        """The uploads of ``ids`` (those a browser brought) that are still stored."""
        return [u for u in map(self.store.get, ids) if u is not None]

    def tokenizer(self, upload: Upload, name: str | None = None) -> Tokenizer:
        """The tokenizer of ``upload`` under one of its names (default: its own), loaded once per process however
        many requests ask at once (a few are kept)."""
        name = name or upload.name
        with self._lock:
            tok = self._built.get((upload.id, name))
            if tok is not None:
                self._built.move_to_end((upload.id, name))
                return tok
            loading = self._loading.setdefault((upload.id, name), threading.Lock())
        with loading:
            with self._lock:
                tok = self._built.get((upload.id, name))
            if tok is None:
                tok = self._keep(upload, name, upload.build(name))
        with self._lock:
            self._loading.pop((upload.id, name), None)
        return tok

    def _keep(self, upload: Upload, name: str, tok: Tokenizer) -> Tokenizer:
        if name == upload.name and len(upload.engines) > 1:
            # the library's engine is retraced by the native engine built from the same bytes (app.features.explain)
            tok.native_engine = lambda: self.tokenizer(upload, NATIVE + upload.name)
        with self._lock:
            self._built[(upload.id, name)] = tok
            while len(self._built) > BUILT_PER_PROCESS:
                self._built.popitem(last=False)
        return tok


def _regex_warnings(data: bytes, kind: str, pattern: str | None, budget_seconds: float | None) -> list[str]:
    """:func:`~app.engines.registry.loaders.regex_warnings`, in a child process: finding a file's regexes parses it
    (a 33 MB tokenizer.json holds the GIL for two seconds), which would stall every request this process serves.
    It runs without the request's budget: the probes' own limits bound it."""
    if kind != "tokenizer.json":  # a .tiktoken file's one pattern, or none: nothing to parse
        return regex_warnings(data, kind, pattern, budget_seconds=budget_seconds)
    with budgets.use(None):
        return run_isolated(partial(regex_warnings, budget_seconds=budget_seconds), data, kind, pattern,
                            what="checking the file's regexes", memory_bytes=4 << 30)


def _is_registered(name: str) -> bool:
    if name in registry.ALIASES:
        return True
    try:
        registry.resolve(name)
    except LookupError:
        return False
    return True

