"""Bring your own tokenizer, engine side: every file format loads and encodes like its reference library, bad files
are refused with a clear error, and the CLI uses files directly (``--file``, ``-t PATH``, ``serve --tokenizer``).

Referees: Hugging Face ``tokenizers`` for tokenizer.json files, tiktoken for .tiktoken files and Tokenplay BPE
models (exported to .tiktoken), ``sentencepiece`` for .model files.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sentencepiece as spm
import tiktoken
from helpers.samples import ALL
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

from app.cli import main
from app.engines import registry
from app.engines import datafiles
from app.engines.bpe.model import custom_bpe
from app.engines.bpe.patterns import pattern_regex
from app.engines.registry.loaders import MAX_FILE_BYTES, FileTooLargeError, LoaderError, load_tokenizer
from app.engines.huggingface.npm_models import NPM_MODELS
from app.engines.sentencepiece.proto import WORD, ModelProto
from app.engines.registry.files import ENV, entry_name
from app.engines.pipeline.tokenizer_json import TokenizerFileError, UnsupportedTokenizerError

TEXTS = [ALL["english"], ALL["code"], ALL["japanese"], ALL["emoji"], ALL["whitespace"], ALL["numbers"]]
ROOT = Path(__file__).resolve().parents[2]


def trained_byte_level_json() -> str:
    """A small byte-level BPE trained by Hugging Face tokenizers itself, with an added special token."""
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|end|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(TEXTS * 3, trainer=trainer)
    return tok.to_str()


@pytest.mark.parametrize("engine", ["tokenplay", "huggingface"])
def test_tokenizer_json_loads_and_encodes_like_the_library(engine):
    data = trained_byte_level_json()
    ref = HFTokenizer.from_str(data)
    ours = load_tokenizer(data.encode(), name="mine", engine=engine)
    for text in TEXTS + ["a<|end|>b"]:
        ref.encode_special_tokens = True
        assert ours.encode(text) == ref.encode(text, add_special_tokens=False).ids
        ref.encode_special_tokens = False
        want = ref.encode(text, add_special_tokens=False).ids
        assert ours.encode(text, allow_special=True) == want
        assert ours.decode(want) == ref.decode(want, skip_special_tokens=False)
    assert ours.special_tokens == {"<|end|>": 0}


def test_tiktoken_file_with_a_pattern_and_special_tokens_encodes_like_tiktoken(tmp_path):
    ranks_text = custom_bpe().tiktoken_ranks_text()
    ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in ranks_text.splitlines())}
    for pattern in ("gpt2", "o200k", r"\S+|\s+"):
        ours = load_tokenizer(ranks_text.encode(), pattern=pattern, special_tokens=["<|x|>"])
        ref = tiktoken.Encoding(
            "ref", pat_str=pattern_regex(pattern) if pattern != r"\S+|\s+" else pattern,
            mergeable_ranks=ranks, special_tokens={"<|x|>": len(ranks)},
        )
        for text in TEXTS + ["a<|x|>b"]:
            assert ours.encode(text) == ref.encode_ordinary(text)
            assert ours.encode(text, allow_special=True) == ref.encode(text, allowed_special="all")


def test_tokenplay_bpe_model_encodes_like_tiktoken_on_its_exported_ranks():
    model_json = datafiles.verified_bytes("custom-bpe/model.json")
    ours = load_tokenizer(model_json)
    exported = custom_bpe()
    ranks = {b: r for b, r in exported.ranks.items()}
    ref = tiktoken.Encoding("ref", pat_str=exported.pattern, mergeable_ranks=ranks, special_tokens=exported.special_tokens)
    for text in TEXTS:
        assert ours.encode(text) == ref.encode_ordinary(text)


def test_sentencepiece_model_encodes_like_sentencepiece():
    data = datafiles.verified_bytes("sentencepiece/mistral-7b-v0.1.model")
    ours = load_tokenizer(data)
    ref = spm.SentencePieceProcessor(model_proto=data)
    for text in TEXTS:
        assert ours.encode(text) == ref.encode(text)


def unicode_scripts_json() -> str:
    """A WordLevel file (a model Tokenplay runs) with a pre-tokenizer it does not run."""
    tok = HFTokenizer(models.WordLevel({"[UNK]": 0, "a": 1, "b": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.UnicodeScripts()
    return tok.to_str()


def subword_prefix_json() -> str:
    """A BPE file with a continuing-subword prefix, which Tokenplay's engines do not run."""
    tok = HFTokenizer(models.BPE({"a": 0, "b": 1, "##b": 2, "ab": 3}, [("a", "##b")], continuing_subword_prefix="##"))
    return tok.to_str()


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (b"\x00\x01 certainly not a tokenizer \xff", LoaderError, "^this is not a tokenizer file; Tokenplay reads"),
        (b"just some words\nin a text file\n", LoaderError, "^this is not a tokenizer file; Tokenplay reads"),
        (unicode_scripts_json().encode(), UnsupportedTokenizerError, "^the UnicodeScripts pre-tokenizer is not supported"),
        (subword_prefix_json().encode(), UnsupportedTokenizerError, "^BPE models with a continuing_subword_prefix"),
        (b'{"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0', TokenizerFileError, "cut short"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}}', TokenizerFileError, "ids collide"),
        (b"YQ== 0\nYg== 0\n", LoaderError, "ids collide"),
        (b'{"format": "tokenplay-bpe", "version": 1, "merges": [[1]]}', LoaderError, "merges"),
    ],
)
def test_bad_files_are_refused_with_a_clear_error(data, error, message):
    with pytest.raises(error, match=message):
        load_tokenizer(data)


def test_truncated_shipped_tokenizer_json_is_refused():
    data = datafiles.verified_bytes(NPM_MODELS["qwen3"].tokenizer_file)
    for engine in ("tokenplay", "huggingface"):
        with pytest.raises(TokenizerFileError, match=r"is cut short: its JSON stops at line \d+, column \d+ before it is complete"):
            load_tokenizer(data[: len(data) // 2], engine=engine)


def test_word_sentencepiece_model_is_refused():
    model = ModelProto.parse(datafiles.verified_bytes("sentencepiece/mistral-7b-v0.1.model"))
    model.trainer_spec.model_type = WORD
    with pytest.raises(LoaderError, match="word"):
        load_tokenizer(model.serialize())


def test_tokenizer_json_with_an_added_token_reusing_another_id_is_refused():
    obj = json.loads(trained_byte_level_json())
    obj["added_tokens"].append({**obj["added_tokens"][0], "content": "<|other|>"})
    with pytest.raises(TokenizerFileError, match="ids collide"):
        load_tokenizer(json.dumps(obj).encode())


def test_files_over_64_mb_are_refused_before_parsing():
    with pytest.raises(FileTooLargeError, match="64 MB"):
        load_tokenizer(b"{" + b" " * MAX_FILE_BYTES)


def test_a_pattern_is_only_for_tiktoken_files():
    with pytest.raises(LoaderError, match="only"):
        load_tokenizer(datafiles.verified_bytes("custom-bpe/model.json"), pattern="gpt2")
    with pytest.raises(LoaderError, match="neither a known name nor a valid regex"):
        load_tokenizer(custom_bpe().tiktoken_ranks_text().encode(), pattern="(unclosed")


# -- CLI -------------------------------------------------------------------------------------------------------------
def _json_out(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_cli_encode_with_a_tokenizer_json_file_in_both_engines(capsys):
    path = datafiles.data_path(NPM_MODELS["gemma-3"].tokenizer_file)
    ref = HFTokenizer.from_file(str(path))
    ref.encode_special_tokens = True
    want = ref.encode(ALL["mixed"], add_special_tokens=False).ids
    for extra in ([], ["--engine", "native"]):
        assert main(["encode", "--file", str(path), *extra, ALL["mixed"]]) == 0
        assert _json_out(capsys)["ids"] == want


def test_cli_takes_a_trained_model_path_with_t_and_decodes_with_file(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(ALL["english"] * 5, encoding="utf-8")
    model = tmp_path / "my-bpe.json"
    assert main(["train", str(corpus), "--vocab-size", "300", "--out", str(model), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["encode", "-t", str(model), "The quick brown fox"]) == 0
    ids = _json_out(capsys)["ids"]
    trained = load_tokenizer(model.read_bytes())
    ref = tiktoken.Encoding("ref", pat_str=trained.pattern, mergeable_ranks=dict(trained.ranks), special_tokens={})
    assert ids == ref.encode_ordinary("The quick brown fox")
    assert main(["decode", "--file", str(model), *map(str, ids)]) == 0
    assert capsys.readouterr().out == "The quick brown fox\n"


def test_cli_tiktoken_file_takes_pattern_and_special_tokens(tmp_path, capsys):
    path = tmp_path / "c.tiktoken"
    path.write_text(custom_bpe().tiktoken_ranks_text(), encoding="ascii")
    assert main(["encode", "--file", str(path), "--pattern", "gpt2", "--special", "<|x|>", "--allow-special", "a<|x|>"]) == 0
    assert _json_out(capsys)["ids"][-1] == 4096


def test_cli_missing_file_and_unknown_name_exit_2(tmp_path, capsys):
    assert main(["encode", "--file", str(tmp_path / "nope.json"), "x"]) == 2
    assert "cannot read tokenizer file" in capsys.readouterr().err
    assert main(["encode", "-t", "no-such-tokenizer", "x"]) == 2
    assert "unknown tokenizer" in capsys.readouterr().err


def test_entry_names_come_from_the_file():
    assert entry_name("x/my-bpe.json") == "my-bpe"
    assert entry_name("/models/qwen-small/tokenizer.json") == "qwen-small"


def test_serve_registers_tokenizer_files_before_forking_its_workers(tmp_path, monkeypatch):
    """``tokenplay serve`` registers the files in its own process, which its workers are forked from, and names them
    in the environment for any process started otherwise: both serve the ids of the reference libraries."""
    folder = tmp_path / "tiny-hf"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(trained_byte_level_json(), encoding="utf-8")
    model = tmp_path / "mine.model"
    model.write_bytes(datafiles.verified_bytes("sentencepiece/mistral-7b-v0.1.model"))
    started = []
    monkeypatch.setattr("app.web.server.serve", lambda *a, **k: started.append(k) or 0)
    monkeypatch.setenv(ENV, "[]")  # restored afterwards
    files = ["--tokenizer", str(folder / "tokenizer.json"), "--tokenizer", str(model)]
    try:
        assert main(["serve", "--workers", "2", *files]) == 0
        assert started and started[0]["workers"] == 2
        assert json.loads(os.environ[ENV]) == [str(folder / "tokenizer.json"), str(model)]
        want = {
            "tiny-hf": HFTokenizer.from_str(trained_byte_level_json()).encode("Hello world").ids,
            "mine": spm.SentencePieceProcessor(model_file=str(model)).encode("Hello world"),
        }
        want["native-tiny-hf"] = want["tiny-hf"]
        assert {n: registry.get(n).encode("Hello world") for n in want} == want
        assert registry.spec("mine").maker == "yours"
        script = (
            "import json; from app.engines import registry;"
            "print(json.dumps({n: registry.get(n).encode('Hello world') for n in ('tiny-hf', 'native-tiny-hf', 'mine')}),"
            "registry.spec('mine').maker)"
        )
        out = subprocess.run([sys.executable, "-c", script], env=dict(os.environ), cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
        ids, maker = out.rsplit(" ", 1)
        assert json.loads(ids) == want
        assert maker.strip() == "yours"
    finally:
        for name in ("tiny-hf", "native-tiny-hf", "mine"):
            registry.unregister(name)


def test_serve_refuses_a_bad_file_or_a_taken_name_before_starting(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("app.web.server.serve", lambda *a, **k: pytest.fail("the server must not start"))
    monkeypatch.delenv(ENV, raising=False)
    bad = tmp_path / "broken.json"
    bad.write_text('{"model": {"type": "WordLevel"}}', encoding="utf-8")
    assert main(["serve", "--tokenizer", str(bad)]) == 2
    assert 'the model has no "vocab" object' in capsys.readouterr().err
    shadow = tmp_path / "gemma-3.model"
    shadow.write_bytes(datafiles.verified_bytes("sentencepiece/mistral-7b-v0.1.model"))
    assert main(["serve", "--tokenizer", str(shadow)]) == 2
    assert "already taken" in capsys.readouterr().err
    assert ENV not in os.environ


def test_sentencepiece_model_with_a_piece_twice_is_refused():
    model = ModelProto.parse(datafiles.verified_bytes("sentencepiece/mistral-7b-v0.1.model"))
    model.pieces[500].piece = model.pieces[400].piece
    with pytest.raises(LoaderError, match="defined twice"):
        load_tokenizer(model.serialize())


def pipeline_json() -> str:
    """A byte-level BPE using the pipeline steps real files use beyond the shipped four: an NFKC + Replace
    normalizer, a Split that removes spaces, individual digits, the ByteLevel regex, and added tokens with every
    flag (lstrip, rstrip, single_word, normalized)."""
    from tokenizers import AddedToken, Regex, normalizers

    tok = HFTokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace("é", "e")])
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\s+"), behavior="removed"),
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=500, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(TEXTS * 3, trainer=trainer)
    tok.add_tokens(
        [
            AddedToken("<mask>", lstrip=True, rstrip=True, special=False, normalized=False),
            AddedToken("cat", single_word=True, normalized=True),
            AddedToken("ﬁne", normalized=True),
        ]
    )
    tok.add_special_tokens([AddedToken("<|sep|>", special=True, normalized=False)])
    return tok.to_str()


PIPELINE_TEXTS = [
    "a cat, concatenate, cat. ﬁne ｆｕｌｌｗｉｄｔｈ café",
    "x  <mask>  y <mask>z<|sep|> 12345 ①② e\u0301",
    " leading and trailing  ",
    "",
]


@pytest.mark.parametrize("text", PIPELINE_TEXTS)
def test_a_pipeline_with_every_supported_step_matches_the_library(text):
    data = pipeline_json()
    ref = HFTokenizer.from_str(data)
    ours = load_tokenizer(data.encode())
    for allow in (False, True):
        ref.encode_special_tokens = not allow
        assert ours.encode(text, allow_special=allow) == ref.encode(text, add_special_tokens=False).ids
    result = ours.tokenize(text, allow_special=True)
    assert "".join(s.text for s in result.segments()) == text
    assert all(0 <= t.start < t.end <= len(text) for t in result.tokens)
