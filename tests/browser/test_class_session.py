"""A class following the teacher in real Chromium (issue 27): a teacher's lab page and two students' phones.

The teacher shares a run, steps with the keyboard, turns quiz mode on; each phone predicts the next merge (one
right, one wrong); the teacher's tally counts them, "reveal" steps forward and both phones say who was right.
A student browses back on their own and returns to follow; autoplay carries the class to the last step; ending
the session tells the phones. Every wait is for something to appear on a page (Playwright's expect), never a sleep.
"""

from __future__ import annotations

import re

import httpx
import pytest
from helpers.class_helpers import ENGLISH
from helpers.lab_helpers import wait_done
from playwright.sync_api import Browser, Page, expect

pytestmark = pytest.mark.browser

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "has_touch": True}


@pytest.fixture()
def run(live_server: str) -> dict:
    with httpx.Client(base_url=live_server, timeout=30) as c:
        r = c.post("/api/train", json={"corpus": ENGLISH * 3, "algorithm": "byte", "pattern": "gpt2", "merges": 12})
        return c.get(f"/api/train/{wait_done(c, r.json()['id'])['id']}").json()


@pytest.fixture()
def phones(browser: Browser):
    contexts = [browser.new_context(**PHONE) for _ in range(2)]  # two students: their own cookies
    yield [c.new_page() for c in contexts]
    for c in contexts:
        c.close()


def tap_pair(phone: Page, pair: list[str], right: bool) -> list[str]:
    """Tap the choice naming ``pair`` (or, with ``right`` False, the first other one); returns the pair tapped."""
    forms = phone.locator(".quiz-choices form")
    expect(forms).to_have_count(10)
    for i in range(forms.count()):
        form = forms.nth(i)
        shown = [form.locator("input[name=left]").get_attribute("value"), form.locator("input[name=right]").get_attribute("value")]
        if (shown == pair) == right:
            form.locator("button").tap()
            return shown
    raise AssertionError(f"no choice {'is' if right else 'differs from'} {pair}")


def test_a_class_follows_predicts_and_sees_the_reveal(page: Page, phones: list[Page], live_server: str, run: dict):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.on("dialog", lambda dialog: dialog.accept())  # "End the session?"
    page.goto(f"{live_server}/lab/runs/{run['id']}")
    page.get_by_role("button", name="Share with the class").click()
    share = page.locator("#share")
    expect(share.locator(".share-code")).to_have_text(re.compile(r"^[2-9A-HJKMNP-Z]{6}$"))
    code = share.locator(".share-code").inner_text()
    assert share.get_attribute("data-code") == code
    expect(share.locator("svg.qr-code")).to_be_visible()
    expect(share.get_by_role("link")).to_have_text(f"{live_server}/follow/{code}")

    alice, bob = phones
    for phone in phones:
        phone.goto(f"{live_server}/follow/{code}")
        expect(phone.locator("#follow-live")).to_have_attribute("data-state", "live")
        expect(phone.locator(".merge-card")).to_contain_text("Step 0 of 12: before any merge")
    expect(page.locator("#share-followers")).to_have_text("2")

    # the teacher steps with the keyboard: both phones move
    for k in (1, 2):
        page.keyboard.press("ArrowRight")
        expect(page.locator("#step")).to_have_attribute("data-step", str(k))
    merge2 = run["steps"][1]
    for phone in phones:
        expect(phone.locator("#view")).to_have_attribute("data-step", "2")
        expect(phone.locator(".merge-card")).to_contain_text("Merge 2 of 12")
        expect(phone.locator(".merge-line .chip").nth(2)).to_contain_text(merge2["token"].strip())

    # a nickname (optional) for the scoreboard: typed on the phone, kept while the class moves
    alice.locator("#nickname-input").fill("Ada <i>L</i>")
    alice.locator("#follow-name").get_by_role("button", name="Save").tap()
    expect(alice.locator("#follow-name [role=status]")).to_have_text("Saved: the scoreboard shows you as Ada <i>L</i>.")

    # quiz: one right prediction, one wrong
    page.locator("#share-quiz").click()
    expect(page.locator("#share-quiz")).to_have_attribute("aria-pressed", "true")
    for phone in phones:
        expect(phone.locator(".quiz h2")).to_have_text("Which pair merges next?")
        expect(phone.locator(".pair-table")).to_have_count(0)  # its counts would give the answer away
    right = run["steps"][2]["pair_text"]
    tap_pair(alice, right, True)
    wrong = tap_pair(bob, right, False)
    for phone in phones:
        expect(phone.locator(".quiz-done")).to_contain_text("You predicted")
    expect(page.locator("#share-voters")).to_have_text("2")
    expect(page.locator(".share-tally .tally li")).to_have_count(2)

    page.locator("#share-reveal").click()
    expect(page.locator("#step")).to_have_attribute("data-step", "3")
    expect(alice.locator(".reveal-card")).to_contain_text("✓ Right!")
    expect(bob.locator(".reveal-card")).to_contain_text("✗ Not this time.")
    expect(page.locator("#share-right")).to_have_text("1")
    expect(page.locator(".share-reveal li.right")).to_contain_text("✓ right")
    assert wrong != right
    expect(page.locator("#share-scoreboard .scoreboard li")).to_have_text(re.compile(r"^Ada <i>L</i>\s+1\s+of 1$"))
    expect(page.locator("#share-scoreboard")).to_contain_text("1 student without a nickname: 0 right of 1 between them.")
    expect(alice.locator("#nickname-input")).to_have_value("Ada <i>L</i>")  # the form outlives the class's steps

    # a student browses back on their own; the class goes on without them, then they return
    bob.locator("[data-own-nav]").first.tap()
    expect(bob.locator("#view")).to_have_attribute("data-step", "2")
    expect(bob.locator(".follow-own")).to_contain_text("the class is at step 3")
    page.keyboard.press("ArrowRight")
    expect(alice.locator("#view")).to_have_attribute("data-step", "4")
    expect(bob.locator(".follow-own [data-class-label]")).to_have_text("4")
    expect(bob.locator("#view")).to_have_attribute("data-step", "2")
    bob.get_by_role("button", name="Follow the class").tap()
    expect(bob.locator("#view")).to_have_attribute("data-step", "4")

    # autoplay carries the class to the end
    page.locator("#share-quiz").click()
    expect(page.locator("#share-quiz")).to_have_attribute("aria-pressed", "false")
    page.select_option("#speed", "100")
    page.locator("#play").click()
    expect(page.locator("#step")).to_have_attribute("data-step", "12", timeout=30_000)
    for phone in phones:
        expect(phone.locator("#view")).to_have_attribute("data-step", "12")
        expect(phone.locator(".merge-card")).to_contain_text("Merge 12 of 12")

    page.get_by_role("button", name="End session").click()
    expect(page.get_by_role("button", name="Share with the class")).to_be_visible()
    for phone in phones:
        expect(phone.locator(".follow-note")).to_contain_text("The teacher has ended this session.")
        expect(phone.locator("#follow-live")).to_have_attribute("data-state", "ended")


def test_the_join_page_takes_a_typed_code(page: Page, live_server: str, run: dict):
    with httpx.Client(base_url=live_server) as c:
        code = c.post(f"/api/train/{run['id']}/session").json()["code"]
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server}/follow")
    page.get_by_label("Session code").fill(code.lower())
    page.get_by_role("button", name="Join").click()
    expect(page).to_have_url(f"{live_server}/follow/{code}")
    expect(page.locator("#follow-live")).to_have_attribute("data-state", "live")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide on a 390 px phone"
