"""The pages' block-only forms (explain a token, a compare pane's window, a compare boundary's explanation) sent by
a browser without htmx (or a script) answer the whole page for what was sent, never a 500 (they rendered the full
page's template with only the block's context)."""

import html

import pytest

TEXT = "Tokenizers <b>cut</b> words: unbelievably!"

FORMS = {
    "/explain": {"text": TEXT, "tokenizer": "gpt2", "explain": "2"},
    "/compare/pane": {"text": TEXT, "t": ["gpt2", "cl100k_base"], "ref": "gpt2", "pane": "cl100k_base", "start": "1"},
    "/compare/explain": {"text": TEXT, "t": ["gpt2", "cl100k_base"], "ref": "gpt2", "pane": "cl100k_base", "at": "8"},
}


@pytest.mark.parametrize("path", list(FORMS))
def test_a_block_form_sent_without_htmx_answers_the_whole_page(client, path):
    r = client.post(path, data=FORMS[path])
    assert r.status_code == 200, r.text[:300]
    page = r.text
    assert page.lstrip().lower().startswith("<!doctype html>")
    assert html.escape(TEXT, quote=False) in page and "<b>cut</b>" not in page  # the text kept, escaped


def test_the_playground_explain_form_without_htmx_opens_that_explanation(client):
    page = client.post("/explain", data=FORMS["/explain"]).text
    token = client.post("/api/explain", json={"text": TEXT, "tokenizer": "gpt2", "index": 2}).json()["token"]
    assert 'aria-label="Why token 2 is cut this way"' in page
    assert f"id {token['id']}" in page
    assert '<input type="hidden" name="explain" value="2">' in page
    # the page answered is the one its address gives
    assert page == client.get("/", params={"text": TEXT, "tokenizer": "gpt2", "explain": "2"}).text


@pytest.mark.parametrize("path", ["/compare/pane", "/compare/explain"])
def test_a_compare_block_without_htmx_is_the_compare_page_of_those_tokenizers(client, path):
    page = client.post(path, data=FORMS[path]).text
    expected = client.post("/compare/results", data=FORMS[path]).text
    assert page == expected
