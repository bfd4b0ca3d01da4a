"""A text character by character: code point, name, Unicode category, script, its UTF-8, UTF-16 and UTF-32 bytes,
and which token of each chosen tokenizer covers it.

A character covered by more than one token (a byte-level tokenizer cutting inside its UTF-8, byte-fallback pieces)
is shown as split: every token that holds some of it is listed. Token spans come from the
tokenizers' own results (:meth:`~app.engines.base.Tokenizer.tokenize`), so the table is what the playground shows.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from app.engines.base import Tokenizer, check_text
from app.engines.errors import TokenplayError

from .tokens import script_of

#: The most characters one table describes.
MAX_CHARS = 2_000

CATEGORY_NAMES = {
    "Lu": "uppercase letter", "Ll": "lowercase letter", "Lt": "titlecase letter", "Lm": "modifier letter",
    "Lo": "other letter", "Mn": "nonspacing mark", "Mc": "spacing mark", "Me": "enclosing mark",
    "Nd": "decimal digit", "Nl": "letter number", "No": "other number", "Pc": "connector punctuation",
    "Pd": "dash punctuation", "Ps": "open punctuation", "Pe": "close punctuation", "Pi": "initial punctuation",
    "Pf": "final punctuation", "Po": "other punctuation", "Sm": "math symbol", "Sc": "currency symbol",
    "Sk": "modifier symbol", "So": "other symbol", "Zs": "space separator", "Zl": "line separator",
    "Zp": "paragraph separator", "Cc": "control", "Cf": "format", "Cs": "surrogate", "Co": "private use",
    "Cn": "unassigned",
}  # fmt: skip


class CharactersTooLongError(TokenplayError):
    """A text longer than the characters table takes."""


def _name(ch: str) -> str:
    name = unicodedata.name(ch, "")
    if name:
        return name
    if unicodedata.category(ch) == "Cc":
        return f"<control-{ord(ch):04X}>"
    return f"<unnamed U+{ord(ch):04X}>"


def describe(ch: str) -> dict:
    """One character's facts.

    >>> d = describe("é"); d["code_point"], d["name"], d["category"], d["script"], d["utf8"], d["utf16"], d["utf32"]
    ('U+00E9', 'LATIN SMALL LETTER E WITH ACUTE', 'Ll', 'Latin', 'c3 a9', '00 e9', '00 00 00 e9')
    """
    cat = unicodedata.category(ch)
    return {
        "char": ch,
        "code_point": f"U+{ord(ch):04X}",
        "name": _name(ch),
        "category": cat,
        "category_name": CATEGORY_NAMES.get(cat, cat),
        "script": script_of(ch),
        "utf8": ch.encode("utf-8").hex(" "),
        "utf16": ch.encode("utf-16-be").hex(" "),
        "utf32": ch.encode("utf-32-be").hex(" "),
    }


def characters(text: str, tokenizers: Sequence[Tokenizer]) -> dict:
    """``{"chars": n, "rows": [...], "tokenizers": [names]}``: a row per character with its facts and, per tokenizer,
    ``{"split", "tokens"}``: the tokens that cover it (each its ``index`` among the text's tokens, ``id`` and ``text``),
    ``split`` true when there are several (the character's bytes are cut between tokens)."""
    check_text(text)
    if len(text) > MAX_CHARS:
        raise CharactersTooLongError(
            f"the text has {len(text):,} characters; the characters table takes up to {MAX_CHARS:,}"
        )
    rows = [{"index": i, **describe(ch), "tokens": {}} for i, ch in enumerate(text)]
    for tok in tokenizers:
        covering: list[list[dict]] = [[] for _ in text]
        for index, token in enumerate(tok.tokenize(text).tokens):
            for i in range(token.start, min(token.end, len(text))):
                covering[i].append({"index": index, "id": token.id, "text": token.text})
        for row, found in zip(rows, covering):
            split = len(found) > 1
            row["tokens"][tok.name] = {"split": split, "tokens": found}
    return {"chars": len(text), "tokenizers": [t.name for t in tokenizers], "rows": rows}
