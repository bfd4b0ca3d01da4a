"""The languages page in real Chromium, at 1280 and 390 px: the table, the chart and the worst and best languages
show the API's numbers; picking, filtering and sorting redraw them and keep the URL; a row opens compare with its
language's text; a right-to-left language's text reads right to left."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

ROWS = "#languages-table tbody tr"


def _api(live_server: str, names: list[str], codes: list[str] | None = None) -> dict:
    body = {"tokenizers": names} | ({"languages": codes} if codes else {})
    r = httpx.post(f"{live_server}/api/languages", json=body, timeout=120)
    r.raise_for_status()
    return {row["code"]: row for row in r.json()["languages"]}


def _cells(page: Page, code: str) -> list[str]:
    return page.locator(f"#lang-{code} td").all_inner_texts()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_table_chart_and_extremes_show_the_apis_numbers(page: Page, live_server: str, width: int):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server}/languages?t=gpt2&t=o200k_base")
    expect(page.locator(ROWS)).to_have_count(527)
    rows = _api(live_server, ["gpt2", "o200k_base"])
    for code in ("eng", "jpn", "arb", "mya"):
        gpt2, o200k = rows[code]["results"]["gpt2"], rows[code]["results"]["o200k_base"]
        assert _cells(page, code) == [
            rows[code]["script"],
            f"{gpt2['tokens']:,}", f"{gpt2['premium']:.2f}×", f"{gpt2['chars'] / gpt2['tokens']:.2f}",
            f"{o200k['tokens']:,}", f"{o200k['premium']:.2f}×", f"{o200k['chars'] / o200k['tokens']:.2f}",
            "compare",
        ]  # fmt: skip
    assert _cells(page, "eng")[2] == "1.00×"
    # the dearest language first, as the chart draws them; one line per tokenizer
    dearest = max(rows.values(), key=lambda r: r["results"]["gpt2"]["premium"])
    expect(page.locator(ROWS).first).to_have_attribute("id", f"lang-{dearest['code']}")
    expect(page.locator("#premium-chart polyline.series")).to_have_count(2)
    expect(page.locator("#premium-chart rect.column")).to_have_count(527)
    worst = page.locator('.extreme[data-tokenizer="gpt2"] ol.worst li').first
    expect(worst).to_have_text(f"{dearest['name']} {dearest['results']['gpt2']['premium']:.2f}×")
    cheapest = min(rows.values(), key=lambda r: r["results"]["o200k_base"]["premium"])
    expect(page.locator('.extreme[data-tokenizer="o200k_base"] ol.best li').first).to_contain_text(cheapest["name"])
    # the page never scrolls sideways: the table and the chart scroll inside their own boxes
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    if width == 390:
        box = page.locator("#lang-jpn th").bounding_box()
        assert box is not None and 0 <= box["x"] and box["x"] + box["width"] <= width


def test_pick_filter_sort_and_open_compare(page: Page, live_server: str):
    page.goto(f"{live_server}/languages?t=gpt2")
    expect(page.locator(ROWS)).to_have_count(527)
    page.locator('#languages-options input[name="t"][value="o200k_base"]').check()
    expect(page.locator("#languages-table thead .tok-head")).to_have_count(2)
    expect(page).to_have_url(re.compile(r"t=gpt2&t=o200k_base"))

    page.fill("#languages-q", "japan")
    expect(page.locator(ROWS)).to_have_count(3)
    expect(page).to_have_url(re.compile(r"q=japan"))
    page.locator('th[data-sort="tokens:gpt2"] a').click()
    expect(page.locator('th[data-sort="tokens:gpt2"]')).to_have_attribute("aria-sort", "descending")
    page.locator('th[data-sort="tokens:gpt2"] a').click()
    expect(page.locator('th[data-sort="tokens:gpt2"]')).to_have_attribute("aria-sort", "ascending")
    rows = _api(live_server, ["gpt2"], ["jpn", "jpn_osaka", "jpn_tokyo"])
    ascending = sorted(rows, key=lambda c: rows[c]["results"]["gpt2"]["tokens"])
    expect(page.locator(ROWS)).to_have_count(3)
    assert [row.get_attribute("id") for row in page.locator(ROWS).all()] == [f"lang-{c}" for c in ascending]
    expect(page).to_have_url(re.compile(r"sort=tokens%3Agpt2&order=asc"))

    # the script filter keeps the sort; clearing the text filter shows every Japanese-script language
    page.fill("#languages-q", "")
    page.select_option("#languages-script", "Japanese")
    expect(page.locator(ROWS)).to_have_count(3)
    expect(page.locator('th[data-sort="tokens:gpt2"]')).to_have_attribute("aria-sort", "ascending")

    # unticking every tokenizer says so (it is not read as a first visit, which would show the defaults)
    for name in ("gpt2", "o200k_base"):
        page.locator(f'#languages-options input[name="t"][value="{name}"]').uncheck()
    expect(page.locator("#languages-results .notice")).to_have_text(re.compile("Pick at least one tokenizer"))
    expect(page.locator(ROWS)).to_have_count(0)
    page.locator('#languages-options input[name="t"][value="o200k_base"]').check()
    page.locator('#languages-options input[name="t"][value="gpt2"]').check()
    expect(page.locator("#languages-table thead .tok-head")).to_have_count(2)
    expect(page.locator(ROWS)).to_have_count(3)

    text = httpx.get(f"{live_server}/api/languages/jpn/text").text
    page.locator("#lang-jpn a", has_text="compare").click()
    expect(page.locator("#compare-text")).to_have_value(text)
    expect(page.locator("#compare-stats tbody tr")).to_have_count(2)
    count = rows["jpn"]["results"]["gpt2"]["tokens"]
    expect(page.locator('#compare-stats tr[data-tokenizer="gpt2"] td[data-col="tokens"]')).to_have_attribute(
        "data-value", str(count)
    )


@pytest.mark.parametrize("width", [1280, 390])
def test_a_right_to_left_language_reads_right_to_left(page: Page, live_server: str, width: int):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server}/languages/arb")
    article = page.locator("#language-text")
    expect(article).to_have_attribute("dir", "rtl")
    expect(article).to_have_attribute("lang", "ar")
    assert article.evaluate("el => getComputedStyle(el).direction") == "rtl"
    # the first letter of the title sits at the paragraph's right edge
    first_letter, paragraph = article.evaluate(
        """el => { const p = el.querySelector("p"); const r = document.createRange();
                   r.setStart(p.firstChild, 0); r.setEnd(p.firstChild, 1);
                   return [r.getBoundingClientRect().right, p.getBoundingClientRect().right]; }"""
    )
    assert paragraph - 2 <= first_letter <= paragraph + 0.5
    text = httpx.get(f"{live_server}/api/languages/arb/text").text
    assert article.locator("p").all_inner_texts() == text.split("\n")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.get_by_role("link", name="Compare tokenizers on this text").click()
    expect(page.locator("#compare-text")).to_have_value(text)
    assert page.locator("#compare-text").evaluate("el => getComputedStyle(el).direction") == "rtl"
