"""HTTP tests of the JSON API: shapes, errors and limits."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app


def test_list_tokenizers_includes_openai_encodings(client):
    body = client.get("/api/tokenizers").json()
    names = {t["name"] for t in body["tokenizers"]}
    assert {"gpt2", "p50k_base", "cl100k_base", "o200k_base"} <= names
    assert body["aliases"]["gpt-4o"] == "o200k_base"


def test_tokenize_returns_ids_and_tokens(client):
    r = client.post("/api/tokenize", json={"text": "Hello world", "tokenizer": "cl100k_base"})
    assert r.status_code == 200
    body = r.json()
    assert body["tokenizer"] == "cl100k_base"
    assert body["ids"] == [9906, 1917]
    assert body["count"] == 2 and body["chars"] == 11 and body["bytes"] == 11
    assert body["tokens"][1] == {
        "id": 1917,
        "bytes": " world".encode().hex(),
        "start": 5,
        "end": 11,
        "text": " world",
        "special": False,
        "valid_utf8": True,
        "byte_fallback": False,
    }


def test_tokenize_alias_resolves_to_encoding(client):
    body = client.post("/api/tokenize", json={"text": "hi", "tokenizer": "gpt-4o"}).json()
    assert body["tokenizer"] == "o200k_base"


def test_tokenize_special_tokens_plain_by_default(client):
    text = "a<|endoftext|>b"
    plain = client.post("/api/tokenize", json={"text": text, "tokenizer": "gpt2"}).json()
    special = client.post("/api/tokenize", json={"text": text, "tokenizer": "gpt2", "allow_special": True}).json()
    assert 50256 not in plain["ids"]
    assert 50256 in special["ids"]
    assert [t["special"] for t in special["tokens"]].count(True) == 1


def test_tokenize_partial_character_tokens_show_bytes(client):
    # gpt2 cuts this CJK character into byte tokens that are not valid UTF-8 on their own.
    body = client.post("/api/tokenize", json={"text": "閒", "tokenizer": "gpt2"}).json()
    assert body["count"] > 1
    assert all(t["start"] == 0 and t["end"] == 1 for t in body["tokens"])
    assert any(not t["valid_utf8"] and t["text"].startswith("\\x") for t in body["tokens"])
    assert bytes.fromhex("".join(t["bytes"] for t in body["tokens"])).decode() == "閒"


def test_tokenize_unknown_tokenizer_lists_valid_names(client):
    r = client.post("/api/tokenize", json={"text": "x", "tokenizer": "gpt-7"})
    assert r.status_code == 404
    assert "cl100k_base" in r.json()["detail"]
    assert "cl100k_base" in r.json()["valid"]


def test_tokenize_text_over_limit_is_413():
    app = create_app(Settings(max_chars=10))
    with TestClient(app) as c:
        r = c.post("/api/tokenize", json={"text": "x" * 11, "tokenizer": "gpt2"})
        assert r.status_code == 413
        assert "limit is 10" in r.json()["detail"]
        assert c.post("/api/tokenize", json={"text": "x" * 10, "tokenizer": "gpt2"}).status_code == 200


def test_tokenize_lone_surrogate_is_422(client):
    r = client.post(
        "/api/tokenize",
        content=b'{"text": "a\\ud800b", "tokenizer": "cl100k_base"}',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422
    assert "surrogate" in r.json()["detail"]


def test_tokenize_missing_text_is_422(client):
    r = client.post("/api/tokenize", json={"tokenizer": "gpt2"})
    assert r.status_code == 422
    assert "text" in r.json()["detail"]


def test_decode_round_trip(client):
    ids = client.post("/api/tokenize", json={"text": "naïve café ☕", "tokenizer": "o200k_base"}).json()["ids"]
    r = client.post("/api/decode", json={"tokenizer": "o200k_base", "ids": ids})
    assert r.json() == {"text": "naïve café ☕"}


def test_decode_out_of_range_is_422(client):
    r = client.post("/api/decode", json={"tokenizer": "gpt2", "ids": [1, 50257, 999999]})
    assert r.status_code == 422
    assert "50257" in r.json()["detail"]


def test_decode_negative_id_is_422(client):
    assert client.post("/api/decode", json={"tokenizer": "gpt2", "ids": [-1]}).status_code == 422


def test_openapi_docs_served(client):
    page = client.get("/docs")
    assert page.status_code == 200
    # offline: every address the page loads is our own (no CDN, no validator badge, no Google Fonts)
    assert re.findall(r"https?://", page.text) == [], page.text
    assets = re.findall(r"""(?:src|href)=['"]?(/[^'" >]+)""", page.text) + re.findall(r"url: '(/[^']+)'", page.text)
    assert {"/vendor/swagger-ui/swagger-ui-bundle.js", "/vendor/swagger-ui/swagger-ui.css", "/openapi.json"} <= set(assets)
    for path in assets:
        got = client.get(path)
        assert got.status_code == 200 and len(got.content) > 500, path
    assert "/static/docs.js" in assets and "validatorUrl: null" in client.get("/static/docs.js").text
    assert "<script>" not in page.text  # Swagger UI starts from a static file (a strict CSP allows no inline code)
    assert client.get("/vendor/swagger-ui/index.html").status_code == 404  # only the files /docs needs
    assert client.get("/redoc", follow_redirects=False).headers["location"] == "/docs"
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/api/tokenizers", "/api/tokenize", "/api/decode"} <= set(paths)


def test_healthz(client):
    assert client.get("/healthz").json()["status"] == "ok"


def test_answers_carry_server_timing(client):
    r = client.post("/api/tokenize", json={"text": "hi", "tokenizer": "gpt2"})
    assert float(r.headers["server-timing"].split("app;dur=")[1]) >= 0


def test_body_over_limit_is_413_json_or_html_fragment():
    app = create_app(Settings(max_chars=10))
    with TestClient(app) as c:
        big = b"x" * 2_000_000
        r = c.post("/api/tokenize", content=big, headers={"content-type": "application/json"})
        assert r.status_code == 413 and "limit" in r.json()["detail"]
        r = c.post("/render", content=big, headers={"content-type": "text/plain", "HX-Request": "true"})
        assert r.status_code == 413 and r.text.startswith('<div class="error" role="alert">')
