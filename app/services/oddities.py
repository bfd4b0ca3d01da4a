"""The oddities gallery's entries (:mod:`app.features.oddities`), each row's text cut by its tokenizer live, and
one row's focus token explained."""

from __future__ import annotations

from dataclasses import dataclass

from app.engines.errors import TokenplayError
from app.engines.result import TokenizeResult
from app.features.explain import Explainer, Explanation
from app.features.oddities import Oddity, oddities

from .catalog import Tokenizers


@dataclass(slots=True)
class ShownRow:
    """One row of an entry: its text in its tokenizer, the index of its focus token, and (on the explained row)
    why that token is what it is, or why it cannot be said."""

    tokenizer: str
    text: str
    result: TokenizeResult
    index: int
    explanation: Explanation | None = None
    error: str | None = None


def token_at(result: TokenizeResult, offset: int) -> int:
    """The index of the first token of ``result`` that ends after character ``offset``."""
    tokens = result.tokens
    return next((i for i, t in enumerate(tokens) if t.end > offset), max(0, len(tokens) - 1))


def entry_rows(tokenizers: Tokenizers, oddity: Oddity) -> list[ShownRow]:
    """The rows of ``oddity``, tokenized now; the row ``oddity.explained`` with its focus token explained."""
    rows = []
    for k, row in enumerate(oddity.rows):
        tok = tokenizers.get(row.tokenizer)
        result = tok.tokenize(row.text)
        shown = ShownRow(tok.name, row.text, result, token_at(result, row.focus_offset()))
        if k == oddity.explained:
            try:
                shown.explanation = Explainer(tok, row.text, result=result).explain(shown.index)
            except TokenplayError as exc:
                shown.error = str(exc)
        rows.append(shown)
    return rows


def gallery(tokenizers: Tokenizers) -> list[tuple[Oddity, list[ShownRow]]]:
    """Every entry of the gallery with its rows."""
    return [(oddity, entry_rows(tokenizers, oddity)) for oddity in oddities()]
