"""tokenizer.json files written by Hugging Face ``tokenizers``' own trainers, over the normalizers, pre-tokenizers and
decoders its documentation lists, for the tests of "any tokenizer.json" (issue 24).

:func:`train` builds a ``tokenizers.Tokenizer`` with a BPE, WordPiece, Unigram or WordLevel model, the pipeline
asked for, and trains it with the model's own trainer (``BpeTrainer``, ``WordPieceTrainer``, ``UnigramTrainer``,
``WordLevelTrainer``) on a small slice of every real-text corpus, special tokens included; :func:`tokenizer_json` is
its file. Components are named (:data:`NORMALIZERS`, :data:`PRE_TOKENIZERS`, :data:`DECODERS`) so a failure says
which pipeline failed; :func:`pipeline_json` draws a random pipeline from them (the fuzz tests). The referee is the
trained ``tokenizers.Tokenizer`` itself: :func:`reference_ids` encodes as the app does (no post-processor tokens,
special tokens as text unless allowed).
"""

from __future__ import annotations

import functools
import json
import random

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from . import realtext

SPECIALS = ["<unk>", "<s>", "</s>", "[CLS]", "[SEP]"]


@functools.cache
def charsmap() -> bytes:
    """A SentencePiece precompiled character map (nmt_nfkc), from the shipped Jurassic-2 model."""
    from app.engines.datafiles import data_path
    from app.engines.sentencepiece.proto import ModelProto

    return ModelProto.parse(data_path("sentencepiece/jurassic-2.model").read_bytes()).normalizer_spec.precompiled_charsmap


NORMALIZERS = {
    "none": lambda: None,
    "NFC": normalizers.NFC,
    "NFKC": normalizers.NFKC,
    "NFD+StripAccents": lambda: normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents()]),
    "NFKD": normalizers.NFKD,
    "Lowercase": normalizers.Lowercase,
    "Strip": lambda: normalizers.Strip(),
    "Strip-left": lambda: normalizers.Strip(left=True, right=False),
    "Replace": lambda: normalizers.Replace("``", '"'),
    "Replace-regex": lambda: normalizers.Replace(Regex(r"\s{2,}"), " "),
    "Precompiled": lambda: normalizers.Precompiled(charsmap()),
    "Nmt+Precompiled": lambda: normalizers.Sequence([normalizers.Nmt(), normalizers.Precompiled(charsmap())]),
    "Bert": lambda: normalizers.BertNormalizer(lowercase=True),
    "Prepend": lambda: normalizers.Prepend("\u2581"),
    "ByteLevel": normalizers.ByteLevel,
    "NFKC+Lowercase+Strip": lambda: normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase(), normalizers.Strip()]),
}

PRE_TOKENIZERS = {
    "none": lambda: None,
    "Metaspace": pre_tokenizers.Metaspace,
    "Metaspace-first": lambda: pre_tokenizers.Metaspace(prepend_scheme="first"),
    "Metaspace-never-nosplit": lambda: pre_tokenizers.Metaspace(prepend_scheme="never", split=False),
    "ByteLevel": lambda: pre_tokenizers.ByteLevel(add_prefix_space=False),
    "ByteLevel-prefix": lambda: pre_tokenizers.ByteLevel(add_prefix_space=True),
    "ByteLevel-noregex": lambda: pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    "Whitespace": pre_tokenizers.Whitespace,
    "WhitespaceSplit": pre_tokenizers.WhitespaceSplit,
    "Bert": pre_tokenizers.BertPreTokenizer,
    "Punctuation": pre_tokenizers.Punctuation,
    "Punctuation-previous": lambda: pre_tokenizers.Punctuation("merged_with_previous"),
    "Digits": lambda: pre_tokenizers.Digits(individual_digits=True),
    "Split": lambda: pre_tokenizers.Split(Regex(r"\p{N}{1,3}| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+"), "isolated"),
    "Split-removed": lambda: pre_tokenizers.Split(" ", "removed"),
    "CharDelimiterSplit": lambda: pre_tokenizers.CharDelimiterSplit("e"),
    "FixedLength": lambda: pre_tokenizers.FixedLength(4),
    "Sequence[Whitespace,Digits]": lambda: pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits()]),
    "Sequence[Punctuation,Metaspace]": lambda: pre_tokenizers.Sequence(
        [pre_tokenizers.Punctuation(), pre_tokenizers.Metaspace()]
    ),
    "Sequence[Split,ByteLevel-prefix]": lambda: pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r"\p{N}{1,3}"), "isolated"), pre_tokenizers.ByteLevel(add_prefix_space=True)]
    ),
    "Sequence[ByteLevel,Digits]": lambda: pre_tokenizers.Sequence(
        [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False), pre_tokenizers.Digits(individual_digits=True)]
    ),
    "Sequence[WhitespaceSplit,Metaspace-first]": lambda: pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(prepend_scheme="first")]
    ),
}

DECODERS = {
    "none": lambda: None,
    "ByteLevel": decoders.ByteLevel,
    "Metaspace": decoders.Metaspace,
    "WordPiece": decoders.WordPiece,
    "BPEDecoder": decoders.BPEDecoder,
    "CTC": decoders.CTC,
    "Sequence[Replace,ByteFallback,Fuse,Strip]": lambda: decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    ),
}

#: "BPE-word-end": a BPE whose words end with "</w>" (``end_of_word_suffix``, as openai-gpt and CharBPETokenizer write).
MODELS = ("BPE", "BPE-word-end", "WordPiece", "Unigram", "WordLevel")


@functools.cache
def corpus(size: int = 6_000) -> tuple[str, ...]:
    """Lines from every real-text corpus, about ``size`` bytes of each."""
    realtext.require()
    return tuple(realtext.excerpt(name, 4_321, size) for name in realtext.NAMES)


def _model_and_trainer(model: str, vocab_size: int, byte_alphabet: bool = False, **options):
    specials = list(SPECIALS)
    if model == "BPE":  # byte_alphabet: every byte a token from the start (as ByteLevelBPETokenizer trains)
        alphabet = pre_tokenizers.ByteLevel.alphabet() if byte_alphabet else []
        return models.BPE(unk_token="<unk>", **options), trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=specials, show_progress=False, initial_alphabet=alphabet
        )
    if model == "BPE-word-end":
        return models.BPE(unk_token="<unk>", end_of_word_suffix="</w>", **options), trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=specials, show_progress=False, end_of_word_suffix="</w>"
        )
    if model == "WordPiece":
        return models.WordPiece(unk_token="<unk>"), trainers.WordPieceTrainer(
            vocab_size=vocab_size, special_tokens=specials, show_progress=False
        )
    if model == "Unigram":
        return models.Unigram(), trainers.UnigramTrainer(
            vocab_size=max(vocab_size, 3_000), special_tokens=specials, unk_token="<unk>", show_progress=False,
            **options,
        )
    if model == "WordLevel":
        return models.WordLevel(unk_token="<unk>"), trainers.WordLevelTrainer(
            vocab_size=vocab_size, special_tokens=specials, show_progress=False
        )
    raise ValueError(model)


def train(
    model: str,
    normalizer: str = "none",
    pre_tokenizer: str = "none",
    decoder: str = "none",
    *,
    vocab_size: int = 1_200,
    post_processor: bool = False,
    size: int = 6_000,
    byte_alphabet: bool = False,
    **options,
) -> Tokenizer:
    """A tokenizer of ``model`` with the named pipeline, trained by the model's own trainer on :func:`corpus`
    (``byte_alphabet``: a BPE that starts from all 256 bytes of GPT-2's alphabet; ``options`` go to the model)."""
    core, trainer = _model_and_trainer(model, vocab_size, byte_alphabet, **options)
    tok = Tokenizer(core)
    if (n := NORMALIZERS[normalizer]()) is not None:
        tok.normalizer = n
    if (p := PRE_TOKENIZERS[pre_tokenizer]()) is not None:
        tok.pre_tokenizer = p
    if (d := DECODERS[decoder]()) is not None:
        tok.decoder = d
    if post_processor:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 3), ("[SEP]", 4)]
        )
    tok.train_from_iterator(corpus(size), trainer)
    return tok


def tokenizer_json(*args, **kwargs) -> str:
    """The ``tokenizer.json`` text of :func:`train`'s tokenizer."""
    return train(*args, **kwargs).to_str()


def reference(data: str) -> Tokenizer:
    """The library's tokenizer for a ``tokenizer.json`` text, as the app runs it (no truncation or padding)."""
    tok = Tokenizer.from_str(data)
    tok.no_truncation()
    tok.no_padding()
    return tok


def reference_ids(ref: Tokenizer, text: str, allow_special: bool = False) -> list[int]:
    """The library's ids for ``text`` as the app asks for them (no post-processor tokens)."""
    ref.encode_special_tokens = not allow_special
    return ref.encode(text, add_special_tokens=False).ids


def texts(seed: int = 0, count: int = 3, chars: int = 1_500) -> list[str]:
    """Pieces of every real-text corpus (English, Japanese, Chinese, C...) with special-token text and odd
    characters mixed in."""
    realtext.require()
    rng = random.Random(seed)
    out = [piece for name in realtext.NAMES for piece in realtext.slices(name, count, chars, seed=seed)]
    odd = ["<s>", "</s>", "<unk>", "[CLS]", " ", "  ", "\t", "\n", "\u2581", "e\u0301", "ｶﾞ", "①", "ﬁ", "🙂", "👨‍👩‍👧",
           "\x00", "\u200b", "\ufeff", "Ｈｅｌｌｏ", "İ", "ß", "123456", "'s", "``", "<0x41>"]
    for k, text in enumerate(list(out)):
        cut = rng.randrange(len(text) + 1)
        out[k] = text[:cut] + "".join(rng.choice(odd) for _ in range(3)) + text[cut:]
    return out + ["", " ", "  leading and trailing  ", "<s>hello</s>", "\u2581\u2581x"]


def random_pipeline(rng: random.Random) -> dict:
    """A random pipeline of the listed components, as the pieces of a tokenizer.json (Sequence combos included)."""

    def state(obj) -> dict:
        return json.loads(obj.__getstate__())

    def pick(table: dict, n: int) -> dict | None:
        chosen = [table[k]() for k in rng.sample([k for k in table if k != "none"], n)]
        chosen = [c for c in chosen if c is not None]
        if not chosen:
            return None
        if len(chosen) == 1:
            return state(chosen[0])
        kind = "normalizers" if table is NORMALIZERS else "pretokenizers" if table is PRE_TOKENIZERS else "decoders"
        key = {"normalizers": "normalizers", "pretokenizers": "pretokenizers", "decoders": "decoders"}[kind]
        return {"type": "Sequence", key: [state(c) for c in chosen]}

    return {
        "normalizer": pick(NORMALIZERS, rng.choice([0, 1, 1, 2])),
        "pre_tokenizer": pick(PRE_TOKENIZERS, rng.choice([0, 1, 1, 2])),
        "decoder": pick(DECODERS, rng.choice([0, 1, 1, 2])),
    }
