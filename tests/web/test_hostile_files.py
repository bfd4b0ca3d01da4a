"""One hostile file must never take the server down (issue 38, parts 1 and 2): an uploaded tokenizer.json whose
regex backtracks without end, or a tokenizer_config.json whose chat template loops or allocates without end, is
stopped at the request's budget and answered with a 422 in words, through either engine; the upload itself says
that the regex is dangerous. The budget is small here (``user_code_seconds``) and every hostile case is hostile on
any machine, so no test depends on the machine's speed."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from helpers.hostile import split_tokenizer

from app.settings import Settings
from app.web.app import create_app

HOSTILE_TEXT = "a" * 5000 + "!"


def make_client(tmp_path, seconds: float):
    settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread",
                        user_code_seconds=seconds)
    return TestClient(create_app(settings))


@pytest.fixture()
def client(tmp_path):
    """A small budget: for work that no machine finishes in it."""
    with make_client(tmp_path, 0.5) as c:
        yield c


@pytest.fixture()
def roomy(tmp_path):
    """A budget only a hang would reach: for limits that are not about time (a busy machine must not turn them
    into a timeout)."""
    with make_client(tmp_path, 600) as c:
        yield c


def add(client: TestClient, data: bytes, name: str, config: bytes | None = None):
    files = {"file": ("tokenizer.json", data)}
    if config is not None:
        files["config"] = ("tokenizer_config.json", config)
    return client.post("/api/tokenizers", files=files, data={"name": name})


def test_a_catastrophic_regex_is_named_at_upload_and_refused_in_words_through_both_engines(client):
    r = add(client, split_tokenizer(r"(a+)+$"), "hostile")
    assert r.status_code == 201, r.text
    (warning,) = r.json()["warnings"]
    assert "(a+)+$" in warning and "backtracks catastrophically" in warning and "0.5 s" in warning
    for name in ("native-hostile", "hostile"):
        r = client.post("/api/tokenize", json={"text": HOSTILE_TEXT, "tokenizer": name})
        assert r.status_code == 422, (name, r.text)
        assert "regex" in r.json()["detail"], r.json()
    r = client.post("/api/tokenize", json={"text": "ab ba", "tokenizer": "native-hostile"})
    assert r.status_code == 200 and r.json()["ids"] == [0, 1, 5, 1, 0]  # an ordinary text: served as ever
    r = client.post("/api/tokenize", json={"text": "hello", "tokenizer": "cl100k_base"})
    assert r.status_code == 200  # and everyone else too


def test_a_quadratic_regex_in_the_library_is_stopped_at_the_budget(client):
    assert add(client, split_tokenizer(r"a*b|a"), "slow").json()["warnings"] == []  # the probe cannot see it
    r = client.post("/api/tokenize", json={"text": "a" * 200_000, "tokenizer": "slow"})
    assert r.status_code == 422 and "took more than 0.5 s" in r.json()["detail"], r.text
    r = client.post("/api/tokenize", json={"text": "a" * 200_000, "tokenizer": "native-slow"})
    assert r.status_code == 422 and "took more than 0.5 s" in r.json()["detail"], r.text


def test_the_playground_page_says_it_in_words(client):
    add(client, split_tokenizer(r"(a+)+$"), "hostile")
    r = client.post("/render", data={"text": HOSTILE_TEXT, "tokenizer": "native-hostile"}, headers={"HX-Request": "true"})
    assert r.status_code == 422 and "took more than 0.5 s" in r.text, r.text


def chat_config(template: str) -> bytes:
    return json.dumps({"chat_template": template, "bos_token": "a", "eos_token": "b"}).encode()


@pytest.mark.parametrize(("template", "words", "small_budget"), [
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x", "took more than 0.5 s",
     True),
    ("{{ 'x' * 300000000 }}", "300,000,000 times", False),
    ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "calls itself too deeply", False),
    ("{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}", "writes more than", False),
])
def test_a_hostile_chat_template_is_stopped_in_words(request, template, words, small_budget):
    client = request.getfixturevalue("client" if small_budget else "roomy")
    r = add(client, split_tokenizer(r"\w+|\s+"), "chatty", config=chat_config(template))
    assert r.status_code == 201, r.text
    r = client.post("/api/chat", json={"tokenizer": "chatty", "messages": [{"role": "user", "content": "Hi"}]})
    assert r.status_code == 422 and words in r.json()["detail"], r.text
    r = client.post("/api/chat", json={"tokenizer": "cl100k_base", "messages": [{"role": "user", "content": "Hi"}]})
    assert r.status_code == 200, r.text
