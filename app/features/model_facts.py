"""Context windows and list prices of the models Tokenplay resolves by name: the share of its window a text takes,
and what its tokens cost as input.

The facts come from one dated data file, ``tokenizers/model-facts.json`` (checked against the manifest like every
data file), which names a source for each model; a price is there only where a source states the maker's public
list price. A model is found by the name a user gave: an OpenAI model name (``gpt-4o``), a shipped model
(``llama-3.1``, or its ``native-*`` engine), or a Hugging Face repository id (listed itself, else as the model it
resolves to). An encoding name (``cl100k_base``) or a dated snapshot (``gpt-4o-2024-05-13``, priced differently)
is no model here: it has no facts.

A file that is missing or malformed never fails a request: :func:`load` answers an empty table whose ``note`` says
why, and callers show no prices.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from app.engines import registry
from app.engines.datafiles import verified_bytes
from app.engines.errors import TokenplayError

DATA_FILE = "model-facts.json"  # a manifest key: tokenizers/model-facts.json


@dataclass(frozen=True)
class ModelFacts:
    """One model's context window (tokens) and input price (USD per million tokens); None where not known."""

    model: str  # the name the facts are listed under
    context_window: int | None
    price_per_million_input: float | None
    source: str  # where they were read, in words
    note: str = ""

    def share(self, tokens: int) -> float | None:
        """The part of the context window ``tokens`` take (1.0: all of it; more: it does not fit).

        >>> ModelFacts("m", 128_000, 2.5, "s").share(32_000)
        0.25
        """
        return None if not self.context_window else tokens / self.context_window

    def cost(self, tokens: int) -> float | None:
        """What ``tokens`` input tokens cost at the list price, in USD.

        >>> ModelFacts("m", 128_000, 2.5, "s").cost(1_000_000)
        2.5
        """
        return None if self.price_per_million_input is None else tokens * self.price_per_million_input / 1_000_000

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "context_window": self.context_window,
            "price_per_million_input": self.price_per_million_input,
            "source": self.source,
            "note": self.note,
        }


@dataclass(frozen=True)
class FactsTable:
    """Every model's facts by lower-cased name, the date the prices were read, and a note when the file could not
    be read (then the table is empty)."""

    models: dict[str, ModelFacts] = field(default_factory=dict)
    prices_date: str | None = None
    currency: str = "USD"
    note: str = ""

    def lookup(self, name: str) -> ModelFacts | None:
        """The facts of the model ``name`` stands for, or None (see the module docstring)."""
        found = self.models.get(name.strip().lower())
        if found is not None:
            return found
        entry = registry.repo_entry(name) if registry.looks_like_repo_id(name) else None
        if entry is None:
            try:
                spec = registry.spec(name)
            except TokenplayError:
                return None
            # a shipped model's other engine (native-llama-3.1) is the same model; an alias is not looked through
            # (gpt-4o-2024-05-13 is o200k_base, which is no model)
            entry = spec.entry if name in registry.names() else None
        return None if entry is None else self.models.get(entry.lower())


class FactsFileError(TokenplayError):
    """A model facts file that cannot be read (its message says what is wrong)."""


def parse(data: bytes | str) -> FactsTable:
    """A facts file's table; :class:`FactsFileError` saying what is wrong when it is not one."""
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FactsFileError(f"it is not JSON ({exc})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("models"), dict) or not isinstance(obj.get("sources"), dict):
        raise FactsFileError('it needs a "models" object and a "sources" object')
    date, currency = obj.get("prices_date"), obj.get("currency", "USD")
    if not isinstance(date, str) or not date or not isinstance(currency, str):
        raise FactsFileError('"prices_date" must be the date the prices were read, and "currency" a currency code')
    sources: dict = obj["sources"]
    models = {}
    for name, entry in obj["models"].items():
        if not isinstance(entry, dict):
            raise FactsFileError(f"model {name!r} must be an object")
        window, price = entry.get("context_window"), entry.get("price_per_million_input")
        if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window <= 0):
            raise FactsFileError(f"model {name!r}: context_window must be a positive whole number or null")
        if price is not None and (
            not isinstance(price, (int, float)) or isinstance(price, bool) or not math.isfinite(price) or price < 0
        ):
            raise FactsFileError(f"model {name!r}: price_per_million_input must be a number of at least 0 or null")
        source = entry.get("source")
        if source not in sources:
            raise FactsFileError(f"model {name!r}: its source {source!r} is not one of the file's sources")
        where = sources[source] + (f" ({entry['repository']})" if entry.get("repository") else "")
        models[name.lower()] = ModelFacts(name, window, None if price is None else float(price), where,
                                          str(entry.get("note") or ""))
    return FactsTable(models, date, currency)


def load(path: Path | None = None) -> FactsTable:
    """The facts of ``path`` (default: the shipped file, its sha256 checked against the manifest). Never raises:
    a file missing, damaged or malformed gives an empty table whose ``note`` says so."""
    where = str(path) if path is not None else f"tokenizers/{DATA_FILE}"
    try:
        data = path.read_bytes() if path is not None else verified_bytes(DATA_FILE)
        return parse(data)
    except (OSError, TokenplayError) as exc:
        return FactsTable(note=f"no context windows or prices: {where} cannot be read ({exc})")


@cache
def shipped() -> FactsTable:
    """The shipped file's table, read once per process."""
    return load()
