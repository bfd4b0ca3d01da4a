"""Print the Unicode tables of app/engines/pipeline/unicode.py, derived by asking Hugging Face ``tokenizers`` itself.

Our engine splits text with the ``regex`` module and normalizes it with ``unicodedata``; Hugging Face
``tokenizers`` splits with Oniguruma and normalizes with the ``unicode-normalization-alignments`` crate, and the
three carry different Unicode versions. To run tokenizer.json models id for id, our engine must see characters
as those libraries see them. This script finds, code point by code point:

- the characters the split regexes of ``tokenizers`` treat as unassigned although ``regex`` knows them, and the
  characters whose general category differs between the two (``ONIG_UNASSIGNED``, ``ONIG_RECATEGORISED``);
- the characters ``tokenizers``' normalizers do not know although ``unicodedata`` does: those whose
  normalization (NFC, NFD, NFKC, NFKD) or canonical reordering differs, and the second halves of the canonical
  compositions that only ``unicodedata`` performs (``NORMALIZER_UNKNOWN``).

Run it after upgrading ``regex``, ``tokenizers`` or Python, and paste its output into app/engines/pipeline/unicode.py
(tests/engines/test_hf_unicode.py fails until the tables match the installed libraries). It needs ``tokenizers`` only.
"""

from __future__ import annotations

import argparse
import unicodedata

import regex
from tokenizers import Regex, normalizers, pre_tokenizers

CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
CATEGORIES = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No")


def onig_members(pattern: str, text: str) -> set[int]:
    """Code points of ``text`` that Oniguruma's ``pattern`` (one character) matches, as tokenizers runs it."""
    kept = set()
    for piece, _ in pre_tokenizers.Split(Regex(pattern), behavior="removed").pre_tokenize_str(text):
        kept.update(map(ord, piece))
    return set(map(ord, text)) - kept


def regex_members(pattern: str) -> set[int]:
    compiled = regex.compile(pattern)
    return {c for c in CODE_POINTS if compiled.match(chr(c))}


def ranges(points: set[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for c in sorted(points):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return [(a, b) for a, b in out]


def onig_tables() -> tuple[list[tuple[int, int]], dict[int, str]]:
    text = "".join(map(chr, CODE_POINTS))
    unassigned = regex_members(r"\P{Cn}") - onig_members(r"\P{Cn}", text)
    recategorised: dict[int, str] = {}
    for cat in CATEGORIES:
        ours = regex_members(rf"\p{{{cat}}}") - unassigned
        theirs = onig_members(rf"\p{{{cat}}}", text)
        for c in theirs - ours:
            recategorised[c] = cat
    return ranges(unassigned), recategorised


def normalizer_unknown() -> list[tuple[int, int]]:
    forms = {f: getattr(normalizers, f)() for f in ("NFC", "NFD", "NFKC", "NFKD")}
    unknown: set[int] = set()
    for form, hf in forms.items():
        for i in range(0, len(CODE_POINTS), 4096):
            block = CODE_POINTS[i : i + 4096]
            text = "x".join(map(chr, block))
            if hf.normalize_str(text) != unicodedata.normalize(form, text):
                unknown.update(c for c in block if hf.normalize_str(chr(c)) != unicodedata.normalize(form, chr(c)))
    for c in CODE_POINTS:  # marks the normalizers reorder differently: their combining class is unknown there
        if unicodedata.combining(chr(c)):
            for text in ("a\u0345" + chr(c), "a" + chr(c) + "\u0334"):
                if forms["NFD"].normalize_str(text) != unicodedata.normalize("NFD", text):
                    unknown.add(c)
    for c in CODE_POINTS:  # canonical pairs only unicodedata composes: its second half is unknown there
        parts = unicodedata.decomposition(chr(c)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            first, second = (chr(int(p, 16)) for p in parts)
            if forms["NFC"].normalize_str(first + second) != unicodedata.normalize("NFC", first + second):
                unknown.add(ord(second))
    return ranges(unknown)


def show(name: str, table: list[tuple[int, int]]) -> str:
    rows = [f"(0x{a:04X}, 0x{b:04X})" for a, b in table]
    lines, line = [], "   "
    for row in rows:
        if len(line) + len(row) + 2 > 116:
            lines.append(line)
            line = "   "
        line += f" {row},"
    lines.append(line)
    return f"{name}: tuple[tuple[int, int], ...] = (\n" + "\n".join(lines) + "\n)"


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    unassigned, recategorised = onig_tables()
    print(show("ONIG_UNASSIGNED", unassigned))
    print(f"ONIG_RECATEGORISED: dict[int, str] = {{{', '.join(f'0x{c:04X}: {cat!r}' for c, cat in sorted(recategorised.items()))}}}")
    print(show("NORMALIZER_UNKNOWN", normalizer_unknown()))


if __name__ == "__main__":
    main()
