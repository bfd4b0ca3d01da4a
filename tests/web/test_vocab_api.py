"""Knowing a vocabulary over HTTP (issue 35): /api/vocab/..., /api/numbers and the pages, each answer held to the
reference library (tiktoken, Hugging Face tokenizers), and bad input answered in words with a fitting status."""

from __future__ import annotations

import csv
import io
import random

import pytest
import regex
import tokenizers as hf
from fastapi.testclient import TestClient
from helpers.oracles import tiktoken_reference
from tiktoken import _educational

from app.engines import registry
from app.engines.datafiles import verified_bytes
from app.engines.huggingface.npm_models import NPM_MODELS
from app.engines.pipeline.tokenizer_json import byte_level_bytes
from app.services import vocab as service
from app.settings import Settings
from app.web.app import create_app


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    base = tmp_path_factory.mktemp("vocab")
    settings = Settings(lab_runs_dir=base / "runs", uploads_dir=base / "uploads", lab_pool="thread",
                        vocab_cache_dir=base / "cache")
    with TestClient(create_app(settings)) as c:
        yield c


def _ok(r):
    assert r.status_code == 200, r.text[:500]
    return r.json()


# -- /api/tokenizers: the reference's own n_vocab ------------------------------------------------------------------------
def test_tokenizers_list_n_vocab_as_the_references_count(client):
    listed = {t["name"]: t for t in _ok(client.get("/api/tokenizers"))["tokenizers"]}
    for name in ("gpt2", "cl100k_base", "o200k_base", "o200k_harmony"):
        assert listed[name]["n_vocab"] == tiktoken_reference(name).n_vocab  # o200k_base: 200,019
    lib = hf.Tokenizer.from_str(verified_bytes(NPM_MODELS["gemma-3"].tokenizer_file).decode())
    assert listed["gemma-3"]["n_vocab"] == listed["native-gemma-3"]["n_vocab"] == lib.get_vocab_size(True)


# -- the browser ----------------------------------------------------------------------------------------------------------
def test_a_page_of_o200k_is_tiktokens_tokens_by_id(client):
    ref = tiktoken_reference("o200k_base")
    got = _ok(client.get("/api/vocab/o200k_base", params={"offset": 150_000, "limit": 50}))
    ours = registry.get("o200k_base")
    assert got["total"] == len(ref._mergeable_ranks) + len(set(ours.special_tokens.values()))
    assert [t["id"] for t in got["tokens"]] == list(range(150_000, 150_050))
    for t in got["tokens"]:
        assert set(t) >= {"id", "text", "bytes_hex", "kind", "rank"}
        assert bytes.fromhex(t["bytes_hex"]) == ref.decode_single_token_bytes(t["id"])
        assert t["rank"] == ref._mergeable_ranks[bytes.fromhex(t["bytes_hex"])]


def test_the_browser_finds_by_substring_regex_and_kind(client):
    ref = tiktoken_reference("gpt2")
    texts = {i: b.decode("utf-8", "backslashreplace") for b, i in ref._mergeable_ranks.items()}
    got = _ok(client.get("/api/vocab/gpt2", params={"q": "/^ [A-Z]+$/", "limit": 1000}))
    want = sorted(i for i, t in texts.items() if regex.search(r"^ [A-Z]+$", t))
    assert [t["id"] for t in got["tokens"]] == want[:1000] and got["total"] == len(want)
    got = _ok(client.get("/api/vocab/gpt2", params={"q": "Magikarp", "limit": 10}))
    assert [t["text"] for t in got["tokens"]] == [t for t in texts.values() if "Magikarp" in t]
    got = _ok(client.get("/api/vocab/gpt2", params={"kind": "special"}))
    assert [t["id"] for t in got["tokens"]] == [50256]


@pytest.mark.parametrize(
    ("url", "status", "words"),
    [
        ("/api/vocab/no-such-tokenizer", 404, "/api/tokenizers"),
        ("/api/vocab/gpt2?q=/(/", 422, "not a valid regex"),
        ("/api/vocab/gpt2?kind=emoji", 422, "none of"),
        ("/api/vocab/gpt2?limit=0", 422, ""),
        ("/api/vocab/gpt2?limit=100000", 422, ""),
        ("/api/vocab/gpt2/99999999", 404, "no token with id"),
        ("/api/vocab/gpt2/-1", 404, "no token with id"),
        ("/api/numbers?tokenizer=nope", 404, "/api/tokenizers"),
        ("/api/vocab/overlap?a=gpt2&b=nope", 404, "/api/tokenizers"),
        ("/api/vocab/nope/health", 404, "/api/tokenizers"),
    ],
)
def test_bad_input_is_answered_in_words(client, url, status, words):
    r = client.get(url)
    assert r.status_code == status, r.text
    assert words in r.json()["detail"] if isinstance(r.json()["detail"], str) else True


def test_a_token_walks_the_merge_tree_as_tiktoken_builds_it(client):
    ranks = tiktoken_reference("gpt2")._mergeable_ranks
    by_rank = sorted(ranks.items(), key=lambda kv: kv[1])
    for data, rank in random.Random(35).sample(by_rank[256:], 5) + [(b"hello", ranks[b"hello"])]:
        got = _ok(client.get(f"/api/vocab/gpt2/{rank}"))
        parts = _educational.bpe_encode(dict(by_rank[:rank]), data, visualise=None)
        assert [p["id"] for p in got["parents"]] == parts and got["rank"] == rank
        for child in got["children"]:  # each child has this token among its parents
            assert rank in [p["id"] for p in _ok(client.get(f"/api/vocab/gpt2/{child['id']}"))["parents"]]
    bert = _ok(client.get("/api/vocab/bert-base-uncased/2000"))
    assert bert["parents"] is None and bert["children"] is None and bert["rank"] is None


# -- the ladder -----------------------------------------------------------------------------------------------------------
def test_the_ladder_is_tiktoken_with_truncated_ranks(client):
    import tiktoken

    ref = tiktoken_reference("cl100k_base")
    text = "Tokenizers cut text into pieces. 東京の天気は晴れです。 def f(x): return x ** 2\n" * 20
    sizes = [256, 1_000, 32_000, 100_256]
    got = _ok(client.post("/api/vocab/cl100k_base/ladder", json={"text": text, "sizes": sizes}))
    want = []
    for k in sizes:
        enc = tiktoken.Encoding(name=f"c{k}", pat_str=ref._pat_str, special_tokens={},
                                mergeable_ranks={b: r for b, r in ref._mergeable_ranks.items() if r < k})
        want.append({"size": k, "tokens": len(enc.encode_ordinary(text))})
    assert got["points"] == want


@pytest.mark.parametrize(
    ("name", "body", "status", "words"),
    [
        ("cl100k_base", {"text": "hi", "sizes": [10]}, 422, "out of range"),
        ("cl100k_base", {"text": "hi", "sizes": [100_257]}, 422, "out of range"),
        ("bert-base-uncased", {"text": "hi", "sizes": [1000]}, 422, "not a BPE tokenizer"),
        ("nope", {"text": "hi", "sizes": [1000]}, 404, "/api/tokenizers"),
        ("cl100k_base", {"text": "x" * 2_000_000, "sizes": [1000]}, 413, ""),
    ],
)
def test_the_ladder_refuses_what_it_cannot_count(client, name, body, status, words):
    r = client.post(f"/api/vocab/{name}/ladder", json=body)
    assert r.status_code == status, r.text[:300]
    assert words in r.text


# -- health -----------------------------------------------------------------------------------------------------------------
def test_health_of_gpt2_is_its_definitions_and_is_kept(client):
    ref = tiktoken_reference("gpt2")
    ranks = ref._mergeable_ranks
    got = _ok(client.get("/api/vocab/gpt2/health"))
    partial = sorted(r for b, r in ranks.items() if b.decode("utf-8", "replace") != b.decode("utf-8", "ignore")
                     or _invalid(b))
    assert got["figures"]["partial_utf8"]["count"] == len(partial)
    assert got["figures"]["never_valid_bytes"]["count"] == sum(1 for b in ranks if set(b) & {0xC0, 0xC1, *range(0xF5, 256)})
    assert got["figures"]["special_reachable"]["count"] == 0  # tiktoken refuses special-token text by default
    assert _ok(client.get("/api/vocab/gpt2/health")) == got
    text = "the cat sat on the mat " * 10
    used = set(ref.encode_ordinary(text))
    usage = _ok(client.post("/api/vocab/gpt2/health", json={"text": text}))
    assert usage["used"] == len(used) and usage["unused"]["count"] == len(ranks) - len(used)


def _invalid(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


# -- two vocabularies, characters, numbers -----------------------------------------------------------------------------------
def test_llama_3_shares_cl100ks_tokens(client):
    lib = registry.get("llama-3").library
    special = set(registry.get("llama-3").special_tokens.values())
    llama = {byte_level_bytes(t) for t, i in lib.get_vocab().items() if i not in special}
    cl100k = set(tiktoken_reference("cl100k_base")._mergeable_ranks)
    got = _ok(client.get("/api/vocab/overlap", params={"a": "llama-3", "b": "cl100k_base"}))
    assert (got["shared"], got["only_a"], got["only_b"]) == (len(llama & cl100k), len(llama - cl100k), len(cl100k - llama))
    assert got["jaccard"] == round(len(llama & cl100k) / len(llama | cl100k), 6)


def test_characters_and_their_tokens(client):
    got = _ok(client.post("/api/vocab/characters", json={"text": "東a", "tokenizers": ["gpt2"]}))
    east = got["rows"][0]
    assert east["code_point"] == "U+6771" and east["utf8"] == "e6 9d b1" and east["script"] == "Han"
    assert east["tokens"]["gpt2"]["split"]
    r = client.post("/api/vocab/characters", json={"text": "a" * 5_000, "tokenizers": ["gpt2"]})
    assert r.status_code in (413, 422) and "characters" in r.text


def test_numbers_are_tiktokens_encoding(client):
    ref = tiktoken_reference("cl100k_base")
    got = _ok(client.get("/api/numbers", params={"tokenizer": "cl100k_base"}))
    single = [n for n in range(10_000) if len(ref.encode_ordinary(str(n))) == 1]
    assert got["single_tokens_0_9999"] == len(single) and got["largest_single_token"] == single[-1]
    assert got["grouping"] == "threes from the left"


# -- the pages ------------------------------------------------------------------------------------------------------------
def test_the_pages_answer_and_their_blocks(client):
    r = client.get("/vocab", params={"tokenizer": "gpt2", "q": "Magikarp"})
    assert r.status_code == 200 and "SolidGoldMagikarp" in r.text and "<nav" in r.text
    block = client.get("/vocab", params={"tokenizer": "gpt2", "q": "Magikarp"}, headers={"HX-Request": "true"})
    assert "SolidGoldMagikarp" in block.text and "<html" not in block.text
    token = client.get("/vocab/token", params={"tokenizer": "gpt2", "id": 31373}, headers={"HX-Request": "true"})
    assert "hell" in token.text and "Made by merging" in token.text
    for url in ("/vocab/ladder", "/vocab/overlap", "/vocab/characters", "/numbers", "/vocab/health",
                "/vocab/health/gpt2"):
        page = client.get(url)
        assert page.status_code == 200, (url, page.text[:300])
    bad = client.get("/vocab", params={"tokenizer": "gpt2", "q": "/(/"})
    assert bad.status_code == 422 and "not a valid regex" in bad.text
    assert client.get("/vocab", params={"tokenizer": "nope"}).status_code == 404


def test_user_text_is_never_live_html(client):
    payload = '<img src=x onerror="alert(1)">'
    r = client.get("/vocab", params={"tokenizer": "gpt2", "q": payload})
    assert payload not in r.text and "&lt;img" in r.text
    r = client.post("/vocab/characters", data={"text": payload, "t": ["gpt2"]})
    assert payload not in r.text


def test_health_csv_has_a_row_per_shipped_tokenizer(client, monkeypatch):
    monkeypatch.setattr(service, "shipped_entries", lambda: ["gpt2", "cl100k_base", "mistral-7b"])
    r = client.get("/vocab/health.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0][:3] == ["tokenizer", "n_vocab", "unreachable_bpe"]
    assert [row[0] for row in rows[1:]] == ["gpt2", "cl100k_base", "mistral-7b"]
    assert rows[1][1] == str(tiktoken_reference("gpt2").n_vocab)
