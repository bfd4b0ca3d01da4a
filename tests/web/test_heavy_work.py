"""Heavy parses never run on the thread that serves other users (issue 38, part 6): an uploaded tokenizer.json is
read by the library in a process of its own; a big paste of ids is read off the event loop, in the heavy lane, and
refused past ``max_ids`` before it is all read; a finished run's document is built once and kept.

Sizes are small (the thresholds are lowered for the test) and nothing is timed: where the work runs is observed
from inside it (which thread, which lane), and how often it runs by counting."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
import tokenizers
from fastapi.testclient import TestClient
from helpers.lab_helpers import wait_done
from tokenizers import Regex, pre_tokenizers

from app.engines.huggingface import library as library_module
from app.services import lab as lab_service
from app.settings import Settings
from app.web import deps
from app.web.api import tokenize as api_tokenize
from app.web.app import create_app
from app.web.pages import playground

CORPUS = "the cat sat on the mat; the cat ate the rat. " * 40


def make_client(tmp_path, **extra) -> TestClient:
    settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread", **extra)
    return TestClient(create_app(settings))


@pytest.fixture()
def client(tmp_path):
    with make_client(tmp_path) as c:
        yield c


def where(app) -> dict:
    """Where the calling code runs: on an event loop's thread or not, and how many hold the heavy lane."""
    try:
        asyncio.get_running_loop()
        on_loop = True
    except RuntimeError:
        on_loop = False
    lanes = deps.lanes_of(app)
    return {"on_loop": on_loop, "thread": threading.get_ident(), "heavy": lanes.heavy.running,
            "common": lanes.common.running}


def test_an_uploaded_tokenizer_json_is_read_and_run_outside_the_server_process(client, monkeypatch):
    def refuse(text):
        raise AssertionError("the server's process parsed the uploaded file with the library")

    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, "cat": 1, "sat": 2, "the": 3}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"\w+"), "removed", invert=True)
    data = tok.to_str().encode()
    monkeypatch.setattr(library_module, "tokenizers", None)  # the server's process cannot even reach the library
    r = client.post("/api/tokenizers", files={"file": ("tokenizer.json", data)}, data={"name": "mine"})
    assert r.status_code == 201, r.text
    r = client.post("/api/tokenize", json={"text": "the cat sat", "tokenizer": "mine"})
    assert r.status_code == 200, r.text
    assert r.json()["ids"] == tok.encode("the cat sat", add_special_tokens=False).ids == [3, 1, 2]


def test_a_big_paste_of_ids_is_read_off_the_event_loop_in_the_heavy_lane(client, monkeypatch):
    seen = []
    parse = playground.parse_ids

    def watched(raw, limit=None):
        seen.append(where(client.app))
        return parse(raw, limit)

    monkeypatch.setattr(playground, "parse_ids", watched)
    monkeypatch.setattr(playground, "HEAVY_PASTE", 10)
    r = client.post("/decode", data={"ids": "9906, 1917, 0", "tokenizer": "cl100k_base"}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and "Hello world!" in r.text
    r = client.post("/decode", data={"ids": "9906", "tokenizer": "cl100k_base"}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and "Hello" in r.text
    assert [s["on_loop"] for s in seen] == [False, False]
    assert [(s["heavy"], s["common"]) for s in seen] == [(1, 0), (0, 1)]  # a big paste, then a small one


def test_more_ids_than_the_limit_are_refused_in_words_before_they_are_all_read(tmp_path):
    with make_client(tmp_path, max_ids=5) as client:
        # the sixth id is past the limit: what follows it (not an id at all) is never read
        r = client.post("/decode", data={"ids": "1 2 3 4 5 6 not-an-id", "tokenizer": "cl100k_base"})
        assert r.status_code == 413 and "more than 5 ids; the limit is 5" in r.text
        r = client.post("/decode", data={"ids": "1 2 3 4 5", "tokenizer": "cl100k_base"})
        assert r.status_code == 200


def test_the_api_refuses_more_ids_than_the_limit_without_parsing_them(tmp_path, monkeypatch):
    parsed = []
    real = api_tokenize.DecodeRequest.model_validate_json.__func__

    def counted(cls, data, *args, **kwargs):
        parsed.append(len(data))
        return real(cls, data, *args, **kwargs)

    monkeypatch.setattr(api_tokenize.DecodeRequest, "model_validate_json", classmethod(counted))
    with make_client(tmp_path, max_ids=5) as client:
        r = client.post("/api/decode", json={"ids": list(range(100)), "tokenizer": "cl100k_base"})
        assert r.status_code == 413 and "more than 5 ids" in r.json()["detail"] and parsed == []
        r = client.post("/api/decode", json={"ids": list(range(6)), "tokenizer": "cl100k_base"})
        assert r.status_code == 413 and "6 ids; the limit is 5" in r.json()["detail"] and len(parsed) == 1
        r = client.post("/api/decode", json={"ids": [0] * 5, "tokenizer": "cl100k_base"})  # at the limit
        assert r.status_code == 200 and len(parsed) == 2
        parsed.clear()
        r = client.post("/api/decode", json={"ids": [9906, 1917], "tokenizer": "cl100k_base"})
        assert r.status_code == 200 and r.json() == {"text": "Hello world"} and len(parsed) == 1
        r = client.post("/api/decode", json={"ids": "nope"})
        assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "ids"]  # as every other route says it


def test_the_api_decodes_a_big_body_in_the_heavy_lane(client, monkeypatch):
    seen = []
    decode = api_tokenize.service.decode

    def watched(*args):
        seen.append(where(client.app))
        return decode(*args)

    monkeypatch.setattr(api_tokenize.service, "decode", watched)
    monkeypatch.setattr(api_tokenize, "HEAVY_BODY", 10)
    r = client.post("/api/decode", content=json.dumps({"ids": [9906, 1917] * 3}).encode(),
                    headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["text"] == "Hello world" * 3
    assert seen[0]["on_loop"] is False and seen[0]["heavy"] == 1


def test_a_finished_runs_document_is_built_once_and_kept(client, monkeypatch):
    built = []
    steps_of = lab_service.steps_of

    def counted(run):
        built.append(where(client.app))
        return steps_of(run)

    monkeypatch.setattr(lab_service, "steps_of", counted)
    run_id = client.post("/api/train", json={"corpus": CORPUS, "merges": 12}).json()["id"]
    wait_done(client, run_id)  # polling may build it while the run is done (once) or not (never kept)
    answers = [client.get(f"/api/train/{run_id}") for _ in range(3)]
    assert {r.status_code for r in answers} == {200}
    assert len({r.content for r in answers}) == 1
    document = answers[0].json()
    assert document["status"] == "done" and len(document["steps"]) == 12
    assert len(built) == 1  # built once, whoever asked first
    run = client.app.state.lab.get(run_id)
    assert run.kept["document"] == answers[0].content  # kept with the run, and counted in its size
    assert run.estimated_bytes() >= len(run.corpus) * 2 + len(answers[0].content)
    assert built[0]["on_loop"] is False and built[0]["heavy"] == 1
