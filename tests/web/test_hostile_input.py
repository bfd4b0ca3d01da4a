"""Hostile input over HTTP: XSS payloads stay inert text in every view, special tokens are never parsed from
user text unless asked for, JSON answers are never served as HTML.

The markup checks parse every answer with :func:`xss_payloads.injected` (no element, attribute or script made
of input). ``tests/browser/test_xss.py`` runs the same payloads in Chromium.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient
from helpers.lab_helpers import wait_done
from helpers.xss_payloads import ALL, MARK, PAYLOADS, injected

from app.engines import registry
from app.settings import Settings
from app.web.app import create_app

HX = {"HX-Request": "true"}
NAMES = [n for n in registry.names() if not n.startswith("lab-")]


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    settings = Settings(lab_runs_dir=tmp_path_factory.mktemp("runs"), lab_pool="thread")
    with TestClient(create_app(settings)) as c:
        yield c


def inert(r, *, where: str):
    assert r.status_code < 500, (where, r.status_code, r.text[:300])
    if "html" in r.headers.get("content-type", ""):
        found = injected(r.text)
        assert not found, f"{where}: input became markup: {found}"
    return r


def visible_text(html: str) -> str:
    """The page's text roughly as a reader sees it: tags dropped, entities decoded."""
    import html as html_mod

    return html_mod.unescape(re.sub(r"<[^>]+>", "", html))


# -- playground -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("payload", PAYLOADS)
def test_playground_full_page_and_fragment(web, payload):
    r = inert(web.get("/", params={"text": payload, "tokenizer": "cl100k_base"}), where="GET /")
    assert r.status_code == 200
    assert payload in visible_text(r.text), "the text is shown as text"
    for name in ("gpt2", "o200k_base", "mistral-7b", "custom-bpe"):
        inert(web.post("/render", data={"text": payload, "tokenizer": name}, headers=HX), where=f"/render {name}")
        inert(web.post("/render", data={"text": payload, "tokenizer": name, "ws": "1"}), where=f"/render {name} ws")


@pytest.mark.parametrize("payload", PAYLOADS[:12])
def test_echoed_bad_input_is_escaped(web, payload):
    # Names, ids and numbers the server does not accept come back in messages: escaped.
    inert(web.get("/", params={"tokenizer": payload}), where="GET / unknown tokenizer")
    inert(web.post("/render", data={"text": "x", "tokenizer": payload}, headers=HX), where="/render bad tokenizer")
    inert(web.post("/decode", data={"ids": payload, "tokenizer": "gpt2"}, headers=HX), where="/decode bad ids")
    inert(web.post("/decode", data={"ids": "1", "tokenizer": payload}, headers=HX), where="/decode bad tokenizer")
    inert(web.get("/compare", params={"text": "x", "t": [payload, "gpt2"], "ref": payload}), where="/compare bad t")
    inert(web.get("/", params={"offset": payload}), where="GET / bad offset")
    inert(web.get(f"/lab/runs/{payload}"), where="lab run bad id")
    inert(web.get("/lab", params={"example": payload}), where="/lab bad example")


def test_all_payloads_in_one_long_text(web):
    text = (ALL + "\n") * 40
    for name in NAMES:
        inert(web.post("/render", data={"text": text, "tokenizer": name}, headers=HX), where=f"/render {name}")
    r = inert(web.get("/", params={"text": ALL}), where="GET / all")
    assert all(p in visible_text(r.text) for p in PAYLOADS[:5])


def test_tokens_whose_bytes_decode_to_markup(web):
    gpt2 = registry.get("gpt2")
    # Single gpt2 tokens that are markup on their own ("\"><", "</", " href", "javascript", "alert") and a
    # whole payload, through the decode box, the playground and the id list.
    ids = [22039, 3556, 13291, 37495, 44598] + gpt2.encode("<img id=pwned src=x onerror=alert('pwned')>")
    r = inert(
        web.post("/decode", data={"ids": ", ".join(map(str, ids)), "tokenizer": "gpt2"}, headers=HX), where="decode"
    )
    assert r.status_code == 200 and "onerror" in visible_text(r.text)
    r = inert(web.post("/decode", data={"ids": " ".join(map(str, ids)), "tokenizer": "gpt2"}), where="decode page")
    text = gpt2.decode(ids)
    inert(web.post("/render", data={"text": text, "tokenizer": "gpt2"}, headers=HX), where="render decoded")
    # Byte-level tokens that are not UTF-8 alone next to markup bytes.
    partial = "\U0001f600<img id=pwned src=x onerror=alert('pwned')>\u00e9"
    for name in ("gpt2", "cl100k_base", "mistral-7b"):
        inert(web.post("/render", data={"text": partial, "tokenizer": name}, headers=HX), where=f"partial {name}")


# -- compare and chat ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("payload", PAYLOADS)
def test_compare_page_results_and_exports(web, payload):
    r = inert(
        web.get("/compare", params={"text": payload, "t": ["gpt2", "cl100k_base", "mistral-7b"]}), where="/compare"
    )
    assert r.status_code == 200
    form = {"text": payload, "t": ["gpt2", "o200k_base", "custom-bpe"]}
    inert(web.post("/compare/results", data=form, headers=HX), where="/compare/results")
    for fmt in ("json", "csv"):
        r = web.post(f"/compare/export.{fmt}", data=form)
        assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
        assert "html" not in r.headers["content-type"]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_chat_editor_and_result(web, payload):
    data = {"role": ["system", "user"], "content": [payload, payload]}
    inert(web.post("/chat", data=data), where="/chat")
    inert(web.post("/chat", data=data | {"op": "add"}, headers=HX), where="/chat add")
    inert(web.post("/chat/result", data=data, headers=HX), where="/chat/result")
    inert(web.post("/chat/result", data={"role": [payload], "content": ["x"]}, headers=HX), where="/chat bad role")


# -- lab -------------------------------------------------------------------------------------------------------------


def _train_page(web, corpus: str, algorithm: str) -> str:
    data = {"corpus": corpus, "algorithm": algorithm, "pattern": "gpt2", "size_kind": "merges", "size": "12"}
    r = web.post("/lab/train", data=data, follow_redirects=False)
    assert r.status_code in (303, 200), r.text[:300]
    if r.status_code == 200:
        inert(r, where="/lab/train")
        return re.search(r"/lab/runs/([0-9a-f]+)", r.text).group(1)
    run_id = r.headers["location"].split("/")[-1].split("?")[0]
    wait_done(web, run_id, timeout=30)
    return run_id


@pytest.mark.parametrize("algorithm", ["byte", "char", "sentencepiece"])
def test_lab_run_pages_with_payloads_as_corpus(web, algorithm):
    corpus = (ALL + "\n") * 3
    run_id = _train_page(web, corpus, algorithm)
    summary = web.get(f"/api/train/{run_id}").json()
    assert summary["status"] == "done", summary
    for k in range(summary["merges"] + 1):
        inert(web.get(f"/lab/runs/{run_id}", params={"step": k}), where=f"lab step {k}")
        inert(web.get(f"/lab/runs/{run_id}", params={"step": k}, headers=HX), where=f"lab step {k} fragment")
    for payload in PAYLOADS[:8]:
        inert(web.post(f"/lab/runs/{run_id}/encode", data={"text": payload}, headers=HX), where="lab encode")
        inert(web.get(f"/lab/runs/{run_id}/vocab", params={"q": payload}, headers=HX), where="lab vocab")
    for token_id in range(256, 256 + summary["merges"]):
        inert(web.get(f"/lab/runs/{run_id}/tree/{token_id}", headers=HX), where="lab tree")
    inert(web.get(f"/lab/runs/{run_id}/progress", headers=HX), where="lab progress")
    r = web.post(f"/lab/runs/{run_id}/use")
    inert(r, where="lab use")
    tokenizer = f"lab-{run_id}"
    inert(web.post("/render", data={"text": ALL, "tokenizer": tokenizer}, headers=HX), where="lab tokenizer render")


def test_lab_form_errors_echo_the_corpus_escaped(web):
    data = {"corpus": ALL, "algorithm": "byte", "pattern": "gpt2", "size_kind": "merges", "size": "<b>pwned</b>"}
    r = inert(web.post("/lab/train", data=data, headers=HX), where="lab form error")
    assert r.status_code == 422
    r = inert(
        web.post("/lab/train", data=data | {"algorithm": "<img id=pwned src=x>"}, headers=HX), where="lab bad alg"
    )
    assert r.status_code == 422


# -- JSON answers are JSON -----------------------------------------------------------------------------------------


def test_json_endpoints_answer_json_not_html(web):
    payload = PAYLOADS[1]
    calls = [
        ("/api/tokenize", {"text": payload}),
        ("/api/tokenize", {"text": payload, "tokenizer": payload}),
        ("/api/decode", {"ids": [22039, 3556], "tokenizer": "gpt2"}),
        ("/api/compare", {"text": payload, "tokenizers": ["gpt2", "cl100k_base"]}),
        ("/api/chat", {"messages": [{"role": "user", "content": payload}]}),
        ("/api/train", {"corpus": payload, "merges": 3}),
        ("/api/train", {"corpus": payload, "algorithm": payload}),
    ]
    for path, body in calls:
        r = web.post(path, json=body)
        assert r.status_code < 500, (path, r.text[:200])
        assert r.headers["content-type"].startswith("application/json"), (path, r.headers["content-type"])


# -- special tokens -------------------------------------------------------------------------------------------------

EOT = "<|endoftext|>"
SPECIAL_TEXT = f"a {EOT} b <|im_start|>user<|im_sep|>c<|im_end|> <|fim_prefix|> <s> </s> <unk>"


def test_api_tokenize_parses_specials_only_when_asked(web):
    for name in NAMES:
        r = web.post("/api/tokenize", json={"text": SPECIAL_TEXT, "tokenizer": name})
        assert r.status_code == 200, r.text[:200]
        assert not any(t["special"] for t in r.json()["tokens"]), name
    on = web.post("/api/tokenize", json={"text": SPECIAL_TEXT, "tokenizer": "cl100k_base", "allow_special": True})
    assert any(t["special"] for t in on.json()["tokens"])


def test_playground_views_parse_specials_only_when_asked(web):
    gpt2 = registry.get("gpt2")
    eot = gpt2.special_tokens[EOT]
    ids = web.post("/ids", data={"text": SPECIAL_TEXT, "tokenizer": "gpt2"}).text
    assert str(eot) not in ids.replace(" ", "").split(",")
    ids_on = web.post("/ids", data={"text": SPECIAL_TEXT, "tokenizer": "gpt2", "special": "1"}).text
    assert str(eot) in ids_on.replace(" ", "").split(",")
    special_span = r'<span class="c\d[^"]*\bspecial\b'
    for path, params in (("/", {"text": SPECIAL_TEXT, "tokenizer": "gpt2"}),):
        page = web.get(path, params=params).text
        assert f">{eot}<" not in page and not re.search(special_span, page)
    frag = web.post("/render", data={"text": SPECIAL_TEXT, "tokenizer": "gpt2"}, headers=HX).text
    frag_on = web.post("/render", data={"text": SPECIAL_TEXT, "tokenizer": "gpt2", "special": "1"}, headers=HX).text
    assert not re.search(special_span, frag) and re.search(special_span, frag_on)
    assert str(eot) not in re.findall(r"\d+", frag) or frag != frag_on
    assert frag != frag_on, "the special flag must change the result; without it the text is plain text"


def test_compare_parses_specials_only_when_asked(web):
    body = {"text": SPECIAL_TEXT, "tokenizers": ["gpt2", "cl100k_base", "o200k_base"]}
    out = web.post("/api/compare", json=body).json()
    for result in out["results"]:
        assert not any(t["special"] for t in result.get("tokens", [])), result["tokenizer"]
        assert registry.get(result["tokenizer"]).special_tokens[EOT] not in result["ids"]
    on = web.post("/api/compare", json=body | {"allow_special": True}).json()
    assert any(registry.get(r["tokenizer"]).special_tokens[EOT] in r["ids"] for r in on["results"])
    exported = json.loads(
        web.post("/compare/export.json", data={"text": SPECIAL_TEXT, "t": ["gpt2", "cl100k_base"]}).text
    )
    assert exported["allow_special"] is False
    for r in exported["results"]:
        assert registry.get(r["tokenizer"]).special_tokens[EOT] not in r["ids"]


def test_chat_content_is_plain_text_unless_asked(web):
    plain = web.post(
        "/api/chat", json={"messages": [{"role": "user", "content": "hello"}], "tokenizers": ["cl100k_base"]}
    )
    hostile = web.post(
        "/api/chat", json={"messages": [{"role": "user", "content": SPECIAL_TEXT}], "tokenizers": ["cl100k_base"]}
    )
    assert plain.status_code == hostile.status_code == 200, hostile.text[:300]
    # Only the markup around the messages is special: the same number with or without special text inside.
    assert hostile.json()["results"][0]["special"] == plain.json()["results"][0]["special"]
    asked = web.post(
        "/api/chat",
        json={
            "messages": [{"role": "user", "content": SPECIAL_TEXT}],
            "tokenizers": ["cl100k_base"],
            "content_special": True,
        },
    )
    if asked.status_code == 200:
        assert asked.json()["results"][0]["special"] > plain.json()["results"][0]["special"]


def test_lab_corpus_special_text_is_trained_as_text(web):
    r = web.post(
        "/api/train", json={"corpus": (SPECIAL_TEXT + " ") * 20, "algorithm": "byte", "pattern": "none", "merges": 30}
    )
    assert r.status_code in (200, 202)
    run_id = r.json()["id"]
    out = wait_done(web, run_id, timeout=30)
    assert out["status"] == "done" and out["base_vocab_size"] == 256  # no special ids, only bytes
    trace = web.post(f"/api/train/{run_id}/encode", json={"text": EOT}).json()
    assert trace is not None


def test_cli_encode_parses_specials_only_when_asked():
    def run(*args):
        out = subprocess.run(
            [sys.executable, "-m", "app.cli", "encode", "-t", "gpt2", *args, SPECIAL_TEXT],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert out.returncode == 0, out.stderr[-500:]
        return json.loads(out.stdout)

    eot = registry.get("gpt2").special_tokens[EOT]
    assert eot not in run()["ids"]
    assert eot in run("--allow-special")["ids"]


def test_marker_is_never_evaluated_as_a_template(web):
    r = web.get("/", params={"text": "pwned{{7*7}}"})
    assert "pwned49" not in r.text and MARK in visible_text(r.text)


def redis_down_client(tmp_path, **settings) -> TestClient:
    """A client of an app whose run store is a Redis that nothing listens to."""
    down = Settings(redis_url="redis://127.0.0.1:1/0", lab_pool="thread", lab_runs_dir=tmp_path, **settings)
    return TestClient(create_app(down), raise_server_exceptions=False)


def test_lab_with_redis_down_answers_503_not_500(tmp_path):
    with redis_down_client(tmp_path) as c:
        r = c.post("/api/train", json={"corpus": "aaabdaaabac", "merges": 3, "pattern": "none"})
        assert r.status_code == 503, r.text
        assert "Redis" in r.json()["detail"] and r.headers["retry-after"] == "5"
        # The playground does not need the store and keeps working.
        assert c.post("/api/tokenize", json={"text": "hi", "tokenizer": "gpt2"}).status_code == 200


def test_a_training_that_could_not_be_stored_keeps_no_place_in_the_queue(tmp_path):
    """A run the store refused never runs: with Redis down, every attempt says so (503), and none of them fill
    the queue so that later attempts would read "the lab is busy" (429) even after Redis is back."""
    with redis_down_client(tmp_path, lab_workers=1, lab_queue=1) as c:
        codes = [c.post("/api/train", json={"corpus": "aaabdaaabac", "merges": 3}).status_code for _ in range(5)]
        assert codes == [503] * 5
        assert c.app.state.lab.pool.active() == 0
