"""Knowing a vocabulary (:mod:`app.features.vocab`, :mod:`app.features.numbers`) for the tokenizers a browser may use:
the vocabulary pages, their exports and ``/api/vocab/...``, ``/api/numbers``.

Names resolve through the request's :class:`~app.services.catalog.Tokenizers`; an unknown one is a 404 that says where
the list is. What takes seconds is computed once per vocabulary and kept (:class:`~app.features.vocab.store.JSONStore`,
in memory and in ``settings.vocab_cache_dir``): the health reports, the merge trees of tiktoken's encodings, the
number facts. :func:`warm` computes them ahead for the shipped tokenizers (a thread the app starts), so a first visit
reads them; a page asked before they are ready says so and asks again (:func:`health_table`'s ``pending``).
"""

from __future__ import annotations

import csv
import io
import logging
import threading
from collections.abc import Iterable, Sequence
from weakref import WeakKeyDictionary

from app.engines import registry
from app.engines.errors import UnknownTokenizerError
from app.features import numbers as numbers_feature
from app.features.vocab import browser, health as health_feature
from app.features.vocab.characters import characters as characters_feature
from app.features.vocab.merges import merge_model
from app.features.vocab.overlap import overlap as overlap_feature
from app.features.vocab.store import JSONStore
from app.features.vocab.tokens import vocabulary
from app.settings import Settings

from .catalog import Tokenizers
from .errors import TooLargeError, check_text_size

logger = logging.getLogger(__name__)

#: Tokenizers one ladder chart, one characters table may show.
MAX_LADDER_TOKENIZERS = 4
MAX_CHARACTER_TOKENIZERS = 6
#: The default sizes of a ladder: a common grid of vocabulary sizes, each tokenizer's own range kept.
LADDER_GRID = (256, 512, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 200_000, 262_144)


class UnknownVocabTokenizerError(UnknownTokenizerError):
    """An unknown tokenizer name, with where the list is."""

    def __init__(self, name: str, valid: list[str]):
        super().__init__(name, valid)
        self.args = (f"unknown tokenizer {name!r}; the tokenizers are listed at /api/tokenizers",)


def resolve(tokenizers: Tokenizers, name: str) -> str:
    try:
        return tokenizers.resolve(name)
    except UnknownTokenizerError as exc:
        raise UnknownVocabTokenizerError(name, exc.valid) from None


def tokenizer(tokenizers: Tokenizers, name: str):
    return tokenizers.get(resolve(tokenizers, name))


# -- the stores --------------------------------------------------------------------------------------------------------
_STORES: dict[str, JSONStore] = {}
_STORES_LOCK = threading.Lock()


def store(settings: Settings) -> JSONStore:
    """The store of this cache directory (one per process)."""
    key = str(settings.vocab_cache_dir)
    with _STORES_LOCK:
        found = _STORES.get(key)
        if found is None:
            found = _STORES[key] = JSONStore(settings.vocab_cache_dir)
        return found


def _health_store(settings: Settings) -> health_feature.HealthStore:
    key = "health:" + str(settings.vocab_cache_dir)
    with _STORES_LOCK:
        found = _STORES.get(key)
        if found is None:
            found = _STORES[key] = health_feature.HealthStore(settings.vocab_cache_dir)
        return found


# -- the browser -------------------------------------------------------------------------------------------------------
_INDEXES: dict[str, WeakKeyDictionary] = {}


def index(tok, settings: Settings) -> browser.VocabIndex:
    """The browser of ``tok``, its ranks and merge tree kept in this settings' store (one per tokenizer object)."""
    key, docs = str(settings.vocab_cache_dir), store(settings)
    with _STORES_LOCK:
        indexes = _INDEXES.setdefault(key, WeakKeyDictionary())
        found = indexes.get(tok)
    if found is None:  # read outside the lock: one vocabulary being read holds up no other
        made = browser.VocabIndex(tok, docs)
        with _STORES_LOCK:
            found = indexes.setdefault(tok, made)
    return found


def page(tokenizers: Tokenizers, name: str, settings: Settings, *, offset: int = 0, limit: int = 100, q: str = "",
         kind: str = "") -> dict:
    return index(tokenizer(tokenizers, name), settings).page(offset=offset, limit=limit, q=q, kind=kind)


def token(tokenizers: Tokenizers, name: str, token_id: int, settings: Settings) -> dict:
    return index(tokenizer(tokenizers, name), settings).token(token_id)


def facts(tokenizers: Tokenizers, name: str, settings: Settings) -> dict:
    """What the browser's head says: the tokenizer's n_vocab (the reference library's figure), its tokens, special
    tokens, whether it has merges, its base tokens and ranks."""
    tok = tokenizer(tokenizers, name)
    found = index(tok, settings)
    ranks = found.ranks
    return {
        "tokenizer": tok.name,
        "n_vocab": tok.n_vocab,
        "tokens": len(found.vocab.ids),
        "special": len(found.vocab.special),
        "merge_based": ranks["merge_based"],
        "base": ranks["base"],
        "ranks": ranks["ranks"],
    }


# -- the ladder --------------------------------------------------------------------------------------------------------
def default_sizes(tokenizers: Tokenizers, name: str) -> list[int]:
    """The grid's sizes within the tokenizer's range, its first and last rank included."""
    model = merge_model(tokenizer(tokenizers, name))
    inside = [k for k in LADDER_GRID if model.n_base < k < model.size]
    return [model.n_base, *inside, model.size]


def ladder(tokenizers: Tokenizers, name: str, text: str, sizes: Sequence[int] | None, settings: Settings) -> dict:
    check_text_size(text, settings)
    tok = tokenizer(tokenizers, name)
    model = merge_model(tok)
    chosen = list(sizes) if sizes else default_sizes(tokenizers, name)
    points = model.ladder(text, chosen)
    return {"tokenizer": tok.name, "points": [{"size": k, "tokens": n} for k, n in points],
            "base": model.n_base, "ranks": model.size}


def ladders(tokenizers: Tokenizers, names: Sequence[str], text: str, settings: Settings) -> list[dict]:
    names = list(dict.fromkeys(resolve(tokenizers, n) for n in names))
    if len(names) > MAX_LADDER_TOKENIZERS:
        raise TooLargeError(f"{len(names)} tokenizers; a ladder chart shows up to {MAX_LADDER_TOKENIZERS}")
    return [ladder(tokenizers, n, text, None, settings) for n in names]


# -- health ------------------------------------------------------------------------------------------------------------
def health(tokenizers: Tokenizers, name: str, settings: Settings, text: str | None = None) -> dict:
    """The health report of one tokenizer (computed once, kept); with ``text``, what it leaves unused."""
    tok = tokenizer(tokenizers, name)
    report = _health_store(settings).report(tok)
    if text is not None:
        check_text_size(text, settings)
        report = {**report, **health_feature.usage(tok, text)}
    return report


def shipped_entries() -> list[str]:
    """Every shipped model once, by its reference engine (a ``native-*`` twin has the same vocabulary)."""
    return [s.name for s in registry.specs() if s.name == s.entry and s.family not in ("lab", "file")]


_HEALTH_WORKER: dict[str, threading.Thread] = {}


def _compute_pending(settings: Settings, names: list[str]) -> None:
    """Compute the reports of ``names`` one by one in a background thread of this process (one at a time)."""
    key = str(settings.vocab_cache_dir)
    with _STORES_LOCK:
        running = _HEALTH_WORKER.get(key)
        if running is not None and running.is_alive():
            return

        def work() -> None:
            health_store = _health_store(settings)
            for name in names:
                try:
                    health_store.report(registry.get(name))
                except Exception:  # noqa: BLE001 - one tokenizer that fails leaves the others to compute
                    logger.exception("vocabulary health of %s", name)

        thread = _HEALTH_WORKER[key] = threading.Thread(target=work, name="vocab-health", daemon=True)
        thread.start()


def health_table(settings: Settings, *, wait: bool = False) -> dict:
    """The report of every shipped tokenizer that is ready (all of them with ``wait``), and the names still
    computing (``pending``), whose reports a background thread then computes (the page asks again)."""
    health_store = _health_store(settings)
    rows, pending = [], []
    for name in shipped_entries():
        tok = registry.get(name)
        key = f"health-{vocabulary(tok).fingerprint}"
        found = health_store.get(key)
        if found is None and wait:
            found = health_store.report(tok)
        if found is None:
            pending.append(name)
        else:
            rows.append({**found, "tokenizer": name, "label": registry.spec(name).entry_title})
    if pending:
        _compute_pending(settings, pending)
    return {"rows": rows, "pending": pending, "meanings": health_feature.MEANINGS}


def health_csv(settings: Settings) -> str:
    table = health_table(settings, wait=True)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(health_feature.CSV_COLUMNS)
    writer.writerows(health_feature.csv_rows(table["rows"]))
    return out.getvalue()


# -- two vocabularies, characters, numbers -----------------------------------------------------------------------------
def overlap(tokenizers: Tokenizers, a: str, b: str) -> dict:
    return overlap_feature(tokenizer(tokenizers, a), tokenizer(tokenizers, b))


def characters(tokenizers: Tokenizers, text: str, names: Sequence[str]) -> dict:
    names = list(dict.fromkeys(resolve(tokenizers, n) for n in names))
    if len(names) > MAX_CHARACTER_TOKENIZERS:
        raise TooLargeError(f"{len(names)} tokenizers; the characters table shows up to {MAX_CHARACTER_TOKENIZERS}")
    return characters_feature(text, [tokenizers.get(n) for n in names])


def numbers(tokenizers: Tokenizers, name: str, settings: Settings) -> dict:
    tok = tokenizer(tokenizers, name)
    key = f"numbers-{vocabulary(tok).fingerprint}"
    found = store(settings).get_or_compute(key, lambda: numbers_feature.number_facts(tok))
    return {**found, "tokenizer": tok.name}


_NUMBER_TABLES: dict[tuple[str, ...], dict] = {}


def numbers_table(names: Iterable[str] | None = None) -> dict:
    """Every shipped tokenizer (or ``names``) on the sample numbers, made once per process: the shipped files do not
    change while it runs."""
    key = tuple(names) if names is not None else tuple(shipped_entries())
    found = _NUMBER_TABLES.get(key)
    if found is None:
        found = _NUMBER_TABLES[key] = numbers_feature.number_table([registry.get(n) for n in key])
    return found


# -- ahead of time -----------------------------------------------------------------------------------------------------
def warm(settings: Settings, names: Iterable[str] | None = None) -> None:
    """Compute what the vocabulary pages read for the shipped tokenizers and keep it on disk: each one's health
    report, merge tree and number facts (seconds each). The server runs it in a background process at low priority
    (``python -m app.services.vocab``); a worker asked for a document meanwhile waits for it rather than computing it
    twice (:class:`~app.features.vocab.store.JSONStore`)."""
    names = list(names) if names is not None else shipped_entries()
    health_store, docs = _health_store(settings), store(settings)
    for name in names:
        try:
            tok = registry.get(name)
            health_store.report(tok)
            found = index(tok, settings)
            found.ranks  # noqa: B018 - computed and kept on disk
            found.token(found.vocab.ids[-1])  # the merge tree, computed and kept
            docs.get_or_compute(f"numbers-{vocabulary(tok).fingerprint}", lambda: numbers_feature.number_facts(tok))
        except Exception:  # noqa: BLE001 - one tokenizer that fails leaves the others to compute
            logger.exception("vocab warm-up: %s", name)


def read_vocabularies(names: Iterable[str] | None = None) -> int:
    """Read every shipped vocabulary (what the browser pages through), so that a first visit reads none: the server
    does it before it forks its workers, which then share them. Returns how many were read."""
    count = 0
    for name in names if names is not None else shipped_entries():
        try:
            vocabulary(registry.get(name))
            count += 1
        except Exception:  # noqa: BLE001 - a tokenizer that fails to load is the page's error, not the server's
            logger.exception("reading the vocabulary of %s", name)
    return count


if __name__ == "__main__":  # the server's background process: python -m app.services.vocab
    logging.basicConfig(level=logging.WARNING)
    warm(Settings())
