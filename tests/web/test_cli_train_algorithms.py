"""``tokenplay train --algorithm bpe|wordpiece|unigram``: each file it writes loads in its reference library (tiktoken,
Hugging Face ``tokenizers``, ``sentencepiece``) and is byte for byte the lab's export of a run trained on the same
corpus with the same options (through the HTTP API, as a user downloads it); the unigram model is the one
sentencepiece's own trainer writes."""

from __future__ import annotations

import json

import pytest
import sentencepiece as spm
import tiktoken
from helpers import realtext
from helpers.lab_helpers import wait_done
from helpers.spm_trainer import reference
from tiktoken.load import load_tiktoken_bpe
from tokenizers import Tokenizer

from app.cli import main


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[str, str]:
    realtext.require()
    text = realtext.slices("en", 1, 6000, seed=9)[0] + "\n" + realtext.slices("es", 1, 3000, seed=9)[0]
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    return str(path), text


def lab_export(client, text: str, fmt: str, **options) -> bytes:
    r = client.post("/api/train", json={"corpus": text} | options)
    assert r.status_code in (200, 202), r.text
    run = wait_done(client, r.json()["id"])
    assert run["status"] == "done", run
    r = client.get(f"/api/train/{run['id']}/export", params={"format": fmt})
    assert r.status_code == 200, r.text
    return r.content


def test_bpe_writes_the_labs_tiktoken_export(client, corpus, tmp_path, capsys):
    path, text = corpus
    out, ranks = tmp_path / "m.json", tmp_path / "m.tiktoken"
    assert main(["train", path, "--algorithm", "bpe", "--vocab-size", "400", "--pattern", "gpt4", "--out", str(out),
                 "--export-tiktoken", str(ranks), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed and f"wrote {ranks}" in printed
    assert ranks.read_bytes() == lab_export(client, text, "tiktoken", algorithm="byte", pattern="gpt4", vocab_size=400)
    encoding = tiktoken.Encoding("m", pat_str=r"\S+|\s+", mergeable_ranks=load_tiktoken_bpe(str(ranks)), special_tokens={})
    assert encoding.n_vocab == 400 and encoding.decode(encoding.encode(text[:500])) == text[:500]


def test_wordpiece_writes_the_labs_tokenizer_json(client, corpus, tmp_path, capsys):
    path, text = corpus
    out, trace = tmp_path / "wp.json", tmp_path / "trace.json"
    assert main(["train", path, "--algorithm", "wordpiece", "--vocab-size", "700", "--out", str(out),
                 "--trace", str(trace), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}: a WordPiece tokenizer.json (700 tokens)" in printed and f"wrote {trace}" in printed
    assert out.read_bytes() == lab_export(client, text, "tokenizer.json", algorithm="wordpiece", vocab_size=700)
    library = Tokenizer.from_str(out.read_text())
    assert library.get_vocab_size() == 700
    assert library.encode("the newest tokenizer").tokens and json.loads(trace.read_text())["format"] == "tokenplay-lab"


def test_unigram_writes_the_labs_model(client, corpus, tmp_path, capsys):
    path, text = corpus
    out = tmp_path / "uni.model"
    assert main(["train", path, "--algorithm", "unigram", "--vocab-size", "500", "--out", str(out), "--quiet"]) == 0
    assert f"wrote {out}: a unigram SentencePiece .model" in capsys.readouterr().out
    assert out.read_bytes() == lab_export(client, text, "model", algorithm="unigram", vocab_size=500)
    library = spm.SentencePieceProcessor(model_file=str(out))
    want = reference(tmp_path, text, 500, "unigram")  # sentencepiece's own unigram trainer on the same corpus
    assert [library.id_to_piece(i) for i in range(library.get_piece_size())] == [p.piece for p in want.pieces]


def test_options_that_do_not_apply_are_refused_in_words(corpus, tmp_path, capsys):
    path, _ = corpus
    assert main(["train", path, "--algorithm", "unigram", "--vocab-size", "500", "--out", str(tmp_path / "x"),
                 "--special", "<x>"]) == 2
    assert "--special apply to --algorithm bpe only" in capsys.readouterr().err
    assert main(["train", path, "--algorithm", "wordpiece", "--vocab-size", "10", "--out", str(tmp_path / "x")]) == 2
    assert "below the" in capsys.readouterr().err and not (tmp_path / "x").exists()
