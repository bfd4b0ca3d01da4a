"""One text, one count, on every page (issue 21): the same texts, typed and pasted into the playground, compare,
chat and the lab in Chromium, show exactly the counts that /api/tokenize, /api/compare and /api/chat answer for
the text the page's text area holds.

The texts: lines typed with Enter (a blank line among them), a paste with CRLF and lone CR line breaks, tabs and
no-break spaces, ZWJ emoji sequences, combining marks and Japanese. A browser sends a text area's line breaks as
CRLF; the pages read their forms so that every count is the one for the text the user sees (app.web.deps).
"""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.browser

# Each case: what the user does in the text area, and the text the text area then holds.
CASES = {
    "typed lines": ([("type", "first line"), ("press", "Enter"), ("type", "second"), ("press", "Enter"),
                     ("press", "Enter"), ("type", "after a blank line"), ("press", "Enter")],
                    "first line\nsecond\n\nafter a blank line\n"),
    "pasted CRLF and CR": ([("paste", "a\r\nb\r\nc\r\nd\r\ne\r\n\r\nold Mac\rline\r")],
                           "a\nb\nc\nd\ne\n\nold Mac\nline\n"),
    "tabs and NBSP": ([("type", "col"), ("insert", "\tcol\t\tx\u00a0y \u00a0 z"), ("press", "Enter"),
                       ("insert", "\u00a0\u00a0indented")],
                      "col\tcol\t\tx\u00a0y \u00a0 z\n\u00a0\u00a0indented"),
    "ZWJ emoji and combining marks": ([("insert", "👩\u200d💻 👨\u200d👩\u200d👧\u200d👦 🏳\ufe0f\u200d🌈 "),
                                       ("insert", "e\u0301 n\u0303o a\u030a\u0323 Z\u0351\u0308")],
                                      "👩\u200d💻 👨\u200d👩\u200d👧\u200d👦 🏳\ufe0f\u200d🌈 e\u0301 n\u0303o a\u030a\u0323 "
                                      "Z\u0351\u0308"),
    "Japanese, pasted with CRLF": ([("type", "Tokyo: "), ("paste", "東京の天気は晴れです。\r\n吾輩は猫である。\r\n"),
                                    ("insert", "名前はまだ無い。")],
                                   "Tokyo: 東京の天気は晴れです。\n吾輩は猫である。\n名前はまだ無い。"),
}
LAB_WORD = "\tx\u00a0y 👩\u200d💻 e\u0301 東京"  # the lab's encode box is one line (an <input>): no line breaks


def enter(page: Page, box: Locator, actions: list[tuple[str, str]]) -> None:
    """Empty ``box`` and do ``actions`` in it: type key by key, press a key, insert text as an input method
    does (tabs would move the focus if pressed), or paste through the clipboard."""
    box.click()
    box.press("Control+A")
    box.press("Delete")
    for kind, value in actions:
        if kind == "type":
            box.press_sequentially(value)
        elif kind == "press":
            box.press(value)
        elif kind == "insert":
            page.keyboard.insert_text(value)
        else:
            page.evaluate("text => navigator.clipboard.writeText(text)", value)
            box.press("Control+V")


@pytest.fixture()
def typist(page: Page, live_server: str) -> Page:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    return page


def api(live_server: str, path: str, body: dict, cookies: dict | None = None) -> dict:
    r = httpx.post(f"{live_server}{path}", json=body, cookies=cookies, timeout=60)
    assert r.status_code == 200, r.text[:300]
    return r.json()


def two(x: float) -> str:
    return f"{x:.2f}"


@pytest.mark.parametrize("tokenizer", ["gpt2", "mistral-7b"])
def test_playground_counts_are_the_apis_for_the_text_it_holds(typist: Page, live_server: str, tokenizer: str):
    typist.goto(f"{live_server}/?tokenizer={tokenizer}&text=")
    box = typist.locator("#text")
    for case, (actions, held) in CASES.items():
        enter(typist, box, actions)
        expect(box).to_have_value(held)
        want = api(live_server, "/api/tokenize", {"text": held, "tokenizer": tokenizer})
        expect(typist.locator("#count-tokens"), case).to_have_text(f"{want['count']:,}")
        expect(typist.locator("#count-chars"), case).to_have_text(f"{want['chars']:,}")
        expect(typist.locator("#count-bytes"), case).to_have_text(f"{want['bytes']:,}")
        expect(typist.locator("#chars-per-token"), case).to_have_text(two(want["chars"] / want["count"]))
        expect(typist.locator("#bytes-per-token"), case).to_have_text(two(want["bytes"] / want["count"]))
        fallback = sum(t["byte_fallback"] for t in want["tokens"])
        if tokenizer == "mistral-7b":
            expect(typist.locator("#count-byte-fallback"), case).to_have_text(f"{fallback:,}")
        expect(typist.locator(".panel-head h2", has_text="Token ids")).to_have_text(f"Token ids · {want['count']:,}")
        assert typist.locator("#tokens > span").evaluate_all("s => s.map(e => e.textContent).join('')") == held
        assert "%0D" not in typist.url


COMPARED = ["gpt2", "o200k_base", "mistral-7b", "bert-base-uncased"]


def test_compare_counts_are_the_apis_for_the_text_it_holds(typist: Page, live_server: str):
    typist.goto(f"{live_server}/compare?" + "&".join(f"t={n}" for n in COMPARED) + "&text=")
    box = typist.locator("#compare-text")
    for case, (actions, held) in CASES.items():
        enter(typist, box, actions)
        expect(box).to_have_value(held)
        want = api(live_server, "/api/compare", {"text": held, "tokenizers": COMPARED})
        chars, words = want["text_chars"], want["words"]
        caption = f"{chars:,} character{'s' * (chars != 1)}, {words:,} word{'s' * (words != 1)}; ★ best in its column"
        expect(typist.locator("#compare-stats caption"), case).to_have_text(caption)
        for res in want["results"]:
            name, stats = res["tokenizer"], res["stats"]
            row = typist.locator(f'#compare-stats tr[data-tokenizer="{name}"]')
            for column in ("tokens", "chars_per_token", "bytes_per_token", "fertility", "partial_share", "unknown",
                           "byte_fallback"):
                value = stats[column]
                expect(row.locator(f'td[data-col="{column}"]'), f"{case}: {name} {column}").to_have_attribute(
                    "data-value", "" if value is None else str(value))
            expect(row.locator('td[data-col="tokens"]')).to_contain_text(f"{res['count']:,}")
            if res["count"]:  # ratios: the exact one, rounded once
                for column, numerator in (("chars_per_token", chars), ("bytes_per_token", want["text_bytes"])):
                    expect(row.locator(f'td[data-col="{column}"]')).to_contain_text(two(numerator / res["count"]))
                share = f"{stats['partial'] / res['count'] * 100:.1f}%"
                expect(row.locator('td[data-col="partial_share"]')).to_contain_text(share)
            diffs = len(want["boundary_diff"][name])
            pane = typist.locator(f'.pane[data-tokenizer="{name}"]')
            expect(pane.locator(".pane-count"), case).to_have_text(f"{res['count']:,} tokens")
            if name != want["reference"]:
                expect(row.locator('td[data-col="boundary_diffs"]')).to_have_text(str(diffs))
                expect(pane.locator(".pane-diff")).to_have_text(f"{diffs} {'cut differs' if diffs == 1 else 'cuts differ'}")
        assert "%0D" not in typist.url


def test_chat_counts_are_the_apis_for_the_messages_it_holds(typist: Page, live_server: str):
    typist.goto(f"{live_server}/chat?tokenizer=llama-3&compare=cl100k_base")
    boxes = typist.locator('#chat-form textarea[name="content"]')
    expect(boxes).to_have_count(2)
    for case, (actions, held) in CASES.items():
        for n in range(2):
            enter(typist, boxes.nth(n), actions)
            expect(boxes.nth(n)).to_have_value(held)
        roles = typist.locator('#chat-form select[name="role"]').evaluate_all("s => s.map(e => e.value)")
        messages = [{"role": role, "content": held} for role in roles]
        want = api(live_server, "/api/chat",
                   {"tokenizer": "llama-3", "tokenizers": ["llama-3", "cl100k_base"], "messages": messages})
        for res in want["results"]:
            pane = typist.locator(f'.pane[data-tokenizer="{res["tokenizer"]}"]')
            expect(pane.locator(".pane-count"), case).to_have_attribute("data-count", str(res["count"]))
            expect(pane.locator(".pane-count"), case).to_have_text(f"{res['count']:,} tokens")
            expect(pane.locator(".pane-special"), case).to_have_text(f"({res['special']} special)")


LAB_RUNS = {
    "byte-level, GPT-2 regex": {"algorithm": "byte", "pattern": "gpt2", "size": "40"},
    "byte-level, whitespace": {"algorithm": "byte", "pattern": "whitespace", "size": "40"},
    "character-level": {"algorithm": "char", "pattern": "gpt2", "size": "40"},
    "character-level with </w>": {"algorithm": "char", "pattern": "whitespace", "end_of_word": True, "size": "40"},
    "SentencePiece-style": {"algorithm": "sentencepiece", "size": "40"},
    "WordPiece": {"algorithm": "wordpiece", "size": "40"},
    # sentencepiece's unigram trainer learns at most 8 pieces on this corpus (it refuses more, as sentencepiece does)
    "Unigram": {"algorithm": "unigram", "size": "8"},
}
#: Characters the corpus below lacks (q, Ω, ſ), for the encode box.
MISSING = " quiq Ω ſ"


@pytest.mark.parametrize("setup", LAB_RUNS.values(), ids=LAB_RUNS.keys())
def test_lab_counts_are_the_apis_for_the_corpus_and_word_it_holds(typist: Page, live_server: str, setup: dict):
    """A corpus entered into the lab's text area (typed and pasted, every case above: line breaks of every kind)
    trains on the text the text area holds: the run says that many characters, and at its last step the corpus
    and a text typed into the encode box (with characters the corpus lacks) take as many tokens as /api/tokenize
    gives with the run's tokenizer ("use in playground"), for every algorithm. Where training counts the corpus
    otherwise (its words only, or a line at a time), the page says so with training's own number."""
    typist.goto(f"{live_server}/lab")
    corpus = typist.locator("#corpus")
    actions = [a for acts, _ in CASES.values() for a in [*acts, ("press", "Enter")]]
    held = "".join(h + "\n" for _, h in CASES.values())
    assert not {"q", "Ω", "ſ"} & set(held)
    enter(typist, corpus, actions)
    expect(corpus).to_have_value(held)
    typist.locator('select[name="algorithm"]').select_option(setup["algorithm"])
    if "pattern" in setup:
        typist.locator('select[name="pattern"]').select_option(setup["pattern"])
    if setup.get("end_of_word"):
        typist.locator('input[name="end_of_word"]').check()
    typist.locator('input[name="size"]').fill(setup["size"])
    typist.get_by_role("button", name="Train").click()
    typist.wait_for_url(re.compile(r"/lab/runs/\w+"))
    run_id = re.search(r"/lab/runs/(\w+)", typist.url)[1]
    summary = httpx.get(f"{live_server}/api/train/{run_id}", timeout=30).json()
    assert summary["corpus_chars"] == len(held)
    assert summary["options"]["algorithm"] == setup["algorithm"]
    chars = api(live_server, "/api/tokenize", {"text": held, "tokenizer": "gpt2"})["chars"]
    expect(typist.locator(".lab-desc")).to_contain_text(f"{chars:,} characters")

    n = summary["merges"]
    typist.goto(f"{live_server}/lab/runs/{run_id}?step={n}")
    with typist.expect_response(lambda r: r.url.endswith(f"/lab/runs/{run_id}/use")):
        typist.locator(f'form[hx-post="/lab/runs/{run_id}/use"] button').click()
    cookies = {c["name"]: c["value"] for c in typist.context.cookies()}
    mine = f"lab-{run_id}"
    whole = api(live_server, "/api/tokenize", {"text": held, "tokenizer": mine}, cookies)
    expect(typist.locator("#stat-tokens")).to_have_text(f"{whole['count']:,}")
    step = httpx.get(f"{live_server}/api/train/{run_id}/steps/{n}", timeout=30).json()
    assert step["text_tokens"] == summary["text_tokens"] == whole["count"]
    if step["corpus_tokens"] != whole["count"]:
        expect(typist.locator("#stat-trained-tokens")).to_have_text(f"{step['corpus_tokens']:,}")
    else:
        expect(typist.locator("#stat-trained-tokens")).to_have_count(0)

    box = typist.locator("#encode-text")
    text = "lowest" + LAB_WORD + MISSING
    enter(typist, box, [("type", "lowest"), ("insert", LAB_WORD), ("type", MISSING)])
    expect(box).to_have_value(text)
    box.press("Enter")
    word = api(live_server, "/api/tokenize", {"text": text, "tokenizer": mine}, cookies)
    expect(typist.locator("#trace-count")).to_contain_text(f"{word['count']} tokens")
    trace = api(live_server, f"/api/train/{run_id}/encode", {"text": text})
    assert trace["ids"] == word["ids"]
