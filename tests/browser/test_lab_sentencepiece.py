"""sentencepiece's trainers in the lab, in Chromium (issue 33): the setup form shows sentencepiece's options for
SentencePiece BPE and Unigram only, the Llama 2 preset fills them in and a run trains with them; each byte-fallback
lesson is one click, opening the run with its vocabulary in the .model's order and the Korean text encoded (byte
pieces, or <unk> without byte fallback); nothing sticks out at 1280 and 390 px, light and dark.
``TOKENPLAY_SCREENSHOT_DIR=dir`` also saves screenshots there."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from app.lab.examples import PRESETS

pytestmark = pytest.mark.browser

SIZES = {"1280": (1280, 800), "390": (390, 844)}
STICKS_OUT = """() => {
  const view = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth > view) out.push(`the page is ${document.documentElement.scrollWidth} px wide`);
  for (const el of document.querySelectorAll('.lab .card, .spm-options'))
    if (el.scrollWidth > el.clientWidth + 1) out.push(`${el.className}: ${el.scrollWidth} > ${el.clientWidth}`);
  return out;
}"""


def shot(page: Page, name: str) -> None:
    folder = os.environ.get("TOKENPLAY_SCREENSHOT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_options_show_for_sentencepiece_and_the_llama2_preset_fills_them(page: Page, live_server: str, size, scheme):
    page.set_viewport_size(dict(zip(("width", "height"), SIZES[size])))
    page.emulate_media(color_scheme=scheme)
    page.goto(f"{live_server}/lab")
    options = page.locator(".spm-options")
    expect(options).to_be_hidden()  # byte-level BPE: sentencepiece's options do not apply
    page.select_option("select[name=algorithm]", "sentencepiece")
    expect(options).to_be_visible()
    expect(page.locator(".for-ties")).to_be_hidden()
    expect(page.locator("input[name=sp_byte_fallback]")).not_to_be_checked()  # sentencepiece's default
    page.get_by_role("button", name="Llama 2", exact=True).click()
    expect(page.locator("#spm-preset-status")).to_have_text("Llama 2: filled in")
    preset = PRESETS["llama-2"]["options"]
    for name, value in preset.items():
        field = page.locator(f"[name=sp_{name}]")
        if isinstance(value, bool):
            expect(field).to_be_checked(checked=value)
        else:
            expect(field).to_have_value(str(value))
    assert page.evaluate(STICKS_OUT) == []
    shot(page, f"lab-spm-options-{size}-{scheme}")
    page.select_option("select[name=size_kind]", "vocab_size")
    page.locator("input[name=size]").fill("400")
    page.get_by_role("button", name="Train", exact=True).click()
    expect(page.locator("#step")).to_have_attribute("data-step", "0")
    run_id = page.url.split("/lab/runs/")[1].split("?")[0]
    run = httpx.get(f"{live_server}/api/train/{run_id}").json()
    assert run["options"]["sentencepiece"] == {k: v for k, v in preset.items() if k in (
        "byte_fallback", "remove_extra_whitespaces", "normalization_rule_name", "split_digits",
        "allow_whitespace_only_pieces", "character_coverage")}  # what differs from sentencepiece's defaults
    expect(page.locator(".lab-desc")).to_contain_text("byte_fallback=true")


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("lesson, title", [("byte-fallback", "Byte fallback: 400 SentencePiece pieces"),
                                           ("no-byte-fallback", "…and without it: Korean is <unk>")])
def test_a_lesson_is_one_click(page: Page, live_server: str, size, scheme, lesson, title):
    page.set_viewport_size(dict(zip(("width", "height"), SIZES[size])))
    page.emulate_media(color_scheme=scheme)
    page.goto(f"{live_server}/lab")
    page.get_by_role("button", name=title).click()
    page.wait_for_url(f"**lesson={lesson}")
    expect(page.locator(".lesson-note")).to_be_visible()
    chips = page.locator(".trace-steps li").last.locator(".chip")
    expect(chips.first).to_be_visible()  # the Korean text, encoded at once
    texts = chips.all_inner_texts()
    if lesson == "byte-fallback":
        assert "<0xEC>" in texts and "<unk>" not in texts
    else:
        assert "<unk>" in texts and not [t for t in texts if t.startswith("<0x")]
    vocab = page.locator(".vocab-list li")
    expect(vocab.first).to_contain_text("<unk>")
    kinds = page.locator(".vocab-list li .muted").all_inner_texts()
    assert kinds[:3] == ["special"] * 3 and kinds[-1] == "character"
    assert ("byte" in kinds) == (lesson == "byte-fallback") and any(k.startswith("#") for k in kinds)
    assert page.evaluate(STICKS_OUT) == []
    shot(page, f"lab-lesson-{lesson}-{size}-{scheme}")

