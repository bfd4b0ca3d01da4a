"""The named rules of a split regex: which alternative of a pre-tokenizer's pattern cut a pre-token.

A split pattern (OpenAI's, Llama 3's, a tokenizer.json ``Split``) is an alternation: ``'s|'t| ?\\p{L}+| ?\\p{N}+|...``.
:class:`NamedPattern` cuts the pattern at its top-level ``|`` and wraps each alternative in a named group,
``(?P<r0>...)|(?P<r1>...)|...``. That is the same regex (a group changes what is captured, never what matches), so
its matches are the pattern's matches, and ``match.lastgroup`` says which alternative made each one. Known
alternatives get a name saying what they take (:data:`RULE_NAMES`); others are "alternative k of n".

This module only names matches; it does not split text for encoding (:mod:`app.engines.bpe.patterns` does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import regex

from app.engines.budget import UserPattern

#: What the alternatives of the shipped split patterns take, keyed by their source with possessive quantifiers
#: written as greedy ones (``\p{L}++`` and ``\p{L}+`` match the same text in these patterns).
RULE_NAMES = {
    "'(?:[sdmt]|ll|ve|re)": "a contraction ('s, 't, 're, 've, 'm, 'll, 'd)",
    "'(?i:[sdmt]|ll|ve|re)": "a contraction ('s, 't, 're, 've, 'm, 'll, 'd, any case)",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)": "a contraction ('s, 't, 're, 've, 'm, 'll, 'd, any case)",
    " ?\\p{L}+": "letters, with one space before",
    " ?\\p{N}+": "digits, with one space before",
    " ?[^\\s\\p{L}\\p{N}]+": "punctuation and symbols, with one space before",
    "\\s+$": "whitespace at the end of the text",
    "\\s+(?!\\S)": "whitespace, leaving its last character to the word after it",
    "\\s": "one whitespace character",
    "\\s+": "whitespace",
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+": "letters, with one space or punctuation mark before",
    "\\p{N}{1,3}": "digits, up to three at a time",
    "\\p{N}": "one digit",
    "\\p{N}+": "digits",
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*": "punctuation and symbols, with one space before and the line breaks after",
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*": "punctuation and symbols, with one space before and line breaks or slashes after",
    "\\s*[\\r\\n]": "whitespace up to a line break",
    "\\s*[\\r\\n]+": "whitespace up to line breaks",
    (
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    ): "a word ending in lower case (capitals first), with one space or punctuation mark before",
    (
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    ): "a word of capitals (lower case after), with one space or punctuation mark before",
    # Mistral's Tekken (mistral-nemo): o200k's two word rules without the contractions
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+": (
        "a word ending in lower case (capitals first), with one space or punctuation mark before"
    ),
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*": (
        "a word of capitals (lower case after), with one space or punctuation mark before"
    ),
    "[一-龥぀-ゟ゠-ヿ]+": "a run of Chinese characters and kana",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+": "one ASCII punctuation mark and the ASCII letters after it",
    "[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+": "letters, with one space (no punctuation or symbol) before",
    " ?[\\p{P}\\p{S}]+[\\r\\n]*": "punctuation and symbols, with one space before and the line breaks after",
    "\\S+": "a run of non-space characters",
}
for _contraction in ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d"):
    RULE_NAMES[_contraction] = f"the contraction {_contraction}"

_POSSESSIVE = re.compile(r"(?<!\\)(\+|\*|\?|\{\d+(?:,\d*)?\})\+")


def _greedy(source: str) -> str:
    r"""``source`` with possessive quantifiers written greedy, and line breaks as escapes (tokenizer.json files
    hold some patterns with the characters themselves).

    >>> _greedy(r"\p{L}++x?+\d{1,3}+") == r"\p{L}+x?\d{1,3}", _greedy("[^\r\n]") == r"[^\r\n]"
    (True, True)
    """
    return _POSSESSIVE.sub(r"\1", source).replace("\r", r"\r").replace("\n", r"\n")


_NAMES = {_greedy(source): name for source, name in RULE_NAMES.items()}


def rule_name(source: str, index: int, count: int) -> str:
    """What an alternative takes: its known name, else "alternative ``index + 1`` of ``count``".

    >>> rule_name(r"\\p{N}{1,3}+", 2, 7), rule_name("x+", 0, 2)
    ('digits, up to three at a time', 'alternative 1 of 2')
    """
    return _NAMES.get(_greedy(source)) or f"alternative {index + 1} of {count}"


def alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a regex (``|`` outside groups and character classes).

    >>> alternatives(r"'s|(?:a|b)+|[|x]\\|y")
    ["'s", '(?:a|b)+', '[|x]\\\\|y']
    """
    out: list[str] = []
    depth, start, i, n = 0, 0, 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "[" and pattern.startswith("[:", i):  # a POSIX class inside a set: [[:alpha:]]
                end = pattern.find(":]", i + 2)
                i = end + 2 if end >= 0 else i + 1
                continue
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            i += 1
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):  # a ] first in a set is a literal
                i += 1
            continue
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    out.append(pattern[start:])
    return out


_GLOBAL_FLAGS = re.compile(r"^\(\?[a-zA-Z]+\)")


@dataclass(frozen=True)
class Rule:
    """The rule that cut a pre-token: its name, the alternative's regex (``None`` when there is none), and which
    splitter it belongs to (the encoding's pattern, a step of a tokenizer.json pre-tokenizer, ...)."""

    name: str
    pattern: str | None
    source: str


class NamedPattern:
    """A split regex with one named group per top-level alternative (see the module docstring)."""

    def __init__(self, pattern: str, flags: int = 0):
        self.source = pattern
        head = _GLOBAL_FLAGS.match(pattern)
        prefix = head.group() if head else ""
        self.alternatives = alternatives(pattern[len(prefix) :])
        named = prefix + "|".join(f"(?P<r{k}>{alt})" for k, alt in enumerate(self.alternatives))
        try:
            compiled = regex.compile(named, flags)
        except regex.error:  # a construct the cut cannot handle: one rule for the whole pattern
            self.alternatives = [pattern]
            compiled = regex.compile(f"(?P<r0>{pattern})", flags)
        # any split regex, a user's too: matched under the request's budget
        self.regex = UserPattern(compiled, "this tokenizer's split regex")

    def name_of(self, match: regex.Match) -> tuple[str, str]:
        """``(rule name, alternative source)`` of a match of :attr:`regex`."""
        k = int(match.lastgroup[1:])
        alt = self.alternatives[k]
        return rule_name(alt, k, len(self.alternatives)), alt

    def rule_at(self, text: str, start: int, end: int, source: str) -> Rule | None:
        """The rule whose match in ``text`` spans exactly ``[start, end)``, or ``None`` when none does."""
        m = self.regex.match(text, start)
        if m is None or m.end() != end:
            return None
        name, alt = self.name_of(m)
        return Rule(name, alt, source)


@lru_cache(maxsize=64)
def named(pattern: str, flags: int = 0) -> NamedPattern:
    """The shared :class:`NamedPattern` of a split regex."""
    return NamedPattern(pattern, flags)
