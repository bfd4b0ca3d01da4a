"""Every page passes axe-core (npm ``axe-core``, pinned in package-lock.json) in Chromium, light and dark, with no
serious or critical violation: contrast, names of controls and links, landmarks, ARIA used as it is meant.

Each page is loaded as a visitor opens it (lab runs, a class session and side by side trained first), the colour
scheme set by the browser (``prefers-color-scheme``) and, where the page has the theme switch, by the switch too;
axe runs over the whole document once the page has settled. A violation fails with its rule, its help text and the
elements it found, so it can be fixed where it is.
"""

from __future__ import annotations

import json

import httpx
import pytest
from helpers.lab_helpers import wait_done
from playwright.sync_api import Page

from app.lab.examples import SAMPLE_CORPUS, SIDE_VOCAB_SIZE
from app.settings import Settings

pytestmark = pytest.mark.browser

AXE = Settings().npm_dir / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")
CORPUS = "the cat sat on the mat with the hat; low lower lowest newer newest widest " * 8


@pytest.fixture(scope="module")
def runs(live_server: str) -> dict:
    """A finished BPE run, a finished unigram run, side by side's three runs and a class session on the BPE run."""
    with httpx.Client(base_url=live_server, timeout=120) as c:
        bpe = wait_done(c, c.post("/api/train", json={"corpus": CORPUS, "algorithm": "byte", "merges": 12}).json()["id"])
        # sentencepiece's trainers (unigram, side by side) refuse a size the corpus cannot fill: the lab's sample
        unigram = wait_done(c, c.post("/api/train", json={"corpus": SAMPLE_CORPUS, "algorithm": "unigram",
                                                          "vocab_size": SIDE_VOCAB_SIZE}).json()["id"])
        three = c.post("/api/train/side-by-side", json={"corpus": SAMPLE_CORPUS, "vocab_size": SIDE_VOCAB_SIZE}).json()["runs"]
        for started in three.values():
            wait_done(c, started["id"])
        session = c.post(f"/api/train/{bpe['id']}/session").json()
    side = "&".join(f"{side}={r['id']}" for side, r in three.items())
    return {"bpe": bpe["id"], "unigram": unigram["id"], "side": side, "code": session["code"]}


PATHS = [
    "/", "/?text=strawberry&tokenizer=cl100k_base&explain=2", "/?text=as+well+as+the+rest&tokenizer=jurassic-2&explain=1",
    "/?text=unaffable&tokenizer=bert-base-uncased&explain=1", "/compare", "/chat", "/oddities", "/languages",
    "/languages/jpn", "/lab", "bpe-run", "unigram-run", "share", "side-by-side", "/follow", "follow-class", "/docs",
    "handout", "/vocab", "/numbers", "/measure",
]


def resolve(path: str, runs: dict) -> str:
    return {
        "bpe-run": f"/lab/runs/{runs['bpe']}?step=3",
        "unigram-run": f"/lab/runs/{runs['unigram']}?step=1",
        "share": f"/lab/runs/{runs['bpe']}/share",
        "side-by-side": f"/lab/side-by-side?{runs['side']}",
        "follow-class": f"/follow/{runs['code']}",
        "handout": f"/lab/runs/{runs['bpe']}/handout?step=6",
    }.get(path, path)


def violations(page: Page) -> list[dict]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => ({target: n.target.join(' '), summary: n.failureSummary}))}))"""
    )
    return [v for v in found if v["impact"] in SERIOUS]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("path", PATHS)
def test_every_page_has_no_serious_accessibility_violation(browser, live_server: str, runs: dict, path: str,
                                                           scheme: str):
    context = browser.new_context(color_scheme=scheme, bypass_csp=True, viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(live_server + resolve(path, runs))
        page.wait_for_load_state("networkidle")
        found = violations(page)
        assert not found, f"{path} ({scheme}):\n" + json.dumps(found, indent=1, ensure_ascii=False)
    finally:
        context.close()
