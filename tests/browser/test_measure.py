"""The measure page in real Chromium, at 1280 and 390 px: a user uploads a corpus, picks tokenizers and a grouping,
watches the measurement end on its own page (htmx asks for its progress), reads the tokenizers' table and the
charts with the reference library's counts, reloads the page, and finds the measurement listed under the form."""

from __future__ import annotations

import pytest
from helpers import measure_corpus
from helpers.oracles import tiktoken_reference
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

docs, corpus = measure_corpus.fixtures()


@pytest.mark.parametrize("width", [1280, 390])
def test_upload_measure_and_read_the_results(page: Page, live_server: str, corpus, docs, width: int):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server}/measure")
    page.set_input_files("input[name=file]", str(corpus))
    for name in ("o200k_base", "llama-3"):  # picked by default: cl100k_base, o200k_base, llama-3
        page.locator(f"input[name=t][value='{name}']").uncheck()
    page.locator("input[name=t][value='gpt2']").check()
    page.select_option("select[name=group]", "field")
    page.fill("input[name=group_field]", "lang")
    page.fill("input[name=reference_group]", "en")
    page.get_by_role("button", name="Measure", exact=True).click()
    page.wait_for_url("**/measure/jobs/*")
    results = page.locator(".measure-results")
    expect(results).to_be_visible(timeout=120_000)  # the progress block asks again every second until it is done
    ref = tiktoken_reference("cl100k_base")
    tokens = sum(len(ref.encode_ordinary(d["text"])) for d in docs)
    row = page.locator(".measure-table").first.locator("tbody tr", has_text="cl100k_base")
    expect(row.locator("td").first).to_have_text(f"{tokens:,}")
    expect(page.get_by_text("Premium per group")).to_be_visible()
    # the bars' widths come as data attributes set by static/app.js (the Content-Security-Policy allows no style
    # attribute): each bar is as wide as its figure says
    bars = page.locator(".measure-bar[data-width]")
    assert bars.count() > 0
    for k in range(bars.count()):
        want = float(bars.nth(k).get_attribute("data-width"))
        assert bars.nth(k).evaluate("b => b.style.width") == f"{want:g}%"
    expect(page.get_by_role("link", name="Download CSV")).to_be_visible()
    # nothing wider than the screen but the tables' own scrolling boxes
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    job = page.url
    page.reload()
    expect(page.locator(".measure-results")).to_be_visible()
    page.goto(f"{live_server}/measure")
    expect(page.locator(f".measure-mine a[href='{job.removeprefix(live_server)}']")).to_have_text(corpus.name)
