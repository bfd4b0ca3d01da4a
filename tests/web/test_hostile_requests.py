"""Hostile requests answered in words (issue 38): a body counted as it arrives whatever its headers, input nested too
deeply, a file where none belongs, the store unreachable (a page answers a page, the API JSON), and a browser kept
safe by default (security headers, ``Secure`` cookies over HTTPS, no change sent from another site). Nothing here
depends on the machine's speed: sizes are counted, not timed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers.class_helpers import ENGLISH, run_async
from helpers.lab_helpers import wait_done
from helpers.serving import free_port
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from app.classroom.service import Classroom
from app.classroom.stores import RedisSessionStore
from app.settings import Settings
from app.web.app import create_app
from app.web.security import POLICY

ROOT = Path(__file__).resolve().parents[2]
DEEP = "[" * 100_000 + "]" * 100_000
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def make_settings(tmp_path, **extra) -> Settings:
    return Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread", **extra)


@pytest.fixture()
def client(tmp_path):
    with TestClient(create_app(make_settings(tmp_path))) as c:
        yield c


# -- bytes counted as they arrive ---------------------------------------------------------------------------------
def post_chunked(app, path: str, total: int, chunk: int = 64 << 10, headers: list | None = None,
                 start: bytes = b"") -> tuple[int, str, int]:
    """POST ``total`` bytes (``start``, then x's) to ``app`` (ASGI) in chunks without a Content-Length, as a chunked
    upload arrives; the status, the body, and how many bytes the app pulled from the client."""

    async def main():
        pulled = 0
        sent: list[dict] = []

        async def receive():
            nonlocal pulled
            if pulled >= total:
                return {"type": "http.request", "body": b"", "more_body": False}
            piece = min(chunk, total - pulled)
            body = (start + b"x" * piece)[:piece] if pulled == 0 else b"x" * piece
            pulled += piece
            return {"type": "http.request", "body": body, "more_body": pulled < total}

        async def send(message):
            sent.append(message)

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
            "headers": [(b"host", b"testserver"), (b"transfer-encoding", b"chunked")] + (headers or []),
            "client": ("127.0.0.1", 1234), "server": ("testserver", 80),
        }
        await app(scope, receive, send)
        began = next(m for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return began["status"], body.decode(), pulled

    return run_async(main)


#: The start of a multipart body whose one file part never ends.
FILE_PART = b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="tokenizer.json"\r\n\r\n'
MULTIPART = [(b"content-type", b"multipart/form-data; boundary=xyz")]


@pytest.mark.parametrize(("path", "headers", "start"), [
    ("/api/tokenize", [(b"content-type", b"application/json")], b'{"text": "'),
    ("/render", [(b"content-type", b"application/x-www-form-urlencoded")], b"text="),
    ("/render", MULTIPART, FILE_PART.replace(b'; filename="tokenizer.json"', b"").replace(b'"file"', b'"text"')),
    ("/api/tokenizers", MULTIPART, FILE_PART),
    ("/tokenizers", MULTIPART, FILE_PART),
])
def test_a_chunked_body_is_refused_after_at_most_its_limit(tmp_path, path, headers, start):
    """200 MB without a Content-Length (the issue's probe read it whole, +420 MB, before its 413): refused with a
    413 once the limit has arrived, having pulled no more than the limit and one chunk from the client."""
    app = create_app(make_settings(tmp_path, max_chars=10))
    with TestClient(app):  # the app's lifespan (the lab, the stores)
        limit = _limit_of(app, path)
        status, body, pulled = post_chunked(app, path, 200 << 20, headers=headers, start=start)
    assert status == 413, body
    assert "limit" in body  # the body's limit, or a form field's (a form parser stops earlier still)
    assert pulled <= limit + (64 << 10), pulled


def _limit_of(app, path: str) -> int:
    middleware = next(m for m in app.user_middleware if m.cls.__name__ == "BodyLimit")
    return middleware.kwargs["larger"].get(path, middleware.kwargs["max_bytes"])


def test_a_body_that_lies_about_its_length_is_counted_too(tmp_path):
    app = create_app(make_settings(tmp_path, max_chars=10))
    with TestClient(app):
        status, body, pulled = post_chunked(app, "/api/tokenize", 50 << 20,
                                            headers=[(b"content-length", b"20"), (b"content-type", b"application/json")])
    assert status == 413 and pulled <= _limit_of(app, "/api/tokenize") + (64 << 10)


def test_a_body_under_the_limit_is_served_as_ever(tmp_path):
    app = create_app(make_settings(tmp_path))

    async def main():
        parts = [b'{"text": "hello', b' world", "tokenizer": "gpt2"}']
        sent = []

        async def receive():
            body = parts.pop(0)
            return {"type": "http.request", "body": body, "more_body": bool(parts)}

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/api/tokenize", "raw_path": b"/api/tokenize", "query_string": b"",
                 "root_path": "", "client": ("127.0.0.1", 1), "server": ("testserver", 80),
                 "headers": [(b"host", b"testserver"), (b"content-type", b"application/json")]}
        await app(scope, receive, send)
        return sent

    with TestClient(app):
        sent = run_async(main)
    assert sent[0]["status"] == 200
    assert b'"ids":[31373,995]' in b"".join(m.get("body", b"") for m in sent[1:])  # tiktoken's gpt2 ids


# -- nested too deeply, a file where none belongs -----------------------------------------------------------------
@pytest.mark.parametrize(("path", "body"), [
    ("/api/tokenize", DEEP),
    ("/api/tokenize", '{"text": ' + DEEP + "}"),
    ("/api/chat", '{"tokenizer": "gpt2", "messages": ' + DEEP + "}"),
    ("/api/compare", '{"text": "a", "tokenizers": ' + DEEP + "}"),
    ("/api/train", '{"corpus": ' + DEEP + "}"),
])
def test_json_nested_100k_levels_is_a_422_in_words(client, path, body):
    r = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert "nests too deeply" in r.json()["detail"]


@pytest.mark.parametrize(("name", "data"), [
    ("tokenizer.json", DEEP),
    ("tokenizer.json", '{"model": ' + DEEP + "}"),
    ("tokenizer.json", '{"a":' * 100_000 + "1" + "}" * 100_000),
])
def test_a_tokenizer_file_nested_100k_levels_is_a_422_in_words(client, name, data):
    r = client.post("/api/tokenizers", files={"file": (name, data.encode())})
    assert r.status_code == 422, r.text
    assert "nests too deeply" in r.json()["detail"]


def test_a_tokenizer_config_nested_100k_levels_is_a_422_in_words(client):
    tokenizer = (ROOT / "tokenizers" / "custom-bpe" / "model.json").read_bytes()
    config = ('{"chat_template": "{{ 1 }}", "x": ' + DEEP + "}").encode()
    r = client.post("/api/tokenizers", files={"file": ("model.json", tokenizer), "config": ("tokenizer_config.json", config)})
    assert r.status_code == 422 and "nests too deeply" in r.json()["detail"], r.text


@pytest.mark.parametrize("path", ["/render", "/ids", "/decode", "/compare/results", "/chat/result"])
def test_a_file_part_where_none_belongs_is_a_422_not_too_many_files(client, path):
    r = client.post(path, data={"text": "hi", "tokenizer": "gpt2"}, files={"text": ("a.txt", b"hello", "text/plain")})
    assert r.status_code == 422, (path, r.status_code, r.text)
    assert "takes no file" in r.text and "Too many files" not in r.text


# -- the store unreachable: a page answers a page, the API JSON ---------------------------------------------------
@pytest.fixture()
def redis_down(tmp_path):
    """The app with its class sessions in a Redis that does not answer (nothing listens on its port)."""
    app = create_app(make_settings(tmp_path))
    url = f"redis://127.0.0.1:{free_port()}/0"
    app.state.classroom = Classroom(RedisSessionStore(url))
    with TestClient(app) as c:
        yield c


def test_a_page_answers_a_whole_page_when_the_store_is_down(redis_down):
    r = redis_down.get("/follow/K7PX2M", headers=BROWSER)
    assert r.status_code == 503 and r.headers["content-type"].startswith("text/html"), r.text
    assert r.headers["retry-after"] == "5"
    assert r.text.lstrip().lower().startswith("<!doctype html>")  # the site's frame (base.html)...
    assert 'role="alert">the run store (Redis) is unavailable right now; try again in a moment</div>' in r.text
    assert 'href="/follow/K7PX2M">Try again</a>' in r.text and 'href="/follow">Back to following a class</a>' in r.text
    assert '<nav aria-label="Main">' in r.text  # ...and its way around


def test_the_api_answers_json_and_htmx_a_fragment_when_the_store_is_down(redis_down):
    r = redis_down.get("/api/sessions/K7PX2M", headers=BROWSER)
    assert r.status_code == 503 and r.json() == {"detail": "the run store (Redis) is unavailable right now; try again in a moment"}
    r = redis_down.get("/follow/K7PX2M/class", headers={"HX-Request": "true"})
    assert r.status_code == 503 and r.text.startswith('<div class="error" role="alert">the run store (Redis)')


def test_a_page_not_found_is_a_page_for_a_browser_and_json_for_a_program(client):
    r = client.get("/no/such/page", headers=BROWSER)
    assert r.status_code == 404 and "<!doctype html>" in r.text.lower() and "there is no page at /no/such/page" in r.text
    assert client.get("/no/such/page").json() == {"detail": "Not Found"}
    assert client.get("/api/no/such", headers=BROWSER).json() == {"detail": "Not Found"}


# -- safe by default in a browser ---------------------------------------------------------------------------------
def test_every_answer_carries_the_security_headers(client):
    for r in (client.get("/"), client.get("/static/app.js"), client.post("/api/tokenize", json={"text": "a"}),
              client.post("/api/tokenize", content=b"x" * 20_000_000), client.get("/nope")):
        assert r.headers["content-security-policy"] == POLICY, r.request.url
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "same-origin"
        assert r.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in POLICY and "script-src 'self';" in POLICY and "style-src 'self';" in POLICY
    assert "unsafe" not in POLICY


def test_the_api_docs_need_no_inline_script(client):
    """/docs is the site's own page (issue 37: in the nav, the site's theme): Swagger UI starts from static/docs.js,
    so the page keeps the strict policy of every page."""
    r = client.get("/docs")
    assert r.status_code == 200 and "swagger-ui-bundle.js" in r.text and "/static/docs.js" in r.text
    assert not re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", r.text)
    assert r.headers["content-security-policy"] == POLICY


#: Pages written to a file by the CLI, never served (`tokenplay measure --format html`: a page of its own, with its
#: stylesheet inlined, read without a server and so without its Content-Security-Policy).
STANDALONE = {"measure_report.html"}
TEMPLATES = sorted(p for p in (ROOT / "templates").glob("*.html") if p.name not in STANDALONE)


def test_the_standalone_pages_are_never_served():
    sources = "\n".join(p.read_text() for p in (ROOT / "app" / "web").rglob("*.py"))
    assert not any(name in sources for name in STANDALONE)


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_no_template_holds_inline_script_handler_or_style(template):
    """The policy allows none: a script is a file under static/ (or htmx), styles are classes."""
    html = re.sub(r"\{#.*?#\}", "", template.read_text(), flags=re.S)  # comments may talk about them
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "an inline <script>"
    assert not re.search(r"\son[a-z]+\s*=", html), "an on*= handler"
    assert not re.search(r"\sstyle\s*=", html), "a style attribute"
    assert "<style" not in html and "javascript:" not in html and "hx-on" not in html


def test_cookies_are_secure_over_https_and_behind_a_trusted_proxy(tmp_path):
    app = create_app(make_settings(tmp_path))
    with TestClient(app, base_url="https://testserver") as c:
        r = c.post("/api/train", json={"corpus": ENGLISH, "merges": 3})
        run = wait_done(c, r.json()["id"])
        r = c.post(f"/api/train/{run['id']}/use")
        assert "; secure" in r.headers["set-cookie"].lower()
    with TestClient(app) as c:  # plain HTTP: a Secure cookie would never come back
        assert "secure" not in c.post(f"/api/train/{run['id']}/use").headers["set-cookie"].lower()
    proxied = ProxyHeadersMiddleware(app, trusted_hosts="*")  # what `tokenplay serve` does for the named proxies
    with TestClient(proxied) as c:
        r = c.post(f"/api/train/{run['id']}/use", headers={"X-Forwarded-Proto": "https"})
        assert "; secure" in r.headers["set-cookie"].lower()


def test_serve_trusts_forwarded_headers_only_from_the_proxies_named(monkeypatch):
    from app.web import server

    seen = {}

    class Stop(Exception):
        pass

    def fake_bind(config):
        seen.update(proxy=config.proxy_headers, ips=config.forwarded_allow_ips)
        raise Stop

    monkeypatch.setattr(server.uvicorn.Config, "bind_socket", fake_bind)
    for ips, proxy in ((None, False), ("10.0.0.2", True)):
        with pytest.raises(Stop):
            server.serve("app.main:app", host="127.0.0.1", port=1, workers=1, log_level="warning",
                         forwarded_allow_ips=ips)
        assert seen["proxy"] is proxy and (not proxy or seen["ips"] == "10.0.0.2")


@pytest.fixture()
def done_run(client) -> str:
    r = client.post("/api/train", json={"corpus": ENGLISH * 2, "merges": 5})
    return wait_done(client, r.json()["id"])["id"]


CROSS_SITE = [{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
              {"Sec-Fetch-Site": "same-site", "Origin": "https://a.testserver"}, {"Origin": "null"}]


@pytest.mark.parametrize("headers", CROSS_SITE, ids=["origin", "fetch-site", "same-site", "null-origin"])
def test_a_change_sent_from_another_site_is_refused_and_does_not_happen(client, done_run, headers):
    runs_before = sorted(p.name for p in Path(client.app.state.settings.lab_runs_dir).glob("*.json"))
    tokenizer = (ROOT / "tokenizers" / "custom-bpe" / "model.json").read_bytes()
    attempts = [
        ("/lab/train", {"data": {"corpus": ENGLISH, "size": "5"}}),
        ("/tokenizers", {"files": {"file": ("model.json", tokenizer)}}),
        ("/api/tokenizers", {"files": {"file": ("model.json", tokenizer)}}),
        (f"/lab/runs/{done_run}/share", {"data": {"step": "1"}}),
        (f"/lab/runs/{done_run}/use", {}),
        (f"/api/train/{done_run}/use", {}),
        ("/render", {"data": {"text": "hi"}}),
    ]
    for path, body in attempts:
        r = client.post(path, headers=headers | BROWSER, **body)
        assert r.status_code == 403, (path, r.status_code, r.text[:200])
        assert "sent by another site" in r.text
        assert ("<!doctype html>" in r.text.lower()) is not path.startswith("/api/")  # a page for a page
        assert "set-cookie" not in r.headers
    assert sorted(p.name for p in Path(client.app.state.settings.lab_runs_dir).glob("*.json")) == runs_before
    assert not [t for t in client.get("/api/tokenizers").json()["tokenizers"] if t["maker"] == "yours"]


def test_the_same_site_a_bookmark_and_programs_are_served(client):
    for headers in ({"Origin": "http://testserver"}, {"Sec-Fetch-Site": "same-origin", "Origin": "http://testserver"},
                    {"Sec-Fetch-Site": "none"}, {}):
        r = client.post("/render", data={"text": "hi", "tokenizer": "gpt2"}, headers=headers | {"HX-Request": "true"})
        assert r.status_code == 200, (headers, r.text)
    settings = client.app.state.settings.model_copy(update={"public_url": "https://class.example.org"})
    with TestClient(create_app(settings)) as c:  # the address students open, behind a proxy
        r = c.post("/api/tokenize", json={"text": "hi"}, headers={"Origin": "https://class.example.org"})
        assert r.status_code == 200
