"""A tokenizer.json regex (written for Oniguruma, which ``tokenizers`` runs) made to mean the same on the ``regex``
module, or refused where it cannot be.

Both read the same syntax and, on :func:`.unicode.regex_view`'s text, the same Unicode classes (``\\p{L}``, ``\\d``,
``\\s``, ``[[:alpha:]]``...: tests/engines/test_hf_unicode.py and tests/engines/test_any_tokenizer_json.py compare
them code point by code point). A few escapes mean something else:

- ``\\w``: Oniguruma's word characters include the superscript digits and vulgar fractions ``² ³ ¹ ¼ ½ ¾`` and not
  the joiners ``U+200C``/``U+200D``, which ``regex`` counts as word characters; ``\\W``, ``\\b`` and ``\\B`` follow;
- ``\\h``/``\\H``: a hexadecimal digit for Oniguruma, horizontal space for ``regex``.

:func:`translate` rewrites those escapes outside character classes into expressions with Oniguruma's meaning. Inside
a class it keeps what means the same (``\\b`` is a backspace in both) and refuses, with
:class:`~.tokenizer_json.UnsupportedTokenizerError` naming the construct, what it cannot rewrite there (``\\w``,
``\\W``, ``\\h``, ``\\H``, the POSIX classes ``[:punct:]`` and ``[:word:]``, whose members differ). Everything else
is left as written. It does not compile the pattern.

>>> translate(r"\\w+|\\s")
'(?:(?![\\\\u200c\\\\u200d])[\\\\w\\\\u00b2\\\\u00b3\\\\u00b9\\\\u00bc-\\\\u00be])+|\\\\s'
>>> translate(r"[a\\b]\\h")
'[a\\\\b][0-9a-fA-F]'
"""

from __future__ import annotations

from .tokenizer_json import UnsupportedTokenizerError

_WORD = r"(?:(?![\u200c\u200d])[\w\u00b2\u00b3\u00b9\u00bc-\u00be])"
_NOT_WORD = r"(?:[\u200c\u200d]|(?![\u00b2\u00b3\u00b9\u00bc-\u00be])\W)"
_OUTSIDE = {
    "w": _WORD,
    "W": _NOT_WORD,
    "b": rf"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))",
    "B": rf"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))",
    "h": "[0-9a-fA-F]",
    "H": "[^0-9a-fA-F]",
}
_IN_CLASS_DIFFERENT = {"w", "W", "h", "H"}
_POSIX_DIFFERENT = ("[:punct:]", "[:word:]", "[:^punct:]", "[:^word:]")


def translate(pattern: str) -> str:
    """``pattern`` with Oniguruma's meaning on the ``regex`` module (see the module docstring)."""
    if "\\" not in pattern and "[:" not in pattern:
        return pattern
    out: list[str] = []
    i, n = 0, len(pattern)
    depth = 0  # nesting of character classes
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if depth == 0 and nxt in _OUTSIDE:
                out.append(_OUTSIDE[nxt])
            elif depth > 0 and nxt in _IN_CLASS_DIFFERENT:
                raise UnsupportedTokenizerError(
                    f"the regex {pattern!r} has \\{nxt} inside a character class, which Oniguruma reads differently "
                    "from Python's regex module; it is not supported"
                )
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if ch == "[":
            posix = next((p for p in _POSIX_DIFFERENT if pattern.startswith(p, i)), None)
            if depth > 0 and posix is not None:
                raise UnsupportedTokenizerError(
                    f"the regex {pattern!r} uses the class {posix}, whose characters differ between Oniguruma and "
                    "Python's regex module; it is not supported"
                )
            if depth > 0 and pattern.startswith("[:", i):  # another POSIX class: the same in both
                end = pattern.find(":]", i + 2)
                if end > 0:
                    out.append(pattern[i : end + 2])
                    i = end + 2
                    continue
            depth += 1
            out.append(ch)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a ] first in a class is a literal ]
                out.append("]")
                i += 1
            continue
        if ch == "]" and depth > 0:
            depth -= 1
        out.append(ch)
        i += 1
    return "".join(out)
