"""The lab a teacher opens, in real Chromium (issue 21, part 7): the defaults train word pieces, "New run" keeps the
corpus and settings, each algorithm speaks its own words, byte pieces name their character, nothing sticky covers
the step view, every table fits its card at 1280 px, in presenter mode and at 390 px, the unigram lattice's
numbers are readable, and side by side reaches its size or says why not. Runs train on real English and Japanese
(a few KB of tests/helpers/realtext.py's corpora). ``TOKENPLAY_SCREENSHOT_DIR=dir`` saves a screenshot of each view
checked, light and dark."""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import pytest
from helpers import realtext
from helpers.lab_helpers import wait_done
from playwright.sync_api import Page, expect

from app.lab.examples import SAMPLE_CORPUS, SIDE_VOCAB_SIZE

pytestmark = pytest.mark.browser

LOW = "low low low low low lower lower newest newest newest newest newest newest widest widest widest"
SIZES = {"1280": (1280, 800, False), "present": (1280, 800, True), "390": (390, 844, False)}


def shot(page: Page, name: str) -> None:
    folder = os.environ.get("TOKENPLAY_SCREENSHOT_DIR")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(Path(folder) / f"{name}-{scheme}.png"), full_page=True)
    page.emulate_media(color_scheme="light")


def open_at(page: Page, url: str, size: str) -> None:
    """``url`` at one of SIZES (presenter mode is the lab's own switch, kept in localStorage)."""
    w, h, present = SIZES[size]
    page.set_viewport_size({"width": w, "height": h})
    page.goto(url)
    page.evaluate("on => localStorage.setItem('tp-lab-present', on ? '1' : '0')", present)
    page.reload()
    if "/lab/runs/" in url:
        expect(page.locator("#lab")).to_have_class(re.compile(r"\bpresent\b") if present else re.compile(r"^(?!.*\bpresent\b)"))


@pytest.fixture(scope="module")
def api(live_server: str):
    with httpx.Client(base_url=live_server, timeout=60) as client:
        yield client


def train(api: httpx.Client, **body) -> dict:
    r = api.post("/api/train", json=body)
    assert r.status_code in (200, 202), r.text
    return wait_done(api, r.json()["id"])


@pytest.fixture(scope="module")
def runs(api) -> dict[str, dict]:
    realtext.require()
    en = realtext.excerpt("en", 120_000, 4_000)
    ja = realtext.excerpt("ja", 40_000, 4_000)
    return {
        "wordpiece": train(api, corpus=en, algorithm="wordpiece", merges=60),
        "unigram": train(api, corpus=en, algorithm="unigram", vocab_size=120),  # of at most 131 on 4,000 characters
        "ja-byte": train(api, corpus=ja, algorithm="byte", pattern="gpt2", merges=40),
        "en-byte": train(api, corpus=en, algorithm="byte", pattern="gpt2", merges=60),
    }


# JavaScript: what sticks out of its box on the current page
OVERFLOWS = """() => {
  const view = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth > view) out.push(`the page is ${document.documentElement.scrollWidth} px wide`);
  for (const table of document.querySelectorAll('.lab table')) {
    const card = table.closest('.card').getBoundingClientRect(), box = table.getBoundingClientRect();
    if (table.scrollWidth > table.clientWidth + 1) out.push(`${table.className}: ${table.scrollWidth} > ${table.clientWidth}`);
    if (box.right > card.right + 1 || box.left < card.left - 1) out.push(`${table.className} sticks out of its card`);
  }
  for (const card of document.querySelectorAll('.lab .card'))
    if (card.scrollWidth > card.clientWidth + 1) out.push(`card ${card.className}: ${card.scrollWidth} > ${card.clientWidth}`);
  return out;
}"""


# -- defaults and New run --------------------------------------------------------------------------------------


def test_a_fresh_lab_trains_pieces_of_words(page: Page, live_server: str):
    open_at(page, f"{live_server}/lab", "1280")
    expect(page.locator("#corpus")).to_have_value(SAMPLE_CORPUS)
    page.get_by_role("button", name="Train", exact=True).click()
    expect(page.locator("#step")).to_have_attribute("data-step", "0")
    steps = int(page.locator("#step").get_attribute("data-steps"))
    assert steps >= 30
    page.keyboard.press("End")
    expect(page.locator("#step")).to_have_attribute("data-step", str(steps))
    made = page.locator(".merge-list li").evaluate_all("items => items.map(li => li.querySelectorAll('.chip')[2].textContent)")
    assert len(made) == steps and not [t for t in made if re.search(r"\s", t)], made  # no pair across a space
    assert {"the", "token", "pieces"} <= set(made)
    expect(page.locator(".lab-outcome")).to_have_count(0)  # it reached the merges asked for
    shot(page, "lab-default-last")


def test_new_run_keeps_the_corpus_and_settings(page: Page, live_server: str):
    realtext.require()
    corpus = realtext.excerpt("en", 7_000, 1_500) + "\n" + realtext.excerpt("ja", 9_000, 900)
    open_at(page, f"{live_server}/lab", "1280")
    page.locator("#corpus").fill(corpus)
    page.select_option("select[name=algorithm]", "unigram")
    expect(page.locator("select[name=size_kind] option[value=merges]")).to_have_text("learned pieces")
    expect(page.locator("select[name=pattern]")).to_be_hidden()  # Unigram cuts words its own way
    expect(page.locator(".size-help")).to_contain_text("removes pieces round after round")
    page.locator("input[name=size]").fill("30")
    page.get_by_role("button", name="Train", exact=True).click()
    expect(page.locator("#step")).to_have_attribute("data-step", "0", timeout=60_000)
    expect(page.locator(".round-card")).to_contain_text("Round 0: the seed vocabulary")
    page.get_by_role("link", name="New run").click()
    expect(page.locator("#corpus")).to_have_value(corpus)
    expect(page.locator("select[name=algorithm]")).to_have_value("unigram")
    expect(page.locator("input[name=size]")).to_have_value("30")
    expect(page.locator("select[name=size_kind]")).to_have_value("merges")
    expect(page.locator("select[name=size_kind] option[value=merges]")).to_have_text("learned pieces")
    page.select_option("select[name=algorithm]", "byte")
    expect(page.locator("select[name=size_kind] option[value=merges]")).to_have_text("merges")
    expect(page.locator("select[name=pattern]")).to_be_visible()


# -- words ----------------------------------------------------------------------------------------------------


def test_each_algorithm_in_its_own_words(page: Page, live_server: str, api):
    byte = train(api, corpus="aaabdaaabac", algorithm="byte", pattern="none", merges=3)
    open_at(page, f"{live_server}/lab/runs/{byte['id']}?step=0", "1280")
    expect(page.locator("#encode-title")).to_have_text("Encode a new word or text (no merge yet: bytes only)")
    expect(page.locator("#corpus-title")).to_have_text("Corpus before any merge")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#encode-title")).to_have_text("Encode a new word or text (merge 1)")
    expect(page.locator("#corpus-title")).to_have_text("Corpus after 1 merge")

    wordpiece = train(api, corpus="hug pug pun bun hugs", algorithm="wordpiece", merges=8)
    steps = api.get(f"/api/train/{wordpiece['id']}").json()["steps"]
    once = next(s["step"] for s in steps if s["count"] == 1)
    open_at(page, f"{live_server}/lab/runs/{wordpiece['id']}?step={once}", "1280")
    expect(page.locator(".merge-facts")).to_contain_text("1 occurrence of the pair")
    expect(page.locator("#step")).not_to_contain_text("1 occurrences")
    expect(page.locator("#pairs-title")).to_have_text(f"Pair scores before merge {once}")

    unigram = train(api, corpus=LOW, algorithm="unigram", merges=3)
    open_at(page, f"{live_server}/lab/runs/{unigram['id']}?step=0", "1280")
    expect(page.locator(".round-card")).to_contain_text("down to the 17 asked for")
    page.keyboard.press("End")
    expect(page.locator(".round-card h2")).to_have_text(f"Round {unigram['merges']} of {unigram['merges']}")
    expect(page.locator(".round-card")).to_contain_text("sentencepiece's final choice")
    expect(page.locator(".lab-outcome")).to_have_count(0)  # sentencepiece's trainers reach the size or refuse it


def test_byte_pairs_say_which_character_they_belong_to(page: Page, live_server: str, runs):
    run = runs["ja-byte"]
    steps = httpx.get(f"{live_server}/api/train/{run['id']}").json()["steps"]
    partial = next(s for s in steps if s["token"].startswith("\\x"))
    open_at(page, f"{live_server}/lab/runs/{run['id']}?step={partial['step']}", "1280")
    note = page.locator(".byte-note")
    expect(note).to_contain_text(re.compile(r"= the first \d of the 3 UTF-8 bytes of 「.」"))
    token = bytes.fromhex("".join(re.findall(r"\\x([0-9a-f]{2})", partial["token"])))
    named = re.findall(r"「(.)」", note.inner_text())
    assert named and all(token in c.encode() for c in named), (named, token)
    expect(page.locator(".merge-list li.current .pair-hint")).to_contain_text(f"of 「{named[0]}」")
    shot(page, "lab-ja-byte-note")


# -- layout ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", ["1280", "present"])
def test_nothing_sticky_covers_the_step_view(page: Page, live_server: str, runs, size):
    run = runs["en-byte"]
    open_at(page, f"{live_server}/lab/runs/{run['id']}?step=2", size)
    step = 2
    for target in ("#pairs-title", ".pair-table thead", ".pair-table tbody tr", "#corpus-title", "#merge-title"):
        for press in (None, "ArrowRight"):
            if press:
                page.keyboard.press(press)
                step += 1
                # The step arrives by an htmx swap: measure the new step's elements, never the ones it replaces.
                expect(page).to_have_url(re.compile(rf"[?&]step={step}(?!\d)"))
                expect(page.locator("#step .merge-list li.current")).to_have_attribute("value", str(step))
            # Scrolling and hit-testing in one script: no swap can land between them.
            covered = page.evaluate(
                """sel => { const el = document.querySelector(sel);
                           el.scrollIntoView({block: 'start'});
                           const r = el.getBoundingClientRect(), out = [];
                           for (const x of [r.left + 4, (r.left + r.right) / 2, r.right - 4]) {
                             const hit = document.elementFromPoint(x, r.top + 2);
                             if (hit && !el.contains(hit) && !hit.contains(el)) out.push(hit.tagName + '.' + hit.className);
                           }
                           return out; }""",
                target,
            )
            assert covered == [], f"{target} is covered at its top by {covered}"


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("name", ["wordpiece", "ja-byte", "unigram"])
def test_every_table_fits_its_card(page: Page, live_server: str, runs, name, size):
    run = runs[name]
    for step in sorted({0, min(3, run["merges"]), run["merges"]}):
        open_at(page, f"{live_server}/lab/runs/{run['id']}?step={step}", size)
        expect(page.locator("#step")).to_have_attribute("data-step", str(step))
        assert page.evaluate(OVERFLOWS) == [], f"{name} step {step} at {size}"
    shot(page, f"lab-{name}-{size}")


@pytest.mark.parametrize("size", ["1280", "390"])
def test_lattice_numbers_are_readable(page: Page, live_server: str, runs, size):
    run = runs["unigram"]
    open_at(page, f"{live_server}/lab/runs/{run['id']}?step={run['merges']}", size)
    page.locator("#encode-text").fill("understanding tokenization")
    page.get_by_role("button", name="Encode", exact=True).click()
    expect(page.locator(".lattice-node.best").first).to_be_visible()
    problems = page.locator(".lattice").evaluate(
        """(lattice, mustFit) => {
          const out = [], boxes = [];
          for (const node of lattice.querySelectorAll('.lattice-node')) {
            if (node.scrollWidth > node.clientWidth + 1 || node.scrollHeight > node.clientHeight + 1) out.push('clipped ' + node.textContent);
            const n = node.getBoundingClientRect();
            for (const part of node.querySelectorAll('.chip, .logp')) {
              const r = part.getBoundingClientRect();
              if (r.left < n.left - 0.5 || r.right > n.right + 0.5 || r.top < n.top - 0.5 || r.bottom > n.bottom + 0.5) out.push('outside its node ' + node.textContent);
              boxes.push([r, part.textContent]);
            }
          }
          for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
            const [a, ta] = boxes[i], [b, tb] = boxes[j];
            if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) out.push(`${ta} overlaps ${tb}`);
          }
          if (mustFit && lattice.scrollWidth > lattice.clientWidth + 1) out.push('the lattice does not fit its card');
          return out;
        }""",
        size == "1280",  # on a phone a long word scrolls inside the lattice, never the page
    )
    assert problems == []
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size][0]
    logp = page.locator(".lattice-node.best .logp").first
    assert float(logp.inner_text()) < 0 and logp.evaluate("el => parseFloat(getComputedStyle(el).fontSize)") >= 10
    shot(page, f"lab-lattice-{size}")


# -- side by side ---------------------------------------------------------------------------------------------


def test_side_by_side_reaches_the_size_or_says_why(page: Page, live_server: str, api):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server}/lab")
    expect(page.locator("#side-corpus")).to_have_value(SAMPLE_CORPUS)
    page.get_by_role("button", name="Side by side").click()
    expect(page.locator(".side-summary")).to_have_text(f"All three have the {SIDE_VOCAB_SIZE} tokens asked for.", timeout=60_000)
    assert page.locator(".side-size").all_inner_texts() == [str(SIDE_VOCAB_SIZE)] * 3
    expect(page.locator(".side-why")).to_have_count(0)

    page.goto(f"{live_server}/lab")
    page.locator("#side-corpus").fill(LOW)
    page.locator("#side-form input[name=side_size]").fill("290")
    page.get_by_role("button", name="Side by side").click()
    expect(page.locator(".side-summary")).to_contain_text("Not at the 290 tokens asked for: BPE (refused), WordPiece (25), "
                                                          "Unigram (refused)", timeout=60_000)
    ids = dict(re.findall(r"(bpe|wordpiece|unigram)=([0-9a-f]+)", page.url))
    summary = api.get(f"/api/train/{ids['wordpiece']}").json()
    expect(page.locator("section[data-side=wordpiece] .side-size")).to_have_text(str(summary["vocab_size"]))
    expect(page.locator("section[data-side=wordpiece] .side-why")).to_contain_text(f"stopped at {summary['vocab_size']} of the 290")
    for side in ("bpe", "unigram"):  # sentencepiece's trainers refuse the size, with the most it can be
        error = api.get(f"/api/train/{ids[side]}").json()["error"]
        expect(page.locator(f"section[data-side={side}] .error")).to_have_text(error)
        assert "is more than this corpus can fill" in error and "choose a vocab_size of at most" in error
    expect(page.locator("section[data-side=wordpiece] .side-why")).to_contain_text("no pair left to merge, every word of the corpus is one piece")
    assert page.evaluate(OVERFLOWS) == []
    shot(page, "lab-side-by-side-short")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate(OVERFLOWS) == []
    page.get_by_role("link", name="New comparison").click()
    expect(page.locator("#side-corpus")).to_have_value(LOW)
    expect(page.locator("#side-form input[name=side_size]")).to_have_value("290")
