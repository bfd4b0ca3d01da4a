"""What every tokenizer picker shows (``templates/_picker.html``): one entry per model, grouped by maker, each with
its vocabulary size and its engines (the registry's ``model`` relation: ``native-llama-3`` is the Tokenplay engine
of the ``llama-3`` entry), and the model names it is known by (the registry's aliases: typing ``gpt-4o`` or
``gpt-4o-2024-05-13`` finds ``o200k_base``). The form still submits registry names, so URLs and the API are the
same whichever engine a user chose. Which tokenizers a browser may pick is :mod:`app.services.catalog`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.engines import registry
from app.engines.registry import TokenizerSpec


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
    # the Hugging Face repositories whose model it is: a search for Qwen/Qwen3-8B finds Qwen3
    models = [*models, *(repo for repo, entry in registry.REPO_IDS.items() if entry == first.entry)]
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
