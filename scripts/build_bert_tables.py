"""Print the character tables of app/engines/pipeline/bert_text.py, derived by asking Hugging Face
``tokenizers`` itself.

BERT's normalizer and pre-tokenizer in ``tokenizers`` classify characters with Rust's ``char`` methods and the
``unicode_categories`` crate (an older Unicode than Python's ``unicodedata``), and strip accents with the
``unicode-normalization-alignments`` crate. To cut and clean text exactly as they do, our WordPiece engine uses
tables found here code point by code point:

- ``CLEANED_AWAY``: what ``BertNormalizer(clean_text=True)`` removes (NUL, U+FFFD and "other" characters);
- ``CLEANED_TO_SPACE``: what it turns into a space;
- ``SPLIT_SPACE``: where ``BertPreTokenizer`` cuts and drops (Rust's ``char::is_whitespace``);
- ``PUNCTUATION``: what ``BertPreTokenizer`` isolates (ASCII punctuation and the ``P*`` categories);
- ``STRIPPED`` / ``LOWERED``: the characters whose accent stripping (NFD, then no ``Mn``) or lower-casing differs
  from Python's, with the library's result.

Run it after upgrading ``tokenizers`` or Python and paste its output into app/engines/pipeline/bert_text.py
(tests/engines/test_wordpiece.py fails until the tables match the installed libraries).
"""

from __future__ import annotations

import unicodedata

from build_unicode_tables import CODE_POINTS, ranges  # scripts/ is on sys.path when this script runs
from tokenizers import normalizers, pre_tokenizers


def python_strip(ch: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", ch) if unicodedata.category(c) != "Mn")


def tables() -> dict:
    clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
    strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
    lower = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True)
    pre = pre_tokenizers.BertPreTokenizer()
    away, to_space, split_space, punct = set(), set(), set(), set()
    stripped, lowered = {}, {}
    for c in CODE_POINTS:
        ch = chr(c)
        cleaned = clean.normalize_str(ch)
        if cleaned == "":
            away.add(c)
        elif cleaned == " " and ch != " ":
            to_space.add(c)
        parts = [p for p, _ in pre.pre_tokenize_str("a" + ch + "b")]
        if parts == ["a", "b"]:
            split_space.add(c)
        elif parts == ["a", ch, "b"]:
            punct.add(c)
        if strip.normalize_str(ch) != python_strip(ch):
            stripped[c] = strip.normalize_str(ch)
        if lower.normalize_str(ch) != ch.lower():
            lowered[c] = lower.normalize_str(ch)
    return {
        "CLEANED_AWAY": ranges(away),
        "CLEANED_TO_SPACE": ranges(to_space),
        "SPLIT_SPACE": ranges(split_space),
        "PUNCTUATION": ranges(punct),
        "STRIPPED": stripped,
        "LOWERED": lowered,
    }


def _wrap(items: list[str], indent: str = "    ") -> str:
    lines, line = [], indent
    for item in items:
        if len(line) + len(item) + 1 > 116:
            lines.append(line.rstrip())
            line = indent
        line += item + " "
    lines.append(line.rstrip())
    return "\n".join(lines)


def main() -> None:
    for name, value in tables().items():
        if isinstance(value, dict):
            items = [f"0x{c:04X}: {s!r}," for c, s in sorted(value.items())]
            print(f"{name}: dict[int, str] = {{\n{_wrap(items)}\n}}")
        else:
            items = [f"(0x{a:04X}, 0x{b:04X})," for a, b in value]
            print(f"{name}: tuple[tuple[int, int], ...] = (\n{_wrap(items)}\n)")


if __name__ == "__main__":
    main()
