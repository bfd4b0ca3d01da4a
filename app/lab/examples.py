"""Ready-made corpora for the lab's setup page, with the settings that show each one best, and the presets of
sentencepiece's trainer options.

:data:`SAMPLE_CORPUS` is what a fresh ``/lab`` holds: a page of plain English about tokenizers (written for the
lab) whose words share pieces (``th``, ``er``, ``the``, ``token``, ``pieces``), trained by :data:`DEFAULT_FORM`
into word pieces (the whitespace pre-tokenizer keeps every merge inside a word). The side-by-side form trains
BPE, WordPiece and Unigram on the same page at :data:`SIDE_VOCAB_SIZE`, which all three reach on it.

Two examples are lessons about byte fallback (issue 33): a 400-piece SentencePiece BPE with byte fallback on the
sample page, whose vocabulary lists the special pieces, the 256 byte pieces, the merged pieces and the characters,
in the ``.model``'s order, and the same page in Korean (:data:`KOREAN`) encoded with it (byte pieces) and with the
same run without byte fallback (one ``<unk>`` a run of unknown characters). An example's ``lesson`` says what its
run page opens with. :data:`PRESETS` holds sentencepiece option sets the form can fill in (Llama 2's), each option
with where its value comes from.
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
#: The side-by-side form's vocabulary size: BPE, WordPiece and Unigram all reach it on the sample corpus (sentencepiece's
#: unigram trainer keeps at most 209 pieces of it: its EM steps drop the pieces the page would hardly use).
SIDE_VOCAB_SIZE = 200

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
        "title": "Japanese, SentencePiece BPE",
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

#: The sample page's first lines in Korean: no character of it is in the English sample, so a tokenizer trained on
#: the sample has none of its characters (byte fallback cuts them into bytes; without it each run is one <unk>).
KOREAN = "언어 모델은 글자를 읽지 않습니다. 토큰을 읽습니다: 단어의 조각, 단어 전체, 공백과 기호."

#: The byte-fallback lessons' run: sentencepiece's BPE on the sample page, 400 pieces.
_LESSON = {"corpus": SAMPLE_CORPUS, "algorithm": "sentencepiece", "pattern": "none", "size_kind": "vocab_size",
           "size": 400, "tie_break": "first"}

EXAMPLES |= {
    "byte-fallback": {
        "title": "Byte fallback: 400 SentencePiece pieces",
        "form": _LESSON | {"sentencepiece": {"byte_fallback": True}},
        "lesson": {
            "encode": KOREAN,
            "text": "The vocabulary lists the pieces in the .model's order: the 3 special pieces, the 256 byte pieces "
                    "(<0x00> to <0xFF>), the merged pieces, then the characters. The Korean text has no character "
                    "the English page has: byte fallback cuts each into its UTF-8 bytes, a byte piece each.",
        },
    },
    "no-byte-fallback": {
        "title": "…and without it: Korean is <unk>",
        "form": _LESSON | {"sentencepiece": {"byte_fallback": False}},
        "lesson": {
            "encode": KOREAN,
            "text": "Without byte fallback the vocabulary has no byte pieces, so it holds more merged pieces; a "
                    "character it lacks becomes the unknown piece <unk> (id 0), one for each run of them: the Korean "
                    "text is mostly <unk>, and what it said is lost.",
        },
    },
}

#: sentencepiece trainer options the setup form can fill in, each with where its value comes from.
PRESETS: dict[str, dict] = {
    "llama-2": {
        "title": "Llama 2",
        "about": "The options stored in Llama 2's tokenizer.model (its trainer spec). That file is not shipped here: "
                 "each value is read from what is shipped, as listed.",
        "options": {
            "byte_fallback": True,
            "add_dummy_prefix": True,
            "remove_extra_whitespaces": False,
            "normalization_rule_name": "identity",
            "split_digits": True,
            "allow_whitespace_only_pieces": True,
            "max_sentencepiece_length": 16,
            "character_coverage": 0.99995,
            "split_by_unicode_script": True,
            "split_by_number": True,
            "split_by_whitespace": True,
            "treat_whitespace_as_suffix": False,
            "unk_id": 0,
            "bos_id": 1,
            "eos_id": 2,
            "pad_id": -1,
        },
        "sources": {
            "byte_fallback": "Llama 2's tokenizer.json: its BPE model has byte_fallback",
            "add_dummy_prefix": "Llama 2's tokenizer.json: its normalizer puts ▁ before the text",
            "remove_extra_whitespaces": "Llama 2's tokenizer.json: its normalizer turns every space into ▁, "
                                        "collapsing none",
            "normalization_rule_name": "Llama 2's tokenizer.json: its normalizer has no NFKC step",
            "split_digits": "Llama 2's vocabulary: no piece holds a digit beside anything else",
            "allow_whitespace_only_pieces": "Llama 2's vocabulary: ▁▁, ▁▁▁▁ ... runs of spaces up to 16 are pieces",
            "max_sentencepiece_length": "Llama 2's vocabulary: its longest pieces have 16 characters",
            "character_coverage": "Mistral 7B's tokenizer.model (shipped; a Llama 2-style tokenizer): its trainer spec",
            "split_by_unicode_script": "Mistral 7B's tokenizer.model: its trainer spec (Llama 2's vocabulary "
                                       "keeps scripts apart too)",
            "split_by_number": "Mistral 7B's tokenizer.model: its trainer spec",
            "split_by_whitespace": "Mistral 7B's tokenizer.model: its trainer spec",
            "treat_whitespace_as_suffix": "Mistral 7B's tokenizer.model: its trainer spec",
            "unk_id": "Llama 2's tokenizer.json: <unk> is id 0",
            "bos_id": "Llama 2's tokenizer.json: <s> is id 1",
            "eos_id": "Llama 2's tokenizer.json: </s> is id 2",
            "pad_id": "Llama 2's tokenizer.json: it has no padding piece",
        },
    },
}
