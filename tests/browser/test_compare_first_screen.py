"""Compare starts with the text (issue 37, part 5): at 1280×800 and at 390×844 the text box and the first results
(the stats table's first rows) are on the first screen, the picker after them folded to the chosen models."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

pytestmark = pytest.mark.browser

CHOSEN = ["gpt2", "cl100k_base", "o200k_base", "llama-3", "qwen3", "gemma-3", "mistral-7b"]  # the defaults


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_the_text_and_the_first_results_are_on_the_first_screen(browser: Browser, live_server: str, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        page.goto(live_server + "/compare")
        text = page.locator("#compare-text").bounding_box()
        assert text["y"] >= 0 and text["y"] + text["height"] <= height, text
        first = page.locator("#compare-stats tbody tr").first
        expect(first).to_be_visible()
        row = first.bounding_box()
        assert row["y"] + row["height"] <= height, row  # the first tokenizer's counts, without scrolling
        picker = page.locator("#compare-picker").bounding_box()
        assert picker["y"] > row["y"]  # the picker comes after the results
        # folded: the chosen models' rows only, every other one a "Show all" away
        shown = page.locator("#compare-picker .picker-row:visible")
        expect(shown).to_have_count(len(CHOSEN))
        for name in CHOSEN:
            expect(page.locator(f'#compare-picker input[name="t"][value="{name}"]')).to_be_visible()
        page.get_by_role("button", name=re.compile(r"^Show all \d+ tokenizers$")).click()
        expect(page.locator('#compare-picker input[name="t"][value="deepseek-v3"]')).to_be_visible()
    finally:
        context.close()


def test_a_folded_pickers_filter_still_finds_every_model(browser: Browser, live_server: str):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(live_server + "/compare?t=gpt2&t=o200k_base&text=hi")
        expect(page.locator("#compare-picker .picker-row:visible")).to_have_count(2)
        page.get_by_label("Filter the tokenizers").fill("deepseek")
        expect(page.locator("#compare-picker .picker-row:visible .picker-title")).to_have_text(
            ["DeepSeek-V3", "DeepSeek-V4"]
        )
        with page.expect_response(lambda r: "/compare/results" in r.url):
            page.locator('#compare-picker input[name="t"][value="deepseek-v3"]').check()
        page.get_by_label("Filter the tokenizers").fill("")  # the model ticked through the filter stays shown
        expect(page.locator("#compare-picker .picker-row:visible .picker-title")).to_have_text(
            ["gpt2", "o200k_base", "DeepSeek-V3"]
        )
        expect(page.locator("#compare-stats tbody tr")).to_have_count(3)
    finally:
        context.close()
