"""The playground's tokens as a file (issue 37, part 7): JSON (the answer of POST /api/tokenize) or CSV (one row a
token), from the page's links (GET, the text in the query) or its script (POST, the form's fields), held to the
reference libraries: tiktoken for an OpenAI encoding, Hugging Face tokenizers for a tokenizer.json model."""

from __future__ import annotations

import csv
import io
import re

import orjson
import tiktoken
import tokenizers
from helpers.oracles import tiktoken_reference

from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS

TEXT = 'Hello, "world" =1+2\n日本語 🙂👍🏽 <|endoftext|>'


def rows(body: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(body.decode("utf-8"), newline="")))


def test_the_csv_is_tiktokens_cut_token_by_token(client):
    enc = tiktoken_reference("cl100k_base")
    r = client.post("/tokens.csv", data={"tokenizer": "cl100k_base", "text": TEXT})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert r.headers["content-disposition"] == 'attachment; filename="tokens-cl100k_base.csv"'
    assert r.content.decode().splitlines()[0] == "index,id,text,bytes,start,end,special,valid_utf8,byte_fallback"
    got = rows(r.content)
    ids = enc.encode(TEXT, disallowed_special=())
    assert [int(row["id"]) for row in got] == ids and [int(row["index"]) for row in got] == list(range(len(ids)))
    assert [bytes.fromhex(row["bytes"]) for row in got] == [enc.decode_single_token_bytes(i) for i in ids]
    assert b"".join(bytes.fromhex(row["bytes"]) for row in got).decode() == TEXT
    placed = [row for row in got if row["valid_utf8"] == "true"]
    assert placed and all(TEXT[int(row["start"]):int(row["end"])] == row["text"] for row in placed)
    assert {row["special"] for row in got} == {"false"}  # <|endoftext|> as text unless special tokens are allowed
    special = rows(client.post("/tokens.csv", data={"tokenizer": "cl100k_base", "text": TEXT, "special": "1"}).content)
    assert [int(row["id"]) for row in special] == enc.encode(TEXT, allowed_special="all")
    assert special[-1]["special"] == "true" and special[-1]["text"] == "<|endoftext|>"


def test_the_json_is_the_apis_answer(client):
    lib = tokenizers.Tokenizer.from_file(str(data_path(NPM_MODELS["gemma-3"].tokenizer_file)))
    api = client.post("/api/tokenize", json={"tokenizer": "gemma-3", "text": TEXT}).json()
    r = client.post("/tokens.json", data={"tokenizer": "gemma-3", "text": TEXT})
    assert r.headers["content-disposition"] == 'attachment; filename="tokens-gemma-3.json"'
    got = orjson.loads(r.content)
    assert got == api
    assert got["ids"] == lib.encode(TEXT, add_special_tokens=False).ids  # the referee
    assert got["count_with_specials"] == len(lib.encode(TEXT).ids)


def test_the_pages_buttons_post_its_form_with_the_model(client):
    """The buttons submit the playground's form to /tokens.json and .csv (so they work without JavaScript; the
    page's script posts the same form with fetch): its fields, the model asked for among them, bring the model's
    facts as /api/tokenize does for a model name. A GET with the fields in the query answers the same."""
    page = client.get("/", params={"tokenizer": "gpt-4o", "text": "Hello world"}).text
    submits = re.findall(r'type="submit" form="play" formaction="/tokens\.(json|csv)" formmethod="post"', page)
    assert sorted(submits) == ["csv", "json"]
    assert 'id="model-field" name="model" value="gpt-4o"' in page  # a field of the form the buttons submit
    form = {"tokenizer": "o200k_base", "model": "gpt-4o", "text": "Hello world"}
    got = client.post("/tokens.json", data=form).json()
    assert got["ids"] == tiktoken_reference(tiktoken.model.encoding_name_for_model("gpt-4o")).encode("Hello world")
    assert got["context_window"] == 128_000  # the model's facts, as /api/tokenize gives them for a model name
    assert [row["text"] for row in rows(client.post("/tokens.csv", data=form).content)] == ["Hello", " world"]
    assert client.get("/tokens.json", params=form).json() == got


def test_bad_requests_say_what_is_wrong(client, app):
    assert client.post("/tokens.xml", data={"tokenizer": "gpt2", "text": "hi"}).status_code == 404
    unknown = client.post("/tokens.csv", data={"tokenizer": "no-such-model", "text": "hi"})
    assert unknown.status_code == 404 and "no-such-model" in unknown.text
    too_long = "a" * (app.state.settings.max_chars + 1)
    assert client.post("/tokens.json", data={"tokenizer": "gpt2", "text": too_long}).status_code == 413
    empty = client.post("/tokens.csv", data={"tokenizer": "gpt2", "text": ""})
    assert empty.status_code == 200 and rows(empty.content) == []
