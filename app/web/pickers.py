"""Which tokenizers a request may use and which its pickers list, including the ones a user trained in the lab.

Every route that takes a tokenizer name resolves it through :class:`Tokenizers` (the ``TokenizersDep``
dependency), so the playground, compare, chat and the API accept exactly the same names. Lab tokenizers
(``lab-<run id>``) belong to the browser that put them in the playground (cookie ``tp_lab``, set by "use in
playground"): only that browser sees them listed (``GET /api/tokenizers`` included) and may use them; to anyone
else the name is unknown. A lab tokenizer trained through another worker process is loaded from the shared run
store on first use, so any worker can serve it. Uploaded tokenizers (cookie ``tp_tok``, :mod:`app.web.uploads`)
are the same, by the name their browser chose, and never enter the process-wide registry.

:func:`picker_groups` is what every picker shows (``templates/_picker.html``): one entry per model, grouped by
maker, each with its vocabulary size and its engines (the registry's ``model`` relation: ``native-llama-3`` is the
Tokenplay engine of the ``llama-3`` entry), and the model names it is known by (the registry's aliases: typing
``gpt-4o`` or ``gpt-4o-2024-05-13`` finds ``o200k_base``). The form still submits registry names, so URLs and the
API are the same whichever engine a user chose.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.engines import budget, registry
from app.engines.base import Tokenizer
from app.engines.errors import UnknownTokenizerError
from app.engines.registry import TokenizerSpec
from app.lab.service import Lab
from app.lab.tokenizers import PREFIX, cookie_ids, is_lab_name, register_run, user_tokenizers

from .uploads import Upload, Uploads


class Tokenizers:
    """The tokenizers one request may use (``get``, ``resolve``) and list (``listed``)."""

    def __init__(self, lab: Lab, cookie: str | None, max_registered: int, uploads: Uploads, upload_cookie: str | None):
        self.lab = lab
        self.cookie = cookie
        self.max_registered = max_registered
        self.mine = {PREFIX + run_id for run_id in cookie_ids(cookie)}  # this browser's lab tokenizers
        self.uploads = uploads
        self.upload_cookie = upload_cookie
        self._uploaded: dict[str, Upload] | None = None
        self._listed: list[TokenizerSpec] | None = None

    @property
    def uploaded(self) -> dict[str, Upload]:
        """This browser's uploaded tokenizers by each name they are used by (a tokenizer.json's ``native-`` twin
        too; read from the store when first asked)."""
        if self._uploaded is None:
            self._uploaded = {name: u for u in self.uploads.mine(self.upload_cookie) for name in u.engines}
        return self._uploaded

    def resolve(self, name: str) -> str:
        """The registered name for ``name`` or an alias of it; a lab run registered by another worker process is
        loaded from the run store first. Raises :class:`UnknownTokenizerError` (which lists the valid names)."""
        if self.upload_cookie and name in self.uploaded:
            return name
        if is_lab_name(name):
            if name not in self.mine:
                raise UnknownTokenizerError(name, [s.name for s in self.listed()])
            if name not in registry.names():
                run = self.lab.get(name[len(PREFIX) :])
                if run is not None and run.status == "done":
                    register_run(run, self.max_registered)
        try:
            return registry.resolve(name)
        except UnknownTokenizerError:
            raise UnknownTokenizerError(name, [s.name for s in self.listed()]) from None

    def get(self, name: str) -> Tokenizer:
        name = self.resolve(name)
        upload = self.uploaded.get(name) if self.upload_cookie else None
        if upload is None:
            return registry.get(name)
        budget.untrusted()  # a user's file: the request moves to the lane of such work
        return self.uploads.tokenizer(upload, name)

    def chat_config(self, name: str) -> dict | None:
        """The tokenizer_config.json this browser brought with its uploaded tokenizer ``name`` (its chat template
        renders that tokenizer's chats), or None."""
        upload = self.uploaded.get(name) if self.upload_cookie else None
        if upload is None or upload.config is None:
            return None
        budget.untrusted()
        return upload.chat_config

    def listed(self) -> list[TokenizerSpec]:
        """The shipped tokenizers and this browser's lab tokenizers, in registry order (worked out once per
        request: a page asks for labels, picker groups and defaults, and each would read the run store again)."""
        if self._listed is None:
            shipped = [s for s in registry.specs() if not is_lab_name(s.name)]
            uploads = {u.id: u for u in self.uploaded.values()} if self.upload_cookie else {}
            uploaded = [spec for u in uploads.values() for spec in u.specs()]
            self._listed = shipped + user_tokenizers(self.cookie, self.lab) + uploaded
        return self._listed

    def known(self, names: Iterable[str]) -> list[str]:
        """The canonical names of those of ``names`` that resolve (unknown names in a shared URL are dropped)."""
        out = []
        for name in names:
            try:
                out.append(self.resolve(name))
            except LookupError:
                continue
        return out


#: The pickers' groups, in this order; a maker not listed here comes after Mistral, under its own name.
MAKERS = ("OpenAI", "Meta", "Qwen", "DeepSeek", "Google", "Mistral", "Anthropic", "AI21", "trained here", "yours")
#: An engine as a picker names it: by the library that runs it.
ENGINE_NAMES = {"tiktoken": "tiktoken", "huggingface": "tokenizers", "sentencepiece": "sentencepiece", "tokenplay": "Tokenplay"}


@dataclass(frozen=True)
class PickerEngine:
    """One engine of an entry: the registry name the form submits, and how the picker names the engine."""

    name: str
    engine: str
    label: str  # the registry's label ("Llama 3 (tokenplay engine)"), shown where the engine is not
    description: str


@dataclass(frozen=True)
class PickerEntry:
    """One row of a picker: a model, its vocabulary size, and the engines that run it (reference library first)."""

    name: str
    title: str
    maker: str
    n_vocab: int | None
    engines: tuple[PickerEngine, ...]
    models: tuple[str, ...] = ()  # the other names it is known by (gpt-4o, gpt-4.1...: the registry's aliases)
    prefixes: tuple[str, ...] = ()  # the beginnings of model names that resolve to it (gpt-4o- ...)

    @property
    def vocab(self) -> str:
        return f"{self.n_vocab:,}" if self.n_vocab else ""

    @property
    def search(self) -> str:
        """What typing in the picker matches: the title, the maker, every engine's name and label."""
        words = [self.title, self.maker, *(e.name for e in self.engines), *(e.label for e in self.engines)]
        return " ".join(words).lower()


@dataclass(frozen=True)
class PickerGroup:
    maker: str
    entries: tuple[PickerEntry, ...]


def _entry(engines: list[TokenizerSpec]) -> PickerEntry:
    first = engines[0]
    models, prefixes = registry.aliases_of(first.entry)
    return PickerEntry(
        name=first.entry,
        title=first.entry_title,
        maker=first.maker or "other",
        n_vocab=first.n_vocab,
        engines=tuple(
            PickerEngine(s.name, ENGINE_NAMES.get(s.engine, s.engine or s.family), s.label, s.description)
            for s in engines
        ),
        models=tuple(models),
        prefixes=tuple(prefixes),
    )


def picker_groups(listed: Iterable[TokenizerSpec], missing: Iterable[str] = ()) -> list[PickerGroup]:
    """The entries of ``listed`` grouped by maker (:data:`MAKERS` order, then any other maker), each group in
    registry order. Those of the ``missing`` names (the page's chosen names) that are not listed (a stale link's
    tokenizer) are listed last, once each, as unknown, so that the picker shows what the error message speaks of
    instead of silently showing another tokenizer."""
    listed = list(listed)
    names = {s.name for s in listed}
    missing = [n for n in dict.fromkeys(missing) if n and n not in names]
    by_maker: dict[str, list[PickerEntry]] = {}
    for engines in registry.entries(listed).values():
        entry = _entry(engines)
        by_maker.setdefault(entry.maker, []).append(entry)
    order = {maker: i for i, maker in enumerate(MAKERS)}
    late = order["trained here"] - 0.5  # other makers: after the model makers, before the user's own
    groups = [PickerGroup(m, tuple(by_maker[m])) for m in sorted(by_maker, key=lambda m: order.get(m, late))]
    unknown = tuple(
        PickerEntry(n, f"{n} (unknown)", "not found", None, (PickerEngine(n, "", f"{n} (unknown)", "no such tokenizer"),))
        for n in missing
    )
    return groups + [PickerGroup("not found", unknown)] if unknown else groups
