"""Chat markup: the rendered format, token counts checked against tiktoken, the API and the page."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from helpers.oracles import tiktoken_encoding

from app.engines import registry
from app.features.chat import prompt as chat
from app.features.chat.prompt import ChatError, Message

CHAT_ENCODINGS = ["cl100k_base", "o200k_base"]
HX = {"HX-Request": "true"}


ENCODERS = {name: tiktoken_encoding(name) for name in CHAT_ENCODINGS}

CONVERSATION = [
    Message("system", "You are a helpful assistant."),
    Message("user", "Translate to Japanese: good morning 👋"),
    Message("assistant", "おはようございます"),
    Message("user", "  And with\nnewlines?\n"),
]


def test_render_chat_format():
    rendered = chat.render_chat([Message("system", "Be brief."), Message("user", "Hi")])
    assert rendered == (
        "<|im_start|>system<|im_sep|>Be brief.<|im_end|>"
        "<|im_start|>user<|im_sep|>Hi<|im_end|>"
        "<|im_start|>assistant<|im_sep|>"
    )
    assert chat.render_chat([], primer=True) == "<|im_start|>assistant<|im_sep|>"
    assert chat.render_chat([Message("user", "x")], primer=False) == "<|im_start|>user<|im_sep|>x<|im_end|>"


@pytest.mark.parametrize("name", CHAT_ENCODINGS)
def test_chat_count_matches_tiktoken(name):
    result = chat.tokenize_chat(registry.get(name), CONVERSATION)
    expected = ENCODERS[name].encode(chat.render_chat(CONVERSATION), allowed_special="all")
    assert result.ids == expected
    assert result.count == len(expected)


@pytest.mark.parametrize("name", CHAT_ENCODINGS)
def test_chat_markup_tokens_are_special(name):
    tok = registry.get(name)
    result = chat.tokenize_chat(tok, CONVERSATION)
    specials = [t for t in result.tokens if t.special]
    # 3 markup tokens per message, 2 for the primer
    assert len(specials) == 3 * len(CONVERSATION) + 2
    assert {t.id for t in specials} == {tok.special_tokens[m] for m in chat.MARKUP_TOKENS}
    assert [t.text for t in specials[:3]] == ["<|im_start|>", "<|im_sep|>", "<|im_end|>"]
    assert "".join(seg.text for seg in result.segments()) == result.text


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(chat.ROLES), st.text(st.characters(codec="utf-8"), max_size=30)),
        max_size=4,
    )
)
def test_chat_count_matches_tiktoken_for_any_messages(pairs):
    messages = [Message(role, content) for role, content in pairs]
    rendered = chat.render_chat(messages)
    for name in CHAT_ENCODINGS:
        # Special-token text typed into a message stays plain text (next test); tiktoken's "all" would not.
        specials = ENCODERS[name].special_tokens_set
        assume(not any(sp in content for _, content in pairs for sp in specials))
        result = chat.tokenize_chat(registry.get(name), messages)
        assert result.ids == ENCODERS[name].encode(rendered, allowed_special="all")


def test_chat_markup_text_inside_content_stays_plain_unless_asked():
    tok = registry.get("cl100k_base")
    messages = [Message("user", "close early <|im_end|> please")]
    safe = chat.tokenize_chat(tok, messages)
    assert sum(t.special for t in safe.tokens) == 5  # 3 for the message, 2 for the primer
    loose = chat.tokenize_chat(tok, messages, content_special=True)
    assert sum(t.special for t in loose.tokens) == 6
    assert loose.ids == ENCODERS["cl100k_base"].encode(chat.render_chat(messages), allowed_special="all")


def test_chat_supported_only_with_markup_tokens():
    assert chat.chat_format(registry.get("cl100k_base")) == "chatml"
    assert chat.chat_format(registry.get("o200k_base")) == "chatml"
    assert chat.chat_format(registry.get("gpt2")) is None
    with pytest.raises(ChatError, match="cl100k_base- or o200k_base-based"):
        chat.tokenize_chat(registry.get("gpt2"), CONVERSATION)


def test_chat_unknown_role_is_an_error():
    with pytest.raises(ChatError, match="use one of: system, user, assistant"):
        chat.render_chat([Message("robot", "beep")])


def test_api_chat_counts_match_tiktoken(client):
    payload = {"messages": [m.to_dict() for m in CONVERSATION]}
    rendered = chat.render_chat(CONVERSATION)
    body = client.post("/api/chat", json=payload).json()  # cl100k_base unless told
    assert body["tokenizer"] == "cl100k_base" and body["format"] == "chatml"
    assert body["text"] == body["rendered"] == rendered
    assert body["ids"] == ENCODERS["cl100k_base"].encode(rendered, allowed_special="all")
    assert body["count"] == len(body["ids"]) and body["special"] == 3 * len(CONVERSATION) + 2
    assert [res["tokenizer"] for res in body["results"]] == ["cl100k_base"]
    r = client.post("/api/chat", json=payload | {"tokenizers": CHAT_ENCODINGS})
    assert r.status_code == 200
    body = r.json()
    assert body["tokenizer"] == CHAT_ENCODINGS[0]
    assert [res["tokenizer"] for res in body["results"]] == CHAT_ENCODINGS
    for res in body["results"]:
        assert res["text"] == rendered
        assert res["count"] == len(ENCODERS[res["tokenizer"]].encode(rendered, allowed_special="all"))
        assert res["special"] == 3 * len(CONVERSATION) + 2


def test_api_chat_errors(client):
    r = client.post("/api/chat", json={"messages": [{"role": "robot", "content": "x"}]})
    assert r.status_code == 422 and "use one of" in r.json()["detail"]
    r = client.post("/api/chat", json={"messages": [], "tokenizers": ["gpt2"]})
    assert r.status_code == 422 and "chat markup" in r.json()["detail"]
    r = client.post("/api/chat", json={"messages": [], "tokenizers": ["nope"]})
    assert r.status_code == 404


def test_chat_page_renders_default_conversation(client):
    r = client.get("/chat")
    assert r.status_code == 200
    assert r.text.count('name="content"') == len(chat.DEFAULT_MESSAGES)
    assert "&lt;|im_start|&gt;system&lt;|im_sep|&gt;" in r.text
    assert re.search(r'<span class=c\d>', r.text) and re.search(r'<span class="c\d special">', r.text)


def test_chat_page_add_and_remove_rows(client):
    form = {"role": ["system", "user"], "content": ["Be brief.", "Hi"]}
    added = client.post("/chat", data=form | {"op": "add"}, headers=HX).text
    assert added.count('name="content"') == 3
    assert '<option value="assistant" selected>' in added  # after a user message comes the assistant
    removed = client.post("/chat", data=form | {"op": "remove:0"}, headers=HX).text
    assert removed.count('name="content"') == 1
    assert "Be brief." not in removed


def test_chat_result_fragment_counts(client):
    form = {"role": ["user"], "content": ["Hello <|im_end|>"], "tokenizer": "o200k_base"}
    r = client.post("/chat/result", data=form, headers=HX)
    assert r.status_code == 200 and "<form" not in r.text
    expected = chat.tokenize_chat(registry.get("o200k_base"), [Message("user", "Hello <|im_end|>")]).count
    pane = r.text[r.text.index('data-tokenizer="o200k_base"') :]
    assert f'data-count="{expected}"' in pane.split("</section>")[0]
    assert "Hello &lt;|im_end|&gt;" in r.text


def test_chat_takes_a_message_of_more_than_a_megabyte(client):
    content = "日本語のテキスト。" * 66_667  # 1.8 MB of UTF-8
    r = client.post("/chat/result", data={"role": ["user"], "content": [content]}, headers=HX)
    assert r.status_code == 200 and 'data-tokenizer="cl100k_base"' in r.text
    over = client.post("/chat/result", data={"role": ["user"], "content": ["a" * 1_000_001]}, headers=HX)
    assert over.status_code == 413 and 'class="error"' in over.text


def test_chat_panes_show_ids_and_the_token_detail(client):
    html = client.post("/chat/result", data={"role": ["user"], "content": ["Hi"]}, headers=HX).text
    pane = html[html.index('<section class="pane" data-tokenizer="cl100k_base"') :].split("</section>")[0]
    assert "data-token-scope" in pane and "data-token-detail" in pane
    ids = pane.split("data-id-list>")[1].split("<")[0].split()
    assert [int(i) for i in ids] == chat.tokenize_chat(registry.get("cl100k_base"), [Message("user", "Hi")]).ids
