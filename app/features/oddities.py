"""The tokenization surprises of the ``/oddities`` gallery, as data: input texts, the models to show them in, and
which token to explain. Everything shown is computed by the engines when asked (counts, cuts, explanations);
the only fixed things here are the input texts, and the list of words that :func:`longer_prefix` searches.

Each :class:`Oddity` has rows (a text in a model); a row's explained token is the one covering the first
character of the last occurrence of its ``focus`` (or the first token when there is none). This module does
not render anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from app.engines import registry
from app.engines.base import Tokenizer
from app.engines.errors import TokenplayError


@dataclass(frozen=True)
class Row:
    text: str
    tokenizer: str
    focus: str = ""  # the token covering this text's first character is the one explained

    def focus_offset(self) -> int:
        """Where the explained token is: the last occurrence of ``focus`` (a trailing space is the last space)."""
        at = self.text.rfind(self.focus) if self.focus else 0
        return max(at, 0)

    def focus_index(self, result) -> int:
        """The index of the explained token in ``result`` (this row's text tokenized): the first token that ends
        after :meth:`focus_offset`."""
        offset, tokens = self.focus_offset(), result.tokens
        return next((i for i, t in enumerate(tokens) if t.end > offset), max(0, len(tokens) - 1))


@dataclass(frozen=True)
class Oddity:
    key: str
    title: str
    lesson: str
    rows: tuple[Row, ...]
    explained: int = 0  # the row whose token is explained on the page (every row links to its explanation)


def _rows(texts: tuple[str, ...], tokenizers: tuple[str, ...], focus: str = "") -> tuple[Row, ...]:
    return tuple(Row(text, name, focus) for name in tokenizers for text in texts)


GLITCH = " SolidGoldMagikarp"
#: Words searched for a prefix with more tokens than the word itself (in running text: after a space).
WORDS = (
    "understanding international information environment development university government everything "
    "community something important different experience management technology available business education "
    "national following including performance particular political important security activities president "
    "knowledge character beautiful wonderful restaurant chocolate strawberry dangerous necessary probably "
    "especially particularly interesting temperature government conversation relationship opportunity "
    "responsibility organization significant traditional independent professional competition construction "
    "communication entertainment unfortunately immediately environmental infrastructure administration "
    "comfortable vegetable definitely absolutely together tomorrow yesterday sometimes basketball football"
).split()
WORDS = tuple(dict.fromkeys(WORDS))
PREFIX_MODELS = ("gpt2", "cl100k_base", "o200k_base", "llama-3", "qwen3", "deepseek-v3", "gemma-3", "mistral-7b")


def oddities() -> list[Oddity]:
    """The gallery, in order (the prefix entry searched live for each model: :func:`longer_prefix`)."""
    return [
        Oddity(
            "glitch",
            "A glitch token",
            "GPT-2's vocabulary has a single token for “ SolidGoldMagikarp” (a Reddit name frequent in the text the "
            "tokenizer was trained on), which the model itself hardly ever saw. Later vocabularies cut it up.",
            _rows((f"Please repeat:{GLITCH}",), ("gpt2", "cl100k_base"), GLITCH.strip()),
        ),
        Oddity(
            "strawberry",
            "How many r's in strawberry?",
            "The model sees tokens, not letters: the r's of “strawberry” are inside one or a few tokens, never "
            "one letter each.",
            _rows(("How many r's are in strawberry?",), ("cl100k_base", "o200k_base", "llama-3"), "strawberry"),
        ),
        Oddity(
            "numbers",
            "Numbers: groups of three, or one digit each",
            "GPT-4's and Llama 3's split rules cut numbers into groups of up to three digits; Qwen3 and Gemma 3 "
            "give every digit its own token.",
            _rows(("Pay 1234567 by 2025-12-31",), ("cl100k_base", "llama-3", "qwen3", "gemma-3"), "1234567"),
        ),
        Oddity(
            "trailing-space",
            "A trailing space",
            "Words carry the space before them. A space at the end has no word to go with, so it is a token of its "
            "own, one the model rarely saw at the end of a prompt.",
            _rows(("Once upon a time", "Once upon a time "), ("cl100k_base",), " "),
            explained=1,
        ),
        Oddity(
            "case-and-space",
            "Case and a leading space change the tokens",
            "“hello”, “ hello”, “Hello” and “HELLO” are different tokens (or different numbers of tokens): the "
            "same word looks unrelated to the model.",
            _rows(("hello", " hello", "Hello", " Hello", "HELLO", " HELLO"), ("o200k_base",)),
        ),
        Oddity(
            "normalizers",
            "The text is rewritten before it is cut",
            "A model's normalizer runs first: BERT lower-cases and strips accents, so “Résumé” and “resume” become "
            "the same tokens; Jurassic-2's NFKC rules turn the ligature “ﬁ”, “①” and full-width “Ｔｏｋｙｏ” into "
            "plain letters and digits. Each explanation lists what its normalizer changed.",
            (
                Row("Résumé vs resume", "bert-base-uncased", "Résumé"),
                Row("Résumé vs resume", "jurassic-2", "Résumé"),
                Row("ﬁne print ① Ｔｏｋｙｏ", "jurassic-2", "Ｔ"),
                Row("ﬁne print ① Ｔｏｋｙｏ", "bert-base-uncased", "ﬁ"),
            ),
        ),
        Oddity(
            "multiword",
            "One token for several words",
            "A unigram vocabulary may hold pieces with spaces inside: Jurassic-2 reads “ the rest of the world” as "
            "one token, because that segmentation scores best in its lattice. BPE vocabularies built on words "
            "never cross a space.",
            _rows(("as well as the rest of the world",), ("jurassic-2", "o200k_base"), "the"),
        ),
        Oddity(
            "japanese-bytes",
            "Japanese cut inside characters",
            "Byte-level BPE works on UTF-8 bytes: a kanji is three bytes, and a rare one is cut into tokens that "
            "are no character on their own.",
            _rows(("鬱蒼とした森",), ("gpt2", "cl100k_base"), "鬱"),
        ),
        Oddity(
            "emoji-zwj",
            "Emoji sequences",
            "A family emoji is four emoji joined by zero-width joiners (U+200D): up to a dozen tokens for one picture.",
            _rows(("👨‍👩‍👧‍👦 and 🏳️‍🌈",), ("cl100k_base", "o200k_base", "llama-3"), "👨"),
        ),
        Oddity(
            "indentation",
            "Code indentation",
            "GPT-2 has no tokens for runs of spaces, so indented code costs a token per space; later vocabularies "
            "have whole runs of spaces.",
            _rows(("def f(x):\n        return x + 1\n",), ("gpt2", "cl100k_base"), "        "),
        ),
        Oddity(
            "prefix",
            "A prefix with more tokens than the whole word",
            "Found by searching common words when this page is built: a word that is one or two tokens while "
            "its beginning, typed so far, takes more. Tokens are not built letter by letter.",
            tuple(row for name in PREFIX_MODELS for row in _prefix_rows(name)),
        ),
    ]


def warm() -> int:
    """Explain every explained row once, as the page does (``tokenplay serve`` calls it before forking its workers):
    what a model builds on its first explanation (Jurassic-2's lattice prefixes, the pattern of its 26,089 special
    tokens: seconds) is then built, and the page's first visit answers at once. The number of rows explained."""
    from .explain import Explainer

    done = 0
    for oddity in oddities():
        if not oddity.rows:
            continue
        row = oddity.rows[oddity.explained]
        tok = registry.get(row.tokenizer)
        result = tok.tokenize(row.text)
        try:
            Explainer(tok, row.text, result=result).explain(row.focus_index(result))
        except TokenplayError:
            continue  # the page shows the error in words; nothing to build ahead
        done += 1
    return done


def _prefix_rows(name: str) -> tuple[Row, ...]:
    found = longer_prefix(name)
    if found is None:
        return ()
    word, prefix = found
    return (Row(f" {prefix}", name, prefix), Row(f" {word}", name, word))


@lru_cache(maxsize=32)
def longer_prefix(name: str, words: tuple[str, ...] = WORDS) -> tuple[str, str] | None:
    """``(word, prefix)`` among ``words`` for tokenizer ``name``: the prefix (after a space, as in running text)
    with the most tokens more than the whole word, shorter words first on ties; ``None`` when no prefix of any of
    the words has more tokens than its word."""
    return _search(registry.get(name), words)


def _search(tok: Tokenizer, words: tuple[str, ...]) -> tuple[str, str] | None:
    best: tuple[int, int, str, str] | None = None
    for word in words:
        whole = len(tok.encode(" " + word))
        for end in range(2, len(word)):
            extra = len(tok.encode(" " + word[:end])) - whole
            if extra > 0 and (best is None or (-extra, len(word)) < best[:2]):
                best = (-extra, len(word), word, word[:end])
    return None if best is None else (best[2], best[3])
