"""The token tax of every language: one text (the UDHR, :mod:`app.features.udhr`) in 532 translations, counted by
any tokenizer, and each language's *premium*: its tokens over English's for the same tokenizer (English is 1).

- :func:`token_counts` counts every declaration with one tokenizer (``count_batch``: ``encode_batch``'s lengths, so
  the libraries that can use every core do, without the ids where an engine can) and keeps the counts by
  ``(identity, corpus digest)``: the second ask for a tokenizer is a look-up. The identity is the caller's name
  for *what the tokenizer is*, not what it is called: a shipped tokenizer's registry name, an uploaded file's id, a
  lab run's id. A tokenizer replaced under the same name has another identity, so its old counts are never served
  for it;
- :func:`language_table` turns counts into rows: complete translations (the ranking) and the incomplete ones apart
  with their stage; :func:`view` filters and sorts rows as the page and the CLI do; :func:`extremes` finds the
  worst and best languages of a tokenizer; :func:`csv_text` and :meth:`LanguageTable.to_dict` are the exports
  (``to_dict`` is also the answer of ``POST /api/languages``).

Nothing here knows about the web or the cookies that own uploaded and lab tokenizers: the caller resolves names.
"""

from __future__ import annotations

import csv
import hashlib
import io
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from app.engines.base import Tokenizer
from app.engines.errors import TokenplayError
from app.engines.pipeline.post_processor import NOTHING, AddedSpecials

from . import precomputed

from .udhr import ENGLISH, Corpus, Declaration, corpus

#: Tokenizers whose counts are kept per process (each: one number per declaration).
CACHED_TOKENIZERS = 256


class UnknownLanguageError(TokenplayError, LookupError):
    """A language code the package does not have."""


# -- counting -----------------------------------------------------------------------------------------------------


class CountCache:
    """Counts by ``(identity, digest)``, the least recently used dropped beyond ``size``; one tokenizer is counted
    once even when several requests ask for it at the same time (the others wait for its counts)."""

    def __init__(self, size: int = CACHED_TOKENIZERS):
        self.size = size
        self._counts: OrderedDict[tuple[str, str], dict[str, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._busy: dict[tuple[str, str], threading.Lock] = {}

    def get(self, key: tuple[str, str]) -> dict[str, int] | None:
        with self._lock:
            counts = self._counts.get(key)
            if counts is not None:
                self._counts.move_to_end(key)
            return counts

    def get_or_count(self, key: tuple[str, str], count) -> dict[str, int]:
        counts = self.get(key)
        if counts is not None:
            return counts
        with self._lock:
            busy = self._busy.setdefault(key, threading.Lock())
        try:
            with busy:
                counts = self.get(key)
                if counts is None:
                    counts = count()
                    with self._lock:
                        self._counts[key] = counts
                        while len(self._counts) > self.size:
                            self._counts.popitem(last=False)
        finally:
            with self._lock:
                self._busy.pop(key, None)
        return counts

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


CACHE = CountCache()


def count_all(tokenizer: Tokenizer, declarations: Sequence[Declaration]) -> dict[str, int]:
    """Tokens of every declaration's text: code -> count (special-token text stays plain text)."""
    counts = tokenizer.count_batch([d.text for d in declarations])
    return dict(zip((d.code for d in declarations), counts))


def token_counts(tokenizer: Tokenizer, identity: str, data: Corpus | None = None) -> dict[str, int]:
    """Code -> tokens of every declaration for ``tokenizer``, counted once per ``(identity, data.digest)``; a shipped
    tokenizer's counts come from the file computed ahead when there is one (and are written when there is none)."""
    data = data or corpus()
    return CACHE.get_or_count((identity, data.digest), lambda: _kept_counts(tokenizer, identity, data))


#: The languages page's default tokenizers, counted ahead by ``tokenplay precompute`` (make install).
PRECOMPUTED = ("gpt2", "cl100k_base", "o200k_base")
#: How a shipped tokenizer's identity begins (the web's count cache key: ``registry:gpt2``; the CLI's: ``gpt2``).
SHIPPED = "registry:"


def _counts_file(identity: str, data: Corpus) -> str | None:
    """The file of a shipped tokenizer's counts (a key of its name, the texts, the engines' code and the pinned
    data files), or None for anything else (an upload, a lab run, a file named on the command line)."""
    from app.engines import registry
    from app.engines.datafiles import data_dir
    from app.engines.registry.table_files import code_fingerprint

    name = identity.removeprefix(SHIPPED)
    if name not in registry.names() or registry.spec(name).family in ("lab", "file"):
        return None
    manifest = hashlib.sha256((data_dir() / "manifest.json").read_bytes()).hexdigest()
    code = precomputed.source_digest(__name__)
    return f"counts-{name}-{precomputed.key(name, data.digest, code_fingerprint(), manifest, code)}.json"


def _kept_counts(tokenizer: Tokenizer, identity: str, data: Corpus) -> dict[str, int]:
    name = _counts_file(identity, data)
    kept = precomputed.read(name) if name else None
    codes = [d.code for d in data.declarations]
    if isinstance(kept, dict) and list(kept) == codes and all(isinstance(v, int) for v in kept.values()):
        return kept
    counts = count_all(tokenizer, data.declarations)
    if name:
        precomputed.write(name, counts)
    return counts


def precompute(names: Sequence[str] = PRECOMPUTED) -> list[str]:
    """Count every declaration for each of ``names`` and write the counts' files (``tokenplay precompute``)."""
    from app.engines import registry

    data = corpus()
    written = []
    for name in names:
        _kept_counts(registry.get(name), SHIPPED + name, data)  # its file, read or written: not the memory cache
        written.append(_counts_file(name, data))
    return written


# -- the table ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One language through one tokenizer."""

    tokens: int
    chars: int
    bytes: int
    premium: float | None  # tokens / English's tokens for this tokenizer; None for an incomplete translation
    added: int = 0  # tokens the model's own default encoding adds around the text (a beginning-of-text token)

    @property
    def chars_per_token(self) -> float | None:
        return self.chars / self.tokens if self.tokens else None

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "count_with_specials": self.tokens + self.added, "chars": self.chars,
                "bytes": self.bytes, "premium": self.premium}


@dataclass(frozen=True)
class Row:
    """A language and its result per tokenizer (in the table's tokenizer order)."""

    declaration: Declaration
    results: dict[str, Result]

    def to_dict(self) -> dict:
        d = self.declaration
        out = {"code": d.code, "name": d.name, "bcp47": d.bcp47, "direction": d.direction}
        out |= {"iso6393": d.iso6393, "script": d.script, "stage": d.stage}
        return out | {"results": {name: r.to_dict() for name, r in self.results.items()}}


@dataclass(frozen=True)
class LanguageTable:
    """Every asked-for language through every asked-for tokenizer: ``rows`` the complete translations (ranked),
    ``incomplete`` the others (listed apart with their stage), ``english`` each tokenizer's English tokens."""

    tokenizers: tuple[str, ...]
    rows: tuple[Row, ...]
    incomplete: tuple[Row, ...]
    english: dict[str, int]
    digest: str
    added: dict[str, AddedSpecials] = field(default_factory=dict)  # per tokenizer: what its model adds to a text

    def to_dict(self) -> dict:
        """``POST /api/languages``' answer: ``languages`` (the ranking), ``incomplete``, and what was counted."""
        return {
            "tokenizers": list(self.tokenizers),
            "languages": [row.to_dict() for row in self.rows],
            "incomplete": [row.to_dict() for row in self.incomplete],
            "english": dict(self.english),
            "added_specials": {name: self.added.get(name, NOTHING).to_list() for name in self.tokenizers},
            "data": {"package": "udhr", "version": "6.0.0", "sha256": self.digest},
        }


def select(data: Corpus, codes: Iterable[str] | None) -> list[Declaration]:
    """The declarations of ``codes`` in that order, once each (None: all); an unknown code raises
    :class:`UnknownLanguageError`."""
    if codes is None:
        return list(data.declarations)
    chosen: dict[str, Declaration] = {}
    for code in codes:
        declaration = data.get(code)
        if declaration is None:
            raise UnknownLanguageError(
                f"unknown language code {code!r}: use the udhr package's codes (eng, jpn, cmn_hans, arb...), "
                "listed by GET /api/languages"
            )
        chosen.setdefault(declaration.code, declaration)
    return list(chosen.values())


def language_table(counts: dict[str, dict[str, int]], codes: Iterable[str] | None = None, data: Corpus | None = None,
                   added: dict[str, AddedSpecials] | None = None) -> LanguageTable:
    """Rows from ``counts`` (tokenizer name -> :func:`token_counts`), for ``codes`` (None: every language); ``added``
    says per tokenizer what its model's own default encoding adds around each text (``count_with_specials``)."""
    data = data or corpus()
    added = added or {}
    english = {name: per_code[ENGLISH] for name, per_code in counts.items()}
    rows, incomplete = [], []
    for d in select(data, codes):
        chars, size = d.chars, d.bytes
        results = {}
        for name, per_code in counts.items():
            tokens = per_code[d.code]
            premium = tokens / english[name] if d.complete and english[name] else None
            results[name] = Result(tokens, chars, size, premium, len(added.get(name, NOTHING)))
        (rows if d.complete else incomplete).append(Row(d, results))
    return LanguageTable(tuple(counts), tuple(rows), tuple(incomplete), english, data.digest, added)


# -- filter, sort, extremes ---------------------------------------------------------------------------------------

#: Sort keys that need no tokenizer; the others are ``<measure>:<tokenizer>`` with a measure of :data:`MEASURES`.
PLAIN_SORTS = ("name", "code", "script", "chars")
MEASURES = ("tokens", "premium", "cpt")  # cpt: characters per token


def sort_key(sort: str, tokenizers: Sequence[str]) -> str:
    """``sort`` if it names a column of a table of ``tokenizers``, else the default: the first one's premium.

    >>> sort_key("tokens:gpt2", ["gpt2"]), sort_key("bogus", ["gpt2", "qwen3"]), sort_key("name", [])
    ('tokens:gpt2', 'premium:gpt2', 'name')
    """
    measure, _, name = sort.partition(":")
    if sort in PLAIN_SORTS or (measure in MEASURES and name in tokenizers):
        return sort
    return f"premium:{tokenizers[0]}" if tokenizers else "name"


def _value(row: Row, sort: str):
    d = row.declaration
    if sort in ("name", "code", "script"):
        return getattr(d, sort).casefold()
    if sort == "chars":
        return d.chars
    measure, _, name = sort.partition(":")
    result = row.results[name]
    if measure == "tokens":
        return result.tokens
    return result.premium if measure == "premium" else result.chars_per_token


def view(rows: Iterable[Row], *, q: str = "", script: str = "", sort: str = "name", descending: bool = False) -> list[Row]:
    """``rows`` whose name, code, BCP 47 tag or script contains ``q`` (any case) and whose script is ``script``
    (when given), sorted by ``sort`` (:func:`sort_key`'s keys; ties by name; rows without a value last)."""
    needle = q.strip().casefold()
    out = []
    for row in rows:
        d = row.declaration
        if script and d.script != script:
            continue
        if needle and not any(needle in s.casefold() for s in (d.name, d.code, d.bcp47, d.script)):
            continue
        out.append(row)
    out.sort(key=lambda r: r.declaration.name.casefold())
    present = [r for r in out if _value(r, sort) is not None]
    missing = [r for r in out if _value(r, sort) is None]
    present.sort(key=lambda r: _value(r, sort), reverse=descending)
    return present + missing


def extremes(rows: Sequence[Row], tokenizer: str, n: int = 5) -> tuple[list[Row], list[Row]]:
    """The ``n`` rows with the highest premium for ``tokenizer`` (worst first) and the ``n`` lowest (best first)."""
    ranked = [r for r in rows if r.results[tokenizer].premium is not None]
    ranked.sort(key=lambda r: (r.results[tokenizer].premium, r.declaration.name.casefold()))
    return ranked[::-1][:n], ranked[:n]


def scripts(declarations: Iterable[Declaration]) -> list[tuple[str, int]]:
    """Each script of ``declarations`` with its number of languages, most languages first."""
    counts: dict[str, int] = {}
    for d in declarations:
        counts[d.script] = counts.get(d.script, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


# -- export -------------------------------------------------------------------------------------------------------

CSV_FIELDS = (
    "code", "name", "bcp47", "iso6393", "script", "direction", "stage", "complete",
    "tokenizer", "tokens", "chars", "bytes", "premium", "chars_per_token",
)  # fmt: skip


def csv_text(rows: Iterable[Row]) -> str:
    """One CSV line per language and tokenizer: the rows' order, each row's tokenizers in the table's order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for row in rows:
        d = row.declaration
        for name, r in row.results.items():
            cpt = r.chars_per_token
            writer.writerow([
                d.code, d.name, d.bcp47, d.iso6393, d.script, d.direction, d.stage, "yes" if d.complete else "no",
                name, r.tokens, r.chars, r.bytes, "" if r.premium is None else repr(r.premium),
                "" if cpt is None else repr(cpt),
            ])  # fmt: skip
    return out.getvalue()


def text_table(table: LanguageTable, rows: Sequence[Row], incomplete: Sequence[Row] = ()) -> str:
    """The rows as aligned text for a terminal (``tokenplay languages``): code, language, script, then each
    tokenizer's tokens and premium; the incomplete translations after them, with their stage."""
    names = table.tokenizers
    head = ["code", "language", "script"] + [f"{n} {m}" for n in names for m in ("tokens", "premium")]
    lines = [[d.code, _cut(d.name), d.script] + [v for n in names for v in _pair(r.results[n])] for r in rows for d in [r.declaration]]
    widths = [max(len(head[i]), *(len(line[i]) for line in lines)) if lines else len(head[i]) for i in range(len(head))]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [fmt(head), *map(fmt, lines)]
    out.append(f"{len(rows)} complete translations; English: " + ", ".join(f"{n} {table.english[n]:,} tokens" for n in names))
    if incomplete:
        out.append("")
        out.append("not ranked (incomplete translations):")
        for r in incomplete:
            d = r.declaration
            counts = ", ".join(f"{n} {r.results[n].tokens:,}" for n in names)
            out.append(f"  {d.code}  {d.name} (stage {d.stage}): {counts} tokens")
    return "\n".join(out) + "\n"


def _cut(name: str, width: int = 32) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _pair(r: Result) -> tuple[str, str]:
    return f"{r.tokens:,}", "–" if r.premium is None else f"{r.premium:.2f}x"
