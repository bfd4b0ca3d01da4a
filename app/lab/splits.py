"""The lab's pre-tokenizers by name: the split pattern each ``pattern`` option names, and a user's own.

Every pattern cuts a text into its matches and the stretches between them (:mod:`app.engines.bpe.pretokens`), so
no character is lost: ``whitespace`` gives the words and the runs of whitespace between them. ``custom`` is the
user's ``pattern_regex``, checked when the options are, and run under a time budget (:mod:`app.engines.budget`):
in a request, the request's (``user_code_seconds``: a corpus checked before its run is queued, a preview; a
pattern over it is refused, 422, in words); elsewhere :data:`CHECK_SECONDS`, and :data:`TRAIN_SECONDS` inside a
training (a bound, never a user's wait: the corpus passed the check already).
``lines-digits-r2l`` is superword BPE's stage two by default (SuperBPE): each line whole, numbers in threes from
the right.
"""

from __future__ import annotations

from functools import lru_cache

from app.engines.bpe.patterns import LINES_DIGITS_R2L_PATTERN, PATTERNS as ENGINE_PATTERNS
from app.engines.bpe.pretokens import PatternError, SplitPattern, custom

#: Seconds a user's pattern may take on a corpus or a preview before it is refused.
CHECK_SECONDS = 2.0
#: Seconds it may take inside a training (the corpus passed :data:`CHECK_SECONDS` already; this only bounds it).
TRAIN_SECONDS = 30.0

#: The pattern names the lab knows, in the order its form lists them, with what each does.
PATTERN_LABELS = {
    "none": "none (the whole text is one word)",
    "whitespace": "whitespace (words, and the spaces between them)",
    "gpt2": "GPT-2 regex",
    "gpt4": "GPT-4 regex (cl100k)",
    "o200k": "GPT-4o regex (o200k)",
    "digits": "GPT-4 regex, every digit alone",
    "digits-r2l": "GPT-4 regex, digits in threes from the right",
    "lines-digits-r2l": "lines whole, digits in threes from the right (superwords)",
    "custom": "your own regex",
}
PATTERNS = tuple(PATTERN_LABELS)
#: Superword BPE's stage two when the run names none.
STAGE_TWO_DEFAULT = "lines-digits-r2l"

_REGEXES: dict[str, str | None] = {
    "none": None,
    "whitespace": r"\S+",
    "lines-digits-r2l": LINES_DIGITS_R2L_PATTERN,
    **{name: ENGINE_PATTERNS[name] for name in ("gpt2", "gpt4", "o200k", "digits", "digits-r2l")},
}


def findall_regex(name: str, pattern_regex: str | None = None) -> str | None:
    r"""A regex whose matches are exactly the pre-tokens ``name`` cuts (for a tokenizer that keeps only matches, as
    tiktoken does), or None for ``none``: the shipped patterns and ``lines-digits-r2l`` match every character
    already; ``whitespace`` is ``\S+|\s+``; a custom pattern ``P`` becomes ``(?:P)|(?:(?!(?:P))[\s\S])+``, its
    matches and each stretch up to where it matches next (the same pieces, for a pattern with no empty match)."""
    if name == "whitespace":
        return r"\S+|\s+"
    if name == "custom":
        return rf"(?:{pattern_regex})|(?:(?!(?:{pattern_regex}))[\s\S])+"
    return _REGEXES[name]


@lru_cache(maxsize=64)
def split_for(name: str, pattern_regex: str | None = None, field: str = "pattern_regex") -> SplitPattern:
    """The split pattern a ``pattern`` option names (``custom``: ``pattern_regex``, checked, named ``field`` in
    its errors). The caller has checked ``name`` (:data:`PATTERNS`)."""
    if name == "custom":
        return custom(pattern_regex, field)
    return SplitPattern(_REGEXES[name], name)


#: The longest text a preview cuts.
MAX_PREVIEW_CHARS = 1_000_000


def preview(text: str, pattern: str, pattern_regex: str | None = None, seconds: float = CHECK_SECONDS) -> dict:
    """``text`` cut by the lab's pattern ``pattern`` (``custom``: ``pattern_regex``) as training cuts it:
    ``{"pieces": [...], "count": n}``; an unknown name, a bad regex or one slower than ``seconds`` is refused in
    words (:class:`~app.engines.bpe.pretokens.PatternError`, :class:`~app.engines.bpe.pretokens.PatternTimeout`)."""
    if pattern not in PATTERNS:
        raise PatternError(f"unknown pattern {pattern!r}; choose one of: {', '.join(PATTERNS)}")
    if pattern != "custom" and pattern_regex is not None:
        raise PatternError(f"pattern_regex is used with pattern 'custom' only; set pattern to 'custom' (it is {pattern!r})")
    if len(text) > MAX_PREVIEW_CHARS:
        raise PatternError(f"the text is {len(text):,} characters; a preview cuts at most {MAX_PREVIEW_CHARS:,}")
    pieces = split_for(pattern, pattern_regex).pieces(text, seconds)
    return {"pieces": pieces, "count": len(pieces)}
