"""The token tax of every language (:mod:`app.features.languages`) for the tokenizers a browser may use: the
languages page, its exports and ``/api/languages``.

Names resolve through the request's :class:`~app.services.catalog.Tokenizers` (uploaded and lab tokenizers belong to
the browser, like on every other page), and each tokenizer is counted under what it *is* (:func:`identity`), so the
count cache never answers for another file or run given the same name later.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict

from app.engines.errors import TokenplayError
from app.features import languages as feature
from app.features.udhr import Declaration, corpus
from app.lab.run_tokenizers import PREFIX, is_lab_name

from .catalog import Tokenizers
from .errors import NotFoundError, TooLargeError, export_format

#: What /languages opens with: OpenAI's three generations, each counted in a fraction of a second.
PREFERRED_DEFAULTS = ("gpt2", "cl100k_base", "o200k_base")
#: Tokenizers one request may count (each new one reads all 532 texts).
MAX_TOKENIZERS = 32
EXPORT_FORMATS = ("csv", "json")

_UPLOAD_DIGESTS: OrderedDict[str, str] = OrderedDict()


def identity(tokenizers: Tokenizers, name: str) -> str:
    """What the tokenizer named ``name`` is, for the count cache: an uploaded file's content digest (its bytes,
    format, split pattern and special tokens), a lab run's id, or a shipped tokenizer's registry name (its files are
    pinned by sha256 and never replaced while the process runs). A name given to another file or run later names
    another identity, so counts never outlive what they counted."""
    canonical = tokenizers.resolve(name)
    upload = tokenizers.upload_of(canonical)
    if upload is not None:
        digest = _UPLOAD_DIGESTS.get(upload.id)
        if digest is None:
            h = hashlib.sha256(json.dumps([upload.format, upload.pattern, upload.special_tokens]).encode())
            h.update(upload.data)
            digest = _UPLOAD_DIGESTS[upload.id] = h.hexdigest()
            while len(_UPLOAD_DIGESTS) > 1024:
                _UPLOAD_DIGESTS.popitem(last=False)
        return "upload:" + digest
    if is_lab_name(canonical):
        return "lab:" + canonical[len(PREFIX) :]
    return "registry:" + canonical


def chosen_names(tokenizers: Tokenizers, names: list[str]) -> list[str]:
    """``names`` resolved (aliases counted once, in order); an unknown name raises (404 with the valid ones)."""
    chosen = list(dict.fromkeys(tokenizers.resolve(n) for n in names))
    if not chosen:
        raise TokenplayError("pick at least one tokenizer")
    if len(chosen) > MAX_TOKENIZERS:
        raise TooLargeError(f"{len(chosen)} tokenizers asked for; one request counts up to {MAX_TOKENIZERS}")
    return chosen


def count_table(tokenizers: Tokenizers, names: list[str], codes: list[str] | None = None) -> feature.LanguageTable:
    """Every language of ``codes`` (None: all) through every tokenizer of ``names``, counted or from the cache."""
    try:
        selected = [d.code for d in feature.select(corpus(), codes)] if codes is not None else None
    except feature.UnknownLanguageError as exc:
        raise NotFoundError(str(exc)) from None
    counts, added = {}, {}
    for name in chosen_names(tokenizers, names):
        tok = tokenizers.get(name)
        counts[name] = feature.token_counts(tok, identity(tokenizers, name))
        added[name] = tok.added_specials
    return feature.language_table(counts, selected, added=added)


def language(code: str) -> Declaration:
    """The declaration of ``code``, or :class:`NotFoundError` saying which codes exist."""
    declaration = corpus().get(code)
    if declaration is None:
        raise NotFoundError(
            f"no UDHR translation has the code {code!r}; use the udhr package's codes (eng, jpn, cmn_hans, arb...), "
            "listed by GET /api/languages"
        )
    return declaration


def default_selection(tokenizers: Tokenizers) -> list[str]:
    """The tokenizers the languages page opens with."""
    chosen = tokenizers.known(PREFERRED_DEFAULTS)
    return chosen or [s.name for s in tokenizers.listed()[:1]]


def descending(order: str | None, sort: str) -> bool:
    """Whether the table goes down: an explicit ``order`` wins; numbers go down by default (the costliest first),
    names up."""
    if order in ("asc", "desc"):
        return order == "desc"
    return sort not in ("name", "code", "script")


def export(
    fmt: str, tokenizers: Tokenizers, names: list[str], *, q: str, script: str, sort: str, order: str | None
) -> tuple[str, str]:
    """The languages the page's table shows, in its order, as a download in ``fmt`` (``csv``, or ``json`` in the
    shape of ``POST /api/languages``): its body and media type."""
    export_format(fmt, EXPORT_FORMATS)
    table = count_table(tokenizers, names)
    key = feature.sort_key(sort, list(table.tokenizers))
    rows = feature.view(table.rows, q=q, script=script, sort=key, descending=descending(order, key))
    incomplete = feature.view(table.incomplete, q=q, script=script, sort="name")
    if fmt == "csv":
        return feature.csv_text([*rows, *incomplete]), "text/csv; charset=utf-8"
    shown = feature.LanguageTable(table.tokenizers, tuple(rows), tuple(incomplete), table.english, table.digest)
    return json.dumps(shown.to_dict(), ensure_ascii=False, indent=1), "application/json"
