"""Counts as the model sees them, through the API (issue 37, parts 3 and 4): ``/api/tokenize`` (and compare, chat,
languages) add ``added_specials`` and ``count_with_specials``, equal to Hugging Face's ``encode(text)`` with its
defaults; called with a model name, ``context_window``, ``price_per_million_input`` and ``prices_date``. Repository
ids resolve; an unknown one answers 404 with the closest names; a missing or malformed facts file leaves the facts out
with a note, never a 500."""

from __future__ import annotations

import json

import pytest
import tokenizers
from fastapi.testclient import TestClient

from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS
from app.settings import Settings
from app.web.app import create_app

TEXT = "Hello world, 日本語も。"


def library(name: str) -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_file(str(data_path(NPM_MODELS[name].tokenizer_file)))


@pytest.mark.parametrize("name", ["gemma-3", "llama-3.1", "llama-2", "qwen3", "mistral-nemo"])
def test_tokenize_counts_what_hugging_faces_encode_counts(client, name):
    out = client.post("/api/tokenize", json={"text": TEXT, "tokenizer": name}).json()
    want = library(name).encode(TEXT)  # the library's defaults: the post-processor adds what the model reads
    assert out["count_with_specials"] == len(want.ids)
    added = [t["id"] for t in out["added_specials"] if t["at"] == "start"] + out["ids"]
    assert added + [t["id"] for t in out["added_specials"] if t["at"] == "end"] == want.ids


def test_tokenize_with_a_model_name_gives_its_window_and_price(client):
    out = client.post("/api/tokenize", json={"text": "Hello world", "tokenizer": "gpt-4o"}).json()
    assert out["tokenizer"] == "o200k_base" and out["added_specials"] == [] and out["count_with_specials"] == 2
    assert (out["context_window"], out["price_per_million_input"], out["prices_date"]) == (128_000, 2.5, "2026-11-29")
    encoding = client.post("/api/tokenize", json={"text": "Hello world", "tokenizer": "o200k_base"}).json()
    assert "context_window" not in encoding and "price_per_million_input" not in encoding  # an encoding is no model


@pytest.mark.parametrize(("repo", "entry", "window"), [
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1", 131_072), ("Qwen/Qwen3-8B", "qwen3", 32_768),
    ("deepseek-ai/DeepSeek-V3", "deepseek-v3", 131_072), ("google/gemma-3-27b-it", "gemma-3", 131_072),
])
def test_repository_ids_resolve_in_the_api(client, repo, entry, window):
    out = client.post("/api/tokenize", json={"text": "Hello", "tokenizer": repo}).json()
    assert out["tokenizer"] == entry and out["context_window"] == window and out["price_per_million_input"] is None


def test_an_unknown_repository_id_is_a_404_with_the_closest_names(client):
    r = client.post("/api/tokenize", json={"text": "Hello", "tokenizer": "meta-llama/Llama-3.3-70B-Instruct"})
    assert r.status_code == 404
    body = r.json()
    assert body["closest"][0] == "meta-llama/Llama-3.1-70B-Instruct" and "gemma-3" in body["valid"]
    assert "the closest are: meta-llama/Llama-3.1-70B-Instruct" in body["detail"]


def test_compare_chat_and_languages_count_what_the_model_adds(client):
    compared = client.post("/api/compare", json={"text": "Hello world", "tokenizers": ["gemma-3", "gpt2"]}).json()
    by_name = {r["tokenizer"]: r for r in compared["results"]}
    assert by_name["gemma-3"]["count_with_specials"] == len(library("gemma-3").encode("Hello world").ids) == 3
    assert by_name["gpt2"]["count_with_specials"] == by_name["gpt2"]["count"]
    langs = client.post("/api/languages", json={"tokenizers": ["gemma-3"], "languages": ["eng"]}).json()
    assert langs["added_specials"]["gemma-3"] == [{"id": 2, "text": "<bos>", "at": "start"}]
    eng = langs["languages"][0]["results"]["gemma-3"]
    assert eng["count_with_specials"] == eng["tokens"] + 1
    # a chat prompt's template writes the model's markup itself: nothing is added on top (apply_chat_template)
    chat = client.post("/api/chat", json={"tokenizer": "gemma-3", "messages": [{"role": "user", "content": "Hi"}]})
    out = chat.json()
    assert out["text"].startswith("<bos>") and out["added_specials"] == [] and out["count_with_specials"] == out["count"]


@pytest.mark.parametrize("content", [None, "{broken", json.dumps({"models": {}})])
def test_a_missing_or_malformed_facts_file_leaves_prices_out_with_a_note(tmp_path, content):
    path = tmp_path / "facts.json"
    if content is not None:
        path.write_text(content)
    settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "up", lab_pool="thread",
                        model_facts_file=path)
    with TestClient(create_app(settings)) as c:
        r = c.post("/api/tokenize", json={"text": "Hello world", "tokenizer": "gpt-4o"})
    assert r.status_code == 200
    out = r.json()
    assert "context_window" not in out and "price_per_million_input" not in out
    assert "cannot be read" in out["prices_note"] and out["count"] == 2


def test_the_tokenizer_list_names_the_repository_ids(client):
    listed = client.get("/api/tokenizers").json()
    assert listed["repositories"]["meta-llama/Llama-3.1-8B-Instruct"] == "llama-3.1"
    assert listed["repositories"]["google/gemma-3-27b-it"] == "gemma-3"
    names = {t["name"] for t in listed["tokenizers"]}
    assert set(listed["repositories"].values()) <= names
