"""HTTP tests of the playground page: full page vs htmx fragment, the coloured view, errors, windows, decode."""

from __future__ import annotations

import itertools
import re
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from helpers.oracles import tiktoken_encoding
from hypothesis import strategies as st

from app.engines import registry
from app.engines.errors import InvalidTextError
from app.settings import Settings
from app.web.app import create_app
from app.web.errors import status_for
from app.services.tokenize import parse_ids
from app.engines.result import TokenizeResult
from app.palette import PALETTE, base_colour
from app.web.rendering.tokenview import token_window

HX = {"HX-Request": "true"}


enc = tiktoken_encoding  # tiktoken itself on the shipped ranks: the referee for counts and ids


class Page(HTMLParser):
    """Collects the coloured token spans (with their text and ids), the id list, counts, textarea and error text.

    A token span is a direct child of the ``tokens`` container; its ids are handed out from the id list as
    static/app.js does (one per ``data-hex`` entry, else one, none for a gap): ``tokens[i]["ids"]``.
    """

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tokens: list[dict] = []
        self.ids: list[dict] = []
        self.counts: dict[str, str] = {}
        self.textarea: str | None = None
        self.errors: list[str] = []
        self.ws_marks: list[str] = []
        self.selected: list[str] = []
        self.checked: list[str] = []
        self._stack: list[tuple[str, dict, str]] = []  # (tag, attrs, role) open elements
        self.feed(html)
        ids, at = [int(i["text"]) for i in self.ids], 0
        for tok in self.tokens:
            hexes = tok["attrs"].get("data-hex")
            n = 0 if "gap" in tok["classes"] else len(hexes.split("|")) if hexes is not None else 1
            tok["ids"], at = ids[at : at + n], at + n
        assert at == len(ids), f"the token spans account for {at} ids, the id list has {len(ids)}"

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        classes = a.get("class", "").split()
        role = ""
        parent_classes = self._stack[-1][1].get("class", "").split() if self._stack else []
        if tag == "span" and "tokens" in parent_classes:
            self.tokens.append({"attrs": a, "classes": classes, "text": ""})
            role = "token"
        elif tag == "span" and "data-id-list" in a:
            role = "id-list"  # the ids as plain text; static/app.js hands them out to the token spans
        elif tag == "i" and classes and classes[0].startswith("w-"):
            self.ws_marks.append(classes[0])
        elif tag == "span" and a.get("id", "").startswith(("count-", "chars-", "bytes-")):
            role = "count:" + a["id"]
            self.counts[a["id"]] = ""
        elif tag == "textarea":
            self.textarea = ""
            role = "textarea"
        elif tag == "div" and "error" in classes:
            self.errors.append("")
            role = "error"
        elif tag == "option" and "selected" in a:
            self.selected.append(a["value"])
        elif tag == "input" and "checked" in a:
            self.checked.append(a["name"])
        if tag not in ("input", "meta", "link", "br"):
            self._stack.append((tag, a, role))

    def handle_endtag(self, tag):
        if tag == "textarea" and self.textarea and self.textarea.startswith("\n"):
            self.textarea = self.textarea[1:]  # as browsers do: a newline right after <textarea> is dropped
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        roles = [r for _, _, r in self._stack if r]
        if not roles:
            return
        if "token" in roles:
            self.tokens[-1]["text"] += data
        role = roles[-1]
        if role == "id-list":
            self.ids += [{"text": i} for i in data.split()]
        elif role.startswith("count:"):
            self.counts[role[6:]] += data
        elif role == "textarea":
            self.textarea += data
        elif role == "error":
            self.errors[-1] += data

    @property
    def count(self) -> int:
        return int(self.counts["count-tokens"].replace(",", ""))

    @property
    def token_text(self) -> str:
        return "".join(t["text"] for t in self.tokens)

    def colours(self) -> list[str]:
        return [next(c for c in t["classes"] if c[0] == "c" and c[1:].isdigit()) for t in self.tokens]


def render(client, text, tokenizer="cl100k_base", **extra):
    return client.post("/render", data={"text": text, "tokenizer": tokenizer, **extra}, headers=HX)


# -- full page vs fragment ---------------------------------------------------------------------------------


def test_get_playground_renders_full_page_with_nav_and_form(client):
    r = client.get("/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert "HX-Request" in r.headers["vary"]
    html = r.text
    assert html.lstrip().lower().startswith("<!doctype html>")
    for href in ('href="/"', 'href="/compare"', 'href="/lab"', 'src="/vendor/htmx.min.js"', 'href="/static/app.css"'):
        assert href in html
    assert 'hx-post="/render"' in html and 'hx-target="#result"' in html
    page = Page(html)
    assert page.textarea and page.count > 0  # the sample text, already tokenized
    assert page.selected[0] == "cl100k_base"


def test_get_playground_with_query_reproduces_the_view(client):
    r = client.get("/", params={"tokenizer": "gpt2", "text": "a<|endoftext|>b c", "special": "1", "ws": "1"})
    page = Page(r.text)
    assert page.textarea == "a<|endoftext|>b c"
    assert page.selected[0] == "gpt2"
    assert set(page.checked) >= {"special", "ws"}
    assert page.count == len(enc("gpt2").encode("a<|endoftext|>b c", allowed_special="all"))
    assert "w-sp" in page.ws_marks


def test_get_playground_with_empty_query_text_shows_empty_state(client):
    page = Page(client.get("/?tokenizer=gpt2").text)
    assert page.textarea == "" and page.count == 0 and page.tokens == []


def test_render_htmx_returns_only_the_result_block(client):
    r = render(client, "Hello world")
    assert r.status_code == 200
    assert "HX-Request" in r.headers["vary"]
    assert "<html" not in r.text and "<textarea" not in r.text and "<nav" not in r.text
    page = Page(r.text)
    assert page.count == 2
    assert page.counts == {
        "count-tokens": "2",
        "count-chars": "11",
        "count-bytes": "11",
        "chars-per-token": "5.50",
        "bytes-per-token": "5.50",
    }
    assert [i["text"] for i in page.ids] == ["9906", "1917"]


def test_render_without_htmx_returns_the_full_page(client):
    r = client.post("/render", data={"text": "Hello world", "tokenizer": "gpt2"})
    assert r.status_code == 200
    page = Page(r.text)
    assert "<html" in r.text and page.textarea == "Hello world" and page.count == 2


def test_render_replaces_url_with_tokenizer_and_short_text(client, settings):
    r = render(client, "héllo & <b>", tokenizer="o200k_base", special="1", ws="1")
    url = urlsplit(r.headers["HX-Replace-Url"])
    assert url.path == "/"
    assert parse_qs(url.query) == {"tokenizer": ["o200k_base"], "text": ["héllo & <b>"], "special": ["1"], "ws": ["1"]}
    long_text = "x" * (settings.url_text_limit + 1)
    url = urlsplit(render(client, long_text).headers["HX-Replace-Url"])
    assert parse_qs(url.query) == {"tokenizer": ["cl100k_base"]}


def test_render_alias_resolves_to_tokenizer_name(client):
    """A model name cuts with its encoding; the address keeps the name typed (issue 37: a model typed whole is kept,
    so its window and price stay on the page). A plain encoding's name is the address's own."""
    r = render(client, "hi there", tokenizer="gpt-4o")
    assert "tokenizer=gpt-4o&" in r.headers["HX-Replace-Url"]
    assert [i for t in Page(r.text).tokens for i in t["ids"]] == enc("o200k_base").encode("hi there")
    assert "tokenizer=o200k_base&" in render(client, "hi", tokenizer="o200k_base").headers["HX-Replace-Url"]


# -- the coloured view --------------------------------------------------------------------------------------


@pytest.mark.parametrize("tokenizer", ["gpt2", "cl100k_base", "o200k_base"])
def test_render_counts_and_ids_match_tiktoken(client, tokenizer):
    text = "Tokenizers split text: 日本語のテキスト, emoji 🙂👍🏽, and code `x += 1`.\n\tDone."
    page = Page(render(client, text, tokenizer=tokenizer).text)
    ids = enc(tokenizer).encode(text)
    assert page.count == len(ids)
    assert [int(i["text"]) for i in page.ids] == ids
    assert page.counts["count-chars"] == str(len(text))
    assert page.counts["count-bytes"] == str(len(text.encode()))


def test_render_script_is_escaped_text(client):
    text = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    r = render(client, text)
    assert "<script>" not in r.text and "<img" not in r.text
    assert Page(r.text).token_text == text


def test_get_playground_escapes_script_in_textarea(client):
    r = client.get("/", params={"text": "</textarea><script>alert(1)</script>"})
    assert "<script>alert(1)" not in r.text
    assert Page(r.text).textarea == "</textarea><script>alert(1)</script>"


def test_render_partial_characters_form_one_group_with_all_ids(client):
    # gpt2 cuts 閒 into two byte tokens, neither valid UTF-8 alone.
    page = Page(render(client, "閒", tokenizer="gpt2").text)
    assert len(page.tokens) == 1
    tok = page.tokens[0]
    assert tok["text"] == "閒" and "\ufffd" not in tok["text"]
    assert "partial" in tok["classes"]
    ids = enc("gpt2").encode("閒")
    assert tok["ids"] == ids
    assert tok["attrs"]["data-hex"] == "E9 96|92"  # the bytes of each token: not derivable from the text
    assert [int(i["text"]) for i in page.ids] == ids


def test_render_emoji_never_shows_replacement_character(client):
    text = "🙂👍🏽 家族 👨‍👩‍👧"
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        page = Page(render(client, text, tokenizer=name).text)
        assert page.token_text == text
        assert all("\ufffd" not in t["text"] for t in page.tokens)


@hsettings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(text=st.text(st.characters(exclude_categories=("Cs",)), max_size=40))
def test_render_tokens_join_back_to_the_input(client, text):
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # as a text area holds it (the page normalises)
    for name in ("gpt2", "o200k_base"):
        page = Page(render(client, text, tokenizer=name).text)
        assert page.token_text == text
        assert page.count == len(enc(name).encode_ordinary(text))  # special-token text is plain text here


def test_render_neighbours_never_share_a_colour_and_ids_keep_theirs(client):
    text = "the the the the " * 20 + "aaaa bbbb aaaa bbbb " * 10 + "\n\n\n" * 5
    page = Page(render(client, text, tokenizer="cl100k_base").text)
    colours = page.colours()
    assert all(a != b for a, b in itertools.pairwise(colours))
    # A token's colour is its id's colour unless the previous token already had that one.
    for tok, colour, prev in zip(page.tokens, colours, [None] + colours[:-1]):
        base = f"c{base_colour(tok['ids'][0])}"
        assert colour == base or (prev == base and colour == f"c{(int(base[1:]) + 1) % PALETTE}")


def test_base_colour_spreads_ids_over_the_palette():
    counts = [0] * PALETTE
    for tid in range(10_000):
        counts[base_colour(tid)] += 1
    assert min(counts) > 800


def test_render_special_tokens_off_by_default_on_when_toggled(client):
    text = "a<|endoftext|>b"
    plain = Page(render(client, text, tokenizer="gpt2").text)
    assert not any("special" in t["classes"] for t in plain.tokens)
    assert "50256" not in [i["text"] for i in plain.ids]
    special = Page(render(client, text, tokenizer="gpt2", special="1").text)
    marked = [t for t in special.tokens if "special" in t["classes"]]
    assert len(marked) == 1 and marked[0]["text"] == "<|endoftext|>"
    assert marked[0]["ids"] == [50256]
    assert special.count == 3 and special.token_text == text


def test_render_show_whitespace_marks_spaces_tabs_newlines(client):
    text = "a b\tc\nd"
    off = Page(render(client, text).text)
    assert off.ws_marks == []
    on = Page(render(client, text, ws="1").text)
    assert sorted(on.ws_marks) == ["w-nl", "w-sp", "w-tab"]
    assert on.token_text == text  # the real characters stay in the page (glyphs are CSS pseudo-elements)


def test_render_tokens_are_focusable_with_details(client):
    page = Page(render(client, "Hello world").text)
    assert [t["attrs"].get("tabindex") for t in page.tokens] == ["0", None]  # app.js gives the rest -1
    assert [t["ids"] for t in page.tokens] == [[9906], [1917]]
    # One token whose bytes are the text's UTF-8: only its colour and its tab stop (static/app.js derives the
    # ids, the hex and the title).
    assert page.tokens[0]["attrs"] == {"class": page.colours()[0], "tabindex": "0"}


def test_render_spans_say_each_fact_once_in_under_40_bytes_a_token(client):
    """The markup besides the text is the colour, the tab stop, the bytes that differ from the text and the id
    list: nothing static/app.js can derive (the spans' ids and numbers, the hex of plain tokens)."""
    text = "Hello world, 日本語 🙂 <|endoftext|>\n" * 40
    r = render(client, text, tokenizer="cl100k_base", special="1")
    page = Page(r.text)
    assert page.token_text == text
    assert [i for t in page.tokens for i in t["ids"]] == enc("cl100k_base").encode(text, allowed_special="all")
    tokens = r.text[r.text.index('id="tokens"') :].split('<div id="detail"')[0]
    attributes = re.findall(r"<span ([^>]*)>", tokens)
    assert len(attributes) == len(page.tokens)
    for attrs in attributes:  # one word unquoted; data-hex only where the bytes are not the text's
        assert re.fullmatch(r'class=(c\d|"c\d[a-z ]+")( data-hex="[0-9A-F |]+")?( tabindex=0)?', attrs), attrs
    assert sum("data-hex" in a for a in attributes) == sum(len(t["ids"]) > 1 for t in page.tokens)
    assert len(r.content) / page.count < 40


def test_render_crlf_and_cr_are_normalised_to_lf_as_in_a_text_area(client):
    page = Page(render(client, "a\r\nb\rc").text)
    assert page.token_text == "a\nb\nc" and page.counts["count-chars"] == "5"
    page = Page(client.get("/", params={"text": "a\r\nb"}).text)
    assert page.token_text == "a\nb" and page.textarea == "a\nb"


# -- errors -------------------------------------------------------------------------------------------------


def test_render_unknown_tokenizer_answers_404_fragment_naming_valid_ones(client):
    r = render(client, "hi", tokenizer="nope")
    assert r.status_code == 404
    page = Page(r.text)
    assert page.errors and "nope" in page.errors[0]
    for name in registry.names():  # lab tokenizers other tests registered belong to their browsers: not named
        assert (name in page.errors[0]) != name.startswith("lab-"), name
    assert "HX-Replace-Url" not in r.headers


def test_get_unknown_tokenizer_shows_page_with_error_and_keeps_text(client):
    r = client.get("/", params={"tokenizer": "<b>nope</b>", "text": "keep me"})
    assert r.status_code == 404
    assert "<b>nope" not in r.text
    page = Page(r.text)
    assert page.textarea == "keep me"
    assert "<b>nope</b>" in page.errors[0] and "cl100k_base" in page.errors[0]
    # the picker shows the name the error speaks of, not another tokenizer
    assert '<option value="&lt;b&gt;nope&lt;/b&gt;" selected' in r.text and "(unknown)" in r.text


@pytest.fixture()
def small_client():
    app = create_app(Settings(max_chars=50, render_tokens=5, url_text_limit=10, max_ids=4))
    with TestClient(app) as c:
        yield c


def test_render_text_over_the_limit_answers_413_with_message(small_client):
    r = render(small_client, "x" * 51)
    assert r.status_code == 413
    message = Page(r.text).errors[0]
    assert "limit is 50" in message and "TOKENPLAY_" not in message  # the setting is for the README, not the user


def test_render_full_page_over_the_limit_keeps_text(small_client):
    r = small_client.post("/render", data={"text": "y" * 60, "tokenizer": "gpt2"})
    assert r.status_code == 413
    page = Page(r.text)
    assert page.textarea == "y" * 60 and "limit" in page.errors[0]


def multipart(fields: dict) -> dict:
    """``fields`` as a multipart/form-data body (what the page's forms post), for the test client."""
    return {"files": {name: (None, value) for name, value in fields.items()}}


def test_the_page_posts_its_forms_as_multipart(client):
    html = client.get("/").text
    assert 'hx-encoding="multipart/form-data"' in html  # htmx: the forms and the pager's buttons
    form = re.search(r'<form id="play"[^>]*>', html).group(0)
    assert 'enctype="multipart/form-data"' in form  # without JavaScript too


def test_render_multipart_answers_what_url_encoded_answers(client):
    fields = {"text": "Héllo\r\nworld 日本 🙂 <|endoftext|>", "tokenizer": "gpt2", "special": "1", "ws": "1"}
    posted = client.post("/render", headers=HX, **multipart(fields))
    assert posted.status_code == 200
    assert posted.text == render(client, **fields).text
    assert Page(posted.text).token_text == "Héllo\nworld 日本 🙂 <|endoftext|>"  # as the text area holds it


@pytest.mark.parametrize("path", ["/render", "/ids", "/decode", "/compare/results", "/chat/result"])
def test_forms_over_a_size_limit_answer_413_multipart_or_not(small_client, path):
    """Past the limit of a field (the text's limit, UTF-8- and percent-encoded) or of the number of fields, a form
    is a 413 with the message, never Starlette's 400; a file part where none belongs is a 422 that says so (issue
    38: it was a 413 "Too many files"); a malformed form stays a 400."""
    big = "x" * (50 * 12 + 2000)
    for body in (multipart({"text": big, "tokenizer": "gpt2"}), {"data": {"text": big, "tokenizer": "gpt2"}},
                 multipart({f"f{i}": "x" for i in range(60)})):
        r = small_client.post(path, headers=HX, **body)
        assert r.status_code == 413, (path, r.text)
        assert "limits" in Page(r.text).errors[0]
    r = small_client.post(path, headers=HX, files={"text": ("a.txt", b"hello", "text/plain")})
    assert r.status_code == 422, (path, r.text)
    assert "takes no file" in Page(r.text).errors[0]
    r = small_client.post(path, headers=HX | {"Content-Type": "multipart/form-data"}, content=b"no boundary")
    assert r.status_code == 400


def test_render_multipart_text_over_the_limit_answers_413_with_message(small_client):
    r = small_client.post("/render", headers=HX, **multipart({"text": "閒" * 51, "tokenizer": "gpt2"}))
    assert r.status_code == 413 and "limit is 50" in Page(r.text).errors[0]


def test_lone_surrogate_maps_to_422():
    tok = registry.get("cl100k_base")
    with pytest.raises(InvalidTextError) as exc:
        tok.tokenize("a\ud800b")
    assert status_for(exc.value) == 422


def test_get_playground_with_undecodable_query_text_does_not_fail(client):
    # A browser cannot send a lone surrogate in a form or URL: bad UTF-8 arrives as U+FFFD.
    r = client.get("/?text=%ED%A0%80x")
    assert r.status_code == 200 and Page(r.text).textarea.endswith("x")


# -- long texts: exact counts, a window of coloured tokens ----------------------------------------------------


def test_render_long_text_windows_tokens_with_exact_counts(small_client):
    text = " ".join(f"w{i}" for i in range(15))  # 30 tokens in gpt2, well over the window of 5
    ids = enc("gpt2").encode(text)
    r = render(small_client, text, tokenizer="gpt2")
    page = Page(r.text)
    assert page.count == len(ids)
    assert len(page.tokens) == 5
    assert [int(i["text"]) for i in page.ids] == ids[:5]
    assert 'id="show-more"' in r.text and '"offset": 5' in r.text
    second = Page(render(small_client, text, tokenizer="gpt2", offset="5").text)
    assert second.count == len(ids)
    assert [t["ids"] for t in second.tokens] == [[i] for i in ids[5:10]]
    assert second.colours()[0] != page.colours()[-1]
    # Walking all windows gives back the whole text and every id once, neighbours never sharing a colour.
    seen, ids_seen, offset = "", [], 0
    while offset is not None:
        r = render(small_client, text, tokenizer="gpt2", offset=str(offset))
        p = Page(r.text)
        seen += p.token_text
        ids_seen += [int(i["text"]) for i in p.ids]
        colours = p.colours()
        assert all(a != b for a, b in itertools.pairwise(colours))
        m = re.search(r'id="show-more"[^>]*"offset": (\d+)', r.text)
        offset = int(m.group(1)) if m else None
    assert seen == text and ids_seen == ids


def test_render_stale_offset_is_clamped_to_the_last_window(small_client):
    page = Page(render(small_client, "a b c d e f g", tokenizer="gpt2", offset="500").text)
    assert page.count == 7 and [t["text"] for t in page.tokens] == [" f", " g"]
    assert [t["ids"] for t in page.tokens] == [[i] for i in enc("gpt2").encode("a b c d e f g")[5:]]


def test_ids_route_returns_every_id(small_client):
    text = " ".join(f"w{i}" for i in range(15))
    r = small_client.post("/ids", data={"text": text, "tokenizer": "gpt2"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert [int(x) for x in r.text.split(", ")] == enc("gpt2").encode(text)


def test_render_max_size_text_is_exact_and_bounded(client, settings):
    # How long it takes is measured by bench/bench_api.py (hostile inputs, 1 MB texts), not here.
    text = ("Tokenplay 日本語 🙂 " * (settings.max_chars // 16 + 1))[: settings.max_chars]
    r = render(client, text, tokenizer="cl100k_base")
    page = Page(r.text)
    assert page.count == len(enc("cl100k_base").encode(text))
    # The coloured window holds the segments starting in the first render_tokens tokens (a character cut
    # into byte tokens at the edge stays whole, so a few more ids may show).
    assert settings.render_tokens <= len(page.ids) < settings.render_tokens + 8
    assert len(r.content) < 3_000_000


# -- decode box -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["9906, 1917", "[9906, 1917]", "9906 1917", "9906\n1917\n"])
def test_decode_accepts_lists_in_common_shapes(client, raw):
    r = client.post("/decode", data={"ids": raw, "tokenizer": "cl100k_base"}, headers=HX)
    assert r.status_code == 200
    assert "<html" not in r.text
    assert '<pre class="decoded-text">Hello world</pre>' in r.text


def test_decode_escapes_decoded_text(client):
    ids = enc("cl100k_base").encode("<script>alert(1)</script>")
    r = client.post("/decode", data={"ids": str(ids), "tokenizer": "cl100k_base"}, headers=HX)
    assert "<script>" not in r.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text


def test_decode_bad_ids_answer_422_with_message(client):
    r = client.post("/decode", data={"ids": "9906, abc", "tokenizer": "cl100k_base"}, headers=HX)
    assert r.status_code == 422 and "abc" in Page(r.text).errors[0]
    r = client.post("/decode", data={"ids": "99999999", "tokenizer": "cl100k_base"}, headers=HX)
    assert r.status_code == 422 and "99999999" in Page(r.text).errors[0]


def test_decode_too_many_ids_answers_413(small_client):
    r = small_client.post("/decode", data={"ids": "1 2 3 4 5", "tokenizer": "gpt2"}, headers=HX)
    assert r.status_code == 413


def test_decode_empty_shows_nothing(client):
    r = client.post("/decode", data={"ids": "  ", "tokenizer": "gpt2"}, headers=HX)
    assert r.status_code == 200 and r.text.strip() == ""


def test_parse_ids_rejects_negative_and_float():
    assert parse_ids("[1,2, 3]") == [1, 2, 3]
    for bad in ("-1", "1.5", "1e3"):
        with pytest.raises(ValueError):
            parse_ids(bad)


# -- assets -------------------------------------------------------------------------------------------------------


def test_static_assets_and_htmx_are_served(client):
    assert client.get("/static/app.css").status_code == 200
    assert client.get("/static/app.js").status_code == 200
    r = client.get("/vendor/htmx.min.js")
    assert r.status_code == 200 and "htmx" in r.text[:2000]


def window_of(tok, text: str, offset: int = 0, limit: int | None = 3000, special: bool = False):
    """What the playground builds: the window of a fresh result (grouped from the ids for byte-level ones)."""
    return token_window(tok.tokenize(text, allow_special=special), offset, limit)


def placed_window(tok, text: str, offset: int = 0, limit: int | None = 3000, special: bool = False):
    """The reference: the same window grouped from the result's placed Token records."""
    result = tok.tokenize(text, allow_special=special)
    return token_window(TokenizeResult(result.tokenizer, text, result.ids, result.tokens), offset, limit)


@pytest.mark.parametrize("name", registry.names())
@pytest.mark.parametrize("special", ["", "1"])
def test_render_every_tokenizer_joins_back_without_replacement_characters(client, name, special):
    text = "Hello  world!\n\tTabs, 日本語, emoji 🙂👍🏽 and <|endoftext|> <s></s>"
    r = render(client, text, tokenizer=name, special=special)
    assert r.status_code == 200
    page = Page(r.text)
    assert page.token_text == text and "\ufffd" not in page.token_text
    assert page.count == len(registry.get(name).encode(text, allow_special=bool(special)))
    assert [i for t in page.tokens for i in t["ids"]] == registry.get(name).encode(text, allow_special=bool(special))


def test_picker_groups_tokenizers_by_maker(client):
    html = client.get("/").text
    # Lab tokenizers other tests trained are listed only for their own browser (tests/web/test_pickers.py).
    shipped = [s for s in registry.specs() if not s.name.startswith("lab-")]
    for spec in registry.specs():
        assert (f'value="{spec.name}"' in html) == (spec in shipped), spec.name
    assert html.count("<optgroup") == len({s.maker for s in shipped})


@hsettings(max_examples=60, deadline=None)
@given(
    text=st.text(st.sampled_from(list("ab 日本語🙂👍🏽\n\té")), max_size=40),
    limit=st.integers(1, 6),
    name=st.sampled_from(["gpt2", "cl100k_base", "mistral-7b"]),
)
def test_windows_page_through_every_span_exactly_once(text, limit, name):
    tok = registry.get(name)
    full = window_of(tok, text, limit=None)
    spans, offset, pages = [], 0, 0
    while True:
        window = window_of(tok, text, offset, limit)
        assert window.stats == full.stats
        assert all(a.colour != b.colour for a, b in zip(window.spans, window.spans[1:]))
        spans += window.spans
        pages += 1
        if window.next_start is None:
            break
        offset = window.next_start
    assert "".join(s.text for s in spans) == text
    assert [s.ids for s in spans] == [s.ids for s in full.spans]
    assert [s.hexes for s in spans] == [s.hexes for s in full.spans]
    assert pages == max(1, -(-len(full.result.ids) // limit))


def test_a_window_past_the_end_shows_the_last_one():
    window = window_of(registry.get("gpt2"), "a b c d e f g", offset=99, limit=5)
    assert (window.start, window.stop, window.has_more) == (5, 7, False)
    assert [s.text for s in window.spans] == [" f", " g"]


def test_render_sentencepiece_shows_byte_fallback_count(client):
    tok = registry.get("mistral-7b")
    text = "Hello 안녕 🙂"
    r = render(client, text, tokenizer="mistral-7b")
    expected = sum(tok.id_to_piece(i).startswith("<0x") for i in tok.encode(text))
    assert expected > 0
    assert f'id="count-byte-fallback">{expected}<' in r.text
    page = Page(r.text)
    assert page.token_text == text
    # Byte-level tokenizers have no such pieces and show no such count.
    assert "count-byte-fallback" not in render(client, text, tokenizer="gpt2").text


@hsettings(max_examples=150, deadline=None)
@given(
    text=st.text(st.sampled_from(list("ab <|endoftext|>日本語🙂👍🏽\n\té閒")), max_size=60),
    offset=st.integers(0, 30),
    limit=st.integers(1, 8),
    special=st.booleans(),
    name=st.sampled_from(["gpt2", "cl100k_base", "native-cl100k_base", "custom-bpe"]),
)
def test_byte_level_window_equals_the_placed_window(text, offset, limit, special, name):
    """The playground's path (grouping the ids) gives exactly the window grouped from placed Token records."""
    tok = registry.get(name)
    fast = window_of(tok, text, offset, limit, special)
    slow = placed_window(tok, text, offset, limit, special)
    fields = ("start", "stop", "limit", "token_start", "token_stop", "has_more", "stats", "next_start", "prev_start")
    assert {f: getattr(fast, f) for f in fields} == {f: getattr(slow, f) for f in fields}
    assert fast.result.ids == slow.result.ids
    assert len(fast.spans) == len(slow.spans)
    for a, b in zip(fast.spans, slow.spans):
        assert (a.index, a.start, a.end, a.text, a.colour, a.ids, a.special, a.partial) == (
            b.index,
            b.start,
            b.end,
            b.text,
            b.colour,
            b.ids,
            b.special,
            b.partial,
        )
        assert a.tokens == b.tokens and a.hexes == b.hexes and a.hex_attr == b.hex_attr


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base", "custom-bpe"])
def test_byte_level_window_equals_placed_on_special_tokens_and_cut_characters(name):
    tok = registry.get(name)
    text = "閒🙂 a<|endoftext|>b 👩‍💻家族\n\n閒閒 end"
    n = len(tok.encode(text, allow_special=True))
    for special in (False, True):
        for limit in (1, 2, 3, 7, n):
            for offset in range(0, n + 3):
                fast = window_of(tok, text, offset, limit, special)
                slow = placed_window(tok, text, offset, limit, special)
                assert [(i.index, i.text, i.colour, i.ids, i.special, i.hexes) for i in fast.spans] == [
                    (i.index, i.text, i.colour, i.ids, i.special, i.hexes) for i in slow.spans
                ]
                assert (fast.start, fast.stop, fast.token_start, fast.token_stop, fast.has_more) == (
                    slow.start,
                    slow.stop,
                    slow.token_start,
                    slow.token_stop,
                    slow.has_more,
                )


@pytest.mark.parametrize("reload", [False, True])
def test_templates_are_read_once_unless_template_reload_is_on(tmp_path, reload):
    import os
    import shutil
    import time

    from fastapi.testclient import TestClient

    from app.settings import Settings
    from app.web.app import create_app

    templates = tmp_path / "templates"
    shutil.copytree(Settings().templates_dir, templates)
    settings = Settings(
        lab_runs_dir=tmp_path / "runs", lab_pool="thread", templates_dir=templates, template_reload=reload
    )
    with TestClient(create_app(settings)) as c:
        assert "Playground · Tokenplay" in c.get("/").text
        page = templates / "playground.html"
        page.write_text(page.read_text().replace("Playground · Tokenplay", "Edited · Tokenplay"))
        os.utime(page, (time.time() + 5, time.time() + 5))  # a newer mtime even on coarse file systems
        assert ("Edited · Tokenplay" in c.get("/").text) == reload


edits = st.lists(
    st.tuples(
        st.sampled_from(["append", "append", "append", "insert", "delete", "replace"]),
        st.floats(0, 1),
        st.text(st.sampled_from(list("ab ,\n日本🙂<|endoftext|>é閒")), min_size=1, max_size=6),
    ),
    min_size=1,
    max_size=12,
)


@hsettings(max_examples=80, deadline=None)
@given(
    start=st.text(st.sampled_from(list("ab xy\n日本語🙂👍🏽é閒")), min_size=10, max_size=80),
    steps=edits,
    limit=st.sampled_from([3, 7, 3000]),
    offset=st.sampled_from([0, 0, 4]),
    special=st.booleans(),
    show_ws=st.booleans(),
    name=st.sampled_from(["gpt2", "cl100k_base", "custom-bpe"]),
)
def test_typing_reuses_earlier_rows_and_markup_exactly(start, steps, limit, offset, special, show_ws, name):
    """While someone types, each window reuses the rows (and span markup) of the previous one before the first
    changed token: the result must be exactly a fresh window's, token for token and byte for byte."""
    from app.web.render import make_environment
    from app.web.rendering.tokenview import _RECENT

    tok = registry.get(name)
    env = make_environment(Settings().templates_dir)
    module = env.get_template("_tokens.html").module
    tokens_markup = env.globals["tokens_markup"]
    text = start
    for kind, where, piece in steps:
        at = int(where * len(text))
        if kind == "append":
            text += piece
        elif kind == "insert":
            text = text[:at] + piece + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + len(piece) :]
        else:
            text = text[:at] + piece + text[at + len(piece) :]
        window = window_of(tok, text, offset, limit, special)
        fresh = placed_window(tok, text, offset, limit, special)
        got = [(i.index, i.text, i.colour, i.ids, i.special, i.partial, i.hexes) for i in window.spans]
        assert got == [(i.index, i.text, i.colour, i.ids, i.special, i.partial, i.hexes) for i in fresh.spans]
        direct = "".join(
            str(module.token_span(item, show_ws, 0 if n == 0 else None)) for n, item in enumerate(fresh.spans)
        )
        assert str(tokens_markup(window, show_ws, True)) == direct
    _RECENT.clear()


def test_typing_at_the_end_reuses_almost_every_row():
    from app.web.rendering.tokenview import _RECENT

    tok = registry.get("cl100k_base")
    base = "def f(x):\n    return x * 2  # 日本語 🙂\n" * 40
    reused = []
    for extra in ["a", "ab", "ab ", "ab c", "ab cd", "ab cd閒", "ab cd閒!"]:
        window = window_of(tok, base + extra)
        assert [(i.index, i.text, i.colour, i.ids) for i in window.spans] == [
            (i.index, i.text, i.colour, i.ids) for i in placed_window(tok, base + extra).spans
        ]
        reused.append(window.reused / len(window.spans))
    assert min(reused[1:]) > 0.95  # after the first keystroke, all but the last few rows come from before
    _RECENT.clear()


def test_typing_random_keystrokes_gives_fresh_windows_exactly():
    """Seeded: 300 texts typed a key at a time, every window equal to a fresh one (colours included)."""
    import random

    from app.web.rendering.tokenview import _RECENT

    rnd = random.Random(5)
    reused = 0
    for _ in range(300):
        tok = registry.get(rnd.choice(["gpt2", "cl100k_base", "o200k_base"]))
        text = "".join(rnd.choice(list("ab xy\n日本語🙂é閒")) for _ in range(rnd.randint(0, 80)))
        for _ in range(8):
            text += rnd.choice(["a", " b", "日", "🙂", "\n", "閒", "xy "])
            window, fresh = window_of(tok, text), placed_window(tok, text)
            assert [(i.index, i.text, i.colour, i.ids, i.partial) for i in window.spans] == [
                (i.index, i.text, i.colour, i.ids, i.partial) for i in fresh.spans
            ]
            reused += window.reused > 0
        _RECENT.clear()
    assert reused > 1000  # most keystrokes reused earlier rows
