"""The pickers in real Chromium, exact where users look (issue 21): a model is found by the name people know
(gpt-4o, gpt-4, gpt-oss, o3, gpt-5, a dated gpt-4o-… name), and the entry says which name matched; choosing
another model keeps the engine the user chose last where that model has it, else its reference library, never
a silent switch (playground, chat, compare); and no name is ever cut, at 1280 px or on a 390 px phone."""

from __future__ import annotations

import re
from urllib.parse import quote

import httpx
import pytest
from helpers.oracles import tiktoken_encoding
from playwright.sync_api import Page, expect

from app.engines import registry
from app.engines.datafiles import data_path
from app.web.rendering.pickers import picker_groups

pytestmark = pytest.mark.browser

TEXT = "Hello world 12345, 日本語 🙂"


@pytest.fixture()
def play(no_dialogs: Page) -> Page:
    no_dialogs.set_viewport_size({"width": 1280, "height": 800})
    return no_dialogs


def combobox(page: Page, base: str = "tokenizer"):
    return page.locator(f"#{base}-combo")


def active_option(page: Page):
    return page.locator("[role=option].active")


def pick(page: Page, title: str, base: str = "tokenizer") -> None:
    """Choose the model titled ``title`` with the mouse, as a user does."""
    combobox(page, base).click()
    page.locator(f"#{base}-list [role=option]").filter(has=page.locator(".picker-title", has_text=re.compile(
        "^" + re.escape(title) + "$"))).click()


def shown_ids(page: Page, name: str) -> list[int]:
    """The ids the playground shows once its result is ``name``'s."""
    expect(page.locator(".panel-head h2").first).to_contain_text(f"· {name}")
    return [int(t) for t in page.locator("#ids .id").all_inner_texts()]


@pytest.mark.parametrize(
    ("typed", "entry", "said"),
    [
        ("gpt-4o", "o200k_base", "matches gpt-4o"),
        ("gpt-4", "cl100k_base", "matches gpt-4"),
        ("gpt-oss", "o200k_harmony", "matches gpt-oss"),
        ("o3", "o200k_base", "matches o3"),
        ("gpt-5", "o200k_base", "matches gpt-5"),
        ("gpt-4o-2024-05-13", "o200k_base", "matches gpt-4o-…"),
        ("gpt-oss-120b", "o200k_harmony", "matches gpt-oss-…"),
        ("text-embedding-3-small", "cl100k_base", "matches text-embedding-3-small"),
        ("davinci", "gpt2", "matches davinci"),
    ],
)
def test_typing_a_model_name_finds_its_entry_and_says_which_name_matched(play: Page, live_server: str, typed, entry, said):
    assert registry.resolve(typed) == entry  # the server's answer, which the picker must agree with
    play.goto(f"{live_server}/?tokenizer=mistral-7b&text={quote(TEXT)}")
    combobox(play).click()
    play.keyboard.type(typed)
    active = active_option(play)
    expect(active.locator(".picker-title")).to_have_text(entry)
    expect(active.locator(".picker-match")).to_have_text(said)
    assert said in active.get_attribute("aria-label")  # screen readers hear it too
    if typed == "gpt-4":  # a part of other names finds those too, after the entry it names
        other = play.locator("#tokenizer-list [role=option]").filter(has_text="o200k_base")
        expect(other.locator(".picker-match")).to_have_text(re.compile(r"^matches gpt-4o, gpt-4\.1, "))
    with play.expect_response(lambda r: r.url.endswith("/render")):
        play.keyboard.press("Enter")
    expect(play.locator("#tokenizer")).to_have_value(entry)
    expect(combobox(play)).to_have_value(entry)
    # the address keeps the model name typed whole (it resolves to the entry), so the page can say its context window
    expect(play).to_have_url(re.compile(rf"tokenizer={re.escape(typed)}&"))
    assert shown_ids(play, entry) == tiktoken_encoding(entry).encode(TEXT)
    expect(play.locator("#count-tokens")).to_have_text(str(len(tiktoken_encoding(entry).encode(TEXT))))


def test_the_compare_filter_finds_model_names_and_enter_ticks_the_entry(page: Page, live_server: str):
    page.goto(f"{live_server}/compare?t=gpt2&t=cl100k_base&text={quote(TEXT)}")
    expect(page.locator("#compare-stats tbody tr")).to_have_count(2)
    page.get_by_label("Filter the tokenizers").fill("gpt-oss")
    visible = page.locator("#compare-picker .picker-row:visible")
    expect(visible).to_have_count(1)
    expect(visible.locator(".picker-title")).to_have_text("o200k_harmony")
    expect(visible.locator(".picker-match")).to_have_text("matches gpt-oss")
    with page.expect_response(lambda r: "/compare/results" in r.url):
        page.get_by_label("Filter the tokenizers").press("Enter")
    expect(page.locator('#compare-picker input[name=t][value="o200k_harmony"]')).to_be_checked()
    expect(page.locator('#compare-picker input[name=t][value="native-o200k_harmony"]')).not_to_be_checked()
    page.get_by_label("Filter the tokenizers").fill("gpt-4")
    expect(visible).to_have_count(2)  # cl100k_base (gpt-4) and o200k_base (gpt-4o, gpt-4.1...)
    expect(visible.locator(".picker-match-exact")).to_have_text(["matches gpt-4"])
    page.get_by_label("Filter the tokenizers").fill("")
    expect(page.locator("#compare-picker .picker-match:visible")).to_have_count(0)


# -- the engine a user chose ----------------------------------------------------------------------------------------


def test_playground_keeps_the_engine_chosen_last_never_switching_silently(play: Page, live_server: str):
    # The case: Tokenplay chosen (native-gpt2), then Mistral (one engine), then cl100k: still Tokenplay.
    play.goto(f"{live_server}/?tokenizer=native-gpt2&text={quote(TEXT)}")
    engine = play.get_by_label("Engine", exact=True)
    pick(play, "Mistral 7B v0.1")
    expect(play.locator("#tokenizer")).to_have_value("mistral-7b")
    pick(play, "cl100k_base")
    expect(play.locator("#tokenizer")).to_have_value("native-cl100k_base")
    expect(engine).to_have_value("native-cl100k_base")
    expect(play).to_have_url(re.compile(r"tokenizer=native-cl100k_base&"))
    assert shown_ids(play, "native-cl100k_base") == tiktoken_encoding("cl100k_base").encode(TEXT)
    # ...kept for the tab: a reload on Mistral still remembers Tokenplay.
    pick(play, "BERT base uncased")
    expect(play).to_have_url(re.compile(r"tokenizer=bert-base-uncased&"))
    play.reload()
    expect(combobox(play)).to_have_value("BERT base uncased")
    pick(play, "Llama 3")
    expect(play.locator("#tokenizer")).to_have_value("native-llama-3")
    # Choosing the reference library in the switch is a choice too.
    with play.expect_response(lambda r: r.url.endswith("/render")):
        engine.select_option(label="tokenizers")
    pick(play, "Jurassic-2")
    pick(play, "o200k_base")
    expect(play.locator("#tokenizer")).to_have_value("o200k_base")  # tiktoken: the reference, no "tokenizers"


def test_a_user_who_never_chose_an_engine_gets_the_reference_library(play: Page, live_server: str):
    play.goto(f"{live_server}/?tokenizer=mistral-7b&text={quote(TEXT)}")
    pick(play, "BERT base uncased")
    pick(play, "cl100k_base")
    expect(play.locator("#tokenizer")).to_have_value("cl100k_base")
    expect(play.get_by_label("Engine", exact=True)).to_have_value("cl100k_base")
    pick(play, "Llama 3")
    expect(play.locator("#tokenizer")).to_have_value("llama-3")
    pick(play, "gpt2")
    expect(play.locator("#tokenizer")).to_have_value("gpt2")
    assert shown_ids(play, "gpt2") == tiktoken_encoding("gpt2").encode(TEXT)


def test_chat_keeps_the_engine_chosen_last(page: Page, live_server: str):
    # The chat case: cl100k (reference), then Mistral, then gpt2: gpt2 by tiktoken, not native-gpt2.
    page.goto(f"{live_server}/chat?tokenizer=cl100k_base")
    pick(page, "Mistral 7B v0.1", "chat-tokenizer")
    expect(page.locator("#chat-tokenizer")).to_have_value("mistral-7b")
    pick(page, "gpt2", "chat-tokenizer")
    expect(page.locator("#chat-tokenizer")).to_have_value("gpt2")
    expect(page.locator(".pane").first).to_have_attribute("data-tokenizer", "gpt2")
    # Tokenplay chosen in the switch, then a one-engine model, then a message row added (the pickers are swapped
    # in anew): the next model still gets Tokenplay.
    pick(page, "cl100k_base", "chat-tokenizer")
    page.locator("#chat-tokenizer-engine").select_option(label="Tokenplay")
    expect(page.locator(".pane").first).to_have_attribute("data-tokenizer", "native-cl100k_base")
    pick(page, "Mistral 7B v0.1", "chat-tokenizer")
    expect(page.locator(".pane").first).to_have_attribute("data-tokenizer", "mistral-7b")
    page.get_by_role("button", name="Add message").click()
    expect(page.locator("textarea[name=content]")).to_have_count(3)
    pick(page, "o200k_base", "chat-tokenizer")
    expect(page.locator("#chat-tokenizer")).to_have_value("native-o200k_base")
    expect(page.locator(".pane").first).to_have_attribute("data-tokenizer", "native-o200k_base")
    expect(page).to_have_url(re.compile(r"tokenizer=native-o200k_base"))
    # The other picker has a memory of its own: nothing chosen there, so the reference library.
    pick(page, "Llama 3", "chat-compare")
    expect(page.locator("#chat-compare")).to_have_value("llama-3")


def test_compare_titles_tick_the_engine_chosen_last(page: Page, live_server: str):
    page.goto(f"{live_server}/compare?t=gpt2&t=cl100k_base&text={quote(TEXT)}")
    picker = page.locator("#compare-picker")
    page.get_by_role("button", name=re.compile(r"^Show all")).click()  # folded to the chosen two: unfold
    with page.expect_response(lambda r: "/compare/results" in r.url):
        picker.locator(".picker-title", has_text=re.compile(r"^Llama 3$")).click()  # no engine yet: the reference
    expect(picker.locator('input[name=t][value="llama-3"]')).to_be_checked()
    expect(picker.locator('input[name=t][value="native-llama-3"]')).not_to_be_checked()
    with page.expect_response(lambda r: "/compare/results" in r.url):
        picker.locator('input[name=t][value="native-qwen3"]').check()  # an engine chosen: Tokenplay
    with page.expect_response(lambda r: "/compare/results" in r.url):
        picker.locator(".picker-title", has_text="Mistral 7B v0.1").click()  # one engine: no change of mind
    with page.expect_response(lambda r: "/compare/results" in r.url):
        picker.locator(".picker-title", has_text="DeepSeek-V3").click()
    expect(picker.locator('input[name=t][value="native-deepseek-v3"]')).to_be_checked()
    expect(picker.locator('input[name=t][value="deepseek-v3"]')).not_to_be_checked()
    expect(page.locator("#compare-stats tbody tr")).to_have_count(6)
    expect(page).to_have_url(re.compile(r"t=native-deepseek-v3"))
    page.get_by_label("Filter the tokenizers").fill("gpt-oss")
    with page.expect_response(lambda r: "/compare/results" in r.url):
        page.get_by_label("Filter the tokenizers").press("Enter")
    expect(picker.locator('input[name=t][value="native-o200k_harmony"]')).to_be_checked()


# -- names are never cut --------------------------------------------------------------------------------------------


LONG = "a-very-long-tokenizer-name-" + "x" * 37  # 64 characters, the longest name allowed

#: The title is whole: not wider than its box, not wider than the combobox or the page, every character there,
#: and the input over it shows no text of its own (it would be cut) while nothing is typed.
UNCUT = """([title, width]) => {
  const shown = document.querySelector("#tokenizer-picker .picker-shown");
  const combo = document.querySelector("#tokenizer-picker .picker-combo").getBoundingClientRect();
  const box = shown.getBoundingClientRect();
  const input = document.querySelector("#tokenizer-combo");
  return {
    text: shown.textContent, value: input.value,
    fits: shown.scrollWidth <= shown.clientWidth && box.right <= combo.right + 0.5 && combo.right <= width,
    inputInk: getComputedStyle(input).color,
  };
}"""
OPTIONS_UNCUT = """(width) => Array.from(document.querySelectorAll("#tokenizer-list .picker-title")).filter((t) => {
  const r = t.getBoundingClientRect(), list = t.closest(".picker-list").getBoundingClientRect();
  return !(t.scrollWidth <= t.clientWidth && r.right <= list.right + 0.5 && list.right <= width);
}).map((t) => t.textContent)"""
ROWS_UNCUT = """(width) => Array.from(document.querySelectorAll("#compare-picker .picker-title")).filter((t) => {
  const r = t.getBoundingClientRect();
  return !(t.scrollWidth <= t.clientWidth && r.right <= width);
}).map((t) => t.textContent)"""


@pytest.mark.parametrize("width", [1280, 390])
def test_no_name_is_cut_in_any_picker(page: Page, live_server: str, width: int):
    page.set_viewport_size({"width": width, "height": 844})
    r = page.request.post(f"{live_server}/api/tokenizers", multipart={
        "file": {"name": "gpt2.tiktoken", "mimeType": "text/plain", "buffer": data_path("openai/gpt2.tiktoken").read_bytes()},
        "name": LONG, "pattern": "gpt2",
    })
    assert r.status == 201, r.text()
    names = [t["name"] for t in httpx.get(f"{live_server}/api/tokenizers").json()["tokenizers"]]
    entries = [e for g in picker_groups([registry.spec(n) for n in names]) for e in g.entries]
    page.goto(f"{live_server}/?tokenizer=cl100k_base&text=hi")
    for entry in entries + [type("Long", (), {"name": LONG, "title": LONG})]:
        page.locator("#tokenizer").select_option(entry.name)  # the combobox follows whoever sets the <select>
        expect(combobox(page)).to_have_value(entry.title)
        seen = page.evaluate(UNCUT, [entry.title, width])
        assert seen["text"] == entry.title and seen["fits"], (entry.name, seen)
        assert seen["inputInk"] == "rgba(0, 0, 0, 0)", (entry.name, seen)
    combobox(page).click()
    expect(page.locator("#tokenizer-list .picker-title")).to_have_count(len(entries) + 1)
    assert page.evaluate(OPTIONS_UNCUT, width) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.keyboard.press("Escape")
    page.goto(f"{live_server}/compare?t=gpt2&t={LONG}&text=hi")
    page.get_by_role("button", name=re.compile(r"^Show all")).click()  # every row, not only the chosen two
    assert page.evaluate(ROWS_UNCUT, width) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.goto(f"{live_server}/chat?tokenizer=o200k_harmony&compare=bert-base-uncased")
    for base, title in (("chat-tokenizer", "o200k_harmony"), ("chat-compare", "BERT base uncased")):
        shown = page.locator(f"#{base}-picker .picker-shown")
        expect(shown).to_have_text(title)
        assert shown.evaluate("s => s.scrollWidth <= s.clientWidth")
    # While a search is typed, the typed text shows and the title hides (it keeps the field's size).
    combobox(page, "chat-tokenizer").click()
    page.keyboard.type("qwen")
    expect(page.locator("#chat-tokenizer-picker .picker-shown")).to_be_hidden()
    assert combobox(page, "chat-tokenizer").evaluate("i => getComputedStyle(i).color") != "rgba(0, 0, 0, 0)"
    page.keyboard.press("Escape")
    expect(page.locator("#chat-tokenizer-picker .picker-shown")).to_be_visible()
