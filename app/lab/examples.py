"""Ready-made corpora for the lab's setup page, with the settings that show each one best.

:data:`SAMPLE_CORPUS` is what a fresh ``/lab`` holds: a page of plain English about tokenizers (written for the
lab) whose words share pieces (``th``, ``er``, ``the``, ``token``, ``pieces``), trained by :data:`DEFAULT_FORM`
into word pieces (the whitespace pre-tokenizer keeps every merge inside a word). The side-by-side form trains
BPE, WordPiece and Unigram on the same page at :data:`SIDE_VOCAB_SIZE`, which all three reach on it.
"""

from __future__ import annotations

from app.engines.datafiles import REPO_ROOT


def python_reference(chars: int) -> str:
    """The first ``chars`` characters (whole lines) of the Python Language Reference topics that train custom-bpe
    (``tokenizers/custom-bpe/corpus.txt``; Python Software Foundation License): English prose and code, enough of it
    for a unigram run to prune in several rounds."""
    with open(REPO_ROOT / "tokenizers" / "custom-bpe" / "corpus.txt", encoding="utf-8") as f:
        text = f.read(chars)
    return text[: text.rindex("\n") + 1]

SAMPLE_CORPUS = """\
A language model does not read letters. It reads tokens: pieces of words, whole words, spaces and marks.
Before a model is trained, a tokenizer is trained on a corpus, and this lab trains one in front of you.
Byte pair encoding starts from single characters or bytes. It counts every pair of neighbours in the corpus,
merges the most frequent pair into a new token, and counts again. Merge after merge, frequent pieces grow:
first pairs such as th, er and in, then longer pieces such as the, ing and tion, and at last whole words.
WordPiece merges in the same way but scores each pair by how often it occurs compared with its parts,
so it prefers pairs whose parts are rare on their own. Unigram works the other way round: it starts
from a large vocabulary of frequent pieces and removes, round after round, the pieces the corpus needs least.
Each method stops when its vocabulary reaches the size you asked for, or when the corpus has nothing left to give.
The lower the number of tokens, the shorter the sequence the model reads, and the more text fits in its window.
A tokenizer trained on English cuts English into long pieces, while text in other languages falls into shorter ones.
The newest models use larger vocabularies, so common words, numbers and names become single tokens more often.
Watch the corpus change as you step through the merges: the tokens get longer, fewer and easier to read.
Try your own text too. Paste a page of a book, a few lines of code or a song, and see which pieces it shares.
Notice how the space before a word, a capital letter or a full stop changes the pieces the tokenizer learns.
Then compare the three methods side by side on one corpus, at one vocabulary size, on a sentence you type.
"""

#: The setup form of a fresh ``/lab``: byte-level BPE (what GPT and Llama models use), words cut at whitespace
#: so that merges build pieces of words and never pairs across a space, 40 merges of the sample corpus.
DEFAULT_FORM = {
    "corpus": SAMPLE_CORPUS,
    "algorithm": "byte",
    "pattern": "whitespace",
    "size_kind": "merges",
    "size": 40,
    "tie_break": "first",
    "end_of_word": False,
}
#: The side-by-side form's vocabulary size: BPE, WordPiece and Unigram all reach it on the sample corpus.
SIDE_VOCAB_SIZE = 400

EXAMPLES: dict[str, dict] = {
    "sample": {"title": "A page about tokenizers (words)", "form": dict(DEFAULT_FORM)},
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
    # Unigram starts from ~1,100 seed pieces here and keeps three quarters each round: five rounds to 360 (360 is
    # just above the 349 special, byte and character pieces this text needs), each with its removed pieces.
    "unigram-rounds": {
        "title": "Unigram, pruned in five rounds (Python's docs)",
        "form": {
            "corpus": python_reference(30_000),
            "algorithm": "unigram",
            "pattern": "none",
            "size_kind": "vocab_size",
            "size": 360,
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
