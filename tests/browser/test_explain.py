"""Explaining tokens in real Chromium: click a token and read its merge tree, the pre-tokens layer, a compare
difference explained on both sides, reload keeping the explanation, and the keyboard.

The expected cuts come from tiktoken (the referee), never from the page itself.
"""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from helpers.oracles import tiktoken_encoding
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

TEXT = "I like unbelievably good strawberry jam"


def playground(page: Page, live_server: str, **params) -> Page:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server}/?" + urlencode({"tokenizer": "cl100k_base", "text": TEXT} | params))
    expect(page.locator("#tokens > span").first).to_be_visible()
    return page


def pieces(name: str, text: str) -> list[str]:
    enc = tiktoken_encoding(name)
    return [enc.decode([i]) for i in enc.encode(text)]


def test_click_a_token_and_read_its_merge_tree(page: Page, live_server: str):
    playground(page, live_server)
    expected = pieces("cl100k_base", TEXT)
    index = expected.index(" unbelie")
    page.locator("#tokens > span").nth(index).click()
    article = page.locator("#explain .explanation")
    expect(article).to_be_visible()
    expect(article.locator(".x-token")).to_have_text("␣unbelie")
    # the tree's root is the token; its leaves, read left to right, are the token's bytes
    expect(article.locator(".x-tree > li > .node code")).to_have_text("␣unbelie")
    leaves = article.locator(".x-tree .leaf code").all_inner_texts()
    assert "".join(leaves) == "␣unbelie"
    # the pre-token is " unbelievably", cut into the reference's tokens, this one marked
    expect(article.locator(".x-piece")).to_have_text(["␣unbelie", "vably"])
    expect(article.locator(".x-piece.this")).to_have_text("␣unbelie")
    expect(article.locator(".x-step.in-token").first).to_be_visible()
    expect(article.locator(".x-cand.won").first).to_be_visible()
    assert parse_qs(urlsplit(page.url).query)["explain"] == [str(index)]
    expect(page.locator("#tokens > .explained")).to_have_text(" unbelie")
    # the other token of the pre-token is a button that explains it
    article.locator("button.x-piece").click()
    expect(page.locator("#explain .x-token")).to_have_text("vably")
    expect(page.locator("#tokens > .explained")).to_have_text("vably")
    expect(page).to_have_url(re.compile(rf"explain={index + 1}\b"))


def test_pre_tokens_layer_marks_where_pre_tokens_start(page: Page, live_server: str):
    playground(page, live_server)
    expect(page.locator("#tokens.show-pre")).to_have_count(0)
    page.locator("#pre").check()
    expect(page.locator("#tokens.show-pre")).to_have_count(1)
    # one mark per pre-token (a word with its space), none inside " unbelievably" where the merges cut
    starts = page.locator("#tokens > span").evaluate_all("els => els.map(e => e.classList.contains('pt'))")
    assert starts == [not p.startswith("vably") for p in pieces("cl100k_base", TEXT)]
    assert parse_qs(urlsplit(page.url).query)["pre"] == ["1"]
    page.locator("#pre").uncheck()
    expect(page.locator("#tokens.show-pre")).to_have_count(0)


def answer(page: Page, path: str):
    """Wait for the page's answer from ``path`` (``/render``, ``/explain``) to what the block does."""
    return page.expect_response(lambda r: urlsplit(r.url).path == path)


def test_reload_keeps_the_explained_token(page: Page, live_server: str):
    """Each step waits for the answer it causes (never for a time): the explanation and its address, the text
    typed, the close."""
    playground(page, live_server)
    with answer(page, "/explain"):
        page.locator("#tokens > span").nth(5).click()
    expect(page.locator("#explain .x-token")).to_have_text("␣strawberry")
    expect(page).to_have_url(re.compile(r"[?&]explain=5\b"))
    page.reload()
    expect(page.locator("#explain .x-token")).to_have_text("␣strawberry")
    expect(page.locator("#tokens > .explained")).to_have_text(" strawberry")
    # typing keeps the explanation on the same token index, explained anew
    new_text = "Strawberry jam and more text"
    with answer(page, "/render"):
        page.locator("#text").fill(new_text)
    fifth = pieces("cl100k_base", new_text)[5]
    expect(page.locator("#explain .explanation")).to_have_attribute("aria-label", "Why token 5 is cut this way")
    expect(page.locator("#explain .x-token")).to_have_text(fifth.replace(" ", "␣"))
    expect(page.locator("#tokens > .explained")).to_have_text(fifth)
    with answer(page, "/explain"):
        page.locator("#explain [data-explain-close]").click()
    expect(page.locator("#explain .explanation")).to_have_count(0)
    expect(page).not_to_have_url(re.compile(r"[?&]explain="))


def test_an_explanation_closed_while_the_text_renders_stays_closed(page: Page, live_server: str):
    """The text's answer is held until the explanation is closed (the order a busy machine may give): the answer
    was asked for with the explanation open, and the page asks for the current one once it is in."""
    playground(page, live_server, explain="5")
    expect(page.locator("#explain .x-token")).to_have_text("␣strawberry")
    held = []
    page.route("**/render", lambda route: held.append(route))
    page.locator("#text").press("End")
    page.locator("#text").press_sequentially("!")
    deadline = time.monotonic() + 30  # against hanging: the render is asked for 150 ms after the key
    while not held:  # Playwright hands the request to the route while the page is waited on
        assert time.monotonic() < deadline, "the text's render was never asked for"
        page.wait_for_timeout(20)
    assert len(held) == 1
    with answer(page, "/explain"):
        page.locator("#explain [data-explain-close]").click()
    expect(page.locator("#explain .explanation")).to_have_count(0)
    with answer(page, "/explain"):  # the late answer brings the old explanation; the page asks again
        with answer(page, "/render"):
            held[0].continue_()
    expect(page.locator("#tokens > span")).to_have_count(len(pieces("cl100k_base", TEXT + "!")))
    expect(page.locator("#explain .explanation")).to_have_count(0)
    expect(page.locator("#tokens > .explained")).to_have_count(0)
    expect(page).not_to_have_url(re.compile(r"[?&]explain="))


def test_keyboard_explains_the_focused_token(page: Page, live_server: str):
    playground(page, live_server)
    first = page.locator("#tokens > span").first
    first.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    expect(page.locator("#explain .x-token")).to_have_text("␣unbelie")
    expect(page.locator("#tokens > span").nth(2)).to_be_focused()  # focus stays on the token
    page.keyboard.press("ArrowRight")
    page.keyboard.press(" ")
    expect(page.locator("#explain .x-token")).to_have_text("vably")


def test_compare_difference_opens_both_explanations(page: Page, live_server: str):
    text = "def f(x):\n        return 1234567"
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(
        f"{live_server}/compare?"
        + urlencode([("t", "gpt2"), ("t", "cl100k_base"), ("ref", "cl100k_base"), ("text", text)])
    )
    spans = page.locator('.pane[data-tokenizer="gpt2"] .tokens > span')
    expect(spans.first).to_be_visible()
    k = spans.evaluate_all("els => els.findIndex(e => e.classList.contains('diff-extra'))")
    assert k > 0
    spans.nth(k).click()
    sides = page.locator("#compare-explain .explain-side")
    expect(sides).to_have_count(2)
    expect(sides.nth(0)).to_have_attribute("data-tokenizer", "gpt2")
    expect(sides.nth(1)).to_have_attribute("data-tokenizer", "cl100k_base")
    # both sides explain the token that covers the mark's character, as each tokenizer cut it (ASCII text: one
    # span per gpt2 token, so the mark is at the end of gpt2's first k tokens)
    offset = len("".join(pieces("gpt2", text)[:k]))
    for side, name in ((sides.nth(0), "gpt2"), (sides.nth(1), "cl100k_base")):
        pos = 0
        for piece in pieces(name, text):
            pos += len(piece)
            if pos > offset:
                break
        expect(side.locator(".x-token")).to_have_text(piece.replace(" ", "␣").replace("\n", "↵"))


def test_compare_marks_the_clicked_token_in_its_own_pane_only(page: Page, live_server: str):
    """The same index is another token in another tokenizer's pane: only the pane clicked marks it, and keeps it
    marked when the panes are drawn again (typing)."""
    page.set_viewport_size({"width": 1280, "height": 900})
    names = ["gpt2", "cl100k_base", "o200k_base"]
    page.goto(f"{live_server}/compare?" + urlencode([("t", n) for n in names] + [("text", TEXT)]))
    pane = page.locator('.pane[data-tokenizer="cl100k_base"]')
    expect(pane.locator(".tokens > span").nth(3)).to_be_visible()
    with page.expect_response(lambda r: "/compare/explain" in r.url):
        pane.locator(".tokens > span").nth(3).click()
    expect(page.locator("#compare-explain .explain-side").first).to_be_visible()
    marked = page.locator(".pane .tokens > .explained")
    expect(marked).to_have_count(1)
    expect(pane.locator(".tokens > .explained")).to_have_text(pieces("cl100k_base", TEXT)[3])
    with page.expect_response(lambda r: "/compare/results" in r.url):
        page.locator("#compare-text").press("End")
        page.locator("#compare-text").press_sequentially(" too")
    expect(page.locator('#compare-stats tr[data-tokenizer="gpt2"] td[data-col="tokens"]')).to_have_attribute(
        "data-value", str(len(pieces("gpt2", TEXT + " too"))))
    expect(marked).to_have_count(1)
    expect(pane.locator(".tokens > .explained")).to_have_count(1)
