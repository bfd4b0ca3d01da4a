"""BPETokenizer: save/load, .tiktoken export read by tiktoken itself, special-token guarding, registry."""

from __future__ import annotations

import json

import pytest
import tiktoken
from helpers.samples import ALL
from tiktoken.load import load_tiktoken_bpe

from app.engines import registry
from app.engines.bpe.model import BPEModelError, BPETokenizer
from helpers.sample_text import english_text, japanese_text

CORPUS = english_text(40_000) + japanese_text(15_000) + ALL["emoji"] * 5 + ALL["code"] * 5
EOT = "<|endoftext|>"


@pytest.fixture(scope="module", params=["none", "gpt2", "gpt4", "o200k"])
def model(request):
    corpus = CORPUS if request.param != "none" else CORPUS[:6000]
    tok, _ = BPETokenizer.train(corpus, 600, request.param, [EOT, "<|pad|>"], name="test-bpe")
    return tok


def test_save_load_round_trip(model, tmp_path):
    path = model.save(tmp_path / "model.json")
    data = json.loads(path.read_text())
    assert data["format"] == "tokenplay-bpe" and data["version"] == 1
    assert data["pattern"] == model.pattern_name
    assert data["special_tokens"] == {EOT: 600, "<|pad|>": 601}
    assert data["merges"][0] == list(model.merges[0])
    assert data["training"]["counts"][0] >= data["training"]["counts"][-1]
    loaded = BPETokenizer.load(path)
    assert loaded.merges == model.merges and loaded.vocab == model.vocab
    assert loaded.special_tokens == model.special_tokens and loaded.pattern == model.pattern
    for text in ALL.values():
        assert loaded.encode(text, allow_special=True) == model.encode(text, allow_special=True)
    assert loaded.to_json() == model.to_json()


def test_saved_file_has_one_merge_per_line(model, tmp_path):
    lines = model.save(tmp_path / "m.json").read_text().splitlines()
    merge_lines = [ln for ln in lines if ln.startswith("  [")]
    assert len(merge_lines) == len(model.merges) == 600 - 256


def test_tiktoken_loads_the_export_and_gives_identical_ids(model, tmp_path):
    path = model.export_tiktoken(tmp_path / "model.tiktoken")
    enc = tiktoken.Encoding(
        name="exported",
        pat_str=model.pattern or r"[\s\S]+",  # pattern "none": the whole text is one piece
        mergeable_ranks=load_tiktoken_bpe(str(path)),
        special_tokens=model.special_tokens,
    )
    texts = list(ALL.values()) + [CORPUS[:5000], "never seen: Zyxw Qqq ÆØÅ 🦄 العربية"]
    for text in texts:
        assert model.encode(text) == enc.encode_ordinary(text)
        assert model.encode(text, allow_special=True) == enc.encode(text, allowed_special="all")


def test_export_refuses_duplicate_token_bytes(tmp_path):
    # "abc" made twice: (ab, c) and (a, bc)
    tok = BPETokenizer([(97, 98), (256, 99), (98, 99), (97, 258)], "none")
    assert tok.vocab[257] == tok.vocab[259] == b"abc"
    assert tok.encode("abc") == [257]  # the lowest id wins, as in the bytes-keyed ranks
    assert tok.decode([259]) == "abc"
    with pytest.raises(BPEModelError, match="same bytes"):
        tok.export_tiktoken(tmp_path / "x.tiktoken")


def test_load_errors_say_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(BPEModelError, match="invalid JSON"):
        BPETokenizer.load(bad)
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(BPEModelError, match="tokenplay-bpe"):
        BPETokenizer.load(bad)
    bad.write_text(json.dumps({"format": "tokenplay-bpe", "version": 1, "merges": [[97, 999]]}))
    with pytest.raises(BPEModelError, match="does not exist"):
        BPETokenizer.load(bad)
    bad.write_text(json.dumps({"format": "tokenplay-bpe", "version": 1, "merges": [], "special_tokens": {"x": 97}}))
    with pytest.raises(BPEModelError, match="reuses id"):
        BPETokenizer.load(bad)
    with pytest.raises(BPEModelError, match="not found"):
        BPETokenizer.load(tmp_path / "missing.json")


# -- special tokens ----------------------------------------------------------------------------------------


def test_special_token_text_is_plain_unless_allowed(model):
    text = f"hello{EOT}world"
    plain = model.encode(text)
    assert 600 not in plain and model.decode(plain) == text
    special = model.encode(text, allow_special=True)
    assert special == model.encode("hello") + [600] + model.encode("world")


# -- registry ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpt2", "p50k_base", "cl100k_base", "o200k_base"])
def test_native_engines_are_registered(name):
    spec = registry.spec(f"native-{name}")
    assert spec.label == f"{name} (tokenplay engine)" and spec.family == "tokenplay-bpe"
    tok = registry.get(f"native-{name}")
    assert tok.n_vocab == registry.get(name).n_vocab
    assert tok.special_tokens == registry.get(name).special_tokens
    assert tok.tokenize(ALL["emoji"]).ids == registry.get(name).tokenize(ALL["emoji"]).ids


def test_custom_bpe_ships_ready():
    tok = registry.get("custom-bpe")
    assert registry.spec("custom-bpe").family == "tokenplay-bpe"
    assert isinstance(tok, BPETokenizer) and tok.n_vocab == 4097 and tok.special_tokens == {EOT: 4096}
    assert tok.pattern_name == "gpt4" and tok.training["corpus_sha256"]
    for text in ALL.values():
        assert tok.decode(tok.encode(text)) == text
    assert len(tok.encode(ALL["english"])) < len(ALL["english"].encode()) / 2  # it does compress


def test_custom_split_regex_round_trips(tmp_path):
    tok = BPETokenizer([(97, 98)], r"\S+|\s+", ["<|x|>"])
    assert tok.pattern_name is None and tok.encode("ab ab") == [256, 32, 256]
    loaded = BPETokenizer.load(tok.save(tmp_path / "m.json"))
    assert loaded.pattern == r"\S+|\s+" and loaded.encode("ab ab") == [256, 32, 256]
    assert BPETokenizer([], None).pattern_name == "none"
