"""An uploaded tokenizer.json in real Chromium (issue 24): a file written by ``tokenizers``' own WordPiece trainer,
added through the playground's "Add a tokenizer…" form, is chosen with the library's engine, listed once under
"yours", and the engine switch gives ``native-<name>`` (Tokenplay's engine) with the same ids, as the library
gives them."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from helpers import hf_pipelines as H
from playwright.sync_api import Page, expect

TEXT = "Hello, wonderful world! naïve café 12345"


@pytest.fixture(scope="module")
def trained() -> str:
    return H.tokenizer_json("WordPiece", "NFKC+Lowercase+Strip", "Whitespace", "WordPiece", vocab_size=600, size=3_000)


def shown_ids(page: Page) -> list[int]:
    return [int(t) for t in page.locator("#ids .id").all_inner_texts()]


def test_a_trained_tokenizer_json_added_through_the_form_runs_in_both_engines(no_dialogs: Page, live_server: str,
                                                                            trained: str):
    page = no_dialogs
    page.set_viewport_size({"width": 1280, "height": 800})
    want = H.reference_ids(H.reference(trained), TEXT)
    page.goto(f"{live_server}/?tokenizer=cl100k_base&text={quote(TEXT)}")
    combo = page.get_by_role("combobox", name="Tokenizer")
    combo.click()
    page.get_by_role("option", name="Add a tokenizer…").click()
    form = page.locator("#tokenizer-add")
    form.locator("[data-add=file]").set_input_files(
        {"name": "tokenizer.json", "mimeType": "application/json", "buffer": trained.encode()}
    )
    form.get_by_label("Name").fill("my-wp")
    form.get_by_role("button", name="Add tokenizer").click()
    expect(page.locator("#tokenizer")).to_have_value("my-wp")
    expect(page.locator("#count-tokens")).to_have_text(f"{len(want):,}")
    assert shown_ids(page) == want

    engine = page.get_by_label("Engine", exact=True)
    expect(engine.locator("option")).to_have_text(["tokenizers", "Tokenplay"])
    with page.expect_response(lambda r: r.url.endswith("/render")):
        engine.select_option(label="Tokenplay")
    expect(page).to_have_url(re.compile(r"tokenizer=native-my-wp&"))
    expect(page.locator("#count-tokens")).to_have_text(f"{len(want):,}")
    assert shown_ids(page) == want

    page.reload()
    combo.click()
    yours = page.get_by_role("group", name="yours")
    expect(yours.get_by_role("option")).to_have_count(1)  # one entry, its two engines behind the switch
    expect(yours.get_by_role("option")).to_contain_text("my-wp")


def test_a_trained_tokenizer_json_added_on_compare_gets_a_checkbox_per_engine(no_dialogs: Page, live_server: str,
                                                                             trained: str):
    page = no_dialogs
    page.set_viewport_size({"width": 1280, "height": 800})
    want = H.reference_ids(H.reference(trained), TEXT)
    page.goto(f"{live_server}/compare?t=gpt2&t=cl100k_base&text={quote(TEXT)}")
    page.get_by_text("Add a tokenizer…").click()
    form = page.locator("#compare-picker-add")
    form.locator("[data-add=file]").set_input_files(
        {"name": "tokenizer.json", "mimeType": "application/json", "buffer": trained.encode()}
    )
    form.get_by_label("Name").fill("cmp-wp")
    with page.expect_response(lambda r: "/compare/results" in r.url):
        form.get_by_role("button", name="Add tokenizer").click()
    row = page.get_by_role("group", name="yours").locator(".picker-row")
    expect(row).to_have_count(1)
    boxes = row.get_by_role("checkbox")
    expect(row.locator(".picker-engine-name")).to_have_text(["tokenizers", "Tokenplay"])
    assert [b.get_attribute("value") for b in boxes.all()] == ["cmp-wp", "native-cmp-wp"]
    expect(boxes.first).to_be_checked()
    expect(boxes.last).not_to_be_checked()
    with page.expect_response(lambda r: "/compare/results" in r.url):
        boxes.last.check()
    expect(page.locator("#compare-stats tbody tr")).to_have_count(4)
    for name in ("cmp-wp", "native-cmp-wp"):
        pane = page.locator(f'.pane[data-tokenizer="{name}"]')
        pane.locator("summary").click()
        ids = [int(t) for t in pane.locator(".ids .id").all_inner_texts()]
        assert ids == want, name
