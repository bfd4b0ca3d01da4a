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


def unfold(page: Page) -> None:
    """Open the folded tokenizer picker: every model's row, not only the chosen ones'."""
    page.get_by_role("button", name=re.compile(r"^Show all \d+ tokenizers$")).click()
    expect(page.locator("#compare-picker .picker-row[hidden]")).to_have_count(0)


def _select_only(page: Page, names: list[str]) -> None:
    unfold(page)
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
    unfold(page)
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


def test_the_reference_marker_follows_the_reference_the_table_uses(page: Page, live_server: str):
    """Unticking the reference moves ◉ to the first ticked tokenizer, which the table then uses; choosing the ◉ of
    an unticked tokenizer ticks it. The marker, the table's reference and the reference pane always agree."""
    page.goto(f"{live_server}/compare?t=gpt2&t=cl100k_base&t=o200k_base&ref=cl100k_base&text=Hello%20world%2012345")
    radio = lambda name: page.locator(f'#compare-options input[name="ref"][value="{name}"]')  # noqa: E731
    box = lambda name: page.locator(f'#compare-options input[name="t"][value="{name}"]')  # noqa: E731

    def agree(name: str) -> None:
        expect(radio(name)).to_be_checked()
        expect(page.locator("#compare-stats")).to_have_attribute("data-reference", name)
        expect(page.locator(".pane.reference")).to_have_attribute("data-tokenizer", name)
        expect(page.locator(f'#compare-stats tr[data-tokenizer="{name}"] td[data-col="boundary_diffs"]')).to_have_text("—")

    agree("cl100k_base")
    box("cl100k_base").uncheck()
    expect(page.locator("#compare-stats tbody tr")).to_have_count(2)
    agree("gpt2")
    assert page.locator('#compare-options input[name="ref"]:checked').count() == 1
    unfold(page)
    radio("qwen3").check()  # not ticked: ticking it makes it compared, and the reference
    expect(box("qwen3")).to_be_checked()
    expect(page.locator("#compare-stats tbody tr")).to_have_count(3)
    agree("qwen3")
    expect(page).to_have_url(re.compile(r"ref=qwen3"))
    page.reload()
    agree("qwen3")


def test_a_pane_shows_a_window_pages_on_and_explains_tokens_inside_it(page: Page, live_server: str, settings):
    """A long text: each pane draws one window of its tokens, exact counts; "Next" brings the next window of that
    pane only, typing keeps it, and a click on a token in it explains that very token."""
    text = "Tokenizers cut text differently: 12345 東京の天気は晴れです。 Über naïve café.\n" * 60
    names = ["gpt2", "cl100k_base"]
    body = _api(live_server, text, names)
    ids = {r["tokenizer"]: r["ids"] for r in body["results"]}
    page.goto(f"{live_server}/compare?t=gpt2&t=cl100k_base&text=")
    textarea = page.locator("#compare-text")
    textarea.fill(text)
    _expect_table(page, body)
    pane = page.locator('.pane[data-tokenizer="cl100k_base"]')
    count = len(ids["cl100k_base"])
    # a window of n tokens (and the byte tokens of a character cut across its end)
    n = settings.compare_pane_tokens
    assert count > 2 * n

    def shown(locator) -> tuple[int, int]:
        expect(locator).to_have_text(re.compile(r"^tokens [\d,]+–[\d,]+ of [\d,]+$"))
        a, b = re.findall(r"[\d,]+", locator.inner_text())[:2]
        return int(a.replace(",", "")), int(b.replace(",", ""))

    expect(pane.locator(".window-info")).to_contain_text(f" of {count:,}")
    first, first_stop = shown(pane.locator(".window-info"))
    assert first == 1 and n <= first_stop <= n + 3
    with page.expect_response(lambda r: "/compare/pane" in r.url):
        pane.locator(".pane-next").click()
    expect(pane.locator(".window-info")).to_contain_text(f"tokens {first_stop + 1:,}–")
    start, stop = shown(pane.locator(".window-info"))
    assert 2 * n <= stop <= 2 * n + 3
    assert shown(page.locator('.pane[data-tokenizer="gpt2"] .window-info'))[0] == 1
    pane.locator("summary").click()
    assert [int(t) for t in pane.locator(".ids .id").all_inner_texts()] == ids["cl100k_base"][first_stop:stop]
    pane.locator(".ids .id").nth(3).hover()
    expect(pane.locator(".tokens > .hl")).to_have_count(1)

    # typing (at the end of the text) keeps the window this pane shows
    textarea.press("Control+End")
    with page.expect_response(lambda r: "/compare/results" in r.url):
        textarea.press_sequentially(" more")
    expect(page.locator('#compare-stats tr[data-tokenizer="cl100k_base"] td[data-col="tokens"]')).to_have_attribute(
        "data-value", str(len(_api(live_server, text + " more", names)["results"][1]["ids"])))
    expect(pane.locator(".window-info")).to_contain_text(f"tokens {first_stop + 1:,}–{stop:,} of")

    # a token inside the window: the explanation is of that token, by its place in the whole text
    token = pane.locator(".tokens > span").nth(7)
    with page.expect_response(lambda r: "/compare/explain" in r.url):
        token.click()
    at = int(page.locator('#compare-explain-form input[name="at"]').input_value())
    tokens = httpx.post(f"{live_server}/api/tokenize", json={"text": text + " more", "tokenizer": "cl100k_base"},
                        timeout=30).json()["tokens"]
    # the token's start, or where the reference cuts inside it (a diff-missing mark): either way inside the token
    index = next(i for i, t in enumerate(tokens) if t["start"] <= at < t["end"])
    assert first_stop <= index < stop and str(tokens[index]["id"]) in token.get_attribute("data-ids").split()
    side = page.locator('#compare-explain .explain-side[data-tokenizer="cl100k_base"]')
    expect(side.locator("h3")).to_contain_text(f"token #{index} ")
    expect(side.locator(".x-meta")).to_contain_text(f"id {tokens[index]['id']}")


def test_back_after_a_preset_restores_the_whole_page(page: Page, live_server: str):
    page.goto(f"{live_server}/compare?t=gpt2&t=cl100k_base&text=first%20text")
    page.locator('a.preset[data-preset="japanese"]').click()
    expect(page.locator("#compare-text")).to_have_value(BY_KEY["japanese"].text)
    page.go_back()
    expect(page.locator("#compare-text")).to_have_value("first text")
    expect(page.locator("nav")).to_have_count(1)
    expect(page.locator("#compare-form")).to_have_count(1)
    expect(page.locator("#compare-stats tbody tr")).to_have_count(2)


def test_a_pane_answer_older_than_a_keystroke_never_overwrites_it(page: Page, live_server: str):
    """A keystroke while a pane's next window is on its way: the keystroke's answer replaces every pane, so the
    older pane's answer, held until the test lets it go after the keystroke's answer is in, has no pane left to
    land in and never shows the text before the keystroke."""
    text = "Tokenizers cut text differently: 12345 東京の天気は晴れです。\n" * 60
    held = []
    page.route("**/compare/pane", lambda route: held.append(route))
    page.goto(f"{live_server}/compare?t=gpt2&t=cl100k_base&text=")
    page.locator("#compare-text").fill(text)
    pane = page.locator('.pane[data-tokenizer="cl100k_base"]')
    expect(pane.locator(".window-info")).to_contain_text("tokens 1–")
    with page.expect_request("**/compare/pane"):
        pane.locator(".pane-next").click()
    textarea = page.locator("#compare-text")
    textarea.press("Control+End")
    with page.expect_response(lambda r: "/compare/results" in r.url):
        textarea.press_sequentially(" and more")
    count = len(_api(live_server, text + " and more", ["gpt2", "cl100k_base"])["results"][1]["ids"])
    expect(pane.locator(".pane-count")).to_have_text(f"{count:,} tokens")
    for route in held:  # the old pane's answer, let go now: it must not land
        try:
            route.continue_()
        except Exception:  # noqa: BLE001 - htmx aborted the request: nothing left to answer
            pass
    page.wait_for_load_state("networkidle")
    expect(pane.locator(".pane-count")).to_have_text(f"{count:,} tokens")
    expect(pane.locator(".window-info")).to_contain_text("tokens 1–")
