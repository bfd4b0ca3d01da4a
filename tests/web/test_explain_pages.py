"""The explain view in the pages over HTTP: the playground's explanation and pre-tokens layer, the compare page's
side-by-side explanations, and the /oddities gallery, whose every entry is checked against the reference libraries.
"""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers.explain_referees import Characters, referee
from helpers.xss_payloads import ALL, injected

from app.features import oddities
from app.engines.registry import TokenizerSpec, register, unregister

HTMX = {"HX-Request": "true"}


def test_playground_url_with_explain_renders_the_explanation(client):
    r = client.get("/", params={"tokenizer": "cl100k_base", "text": "I like strawberries", "explain": "2"})
    assert r.status_code == 200
    assert 'class="explanation"' in r.text and 'class="x-tree"' in r.text
    assert '<input type="hidden" name="explain" value="2">' in r.text


def test_an_explain_index_past_the_text_shows_no_explanation(client):
    r = client.get("/", params={"tokenizer": "cl100k_base", "text": "hi", "explain": "9"})
    assert r.status_code == 200 and 'class="explanation"' not in r.text


def test_explain_fragment_keeps_the_index_in_the_url(client):
    fields = {"tokenizer": "llama-3", "text": "I like strawberries", "explain": "3", "pre": "1"}
    r = client.post("/explain", data=fields, headers=HTMX)
    assert r.status_code == 200 and r.text.lstrip().startswith('<div id="explain"')
    query = parse_qs(urlsplit(r.headers["HX-Replace-Url"]).query)
    assert query["explain"] == ["3"] and query["pre"] == ["1"] and query["tokenizer"] == ["llama-3"]
    closed = client.post("/explain", data=fields | {"explain": ""}, headers=HTMX)
    assert 'class="explanation"' not in closed.text and "explain=" not in closed.headers["HX-Replace-Url"]


def test_render_with_pre_marks_the_pre_token_starts(client):
    r = client.post(
        "/render", data={"tokenizer": "cl100k_base", "text": "I like unbelievably", "pre": "1"}, headers=HTMX
    )
    spans = re.findall(r'<span class="?([^">]*)"?[ >]', r.text.split('id="tokens"')[1].split("</div>")[0])
    assert ["pt" in cls.split() for cls in spans] == [True, True, True, False]  # " unbelie" | "vably"


def test_a_tokenizer_that_is_not_bpe_says_so_in_the_panel(client):
    register(TokenizerSpec("test-chars", "characters", "test", Characters))
    try:
        r = client.get("/", params={"tokenizer": "test-chars", "text": "abc", "explain": "0"})
        assert r.status_code == 200 and "not a BPE tokenizer" in r.text
    finally:
        unregister("test-chars")


def test_explanations_escape_the_text(client):
    text = ALL.splitlines()[1]
    r = client.get("/", params={"tokenizer": "gpt2", "text": text, "explain": "1", "pre": "1"})
    assert r.status_code == 200 and not injected(r.text)
    r = client.post(
        "/compare/explain",
        data={"text": text, "t": ["gpt2", "o200k_base"], "ref": "o200k_base", "pane": "gpt2", "at": "3"},
        headers=HTMX,
    )
    assert r.status_code == 200 and not injected(r.text)


def test_compare_explain_answers_both_sides_for_the_same_character(client):
    text = "def f(x):\n        return 1234567"
    fields = {"text": text, "t": ["gpt2", "cl100k_base"], "ref": "cl100k_base", "pane": "gpt2", "at": "10"}
    r = client.post("/compare/explain", data=fields, headers=HTMX)
    assert r.status_code == 200
    sides = re.findall(r'class="explain-side[^"]*" data-tokenizer="([^"]+)"', r.text)
    assert sides == ["gpt2", "cl100k_base"]
    assert r.text.count('class="explanation"') == 2


# -- the gallery --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gallery(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        r = c.get("/oddities")
    assert r.status_code == 200
    return r.text


def sections(gallery: str) -> dict[str, str]:
    """Each entry's section of the gallery page, by its key."""
    parts = re.split(r'<section id="([\w-]+)" class="card oddity"', gallery)
    return dict(zip(parts[1::2], parts[2::2]))


def test_gallery_has_every_entry_with_an_explanation_and_playground_links(gallery):
    found = sections(gallery)
    for oddity in oddities.oddities():
        section = found[oddity.key]
        assert oddity.title in html.unescape(section)
        assert section.count('class="explanation"') == 1
        links = re.findall(r'href="(/\?[^"]+)"', section)
        assert len(links) == len(oddity.rows)
        for link, row in zip(links, oddity.rows):
            query = parse_qs(urlsplit(html.unescape(link)).query)
            assert query["text"] == [row.text] and query["tokenizer"] == [row.tokenizer] and "explain" in query
    assert '<a href="/oddities" aria-current="page">Oddities</a>' in gallery


def test_gallery_links_open_the_explained_token(client, gallery):
    link = html.unescape(re.findall(r'href="(/\?[^"]+)"', gallery)[0])
    r = client.get(link)
    assert r.status_code == 200 and 'class="explanation"' in r.text


def ref_count(name: str, text: str) -> int:
    return len(referee(name).encode(text))


def test_gallery_claims_hold_for_the_reference_libraries():
    assert ref_count("gpt2", " SolidGoldMagikarp") == 1 < ref_count("cl100k_base", " SolidGoldMagikarp")
    number = "1234567"
    for name in ("cl100k_base", "llama-3"):
        ref = referee(name)
        assert [len(p) for p in ref.parts(ref.encode(number))] == [3, 3, 1]
    for name in ("qwen3", "gemma-3"):
        ref = referee(name)
        assert [p.decode() if isinstance(p, bytes) else p for p in ref.parts(ref.encode(" " + number))][-7:] == list(
            number
        )
    assert ref_count("cl100k_base", "Once upon a time ") == ref_count("cl100k_base", "Once upon a time") + 1
    ref = referee("o200k_base")
    assert len({tuple(ref.encode(w)) for w in ("hello", " hello", "Hello", " Hello", "HELLO", " HELLO")}) == 6
    ref = referee("gpt2")
    assert any(not _utf8(p) for p in ref.parts(ref.encode("鬱蒼とした森")))


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("name", oddities.PREFIX_MODELS)
def test_the_prefix_found_for_each_model_has_more_tokens_than_its_word(name):
    found = oddities.longer_prefix(name)
    assert found is not None
    word, prefix = found
    assert word.startswith(prefix) and len(prefix) < len(word)
    assert ref_count(name, " " + prefix) > ref_count(name, " " + word)
