"""Typing a model's name in the picker (an OpenAI model, a Hugging Face repository id) chooses its tokenizer and
shows that model's context window and price; choosing another model takes them away (issue 37, part 4)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def choose_by_typing(page: Page, name: str) -> None:
    combo = page.get_by_role("combobox", name="Tokenizer")
    combo.click()
    page.keyboard.type(name)
    with page.expect_response(lambda r: r.url.endswith("/render")):
        page.keyboard.press("Enter")


def test_a_model_name_typed_in_the_picker_brings_its_window_and_price(page: Page, live_server: str):
    page.goto(f"{live_server}/?tokenizer=gpt2&text=Hello%20world")
    line = page.locator("#model-line")
    choose_by_typing(page, "gpt-4o")
    expect(page.locator("#tokenizer")).to_have_value("o200k_base")
    expect(line).to_contain_text("gpt-4o: 0.0016% of its 128,000-token context window")
    expect(line).to_contain_text("prices of 2026-11-29")
    choose_by_typing(page, "Qwen/Qwen3-8B")  # a repository id finds the model whose tokenizer it is
    expect(page.locator("#tokenizer")).to_have_value("qwen3")
    expect(line).to_contain_text("32,768-token context window")
    choose_by_typing(page, "gemma 3")  # a search, not a model name: the entry's own facts, and what it adds
    expect(page.locator("#tokenizer")).to_have_value("gemma-3")
    expect(line).to_contain_text("2 tokens + 1 the model adds (<bos>)")
    expect(line).to_contain_text("gemma-3: ")
