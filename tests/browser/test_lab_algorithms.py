"""The three algorithms in real Chromium: train BPE, WordPiece and Unigram on the "low lower newest widest" corpus,
step through each with the keyboard, open a unigram lattice and a WordPiece walk, and compare the three side by
side. ``TOKENPLAY_SCREENSHOT_DIR=dir`` also saves screenshots there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

LOW = "low low low low low lower lower newest newest newest newest newest newest widest widest widest"


def shot(page: Page, name: str) -> None:
    folder = os.environ.get("TOKENPLAY_SCREENSHOT_DIR")
    if folder:
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def train(page: Page, live_server: str, algorithm: str, size: int) -> int:
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}/lab")
    page.locator("#corpus").fill(LOW)
    page.select_option("select[name=algorithm]", algorithm)
    if algorithm in ("byte", "char"):  # the others cut words their own way: the form hides the pre-tokenizer
        page.select_option("select[name=pattern]", "whitespace")
    page.locator("input[name=size]").fill(str(size))
    page.select_option("select[name=size_kind]", "merges")
    page.get_by_role("button", name="Train", exact=True).click()
    expect(page.locator("#step")).to_have_attribute("data-step", "0")
    return int(page.locator("#step").get_attribute("data-steps"))


def step_through(page: Page, steps: int) -> None:
    for k in range(1, steps + 1):
        page.keyboard.press("ArrowRight")
        expect(page.locator("#step")).to_have_attribute("data-step", str(k))


@pytest.mark.parametrize("algorithm", ["char", "sentencepiece", "wordpiece", "unigram"])
def test_train_and_step_through_each_algorithm(page: Page, live_server: str, algorithm: str):
    steps = train(page, live_server, algorithm, 3 if algorithm == "unigram" else 6)  # LOW has 3 longer pieces to learn
    assert steps >= 1
    step_through(page, steps)
    expect(page.locator("#corpus-tokens")).to_contain_text("newest")
    if algorithm == "wordpiece":
        expect(page.locator(".pair-table thead")).to_contain_text("Score")
        expect(page.locator(".merge-facts")).to_contain_text("Score")
        page.keyboard.press("Home")
        expect(page.locator(".pair-table tbody tr").first).to_contain_text("★")
    if algorithm == "unigram":
        expect(page.locator(".round-card")).to_contain_text(f"Round {steps} of {steps}")
        expect(page.locator(".removed-table tbody tr").first).to_be_visible()
    if algorithm == "sentencepiece":  # sentencepiece's own merges: no manual mode, its tie rule said
        expect(page.locator(".merge-this")).to_have_count(0)
        expect(page.locator(".pairs")).to_contain_text("sentencepiece's trainer takes the most frequent pair")
    shot(page, f"lab-{algorithm}")


def test_open_a_unigram_lattice(page: Page, live_server: str):
    steps = train(page, live_server, "unigram", 3)
    page.keyboard.press("End")
    expect(page.locator("#step")).to_have_attribute("data-step", str(steps))  # the last round's block has settled
    page.locator("#encode-text").fill("lowest")
    page.get_by_role("button", name="Encode").click()
    lattice = page.locator(".lattice")
    expect(lattice).to_be_visible()
    best = page.locator(".lattice-node.best")
    expect(best.first).to_be_visible()
    assert page.locator(".lattice-node").count() > best.count() >= 1
    expect(page.locator(".nbest li").first).to_contain_text("log-probability")
    shot(page, "lab-unigram-lattice")


def test_wordpiece_walk(page: Page, live_server: str):
    steps = train(page, live_server, "wordpiece", 8)
    page.keyboard.press("End")
    expect(page.locator("#step")).to_have_attribute("data-step", str(steps))
    page.locator("#encode-text").fill("lowest")
    page.get_by_role("button", name="Encode").click()
    expect(page.locator(".walks")).to_contain_text("✓")
    expect(page.locator(".walk-try.miss").first).to_be_visible()


def test_side_by_side(page: Page, live_server: str):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server}/lab")
    page.locator("#side-corpus").fill(LOW)
    page.locator("#side-form input[name=side_size]").fill("17")
    page.get_by_role("button", name="Side by side").click()
    for side in ("bpe", "wordpiece", "unigram"):
        expect(page.locator(f"section[data-side={side}] .tokens")).to_be_visible()
    page.locator("#side-text").fill("lowest newer wider")
    expect(page.locator("section[data-side=unigram] .tokens")).to_contain_text("wider")
    expect(page.locator(".cut-diff").first).to_be_visible()
    shot(page, "lab-side-by-side")
