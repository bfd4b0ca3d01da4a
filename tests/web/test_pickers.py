"""Lab tokenizers: listed and usable only for the browser that added them (its cookie), through any worker."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.engines import registry
from app.settings import Settings
from app.web.app import create_app


def _train_and_use(client: TestClient) -> str:
    r = client.post(
        "/api/train",
        json={"corpus": "low lower newest widest " * 20, "algorithm": "byte", "pattern": "gpt2", "merges": 12},
    )
    run_id = r.json()["id"]
    for _ in range(200):
        if client.get(f"/api/train/{run_id}").json()["status"] == "done":
            break
    assert client.post(f"/api/train/{run_id}/use").status_code == 200
    return f"lab-{run_id}"


def test_lab_tokenizer_is_listed_and_usable_only_for_its_browser(tmp_path):
    app = create_app(Settings(lab_runs_dir=tmp_path, lab_pool="thread"))
    with TestClient(app) as mine, TestClient(app) as other:
        name = _train_and_use(mine)
        assert f'value="{name}"' in mine.get("/").text
        assert f'value="{name}"' not in other.get("/").text
        assert name in [t["name"] for t in mine.get("/api/tokenizers").json()["tokenizers"]]
        assert name not in [t["name"] for t in other.get("/api/tokenizers").json()["tokenizers"]]
        assert mine.post("/api/tokenize", json={"text": "lower", "tokenizer": name}).status_code == 200
        refused = other.post("/api/tokenize", json={"text": "lower", "tokenizer": name})
        assert refused.status_code == 404 and name not in refused.json()["valid"]
        # a shared link naming it shows the error to anyone else, and their text stays
        page = other.get(f"/?tokenizer={name}&text=lower")
        assert page.status_code == 404 and f"unknown tokenizer &#39;{name}&#39;" in page.text
        compare = other.post("/api/compare", json={"text": "lower", "tokenizers": [name, "gpt2"]})
        assert compare.status_code == 404


def test_lab_tokenizer_trained_in_one_worker_tokenizes_in_another(tmp_path):
    settings = Settings(lab_runs_dir=tmp_path, lab_pool="thread")
    with TestClient(create_app(settings)) as first:
        name = _train_and_use(first)
        expected = first.post("/api/tokenize", json={"text": "lowest widest", "tokenizer": name}).json()
        cookies = dict(first.cookies)
    registry.unregister(name)  # a second worker process has never seen it
    with TestClient(create_app(settings), cookies=cookies) as second:  # the same browser
        answer = second.post("/api/tokenize", json={"text": "lowest widest", "tokenizer": name})
        assert answer.status_code == 200
        assert answer.json()["ids"] == expected["ids"]
        assert len(expected["ids"]) < len("lowest widest".encode())  # the merges were applied


def test_unknown_lab_tokenizer_is_404_listing_names(client):
    r = client.post("/api/tokenize", json={"text": "x", "tokenizer": "lab-0123456789"})
    assert r.status_code == 404
    assert "cl100k_base" in r.json()["detail"]


def test_lab_tokenizer_from_another_worker_is_compared(tmp_path):
    """Compare resolves names like the playground: a lab tokenizer registered by another worker process is
    loaded from the run store, not dropped from /compare/results nor answered 404 by /api/compare."""
    settings = Settings(lab_runs_dir=tmp_path, lab_pool="thread")
    with TestClient(create_app(settings)) as first:
        name = _train_and_use(first)
        want = first.post("/api/tokenize", json={"text": "lowest widest", "tokenizer": name}).json()["count"]
        cookies = dict(first.cookies)
    registry.unregister(name)  # a second worker process has never seen it
    with TestClient(create_app(settings), cookies=cookies) as second:  # the same browser
        api = second.post("/api/compare", json={"text": "lowest widest", "tokenizers": [name, "gpt2"]})
        assert api.status_code == 200, api.text
        assert [r["tokenizer"] for r in api.json()["results"]] == [name, "gpt2"]
        assert api.json()["results"][0]["count"] == want
    registry.unregister(name)
    with TestClient(create_app(settings), cookies=cookies) as third:
        page = third.post(
            "/compare/results", data={"text": "lowest widest", "t": [name, "gpt2"]}, headers={"HX-Request": "true"}
        )
        assert page.status_code == 200
        assert f'<section class="pane reference" data-tokenizer="{name}"' in page.text
