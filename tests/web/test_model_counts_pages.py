"""The pages say what a count means to the model (issue 37, parts 3, 4 and 6): "2 tokens + 1 the model adds
(<bos>)", the share of a named model's context window and its price "(prices of DATE)", and Claude's caveat in words
on the page, not in a tooltip."""

from __future__ import annotations

import html
import re

import tokenizers

from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS

HX = {"HX-Request": "true"}


def model_line(page: str) -> str:
    m = re.search(r'<div class="model-line"[^>]*>(.*?)</div>', page, re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", m.group(1)))).strip() if m else ""


def test_the_playground_says_what_the_model_adds(client):
    lib = tokenizers.Tokenizer.from_file(str(data_path(NPM_MODELS["gemma-3"].tokenizer_file)))
    line = model_line(client.get("/", params={"tokenizer": "gemma-3", "text": "Hello world"}).text)
    assert line.startswith("2 tokens + 1 the model adds (<bos>): the model reads 3.")
    assert len(lib.encode("Hello world").ids) == 3  # the referee: Hugging Face's encode with its defaults
    bert = model_line(client.get("/", params={"tokenizer": "bert-base-uncased", "text": "hello"}).text)
    assert bert.startswith("1 token + 2 the model adds ([CLS], [SEP]): the model reads 3.")
    assert "the model adds" not in model_line(client.get("/", params={"tokenizer": "cl100k_base", "text": "hi"}).text)


def test_a_model_name_brings_its_window_and_price_with_their_date(client):
    page = client.get("/", params={"tokenizer": "gpt-4o", "text": "Hello world"}).text
    line = model_line(page)
    assert "gpt-4o: 0.0016% of its 128,000-token context window" in line
    assert "at $2.50 per million tokens (prices of 2026-11-29)" in line
    assert 'id="model-field" name="model" value="gpt-4o"' in page  # the form keeps the model it was asked for
    repo = model_line(client.get("/", params={"tokenizer": "Qwen/Qwen3-8B", "text": "Hello world"}).text)
    assert "32,768-token context window" in repo and "no public list price" in repo


def test_the_model_goes_when_the_tokenizer_changes(client):
    fields = {"tokenizer": "o200k_base", "model": "gpt-4o", "text": "Hello world"}
    answer = client.post("/render", files={k: (None, v) for k, v in fields.items()}, headers=HX)
    kept = answer.text
    assert "128,000-token context window" in model_line(kept)
    assert "tokenizer=gpt-4o" in answer.headers["HX-Replace-Url"]  # the address keeps the model's name
    assert 'id="model-field" name="model" value="gpt-4o" form="play" hx-swap-oob="true"' in kept
    fields["tokenizer"] = "gpt2"  # another model picked: gpt-4o no longer names it
    gone = client.post("/render", files={k: (None, v) for k, v in fields.items()}, headers=HX).text
    assert "context window" not in model_line(gone)
    assert 'id="model-field" name="model" value="" form="play" hx-swap-oob="true"' in gone


def test_claudes_caveat_is_said_on_the_page(client):
    page = client.get("/", params={"tokenizer": "claude-legacy", "text": "Hello"}).text
    assert re.search(r'<p class="model-caveat" role="note">Counts for today&#39;s Claude models are estimates', page)
    compare = client.get("/compare", params=[("t", "claude-legacy"), ("t", "gpt2"), ("text", "Hello")]).text
    assert "Counts for today&#39;s Claude models are estimates" in compare


def test_compare_panes_say_what_each_model_adds(client):
    page = client.get("/compare", params=[("t", "gemma-3"), ("t", "bert-base-uncased"), ("t", "gpt2"),
                                          ("text", "Hello world")]).text
    gemma = page[page.index('data-tokenizer="gemma-3"'):]
    assert re.search(r'class="pane-added" data-count-with-specials="3">\+ 1 the model adds \(&lt;bos&gt;\)', gemma)
    bert = page[page.index('<section class="pane" data-tokenizer="bert-base-uncased"'):]
    assert "+ 2 the model adds ([CLS], [SEP])" in bert
    gpt2 = page[page.index('<section class="pane" data-tokenizer="gpt2"'):].split("</section>")[0]
    assert "pane-added" not in gpt2
