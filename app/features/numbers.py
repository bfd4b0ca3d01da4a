"""How a tokenizer cuts numbers: how many of 0–9999 are one token, the largest number that is, how digits are
grouped, and a side-by-side table of typed numbers, dates, prices, decimals and a sum.

Every count is the tokenizer's own encoding of the number written plainly (``1234``, no space before it), special
tokens as plain text. :func:`grouping` reads the cut of long numbers (seven digits and more, whose length is not a
multiple of three): one digit a token, threes from the left (``123|456|7``, the ``\\p{N}{1,3}`` rule of cl100k and
o200k), threes from the right (``1|234|567``), or learned (merges chose the cut: GPT-2, SentencePiece models).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from weakref import WeakKeyDictionary

from app.engines.base import Tokenizer

from .vocab.tokens import vocabulary

GROUPINGS = ("one digit", "threes from the left", "threes from the right", "learned")
#: Long numbers whose cut tells the grouping apart (lengths 7, 8, 10, 11: not multiples of three).
GROUPING_PROBES = ("1234567", "98765432", "3141592653", "27182818284")
SAMPLES: dict[str, list[str]] = {
    "typed numbers": ["7", "42", "365", "1000", "2024", "65536", "1000000", "1,000,000", "3.14159"],
    "dates": ["2024-03-15", "15/03/2024", "March 15, 2024", "1999"],
    "prices": ["$5", "$19.99", "€1,299.00", "¥10000"],
    "decimals": ["0.5", "0.001", "2.71828", "-273.15", "6.022e23"],
    "arithmetic": ["12345+67890=80235"],
}
_FACTS: WeakKeyDictionary = WeakKeyDictionary()
_LOCK = threading.Lock()


def _digit_runs(tok: Tokenizer, text: str) -> list[int]:
    """How many of ``text``'s digits each token holds, for the tokens holding some (a leading ``▁`` is not counted)."""
    out = []
    for token in tok.tokenize(text).tokens:
        n = sum(ch.isdigit() for ch in text[token.start : token.end]) if token.end > token.start else 0
        if n:
            out.append(n)
    return out


def grouping_of(runs: Sequence[int]) -> str:
    """The grouping a number's cut shows (``runs``: digits per token, in order).

    >>> grouping_of([1] * 7), grouping_of([3, 3, 1]), grouping_of([1, 3, 3]), grouping_of([2, 4, 1])
    ('one digit', 'threes from the left', 'threes from the right', 'learned')
    """
    runs = list(runs)
    if runs and all(r == 1 for r in runs):
        return "one digit"
    if runs and all(r == 3 for r in runs[:-1]) and 1 <= runs[-1] <= 3:
        return "threes from the left"
    if runs and all(r == 3 for r in runs[1:]) and 1 <= runs[0] <= 3:
        return "threes from the right"
    return "learned"


def grouping(tok: Tokenizer) -> str:
    """The grouping of every probe if they agree, else ``learned``."""
    found = {grouping_of(_digit_runs(tok, probe)) for probe in GROUPING_PROBES}
    return found.pop() if len(found) == 1 else "learned"


def _largest_single(tok: Tokenizer) -> int | None:
    """The largest number, written plainly, that is one token: looked for among the vocabulary's digit tokens."""
    vocab = vocabulary(tok)
    candidates = set()
    for data in vocab.data:
        text = data.strip(b" ")
        if text.isdigit() and text.isascii() and (text == b"0" or not text.startswith(b"0")):
            candidates.add(int(text))
    for n in sorted(candidates, reverse=True):
        if len(tok.encode(str(n))) == 1:
            return n
    return None


def number_facts(tok: Tokenizer) -> dict:
    """``{"tokenizer", "single_tokens_0_9999", "largest_single_token", "largest_single_token_any", "grouping"}``:
    how many of 0–9999 are one token and the largest of them, the largest number of any size that is one token,
    and the grouping (computed once per tokenizer)."""
    found = _FACTS.get(tok)
    if found is None:
        counts = tok.count_batch([str(n) for n in range(10_000)])
        single = [n for n, c in enumerate(counts) if c == 1]
        found = {
            "single_tokens_0_9999": len(single),
            "largest_single_token": single[-1] if single else None,
            "largest_single_token_any": _largest_single(tok),
            "grouping": grouping(tok),
        }
        with _LOCK:
            _FACTS[tok] = found
    return {"tokenizer": tok.name, **found}


def cut(tok: Tokenizer, text: str) -> dict:
    """One number as ``tok`` cuts it: ``{"tokens": count, "pieces": [token texts]}``."""
    tokens = tok.tokenize(text).tokens
    return {"tokens": len(tokens), "pieces": [t.text for t in tokens]}


def number_table(tokenizers: Sequence[Tokenizer], samples: dict[str, list[str]] | None = None) -> dict:
    """The side-by-side table: per group of samples, a row per sample with each tokenizer's cut."""
    samples = SAMPLES if samples is None else samples
    return {
        "tokenizers": [t.name for t in tokenizers],
        "groups": [
            {
                "group": group,
                "rows": [{"text": text, "cuts": {t.name: cut(t, text) for t in tokenizers}} for text in texts],
            }
            for group, texts in samples.items()
        ],
    }
