"""Why a token was cut where it is (:mod:`app.features.explain`), for the playground's explanation, compare's
"why do these two cut differently", and ``POST /api/explain``."""

from __future__ import annotations

from dataclasses import dataclass

from app.engines.base import Tokenizer
from app.engines.errors import TokenplayError
from app.engines.result import TokenizeResult
from app.features.explain import Explainer, Explanation, NotExplainableError
from app.features.explain import explain as explain_token
from app.settings import Settings

from .catalog import Tokenizers
from .errors import check_text_size


def explain(
    tokenizers: Tokenizers, name: str, text: str, index: int, settings: Settings, *, allow_special: bool = False
) -> Explanation:
    """Token ``index`` of ``text`` in the tokenizer ``name``, explained (a 422 error when it cannot be)."""
    check_text_size(text, settings)
    return explain_token(tokenizers.get(name), text, index, allow_special=allow_special)


@dataclass(slots=True)
class Explained:
    """A text's explainer (None when its tokenizer cannot be explained, then ``error`` says why) and the
    explanation of the token asked for (None when none was asked for, or the index is past the text's tokens)."""

    explainer: Explainer | None
    explanation: Explanation | None
    error: str | None

    def as_context(self) -> dict:
        return {"explainer": self.explainer, "explanation": self.explanation, "explain_error": self.error}


def explained(
    tok: Tokenizer, text: str, index: int | None, *, allow_special: bool = False, result: TokenizeResult | None = None
) -> Explained:
    """The explanation of token ``index`` of ``text`` as the playground shows it: none when the index is out of range
    (the text having shrunk while typing), or why this tokenizer cannot be explained. ``result``: the text already
    tokenized, not done again."""
    try:
        explainer = Explainer(tok, text, allow_special=allow_special, result=result)
    except NotExplainableError as exc:
        return Explained(None, None, str(exc))
    try:
        explanation = explainer.explain(index) if index is not None and index < len(explainer) else None
    except NotExplainableError as exc:
        return Explained(explainer, None, str(exc))
    return Explained(explainer, explanation, None)


def explain_at(tokenizers: Tokenizers, names: list[str], text: str, offset: int, *, allow_special: bool) -> list[dict]:
    """For each of ``names`` (known, each once): the explanation of its token that covers character ``offset`` of
    ``text``, or the message saying why there is none (compare's panes side by side)."""
    sides = []
    for name in dict.fromkeys(names):
        side = {"name": name, "explanation": None, "error": None}
        try:
            explainer = Explainer(tokenizers.get(name), text, allow_special=allow_special)
            side["explanation"] = explainer.explain(explainer.index_at(offset))
        except TokenplayError as exc:
            side["error"] = str(exc)
        sides.append(side)
    return sides
