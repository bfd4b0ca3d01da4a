"""The tokens a model's own default encoding adds (app/engines/pipeline/post_processor.py), held to the reference libraries: Hugging
Face ``tokenizers``' and ``transformers``' ``encode(text)`` with their defaults, ``sentencepiece`` with ``add_bos`` as
the model's configuration says, tiktoken's ``encode``.

``added_specials.around(encode(text))`` must equal the reference's ids, id for id (so ``count + len(added_specials)``
is the reference's count): for every shipped tokenizer.json in both engines, BERT, the SentencePiece models, the
OpenAI encodings, and for files with each kind of post-processor the library has.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings

import pytest
import sentencepiece as spm
import tokenizers
from helpers import realtext
from helpers.oracles import tiktoken_reference
from helpers.samples import ALL as SAMPLES

from app.engines import registry
from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS
from app.engines.pipeline.tokenizer_json import TokenizerFileError
from app.engines.registry.loaders import load_tokenizer, tokenizer_from_json
from app.engines.pipeline.post_processor import END, START

TEXTS = ["", "Hello world", " leading space", *(SAMPLES[k] for k in ("english", "code", "japanese", "emoji", "numbers"))]


def texts() -> list[str]:
    out = list(TEXTS)
    if realtext.available():
        out += [t for name in ("en", "ja", "c") for t in realtext.slices(name, 3, 400, seed=37)]
    return out


def library(name: str) -> tokenizers.Tokenizer:
    lib = tokenizers.Tokenizer.from_file(str(data_path(NPM_MODELS[name].tokenizer_file)))
    lib.no_truncation()
    lib.no_padding()
    return lib


@pytest.mark.parametrize("name", list(NPM_MODELS))
def test_every_tokenizer_json_model_adds_what_hugging_face_encode_adds(name):
    lib = library(name)
    ours = [registry.get(name), registry.get(f"native-{name}")]
    for text in texts():
        want = lib.encode(text).ids  # the library's defaults: add_special_tokens=True, special text parsed
        for tok in ours:
            got = tok.added_specials.around(tok.encode(text, allow_special=True))
            assert got == want, (tok.name, text[:60])
    assert ours[0].added_specials == ours[1].added_specials


@pytest.mark.parametrize("name", list(NPM_MODELS))
def test_every_tokenizer_json_model_counts_what_transformers_encode_counts(name, tmp_path):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    model = NPM_MODELS[name]
    shutil.copy(data_path(model.tokenizer_file), tmp_path / "tokenizer.json")
    shutil.copy(data_path(model.config_file), tmp_path / "tokenizer_config.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        referee = AutoTokenizer.from_pretrained(str(tmp_path))
    tok = registry.get(name)
    for text in TEXTS:  # transformers' classes may cut the text itself otherwise (Llama 2's leading space)
        added = len(referee.encode(text)) - len(referee.encode(text, add_special_tokens=False))
        assert added == len(tok.added_specials), text


def test_the_models_the_issue_names_add_their_beginning_of_text_token():
    assert registry.get("gemma-3").added_specials.texts == ["<bos>"]
    assert registry.get("llama-2").added_specials.texts == ["<s>"]
    assert registry.get("llama-3.1").added_specials.texts == ["<|begin_of_text|>"]
    assert registry.get("qwen3").added_specials.texts == []  # Qwen's default encoding adds nothing
    gemma = registry.get("gemma-3")
    assert len(gemma.encode("Hello world")) == 2 and len(gemma.added_specials.around(gemma.encode("Hello world"))) == 3


def test_bert_adds_cls_and_sep_as_transformers_bert_tokenizer_does(tmp_path):
    from transformers import AutoTokenizer

    tok = registry.get("bert-base-uncased")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(tok.id_to_token(i) + "\n" for i in range(tok.n_vocab)), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer", "do_lower_case": true}')
    referees = [AutoTokenizer.from_pretrained(str(tmp_path)).encode, bert_library(vocab).encode]
    referees[1] = lambda text, encode=referees[1]: encode(text).ids
    assert [(t.text, t.at) for t in tok.added_specials.tokens] == [("[CLS]", START), ("[SEP]", END)]
    for text in texts():
        for referee in referees:
            assert tok.added_specials.around(tok.encode(text)) == referee(text), text[:60]
    uploaded = load_tokenizer(vocab.read_bytes(), name="bert-upload")  # a vocab.txt a user brings: the same
    assert uploaded.added_specials == tok.added_specials


def bert_library(vocab) -> tokenizers.Tokenizer:
    from tokenizers.implementations import BertWordPieceTokenizer

    return BertWordPieceTokenizer(str(vocab), lowercase=True)


def test_sentencepiece_models_add_bos_as_their_configuration_says():
    mistral = spm.SentencePieceProcessor(model_file=str(data_path("sentencepiece/mistral-7b-v0.1.model")), add_bos=True)
    jurassic = spm.SentencePieceProcessor(model_file=str(data_path("sentencepiece/jurassic-2.model")))
    for name, referee in (("mistral-7b", mistral), ("jurassic-2", jurassic)):
        tok = registry.get(name)
        for text in texts():
            assert tok.added_specials.around(tok.encode(text)) == referee.encode(text), (name, text[:60])
    assert registry.get("mistral-7b").added_specials.texts == ["<s>"]
    assert registry.get("jurassic-2").added_specials.texts == []  # AI21's tokenizer adds none either


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base", "native-o200k_base"])
def test_openai_encodings_add_nothing_as_tiktoken_encode(name):
    tok = registry.get(name)
    referee = tiktoken_reference(registry.spec(name).entry)
    assert len(tok.added_specials) == 0
    for text in TEXTS:
        assert tok.added_specials.around(tok.encode(text)) == referee.encode(text, disallowed_special=())


# -- files with every post-processor the library has ------------------------------------------------------------------

WORDS = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "<s>": 3, "</s>": 4, "hello": 5, "world": 6, "<a>": 7, "<b>": 8}


def word_level(post_processor) -> str:
    lib = tokenizers.Tokenizer(tokenizers.models.WordLevel(WORDS, unk_token="[UNK]"))
    lib.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    lib.add_special_tokens(["[CLS]", "[SEP]", "<s>", "</s>", "<a>", "<b>"])
    lib.post_processor = post_processor
    return lib.to_str()


P = tokenizers.processors
POST_PROCESSORS = {
    "none": None,
    "bert": P.BertProcessing(("[SEP]", 2), ("[CLS]", 1)),
    "roberta": P.RobertaProcessing(("</s>", 4), ("<s>", 3)),
    "template-both-ends": P.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 3), ("</s>", 4)]),
    "template-two-ids": P.TemplateProcessing(
        single="<ab> $A", special_tokens=[{"id": "<ab>", "ids": [7, 8], "tokens": ["<a>", "<b>"]}]
    ),
    "bytelevel": P.ByteLevel(),
    # Llama 3.1's kind (the library panics on a sequence of two templates: no file can hold one)
    "sequence": P.Sequence([P.ByteLevel(), P.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 3)])]),
    "sequence-template-first": P.Sequence(
        [P.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]), P.ByteLevel()]
    ),
}


@pytest.mark.parametrize("kind", list(POST_PROCESSORS))
def test_a_tokenizer_json_post_processor_adds_what_the_library_adds(kind):
    data = word_level(POST_PROCESSORS[kind])
    lib = tokenizers.Tokenizer.from_str(data)
    for engine in ("huggingface", "tokenplay"):
        tok = tokenizer_from_json(data, name="t", engine=engine)
        for text in ("", "hello", "hello world world", "unknown hello"):
            assert tok.added_specials.around(tok.encode(text)) == lib.encode(text).ids, (kind, engine, text)


def test_a_post_processor_the_library_does_not_have_is_refused_in_words():
    obj = json.loads(word_level(None))
    obj["post_processor"] = {"type": "Mystery"}
    with pytest.raises(TokenizerFileError, match="post-processor.*'Mystery'"):
        tokenizer_from_json(json.dumps(obj), engine="tokenplay")
    obj["post_processor"] = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<x>", "type_id": 0}}],
                             "special_tokens": {}}
    with pytest.raises(TokenizerFileError, match="'<x>' is not in its special_tokens"):
        tokenizer_from_json(json.dumps(obj), engine="tokenplay")
