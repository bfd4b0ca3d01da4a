"""A text cut into pre-tokens by a split pattern with no character lost, and a user's own pattern checked first.

A split pattern's pre-tokens are its matches *and the stretches of text between them*, in order, as Hugging Face's
``Split`` pre-tokenizer cuts with behavior ``"isolated"``: ``\\S+`` cuts ``"a  b"`` into ``a``, ``"  "``, ``b``.
An empty match is no piece but cuts the text where it is, as in that pre-tokenizer. The shipped patterns (``gpt2``, ``gpt4``, ...) match every character anyway, so for
them the pieces are the matches, which the compiled split finds fastest (:class:`~.patterns.Splitter`).

Patterns read characters as tiktoken does (:func:`~.patterns.exact`), like every byte-level split of the engine.

A user's pattern (``custom``) is checked before it runs (:func:`check_custom`: at most
:data:`MAX_PATTERN_CHARS` characters, it compiles) and runs under a time budget (:mod:`app.engines.budget`: the
request's, or ``timeout`` seconds of its own outside a request; the ``regex`` module's ``timeout``, with the GIL
released while it matches), so a pattern that backtracks without end (``(a+)+$`` on ``aaaa…!``) stops with
:class:`PatternTimeout` instead of holding a core and every other thread. A pattern that
finds only empty matches in a text is refused (:class:`PatternError`): it names no pre-token.

Nothing here merges or encodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cached_property

import regex

from .. import budget as budgets
from ..errors import TokenplayError
from .patterns import PATTERNS, Splitter, bmp_pattern, exact, name_of_regex, next_astral_wordy

#: The longest pattern a user may type.
MAX_PATTERN_CHARS = 1_000

Span = tuple[int, int]


class PatternError(TokenplayError):
    """A user's split pattern that cannot be used: too long, not a pattern of the ``regex`` module, or one that
    only matches empty strings."""


class PatternTimeout(budgets.OverBudget):
    """A split pattern that took longer than its time budget on a text."""


def check_custom(pattern: object, field: str = "pattern_regex") -> str:
    """``pattern`` if it is a usable regex of the ``regex`` module, else :class:`PatternError` saying why, named as
    ``field``: ``check_custom(r"\\d+")`` passes, ``check_custom("(a")`` says the bracket is missing."""
    if not isinstance(pattern, str) or not pattern:
        what = "is empty" if pattern == "" else "is missing" if pattern is None else "must be text"
        raise PatternError(f"{field} {what}: type a regular expression, e.g. \\S+ (words) or \\p{{L}}+|\\p{{N}}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"{field} is {len(pattern):,} characters long; a pattern may have at most {MAX_PATTERN_CHARS:,}"
        )
    try:
        regex.compile(pattern)
    except regex.error as exc:
        where = f" at character {exc.pos + 1}" if exc.pos is not None else ""
        raise PatternError(f"{field} is not a valid regular expression: {exc.msg}{where} of {pattern!r}") from None
    except (OverflowError, RecursionError, MemoryError):  # a repeat count or nesting the engine cannot hold
        raise PatternError(f"{field} is too large for the regex engine (a repeat count or nesting too deep)") from None
    return pattern


def isolated_kinds(matches: Iterable[Span], n: int) -> list[tuple[int, int, bool]]:
    """:func:`isolated` with each span's kind: ``True`` for a match, ``False`` for a stretch between matches.

    >>> isolated_kinds([(1, 2)], 3)
    [(0, 1, False), (1, 2, True), (2, 3, False)]
    """
    out: list[tuple[int, int, bool]] = []
    pos = 0
    for a, b in matches:
        if a > pos:
            out.append((pos, a, False))
        if b > a:
            out.append((a, b, True))
        pos = b
    if pos < n:
        out.append((pos, n, False))
    return out


def isolated(matches: Iterable[Span], n: int) -> list[Span]:
    """The spans of a text of ``n`` characters cut at ``matches`` (in order, not overlapping): each non-empty match
    and each stretch between them. An empty match cuts the text where it is and is no piece, as in Hugging Face's
    ``Split`` (``x*`` cuts ``"abx"`` into ``a``, ``b``, ``x``).

    >>> isolated([(0, 1), (3, 4)], 6), isolated([(0, 0), (1, 1), (2, 3), (3, 3)], 3)
    ([(0, 1), (1, 3), (3, 4), (4, 6)], [(0, 1), (1, 2), (2, 3)])
    """
    out: list[Span] = []
    pos = 0
    for a, b in matches:
        if a > pos:
            out.append((pos, a))
        if b > a:
            out.append((a, b))
        pos = b
    if pos < n:
        out.append((pos, n))
    return out


def _timeout_message(seconds: float, field: str, length: int) -> str:
    return (
        f"{field} took more than {seconds:g} s on {length:,} characters and was stopped: it backtracks too much "
        "(nested repetition such as (a+)+ or (a|aa)+ followed by something that fails is the usual cause); "
        "simplify it, e.g. a+ instead of (a+)+"
    )


@dataclass(frozen=True)
class SplitPattern:
    """A split pattern: its ``regex`` (``None``: the whole text is one pre-token) and the name it goes by.

    ``spans(text)`` and ``pieces(text)`` cut a text (see the module); ``timeout`` (seconds) bounds the time the
    pattern may take on it (a user's pattern: ``custom=True`` also refuses a text on which it only matches
    empty strings, naming ``field``).
    """

    regex: str | None
    name: str = "custom"
    custom: bool = False
    field: str = "pattern_regex"

    @cached_property
    def _covers(self) -> bool:
        """Whether the compiled split may give the pieces (a shipped pattern, whose matches cover any text)."""
        return self.regex is not None and not self.custom and name_of_regex(self.regex) is not None

    @cached_property
    def _bmp(self) -> re.Pattern | None:
        """The pattern for ``re`` with its classes spelled out as tiktoken's (:func:`~.patterns.bmp_pattern`), several
        times faster, and exact on a text with no letter, number or mark above U+FFFF; not for a user's pattern,
        which may mean something else to ``re``."""
        if self.custom or self.regex is None:
            return None
        try:
            return re.compile(bmp_pattern(self.regex))
        except (ValueError, re.error):
            return None

    def _matches(self, text: str, timeout: float | None) -> list[Span]:
        bmp = self._bmp
        if bmp is not None and next_astral_wordy(text, 0) < 0:
            return [m.span() for m in bmp.finditer(text)]
        if self.custom:
            budgets.untrusted()  # a user's pattern: a request running it moves to the lane of such work
        current = budgets.current()
        own = budgets.Budget(timeout) if current is None and timeout is not None else None
        with budgets.use(own) if own is not None else nullcontext():
            try:
                spans = [m.span() for m in exact(self.regex).finditer(text)]
            except budgets.OverBudget:
                seconds = (own or current).seconds
                field = self.field if self.custom else "the pattern"
                raise PatternTimeout(_timeout_message(seconds, field, len(text))) from None
        if self.custom and spans and text and all(a == b for a, b in spans):
            raise PatternError(
                f"{self.field} only matches empty strings in this text (a lookahead alone, or x* where there is no "
                "x): make it match the pre-tokens themselves, e.g. [A-Z][a-z]* rather than (?=[A-Z]), x+ rather than x*"
            )
        return spans

    def spans(self, text: str, timeout: float | None = None) -> list[Span]:
        """The pre-tokens of ``text`` as ``(start, end)`` character spans, covering it in order."""
        if not text:
            return []
        if self.regex is None:
            return [(0, len(text))]
        if self._covers:
            pos, out = 0, []
            for piece in Splitter(self.regex)(text):
                out.append((pos, pos + len(piece)))
                pos += len(piece)
            if pos == len(text):
                return out
        return isolated(self._matches(text, timeout), len(text))

    def kinds(self, text: str, timeout: float | None = None) -> list[tuple[int, int, bool]]:
        """:meth:`spans` with each one's kind: ``True`` for a match of the pattern (the whole text without one),
        ``False`` for a stretch between matches."""
        if not text:
            return []
        if self.regex is None:
            return [(0, len(text), True)]
        if self._covers:
            return [(a, b, True) for a, b in self.spans(text)]
        return isolated_kinds(self._matches(text, timeout), len(text))

    def pieces(self, text: str, timeout: float | None = None) -> list[str]:
        """The pre-tokens of ``text`` as strings: ``"".join(pieces) == text``."""
        if not text:
            return []
        if self.regex is None:
            return [text]
        if self._covers:
            pieces = Splitter(self.regex)(text)
            if sum(map(len, pieces)) == len(text):
                return pieces
        return [text[a:b] for a, b in self.spans(text, timeout)]


def named(name: str) -> SplitPattern:
    """A shipped pattern by its name (:data:`~.patterns.PATTERNS`): ``named("gpt4").pieces("a 12")``."""
    return SplitPattern(PATTERNS[name], name)


def custom(pattern: str, field: str = "pattern_regex") -> SplitPattern:
    """A user's pattern, checked (:func:`check_custom`)."""
    return SplitPattern(check_custom(pattern, field), "custom", True, field)
