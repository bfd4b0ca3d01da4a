"""Ready-made corpora for the lab's setup page, with the settings that show each one best."""

from __future__ import annotations

EXAMPLES: dict[str, dict] = {
    "aaabdaaabac": {
        "title": "aaabdaaabac",
        "form": {"corpus": "aaabdaaabac", "algorithm": "byte", "pattern": "none", "size_kind": "merges", "size": 3, "tie_break": "first"},
    },
    "low-lower": {
        "title": "low lower newest widest (</w>)",
        "form": {
            "corpus": "low low low low low lower lower newest newest newest newest newest newest widest widest widest",
            "algorithm": "char",
            "pattern": "whitespace",
            "size_kind": "merges",
            "size": 10,
            "tie_break": "first",
            "end_of_word": True,
        },
    },
    "hug-pun": {
        "title": "hug pug pun bun",
        "form": {
            "corpus": ("hug " * 10 + "pug " * 5 + "pun " * 12 + "bun " * 4 + "hugs " * 5).strip(),
            "algorithm": "char",
            "pattern": "whitespace",
            "size_kind": "merges",
            "size": 6,
            "tie_break": "first",
        },
    },
    "japanese": {
        "title": "Japanese, byte-level",
        "form": {
            "corpus": "東京は日本の首都です。京都は古い都です。東京と京都は日本の大きな都市です。日本の都市はきれいです。",
            "algorithm": "byte",
            "pattern": "none",
            "size_kind": "merges",
            "size": 20,
            "tie_break": "first",
        },
    },
    "japanese-sp": {
        "title": "Japanese, SentencePiece-style",
        "form": {
            "corpus": "東京は日本の首都です。京都は古い都です。東京と京都は日本の大きな都市です。日本の都市はきれいです。",
            "algorithm": "sentencepiece",
            "pattern": "none",
            "size_kind": "merges",
            "size": 15,
            "tie_break": "first",
        },
    },
    "english": {
        "title": "English, GPT-2 regex",
        "form": {
            "corpus": (
                "The cat sat on the mat. The dog sat on the log. The cat and the dog are friends. "
                "A tokenizer cuts text into tokens; the tokens are then turned into numbers. "
                "Byte pair encoding merges the most frequent pair of tokens, again and again."
            ),
            "algorithm": "byte",
            "pattern": "gpt2",
            "size_kind": "merges",
            "size": 40,
            "tie_break": "first",
        },
    },
}
