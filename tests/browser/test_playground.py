"""The playground in real Chromium (Playwright): typing, counts, colours, toggles, tokenizer switch, escaping.

Run with ``.venv/bin/python -m pytest tests/browser -q``. Set ``TOKENPLAY_SCREENSHOT=1`` to also refresh
``docs/screenshot.png`` (the README's picture) from a real render.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers.oracles import tiktoken_encoding
from playwright.sync_api import Page, expect


pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]


enc = tiktoken_encoding  # tiktoken itself on the shipped ranks: the referee for counts


@pytest.fixture()
def play(page: Page, live_server: str) -> Page:
    """The playground with an empty text area, failing the test if any dialog (alert) opens."""

    def no_dialog(dialog):
        message = dialog.message
        dialog.dismiss()
        pytest.fail(f"a dialog opened: {message!r} (user text must never run)")

    page.on("dialog", no_dialog)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live_server}/?tokenizer=cl100k_base")
    expect(page.locator("#count-tokens")).to_have_text("0")
    return page


def set_text(page: Page, text: str) -> None:
    page.locator("#text").fill(text)


def expect_count(page: Page, n: int) -> None:
    expect(page.locator("#count-tokens")).to_have_text(f"{n:,}")


def expect_shown(page: Page, text: str) -> None:
    """Wait until the tokens show exactly ``text`` (the answer to the last keystroke): a count alone can match an
    earlier answer, e.g. for ``…alert(2)`` before the ``>`` that cl100k_base adds to the same token."""
    expect(page.locator("#tokens")).to_have_text(re.compile("^" + re.escape(text) + "$"), use_inner_text=True)


def token_classes(page: Page) -> list[str]:
    return page.locator("#tokens > span").evaluate_all("els => els.map(e => e.className)")


def test_type_updates_counts_and_colours_and_keeps_the_caret(play: Page):
    box = play.locator("#text")
    box.click()
    box.press_sequentially("Hello world", delay=10)
    expect_count(play, len(enc("cl100k_base").encode("Hello world")))
    expect(play.locator("#count-chars")).to_have_text("11")
    expect(play.locator("#announce")).to_have_text("2 tokens, 11 characters")
    first = token_classes(play)
    box.press_sequentially(", and more tokens!", delay=10)
    text = "Hello world, and more tokens!"
    expect_shown(play, text)
    expect_count(play, len(enc("cl100k_base").encode(text)))
    assert play.locator("#tokens").inner_text() == text
    assert token_classes(play) != first
    # The text area was never replaced: it still has focus and the caret is at the end.
    assert play.evaluate("document.activeElement.id") == "text"
    assert play.evaluate(
        "[document.getElementById('text').selectionStart, document.getElementById('text').value.length]"
    ) == [len(text), len(text)]
    # Neighbours never share a colour, as painted.
    backgrounds = play.locator("#tokens > span").evaluate_all("els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert all(a != b for a, b in itertools.pairwise(backgrounds))
    assert len(set(backgrounds)) > 3


def test_typing_posts_the_form_as_multipart(play: Page):
    text = "Hello 🙂👨‍👩‍👧‍👦\nworld"
    with play.expect_request(lambda r: r.url.endswith("/render")) as sent:
        set_text(play, text)
    assert sent.value.headers["content-type"].startswith("multipart/form-data")
    expect_count(play, len(enc("cl100k_base").encode(text)))
    assert play.locator("#tokens").evaluate("e => e.textContent") == text


def test_switch_tokenizer_changes_ids_colours_and_url(play: Page):
    text = "Internationalization of tokenizers: ünïcödé, 日本語, 🙂"
    set_text(play, text)
    expect_count(play, len(enc("cl100k_base").encode(text)))
    before = token_classes(play)
    play.select_option("#tokenizer", "gpt2")
    expect_count(play, len(enc("gpt2").encode(text)))
    ids = [int(x) for x in play.locator("#ids .id").all_inner_texts()]
    assert ids == enc("gpt2").encode(text)
    assert token_classes(play) != before
    expect(play).to_have_url(re.compile(r"tokenizer=gpt2"))


def test_toggle_whitespace_shows_glyphs_and_keeps_real_text(play: Page):
    text = "a b\tc\nd"
    set_text(play, text)
    expect_count(play, len(enc("cl100k_base").encode(text)))
    assert play.locator("#tokens i").count() == 0
    play.get_by_label("Show whitespace").check()
    expect(play.locator("#tokens .w-sp")).to_have_count(1)
    glyph = play.locator("#tokens .w-sp").evaluate("e => getComputedStyle(e, '::after').content")
    assert glyph == '"·"'
    assert play.locator("#tokens .w-tab").evaluate("e => getComputedStyle(e, '::after').content") == '"→"'
    assert play.locator("#tokens .w-nl").evaluate("e => getComputedStyle(e, '::before').content") == '"↵"'
    assert play.locator("#tokens").evaluate("e => e.textContent") == text
    expect(play).to_have_url(re.compile(r"ws=1"))


def test_toggle_special_tokens_makes_endoftext_one_special_token(play: Page):
    text = "Hi<|endoftext|>there"
    set_text(play, text)
    plain = len(enc("cl100k_base").encode_ordinary(text))
    expect_count(play, plain)
    expect(play.locator("#tokens > .special")).to_have_count(0)
    play.get_by_label("Special tokens").check()
    expect_count(play, len(enc("cl100k_base").encode(text, allowed_special="all")))
    special = play.locator("#tokens > .special")
    expect(special).to_have_count(1)
    expect(special).to_have_text("<|endoftext|>")
    assert special.get_attribute("data-ids") == "100257"
    assert int(special.evaluate("e => getComputedStyle(e).fontWeight")) >= 700


def test_type_script_is_shown_as_text_and_never_runs(play: Page):
    text = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    play.locator("#text").click()
    play.locator("#text").press_sequentially(text, delay=5)
    expect_shown(play, text)
    expect_count(play, len(enc("cl100k_base").encode(text)))
    assert play.locator("#tokens").inner_text() == text
    assert play.locator("#result script, #result img").count() == 0
    play.wait_for_timeout(300)  # give a would-be handler a chance to fire (the dialog handler fails the test)


def test_url_carries_the_view_and_reload_reproduces_it(play: Page):
    text = "Copy this link: 日本 🙂"
    play.select_option("#tokenizer", "o200k_base")
    play.get_by_label("Show whitespace").check()
    set_text(play, text)
    expected = len(enc("o200k_base").encode(text))
    expect_count(play, expected)
    expect(play).to_have_url(re.compile(r"text="))
    query = parse_qs(urlsplit(play.url).query)
    assert query == {"tokenizer": ["o200k_base"], "text": [text], "ws": ["1"]}
    classes = token_classes(play)
    play.reload()
    expect_count(play, expected)
    assert play.locator("#text").input_value() == text
    assert play.locator("#tokenizer").input_value() == "o200k_base"
    assert play.get_by_label("Show whitespace").is_checked()
    assert token_classes(play) == classes


def test_typing_keeps_no_history_snapshot_and_back_still_shows_the_text(page: Page, live_server: str):
    """Every keystroke replaces the URL; htmx would first copy the whole page into its history cache each time,
    and the playground says not to (hx-history="false"). Back from another page shows the text and its tokens."""
    page.add_init_script("""
        window.__snapshots = 0;
        document.addEventListener("htmx:beforeHistorySave", () => { window.__snapshots += 1; });
    """)
    page.goto(f"{live_server}/?tokenizer=cl100k_base")
    box = page.locator("#text")
    for n, word in enumerate(["Hello", " world", ",", " again"], 1):
        box.press("End")
        with page.expect_response(lambda r: r.url.endswith("/render")):
            box.press_sequentially(word)
        text = "".join(["Hello", " world", ",", " again"][:n])
        expect(page).to_have_url(re.compile(r"[?&]text=" + re.escape(text.replace(" ", "+").replace(",", "%2C")) + "$"))
    assert page.evaluate("window.__snapshots") == 0
    assert page.evaluate("sessionStorage.getItem('htmx-history-cache')") is None
    page.get_by_role("link", name="Compare").first.click()
    expect(page).to_have_url(re.compile(r"/compare"))
    page.go_back()
    expect(page.locator("#text")).to_have_value("Hello world, again")
    expect_count(page, len(enc("cl100k_base").encode("Hello world, again")))
    expect(page.locator("#tokens > span")).to_have_count(len(enc("cl100k_base").encode("Hello world, again")))


def test_japanese_and_emoji_show_whole_characters_with_their_bytes(play: Page):
    text = "日本語のテキスト 🙂👍🏽"
    play.select_option("#tokenizer", "gpt2")
    set_text(play, text)
    expect_count(play, len(enc("gpt2").encode(text)))
    shown = play.locator("#tokens").inner_text()
    assert shown == text and "\ufffd" not in shown
    partial = play.locator("#tokens > .partial").first
    ids = partial.get_attribute("data-ids").split()
    assert len(ids) > 1
    partial.hover()
    detail = play.locator("#detail")
    for tid in ids:
        expect(detail).to_contain_text(f"id {tid}")
    expect(detail).to_contain_text(re.compile(r"\b[0-9A-F]{2} [0-9A-F]{2}\b"))
    # The ids of the group are highlighted with it.
    expect(play.locator("#ids .id.hl")).to_have_count(len(ids))


def test_hover_id_highlights_its_token_and_focus_shows_detail(play: Page):
    set_text(play, "Hello world")
    expect_count(play, 2)
    play.locator("#ids .id").nth(1).hover()
    expect(play.locator("#tokens > .hl")).to_have_text(" world")
    expect(play.locator("#detail")).to_contain_text("id 1917")
    # Keyboard: focus the first token, move with the arrow key; the detail follows the focus.
    play.locator("#tokens > span").first.focus()
    expect(play.locator("#detail")).to_contain_text("id 9906")
    # The page sends no hex for a token whose bytes are its text's UTF-8: app.js derives it ("Hello").
    expect(play.locator("#detail")).to_contain_text("48 65 6C 6C 6F")
    expect(play.locator("#tokens > span").first).to_have_attribute("title", re.compile(r"id 9906 48 65 6C 6C 6F"))
    play.keyboard.press("ArrowRight")
    expect(play.locator("#detail")).to_contain_text("id 1917")
    assert play.evaluate("document.activeElement.textContent") == " world"


def test_id_spans_are_built_from_the_token_spans_after_each_keystroke(play: Page):
    """The server sends the ids as plain text; app.js hands them out to the token spans and builds one linked,
    coloured span per id."""
    text = "Hello 閒 world <|endoftext|>"
    play.check("#special")
    set_text(play, text)
    ids = enc("cl100k_base").encode(text, allowed_special="all")
    expect_count(play, len(ids))
    expect(play.locator("#ids .id")).to_have_count(len(ids))
    assert play.locator("#ids [data-id-list]").count() == 0  # the plain list was replaced
    built = play.eval_on_selector_all(
        "#ids .id", "els => els.map(e => [Number(e.textContent), e.dataset.seg, e.className])"
    )
    assert [i for i, _, _ in built] == ids
    tokens = play.eval_on_selector_all(
        "#tokens > span", "els => els.map(e => [e.dataset.seg, e.dataset.ids.split(' ').length, e.className])"
    )
    spans_ids = play.eval_on_selector_all("#tokens > span", "els => els.map(e => [e.textContent, e.dataset.ids])")
    assert [int(i) for _, own in spans_ids for i in own.split()] == ids
    assert [" 閒", " ".join(map(str, ids[1:4]))] in spans_ids  # one span, three byte tokens
    expected = [
        (seg, " ".join(c for c in cls.split() if c.startswith("c") or c == "special"))
        for seg, n, cls in tokens
        for _ in range(n)
    ]
    assert [(seg, cls.replace("id ", "", 1)) for _, seg, cls in built] == expected
    # Every token after the first is focusable for the arrow keys (tabindex -1 set by app.js); End goes last.
    tab_stops = play.eval_on_selector_all("#tokens > span", "els => els.map(e => e.tabIndex)")
    assert tab_stops == [0] + [-1] * (len(tokens) - 1)
    play.locator("#tokens > span").first.focus()
    play.keyboard.press("End")
    assert play.evaluate("document.activeElement.textContent") == "<|endoftext|>"


def test_error_shows_beside_the_text_area_and_keeps_the_text(play: Page):
    set_text(play, "keep this text")
    expect_count(play, len(enc("cl100k_base").encode("keep this text")))
    # A tokenizer the server does not know (as if the list changed under an open page).
    play.evaluate(
        "() => { const s = document.getElementById('tokenizer'); s.add(new Option('gone', '<b>gone</b>'));"
        " s.value = '<b>gone</b>'; s.dispatchEvent(new Event('input', {bubbles: true})); }"
    )
    error = play.locator("#result .error")
    expect(error).to_contain_text("unknown tokenizer '<b>gone</b>'")
    expect(error).to_contain_text("cl100k_base")
    assert play.locator("#result b").count() == 0
    assert play.locator("#text").input_value() == "keep this text"
    # Back to a real tokenizer: the result comes back.
    play.select_option("#tokenizer", "gpt2")
    expect_count(play, len(enc("gpt2").encode("keep this text")))


def test_decode_box_decodes_ids_and_reports_bad_ones(play: Page):
    ids = enc("cl100k_base").encode("Hello <world> 🙂")
    play.locator("#ids-input").fill(str(ids))
    expect(play.locator("#decoded .decoded-text")).to_have_text("Hello <world> 🙂")
    # Switching the tokenizer decodes the same ids again with the new one.
    play.select_option("#tokenizer", "gpt2")
    expect(play.locator("#decoded .decoded-text")).to_have_text(enc("gpt2").decode(ids))
    play.locator("#ids-input").fill("9906, banana")
    expect(play.locator("#decoded .error")).to_contain_text("banana")
    assert play.locator("#text").input_value() == ""
    # That refused entry is not posted again on every model change: the page changes model, the box stays quiet.
    decodes: list[str] = []
    play.on("request", lambda r: decodes.append(r.url) if r.url.endswith("/decode") else None)
    with play.expect_response(lambda r: r.url.endswith("/render")):
        play.select_option("#tokenizer", "cl100k_base")
    with play.expect_response(lambda r: r.url.endswith("/render")):
        play.select_option("#tokenizer", "gpt2")
    assert decodes == []
    # Typing a valid entry again: decoded, and decoded again with the next model.
    play.locator("#ids-input").fill("31373, 995")
    expect(play.locator("#decoded .decoded-text")).to_have_text("hello world")
    with play.expect_response(lambda r: r.url.endswith("/decode")):
        play.select_option("#tokenizer", "cl100k_base")
    expect(play.locator("#decoded .decoded-text")).to_have_text(enc("cl100k_base").decode([31373, 995]))


def test_long_text_counts_stay_exact_with_a_window_and_show_more(play: Page, settings):
    text = "".join(f"word{i} " for i in range(settings.render_tokens))  # two tokens a word: over one window
    set_text(play, text)
    n = len(enc("cl100k_base").encode(text))
    expect_count(play, n)
    expect(play.locator("#tokens > span")).to_have_count(settings.render_tokens)
    expect(play.locator("#ids .id")).to_have_count(settings.render_tokens)
    with play.expect_request(lambda r: r.url.endswith("/render")) as sent:
        play.locator("#show-more").click()
    assert sent.value.headers["content-type"].startswith("multipart/form-data")  # fast to read for long texts
    # The next window: its first span holds token render_tokens (its id handed out from the id list).
    first_id = enc("cl100k_base").encode(text)[settings.render_tokens]
    expect(play.locator("#tokens > span").first).to_have_attribute("data-ids", str(first_id))
    expect(play.locator("#tokens > span").first).to_have_text(enc("cl100k_base").decode([first_id]))
    expect_count(play, n)
    # Typing keeps the window the user moved to.
    play.locator("#text").press("End")
    play.locator("#text").press_sequentially("!", delay=5)
    expect_count(play, len(enc("cl100k_base").encode(text + "!")))
    expect(play.locator("#tokens > span").first).to_have_attribute("data-ids", str(first_id))


def test_copy_all_ids_copies_every_id_of_a_long_text(play: Page, settings, live_server: str):
    play.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    text = "".join(f"w{i} " for i in range(settings.render_tokens))
    set_text(play, text)
    ids = enc("cl100k_base").encode(text)
    expect_count(play, len(ids))
    assert play.locator("#ids .id").count() < len(ids)  # the page shows a window of them
    with play.expect_request(lambda r: r.url.endswith("/ids")) as sent:
        play.locator("#copy-ids").click()
    assert sent.value.headers["content-type"].startswith("multipart/form-data")
    expect(play.locator("#copy-ids")).to_have_text(f"Copied {len(ids):,} ids")
    copied = play.evaluate("navigator.clipboard.readText()")
    assert [int(x) for x in copied.split(", ")] == ids


def test_screenshot_for_readme(page: Page, live_server: str, tmp_path):
    """The README's picture, taken for real on every run; TOKENPLAY_SCREENSHOT=1 refreshes docs/screenshot.png."""
    text = (
        "Tokenizers cut text into pieces that a language model reads.\n"
        "日本語の文章もトークンに分かれます。\n"
        "Emoji too: 🙂 👍🏽 🇯🇵 — and <|endoftext|> is special."
    )
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live_server}/?tokenizer=gpt2&special=1")
    page.locator("#text").fill(text)
    expect_count(page, len(enc("gpt2").encode(text, allowed_special="all")))
    page.locator("#tokens > .partial").first.hover()
    page.locator("#ids-input").fill("15496, 995")
    expect(page.locator("#decoded .decoded-text")).to_have_text("Hello world")
    page.locator("#tokens > .partial").first.hover()
    expect(page.locator("#detail")).to_contain_text("tokens, one group of whole characters")
    shot = tmp_path / "screenshot.png"
    page.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    if os.environ.get("TOKENPLAY_SCREENSHOT"):
        (REPO / "docs" / "screenshot.png").write_bytes(shot.read_bytes())


def test_stat_cards_hold_seven_digit_counts_and_stay_in_one_row(play: Page, live_server: str):
    """Six cards (a SentencePiece model adds byte fallback) share one row, and a count of 1,234,567 tokens
    stays inside its card, at a desktop width and on a phone."""
    play.goto(f"{live_server}/?tokenizer=mistral-7b&text=Hello%20%EA%99%AE")
    expect(play.locator("#count-byte-fallback")).to_have_text("3")
    for width in (1280, 1024, 390):
        play.set_viewport_size({"width": width, "height": 800})
        play.locator("#count-tokens").evaluate("el => { el.textContent = '1,234,567'; }")
        cards = play.locator(".stats .stat")
        tops = {round(cards.nth(i).bounding_box()["y"]) for i in range(cards.count())}
        assert len(tops) == (1 if width > 600 else 2), (width, tops)
        num = play.locator("#count-tokens").bounding_box()
        card = play.locator(".stats .stat").first.bounding_box()
        assert num["x"] + num["width"] <= card["x"] + card["width"] + 0.5, width


def test_the_tokens_download_as_json_and_csv_for_a_text_longer_than_a_url(play: Page, tmp_path):
    """Download JSON / CSV (issue 37, part 7): the file holds the text as typed, even one too long for the links'
    URL (the script posts the form), cut as tiktoken cuts it; without JavaScript the buttons submit the form there."""
    import csv
    import json

    text = "Tokens to save, line after line: 12345 ünïcödé 🙂\n" * 60  # 3,000 characters: past the URL's limit
    set_text(play, text)
    ids = enc("cl100k_base").encode(text)
    expect_count(play, len(ids))
    with play.expect_download() as got:
        play.locator("#download-json").click()
    saved = got.value
    assert saved.suggested_filename == "tokens-cl100k_base.json"
    assert json.loads(Path(saved.path()).read_text())["ids"] == ids
    with play.expect_download() as got:
        play.locator("#download-csv").click()
    rows = list(csv.DictReader(Path(got.value.path()).read_text(encoding="utf-8").splitlines()))
    assert [int(r["id"]) for r in rows] == ids
    set_text(play, "still live after a download")  # htmx still renders the text (no download swapped in)
    expect_count(play, len(enc("cl100k_base").encode("still live after a download")))
    for width in (1280, 390):  # the panel's buttons wrap on a phone; nothing is wider than the page
        play.set_viewport_size({"width": width, "height": 844})
        assert play.evaluate("document.documentElement.scrollWidth") <= width


def test_the_tokens_download_without_javascript(browser, live_server: str):
    context = browser.new_context(java_script_enabled=False, accept_downloads=True)
    page = context.new_page()
    page.goto(f"{live_server}/?tokenizer=cl100k_base&text=Hello%20world")
    with page.expect_download() as got:
        page.locator("#download-csv").click()
    assert got.value.suggested_filename == "tokens-cl100k_base.csv"
    assert Path(got.value.path()).read_text(encoding="utf-8").splitlines()[1:] == [
        "0,9906,Hello,48656c6c6f,0,5,false,true,false", "1,1917, world,20776f726c64,5,11,false,true,false"]
    context.close()
