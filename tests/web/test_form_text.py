"""One text, one count, on every page: a form's text is what its text area holds.

A browser submitting a form writes every line break of a text area as CRLF (the HTML standard's form encoding),
while the text area holds LF, and so does the same text sent to ``/api/tokenize``. Every page reads its form
through ``app.web.deps.read_form`` (``typed_fields``), so each page's answer to a text sent with CRLF or lone CR
is its answer to the text with LF, byte for byte, and its counts are the API's for that text. The browser test
(tests/browser/test_same_counts.py) types the same texts into each page.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers.lab_helpers import wait_done

HX = {"HX-Request": "true"}
# Each line break of TEXT appears as LF, CRLF or CR in the posted versions; the rest is left as it is (tabs, NBSP,
# a ZWJ emoji, a combining mark, Japanese, a blank line).
TEXT = "a\tb\u00a0c\n\nd 👩\u200d💻 e\u0301\n東京\n"
SENT = {"crlf": TEXT.replace("\n", "\r\n"), "cr": TEXT.replace("\n", "\r")}


def multipart(fields: list[tuple[str, str]]) -> dict:
    """``files=`` for a form posted as the pages post theirs (multipart, no file)."""
    return {"files": [(k, (None, v)) for k, v in fields]}


def post(client, url: str, fields: list[tuple[str, str]]):
    r = client.post(url, headers=HX, **multipart(fields))
    assert r.status_code == 200, r.text[:300]
    return r


# Each page form that takes a text area (or a text box), as (route, fields with {text} where the text goes).
FORMS = {
    "playground": ("/render", [("tokenizer", "gpt2"), ("text", "{text}")]),
    "playground ids": ("/ids", [("tokenizer", "gpt2"), ("text", "{text}")]),
    "playground explain": ("/explain", [("tokenizer", "cl100k_base"), ("text", "{text}"), ("explain", "5")]),
    "compare": ("/compare/results", [("t", "gpt2"), ("t", "mistral-7b"), ("text", "{text}")]),
    "compare pane": ("/compare/pane", [("t", "gpt2"), ("t", "mistral-7b"), ("text", "{text}"), ("pane", "mistral-7b")]),
    "compare explain": ("/compare/explain", [("t", "gpt2"), ("t", "o200k_base"), ("text", "{text}"),
                                             ("pane", "o200k_base"), ("ref", "gpt2"), ("at", "8")]),
    "compare JSON": ("/compare/export.json", [("t", "gpt2"), ("t", "qwen3"), ("text", "{text}")]),
    "compare CSV": ("/compare/export.csv", [("t", "gpt2"), ("t", "qwen3"), ("text", "{text}")]),
    "chat": ("/chat/result", [("tokenizer", "llama-3"), ("role", "system"), ("content", "{text}"), ("role", "user"),
                              ("content", "{text}")]),
    "chat editor": ("/chat", [("tokenizer", "qwen3"), ("role", "user"), ("content", "{text}"), ("op", "add")]),
}


def _filled(fields, text):
    return [(k, text if v == "{text}" else v) for k, v in fields]


@pytest.mark.parametrize("sent", SENT)
@pytest.mark.parametrize("form", FORMS)
def test_every_page_answers_a_crlf_text_as_the_text_its_text_area_holds(client, form, sent):
    url, fields = FORMS[form]
    typed = post(client, url, _filled(fields, TEXT))
    posted = post(client, url, _filled(fields, SENT[sent]))
    assert posted.text == typed.text
    assert posted.headers.get("HX-Replace-Url") == typed.headers.get("HX-Replace-Url")
    assert "\r" not in posted.text and "%0D" not in posted.headers.get("HX-Replace-Url", "")


def test_compare_counts_every_newline_once(client):
    """The issue's example: five lines are 10 characters and 10 gpt2 tokens, as /api/tokenize says."""
    text = "a\nb\nc\nd\ne\n"
    api = client.post("/api/tokenize", json={"text": text, "tokenizer": "gpt2"}).json()
    assert (api["chars"], api["count"]) == (10, 10)
    r = post(client, "/compare/results", [("t", "gpt2"), ("t", "cl100k_base"), ("text", text.replace("\n", "\r\n"))])
    assert '<caption>10 characters, 5 words;' in r.text
    assert re.search(r'<tr data-tokenizer="gpt2">.*?<td data-col="tokens" data-value="10"', r.text, re.S)
    assert parse_qs(urlsplit(r.headers["HX-Replace-Url"]).query)["text"] == [text]
    exported = client.post("/compare/export.json", **multipart([("t", "gpt2"), ("t", "cl100k_base"),
                                                                 ("text", text.replace("\n", "\r\n"))]))
    body = json.loads(exported.text)
    assert body["text"] == text and body["results"][0]["count"] == api["count"]


def test_compare_link_with_crlf_text_opens_the_text_area_text(client):
    """A link made before (its text with %0D%0A), or the form sent by GET without JavaScript."""
    page = client.get("/compare", params={"t": ["gpt2", "cl100k_base"], "text": "a\r\nb\rc"})
    assert ">a\nb\nc</textarea>" in page.text and "<caption>5 characters" in page.text
    download = client.get("/compare/export.json", params={"t": ["gpt2", "cl100k_base"], "text": "a\r\nb"})
    assert download.json()["text"] == "a\nb"


def test_lab_encode_box_and_side_by_side_read_their_text_as_typed(client):
    run = client.post("/api/train", json={"corpus": "low lower newest\nwidest\n" * 5, "algorithm": "byte",
                                          "pattern": "none", "merges": 6})
    run_id = run.json()["id"]
    assert wait_done(client, run_id)["status"] == "done"
    typed = post(client, f"/lab/runs/{run_id}/encode", [("text", "lower\nnew"), ("step", "6")])
    for sent in ("lower\r\nnew", "lower\rnew"):
        assert post(client, f"/lab/runs/{run_id}/encode", [("text", sent), ("step", "6")]).text == typed.text
    # the side-by-side form's corpus text area starts the same three trainings either way
    form = [("corpus", "low lower lowest\nnewer newest\n" * 4), ("vocab_size", "270")]
    crlf = [("corpus", form[0][1].replace("\n", "\r\n")), form[1]]
    urls = [client.post("/lab/side-by-side", **multipart(f), follow_redirects=False) for f in (form, crlf)]
    runs = [parse_qs(urlsplit(r.headers["location"]).query) for r in urls]
    corpora = [{client.get(f"/api/train/{ids[0]}").json()["corpus_chars"] for ids in r.values()} for r in runs]
    assert corpora[0] == corpora[1] == {len(form[0][1])}
