"""The vocabulary pages in real Chromium, at 1280 and 390 px: find a token, walk its merge tree up and down, draw the
ladder of two tokenizers, read the health table and a tokenizer's examples, compare two vocabularies, the characters
table and numbers; each shows what the API answers."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def _api(live_server: str, path: str, **kwargs) -> dict:
    r = httpx.get(f"{live_server}{path}", timeout=120, **kwargs)
    r.raise_for_status()
    return r.json()


@pytest.mark.parametrize("width", [1280, 390])
def test_find_a_token_and_walk_its_merge_tree(page: Page, live_server: str, width: int):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server}/vocab?tokenizer=gpt2")
    expect(page.locator(".vocab-table tbody tr")).to_have_count(100)
    page.fill("#vocab-q", "SolidGoldMagikarp")
    expect(page.locator(".vocab-table tbody tr")).to_have_count(1)
    row = page.locator(".vocab-table tbody tr").first
    expect(row).to_contain_text("SolidGoldMagikarp")
    row.locator("a").first.click()
    token = _api(live_server, "/api/vocab/gpt2/43453")
    panel = page.locator("#vocab-token")
    expect(panel.locator("h2")).to_have_text(f"Token {token['id']}")
    parents = panel.locator(".vocab-merge a.chip")
    expect(parents).to_have_count(2)
    first_parent = token["parents"][0]
    parents.first.click()  # up the tree
    expect(panel.locator("h2")).to_have_text(f"Token {first_parent['id']}")
    expect(panel.locator(".vocab-children a.chip").filter(has_text=str(token["id"]))).to_have_count(1)
    assert f"id={first_parent['id']}" in page.url


def test_the_ladder_draws_one_line_per_tokenizer_at_the_apis_counts(page: Page, live_server: str):
    page.goto(f"{live_server}/vocab/ladder?t=cl100k_base&t=o200k_base")
    expect(page.locator("#ladder-figure polyline.series")).to_have_count(2)
    text = page.locator("#ladder-text").input_value()
    api = httpx.post(f"{live_server}/api/vocab/cl100k_base/ladder", json={"text": text}, timeout=60).json()
    last = api["points"][-1]
    expect(page.locator("#ladder-chart table")).to_contain_text(f"{last['size']:,} → {last['tokens']:,}")
    page.fill("#ladder-text", "hello hello hello")
    expect(page.locator("#ladder-chart table")).to_contain_text("→ 3")


def test_health_tokenizer_page_shows_examples_and_what_a_text_leaves_unused(page: Page, live_server: str):
    page.goto(f"{live_server}/vocab/health/gpt2")
    report = _api(live_server, "/api/vocab/gpt2/health")
    expect(page.locator("#fig-partial_utf8")).to_contain_text(f"{report['figures']['partial_utf8']['count']:,}")
    page.fill("textarea[name=text]", "the cat sat on the mat")
    page.get_by_role("button", name="Count what it uses").click()
    expect(page.locator("#health-usage")).to_contain_text("distinct tokens")


def test_two_vocabularies_characters_and_numbers(page: Page, live_server: str):
    page.goto(f"{live_server}/vocab/overlap?a=llama-3&b=cl100k_base")
    expect(page.locator(".overlap-numbers")).to_contain_text("100,256")
    page.goto(f"{live_server}/vocab/characters?t=gpt2&text=東a")
    expect(page.locator(".chars-table tbody tr")).to_have_count(2)
    expect(page.locator(".chars-table tbody tr").first.locator(".split-mark")).to_have_count(1)
    page.goto(f"{live_server}/numbers?tokenizer=cl100k_base")
    expect(page.locator("#numbers-facts")).to_contain_text("threes from the left")
    expect(page.locator(".numbers-table")).to_contain_text("12345+67890=80235")


def test_the_vocabulary_is_in_the_nav(page: Page, live_server: str):
    page.goto(f"{live_server}/")
    page.locator("header nav").get_by_role("link", name="Vocabulary").click()
    expect(page).to_have_url(f"{live_server}/vocab")
    page.locator(".vocab-nav").get_by_role("link", name="Numbers").click()
    expect(page.locator("h1")).to_have_text("How tokenizers cut numbers")
