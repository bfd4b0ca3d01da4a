"""XSS payloads in real Chromium: typed, loaded from URLs, decoded from token ids, trained on in the lab.

Nothing may run or appear: no dialog (alert) opens, no element with id ``pwned`` exists, ``window.pwned`` stays
undefined, no ``on*`` / ``hx-*`` attribute or script holds the marker; the payload is shown as text.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect
from helpers.xss_payloads import ALL, PAYLOADS

from app.engines import registry

pytestmark = pytest.mark.browser

PROBE = """() => {
  const bad = [];
  if (window.pwned !== undefined) bad.push('window.pwned is set');
  if (document.getElementById('pwned')) bad.push('an element with id pwned exists');
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      const n = a.name.toLowerCase();
      if ((n.startsWith('on') || n.startsWith('hx-') || n === 'srcdoc') && a.value.includes('pwned'))
        bad.push(`<${el.tagName.toLowerCase()} ${n}="${a.value.slice(0, 60)}">`);
      if ((n === 'href' || n === 'src' || n === 'action') && /^\\s*javascript:/i.test(a.value))
        bad.push(`<${el.tagName.toLowerCase()} ${n}="${a.value.slice(0, 60)}">`);
    }
  }
  for (const s of document.scripts) if (s.text.includes('pwned')) bad.push('a script holds the marker');
  for (const f of document.querySelectorAll('iframe')) bad.push('an iframe exists');
  if (document.querySelector('base')) bad.push('a <base> exists');
  return bad;
}"""


@pytest.fixture()
def guarded(page: Page) -> Page:
    def no_dialog(dialog):
        message = dialog.message
        dialog.dismiss()
        pytest.fail(f"a dialog opened: {message!r} (user text must never run)")

    page.on("dialog", no_dialog)
    page.set_viewport_size({"width": 1280, "height": 800})
    return page


def assert_inert(page: Page, where: str) -> None:
    page.wait_for_timeout(150)  # give an injected handler (onerror, onload, ontoggle) the chance to fire
    bad = page.evaluate(PROBE)
    assert not bad, f"{where}: {bad}"


def settle(page: Page) -> None:
    page.wait_for_function("() => !document.querySelector('.htmx-request')", timeout=15_000)


def test_payloads_in_the_playground_url(guarded: Page, live_server: str):
    for payload in PAYLOADS:
        guarded.goto(f"{live_server}/?{urlencode({'text': payload, 'tokenizer': 'gpt2'})}")
        expect(guarded.locator("#text")).to_have_value(payload)
        assert_inert(guarded, f"GET / with {payload!r}")
        assert "pwned" in guarded.locator("#result").inner_text()


def test_typed_payloads_and_tokenizer_switch(guarded: Page, live_server: str):
    guarded.goto(f"{live_server}/?tokenizer=cl100k_base&text=")
    for name in ("cl100k_base", "gpt2", "mistral-7b", "custom-bpe"):
        guarded.select_option("#tokenizer", name)
        settle(guarded)
        for payload in (ALL, PAYLOADS[1], PAYLOADS[3], PAYLOADS[12]):
            with guarded.expect_response(lambda r: r.url.endswith("/render")):
                guarded.locator("#text").fill(payload)
            settle(guarded)
            assert_inert(guarded, f"typed into the playground ({name})")
        # hovering and focusing tokens must not wake anything up either
        tokens = guarded.locator("#result .tokens > span")
        assert tokens.count() > 0
        for i in range(min(tokens.count(), 15)):
            tokens.nth(i).hover()
        assert_inert(guarded, f"hovered tokens ({name})")


def test_decode_box_with_tokens_that_are_markup(guarded: Page, live_server: str):
    gpt2 = registry.get("gpt2")
    ids = [22039, 3556, 13291, 37495, 44598] + gpt2.encode("<img id=pwned src=x onerror=alert('pwned')>")
    guarded.goto(f"{live_server}/?tokenizer=gpt2&text=")
    with guarded.expect_response(lambda r: r.url.endswith("/decode")):
        guarded.locator("#ids-input").fill(", ".join(map(str, ids)))
    settle(guarded)
    expect(guarded.locator("#decoded .decoded-text")).to_contain_text("onerror=alert('pwned')")
    assert_inert(guarded, "decode box")


def test_compare_and_chat(guarded: Page, live_server: str):
    guarded.goto(
        f"{live_server}/compare?{urlencode({'text': ALL, 't': ['gpt2', 'cl100k_base', 'mistral-7b']}, doseq=True)}"
    )
    assert_inert(guarded, "compare page")
    with guarded.expect_response(lambda r: "/compare/results" in r.url):
        guarded.locator("#compare-text").fill(ALL + "\n" + PAYLOADS[2])
    settle(guarded)
    assert_inert(guarded, "compare results")
    guarded.goto(f"{live_server}/chat")
    with guarded.expect_response(lambda r: "/chat/result" in r.url):
        guarded.locator("#content-0").fill(ALL)
    settle(guarded)
    assert_inert(guarded, "chat result")
    assert "pwned" in guarded.locator("#chat-result").inner_text()


def test_lab_run_with_payloads_as_corpus(guarded: Page, live_server: str):
    r = guarded.request.post(
        f"{live_server}/api/train",
        data={"corpus": (ALL + "\n") * 3, "algorithm": "byte", "pattern": "gpt2", "merges": 15},
    )
    assert r.status in (200, 202), r.text()
    run_id = r.json()["id"]
    deadline = time.monotonic() + 30
    while guarded.request.get(f"{live_server}/api/train/{run_id}").json()["status"] in ("queued", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    for step in (0, 1, 7, 15):
        guarded.goto(f"{live_server}/lab/runs/{run_id}?step={step}")
        assert_inert(guarded, f"lab step {step}")
    guarded.locator("#encode-text").fill(PAYLOADS[1][:200])
    with guarded.expect_response(lambda r: r.url.endswith("/encode")):
        guarded.locator(".encode-form button").click()
    settle(guarded)
    assert_inert(guarded, "lab encode trace")
    with guarded.expect_response(lambda r: "/vocab" in r.url):
        guarded.locator("#vocab-q").fill("<img")
    settle(guarded)
    assert_inert(guarded, "lab vocabulary search")
