"""The lab's pattern box and curves chart in real Chromium (issue 34): a custom regex previewed on the corpus as it is
typed, its errors said in words, a superword run trained from the form, and the chart of several runs on a new
text with the transition marked.

``TOKENPLAY_SCREENSHOT_DIR=dir`` also saves screenshots at 1280 and 390 px wide, light and dark.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

@pytest.fixture()
def lab(no_dialogs: Page, live_server: str) -> Page:
    no_dialogs.set_viewport_size({"width": 1280, "height": 900})
    no_dialogs.goto(f"{live_server}/lab")
    return no_dialogs


def shoot(page: Page, name: str) -> None:
    where = os.environ.get("TOKENPLAY_SCREENSHOT_DIR")
    if where:
        for width, scheme in ((1280, "light"), (390, "light"), (1280, "dark"), (390, "dark")):
            page.emulate_media(color_scheme=scheme)
            page.set_viewport_size({"width": width, "height": 900})
            page.screenshot(path=str(Path(where) / f"{name}-{width}-{scheme}.png"), full_page=True)
        page.emulate_media(color_scheme="light")
        page.set_viewport_size({"width": 1280, "height": 900})


def test_the_pattern_box_previews_a_custom_regex_as_it_is_typed(lab: Page):
    lab.locator("#corpus").fill("It's 1234567 cats!")
    lab.select_option("select[name=algorithm]", "byte")
    lab.select_option("#pattern", "digits-r2l")
    preview = lab.locator("#pattern-preview .preview-pieces > span")
    expect(preview).to_have_text(["It", "'s", " ", "1", "234", "567", " cats", "!"])
    lab.select_option("#pattern", "custom")
    box = lab.locator("#pattern_regex")
    expect(box).to_be_visible()
    box.press_sequentially(r"\d+", delay=30)
    expect(preview).to_have_text(["It's ", "1234567", " cats!"])
    expect(lab.locator("#preview-count")).to_contain_text("3 pre-tokens")
    box.fill("(a")
    box.press("End")  # an input event
    alert = lab.locator("#pattern-preview [role=alert]")
    expect(alert).to_contain_text("not a valid regular expression: missing )")
    box.fill("(?=a)")
    box.press("End")
    expect(alert).to_contain_text("only matches empty strings")
    box.fill(r"\p{L}+|\p{N}")
    box.press("End")
    expect(preview).to_have_count(14)  # It, ', s, the space, 7 digits one by one, the space, cats, !
    shoot(lab, "lab-pattern-box")


def test_a_superword_run_from_the_form_and_the_curves_chart(lab: Page):
    # the corpus box starts with the lab's page about tokenizers
    lab.select_option("select[name=algorithm]", "byte")
    lab.select_option("#pattern", "gpt4")
    lab.locator("input[name=size]").fill("80")
    lab.select_option("select[name=size_kind]", "merges")
    lab.locator("input[name=superwords]").check()
    lab.locator("input[name=transition]").fill("50")
    lab.get_by_role("button", name="Train", exact=True).click()
    expect(lab.locator("#step")).to_have_attribute("data-steps", "80")
    run_url = lab.url.split("?")[0]
    lab.keyboard.press("End")
    expect(lab.locator("#step")).to_have_attribute("data-step", "80")
    expect(lab.locator("#superwords-title")).to_contain_text("Superwords so far")
    expect(lab.locator(".chart .transition line")).to_have_count(1)
    superword_chips = lab.locator(".superword-list .chip.superword")
    expect(superword_chips.first).to_be_visible()

    # a plain run of the same corpus, then both on one chart of a new text
    lab.goto(run_url.replace("/lab/runs/", "/lab?from="))
    lab.locator("input[name=superwords]").uncheck()
    lab.get_by_role("button", name="Train", exact=True).click()
    expect(lab.locator("#step")).to_have_attribute("data-steps", "80")
    plain_id = lab.url.split("/lab/runs/")[1].split("?")[0]
    super_id = run_url.rsplit("/", 1)[1]
    lab.locator("#curves-text").fill("of the cat and of the dog in the fog, 7654321 cats")
    runs = lab.locator("#curves-runs")
    expect(runs).to_have_value(plain_id)
    lab.locator(f"#recent-runs button:text('{super_id}')").click()  # a run this browser opened, offered in one click
    expect(runs).to_have_value(f"{plain_id} {super_id}")
    lab.get_by_role("button", name="Draw").click()
    expect(lab.locator(".curves-svg polyline.curve")).to_have_count(2)
    expect(lab.locator(".curves-svg .transition")).to_have_count(1)
    expect(lab.locator(".curves-legend li")).to_have_count(2)
    with lab.expect_download() as download:
        lab.get_by_role("button", name="Download the numbers (CSV)").click()
    assert download.value.suggested_filename.endswith(".csv")
    shoot(lab, "lab-curves")
