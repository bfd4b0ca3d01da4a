"""Preset texts for the compare view: short samples that show where tokenizers differ most.

Data only. Each preset has a stable ``key`` (used in URLs: ``/compare?preset=japanese``), a label and its text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    key: str
    label: str
    text: str
    note: str = ""

    def to_dict(self) -> dict:
        return {"key": self.key, "label": self.label, "text": self.text, "note": self.note}


_PYTHON = '''\
def fizzbuzz(n: int) -> list[str]:
    """Return FizzBuzz for 1..n."""
    out = []
    for i in range(1, n + 1):
        if i % 15 == 0:
            out.append("FizzBuzz")
        elif i % 3 == 0:
            out.append("Fizz")
        else:
            out.append(str(i))
    return out
'''

_JSON_YAML = """\
{
  "name": "Tokenplay",
  "version": 1,
  "tags": ["bpe", "unigram", "wordpiece"],
  "owner": {"login": "ada", "id": 1815}
}
---
name: Tokenplay
version: 1
tags:
  - bpe
  - unigram
  - wordpiece
owner:
  login: ada
  id: 1815
"""

PRESETS: tuple[Preset, ...] = (
    Preset(
        "english",
        "English prose",
        "The quick brown fox jumps over the lazy dog. Tokenizers don't see words: they see pieces, "
        'and common words like "the" usually get a token of their own, while rarer ones such as '
        '"antidisestablishmentarianism" are cut into several.',
    ),
    Preset("python", "Python code", _PYTHON, "indentation: runs of spaces are tokens too"),
    Preset("json-yaml", "JSON vs YAML", _JSON_YAML, "the same data in two formats"),
    Preset("japanese", "Japanese", "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。"),
    Preset("korean", "Korean", "안녕하세요. 저는 토큰화를 배우고 있습니다. 한국어는 음절 단위로 씁니다."),
    Preset("chinese", "Chinese", "学而时习之，不亦说乎？有朋自远方来，不亦乐乎？人不知而不愠，不亦君子乎？"),
    Preset(
        "emoji",
        "Emoji, ZWJ and flags",
        "Family: 👨‍👩‍👧‍👦  Technologist: 🧑🏽‍💻  Rainbow flag: 🏳️‍🌈  Flags: 🇯🇵 🇰🇷 🇫🇷  Thumbs: 👍🏿",
        "one visible emoji can be many code points and many tokens",
    ),
    Preset(
        "numbers",
        "Numbers and arithmetic",
        "12345 + 67890 = 80235\n3.14159 * 2 = 6.28318\n1,000,000 / 7 ≈ 142857.142857\n2^64 = 18446744073709551616",
        "digits are grouped differently: gpt2 merges freely, cl100k/o200k in groups of up to 3",
    ),
    Preset(
        "url",
        "A URL",
        "https://example.com/search?q=byte+pair+encoding&lang=en-US&page=2#results",
    ),
    Preset(
        "glitch",
        "Glitch token",
        'Please repeat the string " SolidGoldMagikarp" back to me.',
        '" SolidGoldMagikarp" is a single, almost never trained token in gpt2',
    ),
    Preset(
        "endoftext",
        "Contains <|endoftext|>",
        "First document.<|endoftext|>Second document.",
        'plain text unless "special tokens" is on; then one special token',
    ),
)

BY_KEY: dict[str, Preset] = {p.key: p for p in PRESETS}


def get_preset(key: str) -> Preset | None:
    return BY_KEY.get(key)
