"""Counts as the model sees them (issue 37): the tokens its own default encoding adds around a text, and, for a model
name, its context window and input price. The API writes these as fields, the pages as words.

- :func:`added` — ``added_specials`` (the tokens a model's default encoding adds: BOS, ``[CLS]``/``[SEP]``; the
  engines read them from the model's files, :mod:`app.engines.pipeline.post_processor`) and ``count_with_specials``;
- :func:`facts` — for a model name (``gpt-4o``, ``llama-3.1``, ``meta-llama/Llama-3.1-8B-Instruct``; not an encoding
  such as ``cl100k_base``), ``context_window`` and ``price_per_million_input`` from the dated data file
  (:mod:`app.features.model_facts`), with ``prices_date``; a missing or malformed file gives none, never an error;
- :func:`added_words`, :func:`facts_words` — the same in the pages' words: "2 tokens + 1 the model adds (<bos>)",
  "3% of its 128,000-token context window".
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from app.engines.base import Tokenizer
from app.features import model_facts
from app.features.model_facts import FactsTable, ModelFacts
from app.settings import Settings


def added(tokenizer: Tokenizer, count: int) -> dict:
    """``{"added_specials": [{"id", "text", "at"}...], "count_with_specials": n}`` for a text of ``count`` tokens.

    A chat prompt is the exception (:func:`prompt_added`): its template writes the model's markup itself.
    """
    specials = tokenizer.added_specials
    return {"added_specials": specials.to_list(), "count_with_specials": count + len(specials)}


def prompt_added(count: int) -> dict:
    """A chat prompt rendered by its template: the template wrote the beginning-of-text token and every other mark
    the model reads, and ``apply_chat_template(..., tokenize=True)`` adds nothing more (``add_special_tokens`` off)."""
    return {"added_specials": [], "count_with_specials": count}


@lru_cache(maxsize=8)
def _table(path: Path | None) -> FactsTable:
    return model_facts.load(path) if path is not None else model_facts.shipped()


def facts_table(settings: Settings) -> FactsTable:
    """The facts of ``settings.model_facts_file`` (read once per process), else of the shipped file."""
    return _table(settings.model_facts_file)


def model_of(name: str, settings: Settings) -> ModelFacts | None:
    """The facts of the model ``name`` stands for, or None (an encoding, an unknown name, no facts file)."""
    return facts_table(settings).lookup(name)


def facts(name: str, settings: Settings) -> dict:
    """``context_window``, ``price_per_million_input`` and ``prices_date`` for a model name; ``{}`` for anything
    else (an encoding, a file, a lab run); ``{"prices_note": ...}`` when the facts file could not be read."""
    table = facts_table(settings)
    if table.note:
        return {"prices_note": table.note}
    found = table.lookup(name)
    if found is None:
        return {}
    return {
        "context_window": found.context_window,
        "price_per_million_input": found.price_per_million_input,
        "prices_date": facts_table(settings).prices_date,
    }


def added_words(tokenizer: Tokenizer, count: int) -> str:
    """What a page says beside a count: "" when the model adds nothing, else "+ 1 the model adds (<bos>)".

    >>> from app.engines.pipeline.post_processor import bos
    >>> class T: added_specials = bos(2, "<bos>", "its post-processor")
    >>> added_words(T(), 2)
    '+ 1 the model adds (<bos>)'
    """
    specials = tokenizer.added_specials
    if not len(specials):
        return ""
    return f"+ {len(specials)} the model adds ({', '.join(specials.texts)})"


def facts_words(found: ModelFacts, tokens: int, prices_date: str | None) -> dict:
    """The share of the window and the price in words, for a page (each None when not known)."""
    share = found.share(tokens)
    cost = found.cost(tokens)
    return {
        "model": found.model,
        "window": None if share is None else f"{_percent(share)} of its {found.context_window:,}-token context window",
        "over": share is not None and share > 1,
        "price": None if cost is None else (
            f"{_usd(cost)} as input at {_usd(found.price_per_million_input)} per million tokens "
            f"(prices of {prices_date})"
        ),
    }


def _usd(amount: float) -> str:
    """Dollars with cents, more digits below a cent.

    >>> _usd(2.5), _usd(0.15), _usd(0.075), _usd(0.0000055), _usd(0)
    ('$2.50', '$0.15', '$0.075', '$0.0000055', '$0.00')
    """
    if amount == 0 or round(amount, 2) == amount or amount >= 1:
        return f"${amount:,.2f}"
    return "$" + f"{amount:.10f}".rstrip("0")


def _percent(share: float) -> str:
    """``0.0123`` -> ``1.2%``; a small share keeps two significant digits.

    >>> _percent(0.5), _percent(0.000012), _percent(2.5), _percent(1e-9)
    ('50%', '0.0012%', '250%', 'under 0.0001%')
    """
    pct = share * 100
    if pct >= 10:
        return f"{pct:.0f}%"
    if pct >= 1:
        return f"{pct:.1f}%"
    if pct < 0.0001:
        return "under 0.0001%"
    return f"{pct:.2g}%"


def caveat(tokenizer: Tokenizer) -> str:
    """What a page must say beside this tokenizer's counts ("" for most: a shipped entry's caveat, such as the
    estimate that Claude's early vocabulary gives for today's models)."""
    from app.engines import registry

    try:
        return registry.spec(tokenizer.name).caveat
    except (KeyError, LookupError, ValueError):
        return ""  # an upload or a lab run: no shipped entry, nothing to warn about


def page_view(tokenizer: Tokenizer, count: int, settings: Settings, model: str = "") -> dict:
    """A page's words about a count: what the model adds, the model's window and price (``model``: the model name
    the page was asked for, when it is not the tokenizer's own name: ``gpt-4o`` for ``o200k_base``), a caveat."""
    table = facts_table(settings)
    found = (table.lookup(model) if model else None) or table.lookup(tokenizer.name)
    with_specials = count + len(tokenizer.added_specials)
    return {
        "added_words": added_words(tokenizer, count),
        "count_with_specials": with_specials,
        # a model whose window and price are both unknown has nothing to show (Claude's early vocabulary)
        "facts": facts_words(found, with_specials, table.prices_date)
        if found and (found.context_window or found.price_per_million_input is not None) else None,
        "facts_note": table.note,
        "caveat": caveat(tokenizer),
    }
