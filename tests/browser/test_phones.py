"""Every page fits a phone: at 390 px wide nothing makes the page scroll sideways (a table may scroll inside its
own box), and the top navigation shows every link whole."""

from __future__ import annotations

import pytest
from helpers.lab_helpers import wait_done
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def _fits(page: Page) -> None:
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"{page.url}: the page is {width} px wide on a {PHONE['width']} px screen"
    for link in page.locator(".top nav a").all():
        box = link.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], link.inner_text()


@pytest.fixture(scope="module")
def trained_run(live_server: str) -> dict:
    import httpx

    with httpx.Client(base_url=live_server) as c:
        body = {"corpus": "東京は日本の首都です。京都は古い都です。" * 20, "algorithm": "byte", "pattern": "gpt2", "merges": 40}
        return wait_done(c, c.post("/api/train", json=body).json()["id"])


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/?text=" + "supercalifragilisticexpialidocious" * 8 + "&tokenizer=mistral-7b",
        "/?text=" + "supercalifragilisticexpialidocious" * 8 + "&tokenizer=cl100k_base&explain=3&pre=1",
        "/oddities",
        "/compare",
        "/compare?preset=japanese",
        "/chat",
        "/lab",
        "/lab?example=low-lower",
    ],
)
def test_page_fits_a_phone(page: Page, live_server: str, path: str):
    page.set_viewport_size(PHONE)
    page.goto(live_server + path)
    expect(page.locator("main")).to_be_visible()
    _fits(page)


def test_presenter_mode_of_a_wordpiece_run_fits_a_phone(page: Page, live_server: str):
    import httpx

    from app.lab.examples import SAMPLE_CORPUS

    with httpx.Client(base_url=live_server) as c:
        body = {"corpus": SAMPLE_CORPUS, "algorithm": "wordpiece", "vocab_size": 200}
        run = wait_done(c, c.post("/api/train", json=body).json()["id"])
    page.set_viewport_size(PHONE)
    for step in (0, 3, run["merges"]):  # the scored table (count, parts, score, note) is the widest
        page.goto(f"{live_server}/lab/runs/{run['id']}?step={step}&present=1")
        expect(page.locator(".pair-table.scored")).to_be_visible()
        _fits(page)


def test_lab_steps_fit_a_phone(page: Page, live_server: str, trained_run: dict):
    page.set_viewport_size(PHONE)
    for step in (0, 1, trained_run["merges"]):
        page.goto(f"{live_server}/lab/runs/{trained_run['id']}?step={step}")
        expect(page.locator("#step")).to_have_attribute("data-step", str(step))
        _fits(page)
