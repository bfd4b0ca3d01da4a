"""openai-gpt-style tokenizer.json files (BPE with an ``end_of_word_suffix``, BERT's normalizer and pre-tokenizer) in both
engines, and byte-level files that lack some of the 256 byte tokens, shown as bytes whatever they are named.

The referee is Hugging Face ``tokenizers``: a file built and trained by the library itself with openai-gpt's pipeline
(``BertNormalizer`` lower-casing, ``BertPreTokenizer``, ``BPE(end_of_word_suffix="</w>")``, ``BPEDecoder``).
"""

from __future__ import annotations

import json

import pytest
from helpers import realtext
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from app.engines.bpe.word_end_model import WordEndBPETokenizer
from app.engines.huggingface.library import HuggingFaceTokenizer
from app.engines.registry.loaders import load_tokenizer, tokenizer_from_json

SENTENCES = ["Tokenization is cool.", "Tokenization      is      cool."]


@pytest.fixture(scope="module")
def gpt1_like() -> str:
    """A tokenizer.json with openai-gpt's pipeline, trained by the library on English, Spanish and C."""
    realtext.require()
    tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    trainer = trainers.BpeTrainer(vocab_size=2_000, special_tokens=["<unk>"], end_of_word_suffix="</w>",
                                  show_progress=False)
    tok.train_from_iterator([realtext.excerpt(name, 0, 200_000) for name in ("en", "es", "c")], trainer)
    return tok.to_str()


def _library_ids(data: str, text: str) -> list[int]:
    ref = Tokenizer.from_str(data)
    return ref.encode(text, add_special_tokens=False).ids


def test_word_end_files_load_in_both_engines_with_the_librarys_ids(gpt1_like):
    ours = tokenizer_from_json(gpt1_like, name="ours")
    library = tokenizer_from_json(gpt1_like, name="lib", engine="huggingface")
    assert isinstance(ours, WordEndBPETokenizer) and isinstance(library, HuggingFaceTokenizer)
    ref = Tokenizer.from_str(gpt1_like)
    assert ours.n_vocab == library.n_vocab == ref.get_vocab_size(with_added_tokens=True)
    for name in realtext.NAMES:
        for text in realtext.slices(name, 2, 3_000, seed=35):
            want = _library_ids(gpt1_like, text)
            assert ours.encode(text) == want, (name, text[:60])
            assert library.encode(text) == want
            assert ours.decode(want) == ref.decode(want, skip_special_tokens=False)


def test_the_issues_two_sentences_give_the_same_ids_and_end_with_the_suffix(gpt1_like):
    ours = tokenizer_from_json(gpt1_like, name="ours")
    first, spaced = (ours.encode(s) for s in SENTENCES)
    assert first == spaced == _library_ids(gpt1_like, SENTENCES[0])
    pieces = [ours.id_to_token(i) for i in first]
    assert pieces[-1] == ".</w>" and pieces[-2].endswith("</w>") and "".join(pieces).replace("</w>", "") == \
        "tokenizationiscool."


def test_tokens_are_placed_on_the_input_and_their_bytes_drop_the_suffix(gpt1_like):
    ours = tokenizer_from_json(gpt1_like, name="ours")
    library = tokenizer_from_json(gpt1_like, name="lib", engine="huggingface")
    text = "Hello, Wörld of C code: int main(void) { return 0; }"
    ref = Tokenizer.from_str(gpt1_like).encode(text, add_special_tokens=False)
    tokens = ours.tokenize(text).tokens
    assert [(t.start, t.end) for t in tokens] == ref.offsets
    assert [t.text for t in tokens] == ref.tokens
    for tid in set(ref.ids):
        want = ours.id_to_token(tid).removesuffix("</w>").encode()
        assert ours.token_bytes(tid) == library.token_bytes(tid) == want


def test_unknown_characters_are_the_unknown_token_as_in_the_library(gpt1_like):
    ours = tokenizer_from_json(gpt1_like, name="ours")
    text = "snow ☃☃ and ψ"
    want = _library_ids(gpt1_like, text)
    assert ours.encode(text) == want and ours.vocab["<unk>"] in want


def _handmade_byte_level() -> bytes:
    """A hand-made byte-level BPE (GPT-2's alphabet, Ġ for a space) with a few letters only: not all 256 bytes."""
    chars = list("Ġthe") + list("abcdfgimnorsuw")
    vocab = {c: i for i, c in enumerate(dict.fromkeys(chars))}
    merges = [("Ġ", "t"), ("Ġt", "h"), ("Ġth", "e"), ("t", "h"), ("th", "e")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok.to_str().encode()


@pytest.mark.parametrize("engine", ["tokenplay", "huggingface"])
def test_a_byte_level_file_lacking_bytes_shows_its_tokens_as_bytes_whatever_its_name(engine):
    data = _handmade_byte_level()
    assert json.loads(data)["model"]["vocab"]["Ġthe"]
    text = "the theme the"
    want = _library_ids(data.decode(), text)
    for name in ("sentencepiece-like", "gpt2", "x"):
        tok = load_tokenizer(data, name=name, engine=engine)
        result = tok.tokenize(text)
        assert result.ids == want
        assert [t.text for t in result.tokens] == ["the", " the", "m", "e", " the"]
        assert all("Ġ" not in t.text for t in result.tokens)


def test_shipped_models_are_told_byte_level_by_their_content_not_their_names():
    """The registry's family of each shipped tokenizer.json agrees with what its file holds (the engine the loader
    picks from the content), whatever the model is called."""
    from app.engines import registry
    from app.engines.bpe.json_model import ByteLevelJSONTokenizer
    from app.engines.huggingface.npm_models import NPM_MODELS

    for name, model in NPM_MODELS.items():
        native = registry.get(f"native-{name}")
        assert isinstance(native, ByteLevelJSONTokenizer) == (not model.pieces), name
        assert registry.spec(f"native-{name}").family == ("sentencepiece" if model.pieces else "tokenplay-bpe")


@pytest.mark.parametrize("engine", ["tokenplay", "huggingface"])
def test_a_byte_level_file_lacking_bytes_is_explained_as_byte_level(engine):
    from app.features.explain.explainer import Explainer

    tok = load_tokenizer(_handmade_byte_level(), name="handmade", engine=engine)
    explained = Explainer(tok, "the theme the").explain(1).to_dict()
    assert bytes.fromhex(explained["tree"]["bytes"]) == b" the"
    assert [bytes.fromhex(s["left"]) for s in explained["steps"]][:1] == [b" "]
    assert "SentencePiece" not in explained["pretoken"]["source"] + " ".join(explained["notes"])


@pytest.mark.parametrize("engine", ["tokenplay", "huggingface"])
def test_word_end_tokens_are_explained_by_the_files_merges(gpt1_like, engine):
    """Every token of a text explained: a merged token's tree is made of its word's characters (the last with
    </w>) and joins into the library's piece; a character the vocabulary lacks is the unknown token."""
    from app.features.explain.explainer import Explainer

    tok = load_tokenizer(gpt1_like.encode(), name="gpt1", engine=engine)
    text = "Tokenization is cool. Hello, Wörld ☃"
    ref = Tokenizer.from_str(gpt1_like).encode(text, add_special_tokens=False)
    explainer = Explainer(tok, text)
    assert explainer.result.ids == ref.ids
    for index, piece in enumerate(ref.tokens):
        got = explainer.explain(index).to_dict()
        if piece == "<unk>":
            assert got["kind"] == "unknown"
            continue
        assert got["kind"] == "merge" and bytes.fromhex(got["tree"]["bytes"]).decode() == piece
        leaves = got["tree"]
        while leaves["children"]:
            leaves = leaves["children"][0]
        assert len(bytes.fromhex(leaves["bytes"]).decode().removesuffix("</w>")) == 1
