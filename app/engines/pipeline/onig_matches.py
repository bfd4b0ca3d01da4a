"""The matches of a regex in a text, in the order and with the empty matches Oniguruma's ``find_iter`` gives them to
Hugging Face ``tokenizers`` (its ``Split`` pre-tokenizer and ``Replace`` steps).

Python's ``finditer`` and Oniguruma's iterator agree on every non-empty match; they part on empty ones. After a
match ending at ``e``, Oniguruma searches again from ``e`` and drops an empty match found from there, then searches
from one character further; Python reports an empty match at ``e`` after a non-empty one, and after an empty match
it may report a non-empty match starting at the same place. :func:`spans` follows ``finditer`` while the matches
are not empty (a C loop, the common case) and Oniguruma's own loop from the first empty one on. It does not compile
or classify anything: the caller gives the compiled pattern and the text (see :func:`.unicode.regex_view`).

>>> import regex
>>> list(spans(regex.compile("x*"), "axb"))
[(0, 0), (1, 2), (3, 3)]
>>> [m.span() for m in regex.compile("x*").finditer("axb")]
[(0, 0), (1, 2), (2, 2), (3, 3)]
"""

from __future__ import annotations

from collections.abc import Iterator


def spans(pattern, text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each match of ``pattern`` in ``text``, as Oniguruma's ``find_iter`` finds them."""
    previous = None  # where the last match ended
    for m in pattern.finditer(text):
        a, b = m.span()
        if a == b:
            yield from _oniguruma_loop(pattern, text, 0 if previous is None else previous, previous)
            return
        previous = b
        yield a, b


def _oniguruma_loop(pattern, text: str, search_from: int, last_match_end: int | None) -> Iterator[tuple[int, int]]:
    """Oniguruma's iterator from ``search_from``: an empty match found by a search starting where the last match
    ended is dropped, and the search goes on one character further."""
    n = len(text)
    while search_from <= n:
        m = pattern.search(text, search_from)
        if m is None:
            return
        a, b = m.span()
        if a == b and search_from == last_match_end:
            search_from += 1
            continue
        search_from = last_match_end = b
        yield a, b
