"""The compare view in real Chromium: pick tokenizers, switch presets, read the table (chat: test_chat.py)."""

from __future__ import annotations

import csv
import json
import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from app.engines import registry
from app.features.presets import BY_KEY

pytestmark = pytest.mark.browser

THREE = ["gpt2", "cl100k_base", "o200k_base"]


def _api(live_server: str, text: str, names: list[str], reference: str | None = None) -> dict:
    payload = {"text": text, "tokenizers": names, "reference": reference}
    r = httpx.post(f"{live_server}/api/compare", json=payload, timeout=30)
    r.raise_for_status()
    return r.json()


def _settled(page: Page, target: str) -> None:
    """Wait until htmx has wired up what it swapped into ``target`` (it does so when the swap settles)."""
    expect(page.locator(f"{target}.htmx-settling, {target} .htmx-added")).to_have_count(0)


def _select_only(page: Page, names: list[str]) -> None:
    for box in page.locator('#compare-options input[name="t"]').all():
        want = box.get_attribute("value") in names
        if box.is_checked() != want:
            box.set_checked(want)


def _expect_table(page: Page, body: dict) -> None:
    rows = page.locator("#compare-stats tbody tr")
    expect(rows).to_have_count(len(body["results"]))
    for res in body["results"]:
        row = page.locator(f'#compare-stats tr[data-tokenizer="{res["tokenizer"]}"]')
        for column in ("tokens", "chars_per_token", "fertility", "partial_share"):
            value = res["stats"][column]
            expect(row.locator(f'td[data-col="{column}"]')).to_have_attribute(
                "data-value", "" if value is None else str(value)
            )
        best = page.locator(f'#compare-stats tr[data-tokenizer="{res["tokenizer"]}"] td[data-col="tokens"]')
        winners = body["best"]["tokens"]
        if res["tokenizer"] in winners and len(winners) < len(body["results"]):
            expect(best).to_have_class(re.compile(r"\bbest\b"))
        pane = page.locator(f'.pane[data-tokenizer="{res["tokenizer"]}"]')
        expect(pane.locator(".pane-count")).to_have_text(f"{res['count']:,} tokens")


def test_compare_select_three_switch_presets_read_table(page: Page, live_server: str):
    page.goto(f"{live_server}/compare")
    expect(page.locator("#compare-stats")).to_be_visible()
    _select_only(page, THREE)
    expect(page.locator("#compare-stats tbody tr")).to_have_count(3)

    for key in ("japanese", "python", "emoji"):
        page.locator(f'a.preset[data-preset="{key}"]').click()
        expect(page.locator("#compare-text")).to_have_value(BY_KEY[key].text)
        expect(page.locator(f'a.preset[data-preset="{key}"]')).to_have_class(re.compile(r"\bactive\b"))
        _settled(page, "#compare-main")
        _expect_table(page, _api(live_server, BY_KEY[key].text, THREE))
        assert f"preset={key}" in page.url

    # Typing drives every pane; the text area keeps focus and the URL carries the choice and the text.
    textarea = page.locator("#compare-text")
    with page.expect_request(lambda r: "/compare/results" in r.url) as sent:
        textarea.fill("Hello world 12345")
    assert sent.value.headers["content-type"].startswith("multipart/form-data")
    _expect_table(page, _api(live_server, "Hello world 12345", THREE))
    expect(textarea).to_be_focused()
    expect(page).to_have_url(re.compile(r"t=gpt2&t=cl100k_base&t=o200k_base.*text=Hello\+world\+12345"))

    # Reference: cl100k cuts " |123" where gpt2 has " 123", marked in the cl100k pane.
    expect(page.locator('.pane[data-tokenizer="cl100k_base"] .tokens > .diff-extra')).to_have_count(1)
    page.locator('#compare-options input[name="ref"][value="cl100k_base"]').check()
    expect(page.locator('.pane.reference[data-tokenizer="cl100k_base"]')).to_be_visible()
    expect(page.locator('.pane[data-tokenizer="gpt2"] .tokens .cut')).to_have_count(1)


def test_compare_url_restores_selection_and_text(page: Page, live_server: str):
    page.goto(f"{live_server}/compare?t=gpt2&t=o200k_base&text=%E5%90%BE%E8%BC%A9")
    expect(page.locator("#compare-text")).to_have_value("吾輩")
    expect(page.locator('#compare-options input[name="t"][value="gpt2"]')).to_be_checked()
    expect(page.locator('#compare-options input[name="t"][value="cl100k_base"]')).not_to_be_checked()
    _expect_table(page, _api(live_server, "吾輩", ["gpt2", "o200k_base"]))
    # Each pane's id list becomes linked spans, built by app.js from that pane's token spans; hovering an id
    # highlights its token in the same pane only.
    for name in ("gpt2", "o200k_base"):
        pane = page.locator(f'.pane[data-tokenizer="{name}"]')
        pane.locator("summary").click()
        assert [int(t) for t in pane.locator(".ids .id").all_inner_texts()] == registry.get(name).encode("吾輩")
        pane.locator(".ids .id").first.hover()
        expect(pane.locator(".tokens > .hl")).to_have_count(1)


def test_compare_one_tokenizer_shows_its_pane_and_asks_for_two(page: Page, live_server: str):
    page.goto(f"{live_server}/compare?t=gpt2&t=o200k_base&text=hi")
    page.locator('#compare-options input[name="t"][value="o200k_base"]').uncheck()
    expect(page.locator("#compare-results .notice")).to_contain_text("Tick a second tokenizer")
    expect(page.locator('.pane[data-tokenizer="gpt2"] .tokens > span')).to_have_count(1)
    page.locator('#compare-options input[name="t"][value="cl100k_base"]').check()
    expect(page.locator("#compare-stats tbody tr")).to_have_count(2)
    expect(page.locator("#compare-results .notice")).to_have_count(0)


def test_editing_the_text_drops_the_preset_highlight(page: Page, live_server: str):
    page.goto(f"{live_server}/compare?preset=japanese")
    preset = page.locator('a.preset[data-preset="japanese"]')
    expect(preset).to_have_class(re.compile(r"\bactive\b"))
    page.locator("#compare-text").press_sequentially("x")
    expect(preset).not_to_have_class(re.compile(r"\bactive\b"))
    assert preset.get_attribute("aria-current") is None


def test_compare_download_csv(page: Page, live_server: str):
    page.goto(f"{live_server}/compare?t=gpt2&t=cl100k_base&text=Hello%20world")
    with page.expect_download() as info:
        page.get_by_role("button", name="Download CSV").click()
    with open(info.value.path(), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["tokenizer"] for r in rows] == ["gpt2", "cl100k_base"]
    assert rows[0]["ids"] == "15496 995" and rows[1]["tokens"] == "2"


def test_compare_copy_json_to_clipboard(page: Page, live_server: str):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    page.goto(f"{live_server}/compare?t=gpt2&t=o200k_base&text=Hello%20world")
    with page.expect_request(lambda r: "/compare/export.json" in r.url) as sent:
        page.get_by_role("button", name="Copy JSON").click()
    assert sent.value.headers["content-type"].startswith("multipart/form-data")
    expect(page.locator(".copy-status")).to_have_text("Copied JSON.")
    copied = json.loads(page.evaluate("navigator.clipboard.readText()"))
    assert [r["ids"] for r in copied["results"]] == [[15496, 995], [13225, 2375]]
