"""The tokenizer pickers in real Chromium (issue 14): type to filter, arrows and Enter pick a model; the engine
switch gives the native name and back; compare ticks engines and the reference; "Add a tokenizer…" uploads a file
and tokenizes with it (ids equal tiktoken's), or shows the server's message and keeps the form; phones fit; and
without JavaScript the native controls and the add form still work."""

from __future__ import annotations

import re
from urllib.parse import quote

import httpx
import pytest
from helpers.oracles import tiktoken_encoding
from playwright.sync_api import Browser, Page, expect
from tokenizers import Tokenizer as HFTokenizer

from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS
from app.web.rendering.pickers import picker_groups

pytestmark = pytest.mark.browser

TEXT = "Hello world 12345, 日本語のテキスト 🙂"
GPT2_FILE = data_path("openai/gpt2.tiktoken")


def hf_ids(name: str, text: str) -> list[int]:
    """Hugging Face tokenizers' ids for a shipped model (the reference the engines must equal)."""
    return HFTokenizer.from_file(str(data_path(NPM_MODELS[name].tokenizer_file))).encode(text, add_special_tokens=False).ids


@pytest.fixture()
def play(no_dialogs: Page) -> Page:
    no_dialogs.set_viewport_size({"width": 1280, "height": 800})
    return no_dialogs


def shown_ids(page: Page, scope: str = "#ids") -> list[int]:
    return [int(t) for t in page.locator(f"{scope} .id").all_inner_texts()]


def expect_ids(page: Page, ids: list[int]) -> None:
    expect(page.locator("#count-tokens")).to_have_text(f"{len(ids):,}")
    assert shown_ids(page) == ids


def active_option(page: Page) -> str:
    return page.evaluate(
        "() => document.getElementById(document.activeElement.getAttribute('aria-activedescendant')).textContent"
    )


def combobox(page: Page):
    return page.get_by_role("combobox", name="Tokenizer")


def test_keyboard_only_filter_arrows_enter_escape(play: Page, live_server: str):
    play.goto(f"{live_server}/?tokenizer=cl100k_base&text={quote(TEXT)}")
    expect_ids(play, tiktoken_encoding("cl100k_base").encode(TEXT))
    combo = combobox(play)
    expect(combo).to_have_value("cl100k_base")
    for _ in range(8):  # from the text area (autofocus) back to the picker, by keyboard only
        if play.evaluate("document.activeElement.getAttribute('role')") == "combobox":
            break
        play.keyboard.press("Shift+Tab")
    expect(combo).to_be_focused()

    vocab = play.locator("#tokenizer-picker .picker-chosen-vocab")
    expect(vocab).to_have_text("100,277")
    play.keyboard.type("qwen3")
    expect(vocab).to_be_hidden()  # a search shows no size: not the old model's, not a model's yet
    listbox = play.get_by_role("listbox", name="Tokenizer")
    expect(listbox).to_be_visible()
    expect(combo).to_have_attribute("aria-expanded", "true")
    options = listbox.get_by_role("option")
    expect(options).to_have_count(2)  # Qwen3, then "Add a tokenizer…"
    assert active_option(play).startswith("Qwen3") and "151,669" in active_option(play)
    play.keyboard.press("ArrowDown")
    assert active_option(play) == "Add a tokenizer…"
    play.keyboard.press("ArrowUp")
    assert active_option(play).startswith("Qwen3")
    with play.expect_response(lambda r: r.url.endswith("/render")):
        play.keyboard.press("Enter")
    expect(combo).to_have_attribute("aria-expanded", "false")
    expect(combo).to_have_value("Qwen3")
    expect(combo).to_be_focused()
    expect(vocab).to_have_text("151,669")
    expect(play.locator("#tokenizer")).to_have_value("qwen3")
    expect(play).to_have_url(re.compile(r"tokenizer=qwen3&"))
    expect_ids(play, hf_ids("qwen3", TEXT))

    # A maker's name finds its models; Escape closes and changes nothing.
    play.keyboard.type("google")
    expect(options).to_have_count(4)  # Google's BERT, Gemma 3 and Gemma 2, then "Add a tokenizer…"
    expect(options.filter(has_text="Gemma 3")).to_have_count(1)
    expect(options.filter(has_text="Gemma 2")).to_have_count(1)
    expect(options.filter(has_text="BERT base uncased")).to_have_count(1)
    play.keyboard.press("Escape")
    expect(listbox).to_be_hidden()
    expect(combo).to_have_value("Qwen3")
    expect(play.locator("#tokenizer")).to_have_value("qwen3")
    # ArrowDown opens the whole list on the chosen entry: one option per model, grouped by maker in order.
    play.keyboard.press("ArrowDown")
    expect(listbox).to_be_visible()
    assert active_option(play).startswith("Qwen3")
    groups = picker_groups(httpx_listed(live_server))
    expect(options).to_have_count(len(picker_entries(live_server)) + 1)
    expect(listbox.locator(".picker-group-label")).to_have_text([g.maker for g in groups])
    expect(listbox.get_by_role("option", name=re.compile(r"^Llama 3(?!\.)\b"))).to_have_count(1)
    play.keyboard.press("Escape")


def picker_entries(live_server: str) -> list:
    return [entry for group in picker_groups(httpx_listed(live_server)) for entry in group.entries]


def httpx_listed(live_server: str):
    """What a fresh browser is offered (GET /api/tokenizers), as specs for picker_groups."""
    from app.engines import registry

    names = [t["name"] for t in httpx.get(f"{live_server}/api/tokenizers").json()["tokenizers"]]
    return [registry.spec(n) for n in names]


def test_engine_switch_gives_the_native_name_and_back(play: Page, live_server: str):
    play.goto(f"{live_server}/?tokenizer=native-llama-3&text={quote(TEXT)}")
    combo = combobox(play)
    engine = play.get_by_label("Engine", exact=True)
    # The URL's native name shows the model's entry with the Tokenplay engine chosen.
    expect(combo).to_have_value("Llama 3")
    expect(play.locator("#tokenizer-picker .picker-chosen-vocab")).to_have_text("128,256")
    expect(engine).to_have_value("native-llama-3")
    expect(engine.locator("option")).to_have_text(["tokenizers", "Tokenplay"])
    expect_ids(play, hf_ids("llama-3", TEXT))

    with play.expect_response(lambda r: r.url.endswith("/render")):
        engine.select_option(label="tokenizers")
    expect(play.locator("#tokenizer")).to_have_value("llama-3")
    expect(play).to_have_url(re.compile(r"tokenizer=llama-3&"))
    expect(play.locator(".panel-head h2").first).to_contain_text("· llama-3")
    expect(combo).to_have_value("Llama 3")
    expect_ids(play, hf_ids("llama-3", TEXT))
    engine.select_option(label="Tokenplay")
    expect(play).to_have_url(re.compile(r"tokenizer=native-llama-3&"))
    expect(play.locator(".panel-head h2").first).to_contain_text("· native-llama-3")

    # Another model keeps the chosen engine where it has one; the list shows each model once.
    combo.click()
    play.get_by_role("option", name=re.compile(r"^gpt2\b")).click()
    expect(play.locator("#tokenizer")).to_have_value("native-gpt2")
    expect(engine).to_have_value("native-gpt2")
    expect(engine.locator("option")).to_have_text(["tiktoken", "Tokenplay"])
    expect_ids(play, tiktoken_encoding("gpt2").encode(TEXT))
    # A model with one engine names it instead of offering a choice.
    combo.click()
    play.get_by_role("option", name=re.compile(r"^Mistral 7B")).click()
    expect(engine).to_be_hidden()
    expect(play.locator("#tokenizer-picker .picker-engine-only")).to_have_text("engine: Tokenplay")
    # Whoever sets the <select> (here the test, as a script would), the combobox and the switch follow.
    play.select_option("#tokenizer", "cl100k_base")
    expect(combo).to_have_value("cl100k_base")
    expect(engine).to_have_value("cl100k_base")


def test_compare_filter_ticks_an_engine_by_keyboard_and_sets_the_reference(page: Page, live_server: str):
    text = "Hello world 12345"
    page.goto(f"{live_server}/compare?t=gpt2&t=cl100k_base&text={quote(text)}")
    expect(page.locator("#compare-stats tbody tr")).to_have_count(2)
    page.get_by_label("Filter the tokenizers").click()
    page.keyboard.type("meta")
    expect(page.locator("#compare-picker .picker-row:visible")).to_have_count(3)
    expect(page.locator("#compare-picker .picker-row:visible .picker-title")).to_have_text(["Llama 3", "Llama 3.1", "Llama 2"])
    page.keyboard.press("ArrowDown")
    expect(page.locator('#compare-picker input[name="t"][value="llama-3"]')).to_be_focused()
    page.keyboard.press("ArrowRight")
    native = page.locator('#compare-picker input[name="t"][value="native-llama-3"]')
    expect(native).to_be_focused()
    with page.expect_response(lambda r: "/compare/results" in r.url):
        page.keyboard.press("Enter")
    expect(native).to_be_checked()
    # the rows the filter hides stay chosen
    expect(page.locator("#compare-stats tbody tr")).to_have_count(3)
    pane = page.locator('.pane[data-tokenizer="native-llama-3"]')
    pane.locator("summary").click()
    assert shown_ids(page, '.pane[data-tokenizer="native-llama-3"] .ids') == hf_ids("llama-3", text)
    page.locator('#compare-options input[name="ref"][value="native-llama-3"]').check()
    expect(page.locator('.pane.reference[data-tokenizer="native-llama-3"]')).to_be_visible()
    expect(page).to_have_url(re.compile(r"t=gpt2&t=cl100k_base&t=native-llama-3&ref=native-llama-3"))
    # the filter emptied, the picker folds back to the chosen models (the one ticked through the filter with them)
    page.get_by_label("Filter the tokenizers").fill("")
    expect(page.locator("#compare-picker .picker-row:visible .picker-title")).to_have_text(
        ["gpt2", "cl100k_base", "Llama 3"]
    )
    toggle = page.get_by_role("button", name=f"Show all {len(picker_entries(live_server))} tokenizers")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(page.locator("#compare-picker .picker-row[hidden]")).to_have_count(0)
    expect(page.locator("#compare-picker .picker-row:visible")).to_have_count(len(picker_entries(live_server)))
    page.get_by_role("button", name="Show only the chosen ones").click()
    expect(page.locator("#compare-picker .picker-row:visible")).to_have_count(3)


def open_add_form(page: Page) -> None:
    combobox(page).click()
    page.get_by_role("option", name="Add a tokenizer…").click()
    expect(page.locator("#tokenizer-add [data-add=file]")).to_be_focused()


def test_add_a_tokenizer_then_tokenize_with_it(play: Page, live_server: str):
    play.goto(f"{live_server}/?tokenizer=cl100k_base&text={quote(TEXT)}")
    open_add_form(play)
    form = play.locator("#tokenizer-add")
    form.locator("[data-add=file]").set_input_files(GPT2_FILE)
    form.get_by_label("Name").fill("e2e-gpt2")
    form.get_by_label("Split pattern").select_option("gpt2")
    form.get_by_label("Special-token texts").fill("<|endoftext|>")
    with play.expect_request(lambda r: r.url.endswith("/api/tokenizers")) as sent:
        form.get_by_role("button", name="Add tokenizer").click()
    assert sent.value.headers["content-type"].startswith("multipart/form-data")
    expect(play.locator("#tokenizer")).to_have_value("e2e-gpt2")
    expect(combobox(play)).to_have_value("e2e-gpt2")
    expect(play.locator("#tokenizer-picker .picker-chosen-vocab")).to_have_text(f"{tiktoken_encoding('gpt2').n_vocab:,}")
    expect(form).to_be_hidden()
    expect(play).to_have_url(re.compile(r"tokenizer=e2e-gpt2&"))
    expect_ids(play, tiktoken_encoding("gpt2").encode_ordinary(TEXT))
    play.get_by_label("Special tokens").check()
    expect_ids(play, tiktoken_encoding("gpt2").encode(TEXT, allowed_special="all"))

    # Listed under "yours", for this browser, also after a reload.
    play.reload()
    expect(combobox(play)).to_have_value("e2e-gpt2")
    combobox(play).click()
    yours = play.get_by_role("group", name="yours")
    expect(yours.get_by_role("option")).to_have_count(1)
    expect(yours.get_by_role("option")).to_contain_text("e2e-gpt2")


def test_add_a_tokenizer_shows_the_servers_message_and_keeps_the_form(play: Page, live_server: str):
    play.goto(f"{live_server}/?tokenizer=cl100k_base&text={quote(TEXT)}")
    expect_ids(play, tiktoken_encoding("cl100k_base").encode(TEXT))
    junk = b"\x00 this is not a tokenizer \xff" * 20
    expected = httpx.post(f"{live_server}/api/tokenizers", files={"file": ("junk.bin", junk)}).json()["detail"]
    open_add_form(play)
    form = play.locator("#tokenizer-add")
    form.locator("[data-add=file]").set_input_files({"name": "junk.bin", "mimeType": "application/octet-stream", "buffer": junk})
    expect(form.get_by_label("Split pattern")).to_be_disabled()  # for .tiktoken files only
    form.get_by_label("Name").fill("junk")
    form.get_by_role("button", name="Add tokenizer").click()
    expect(form.get_by_role("alert")).to_have_text(expected)
    expect(form.get_by_label("Name")).to_have_value("junk")
    assert form.locator("[data-add=file]").evaluate("f => f.files[0].name") == "junk.bin"
    expect(play.locator("#text")).to_have_value(TEXT)
    expect(play.locator("#tokenizer")).to_have_value("cl100k_base")

    # A name that is markup comes back in the message as text, never as an element.
    form.locator("[data-add=file]").set_input_files(GPT2_FILE)
    form.get_by_label("Name").fill("<img src=x onerror=alert(1)>")
    form.get_by_role("button", name="Add tokenizer").click()
    expect(form.get_by_role("alert")).to_contain_text("'<img src=x onerror=alert(1)>' is not a tokenizer name")
    assert play.locator("#tokenizer-add img").count() == 0
    play.wait_for_timeout(200)  # an onerror handler would have fired by now (the dialog guard fails the test)
    form.get_by_role("button", name="Cancel").click()
    expect(form).to_be_hidden()
    expect(combobox(play)).to_be_focused()
    expect_ids(play, tiktoken_encoding("cl100k_base").encode(TEXT))


def test_add_a_tokenizer_on_compare_ticks_it(page: Page, live_server: str):
    text = "Hello world, 日本"
    page.goto(f"{live_server}/compare?t=gpt2&t=cl100k_base&text={quote(text)}")
    page.get_by_text("Add a tokenizer…").click()
    form = page.locator("#compare-picker-add")
    form.locator("[data-add=file]").set_input_files(GPT2_FILE)
    form.get_by_label("Name").fill("cmp-gpt2")
    form.get_by_label("Split pattern").select_option("gpt2")
    with page.expect_response(lambda r: "/compare/results" in r.url):
        form.get_by_role("button", name="Add tokenizer").click()
    row = page.get_by_role("group", name="yours").locator(".picker-row")
    expect(row).to_have_count(1)
    expect(row.locator(".picker-title")).to_have_text("cmp-gpt2")
    expect(row.get_by_role("checkbox")).to_be_checked()
    expect(page.locator("#compare-stats tbody tr")).to_have_count(3)
    pane = page.locator('.pane[data-tokenizer="cmp-gpt2"]')
    pane.locator("summary").click()
    assert shown_ids(page, '.pane[data-tokenizer="cmp-gpt2"] .ids') == tiktoken_encoding("gpt2").encode_ordinary(text)
    page.locator('#compare-options input[name="ref"][value="cmp-gpt2"]').check()
    expect(page.locator('.pane.reference[data-tokenizer="cmp-gpt2"]')).to_be_visible()


PHONE = {"width": 390, "height": 844}
LONG = "a-very-long-tokenizer-name-" + "x" * 37  # 64 characters, the longest name allowed


def _fits(page: Page, width: int, *selectors: str) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for selector in selectors:
        for box in [e.bounding_box() for e in page.locator(selector).all()]:
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, selector


@pytest.mark.parametrize("width", [PHONE["width"], 1280])
def test_long_names_fit_phones_and_desktops(page: Page, live_server: str, width: int):
    page.set_viewport_size({"width": width, "height": 844})
    r = page.request.post(f"{live_server}/api/tokenizers", multipart={
        "file": {"name": "gpt2.tiktoken", "mimeType": "text/plain", "buffer": GPT2_FILE.read_bytes()},
        "name": LONG, "pattern": "gpt2",
    })
    assert r.status == 201, r.text()
    page.goto(f"{live_server}/?tokenizer={LONG}&text=hi")
    expect(combobox(page)).to_have_value(LONG)
    _fits(page, width, "#tokenizer-picker .picker-combo")
    card = page.locator(".editor").bounding_box()
    combo = page.locator("#tokenizer-picker .picker-combo").bounding_box()
    assert combo["x"] + combo["width"] <= card["x"] + card["width"]
    combobox(page).click()
    option = page.get_by_role("option", name=re.compile("^" + LONG))
    expect(option).to_be_visible()
    _fits(page, width, "#tokenizer-list", "#tokenizer-list [role=option]")
    listbox = page.locator("#tokenizer-list").bounding_box()
    box = option.bounding_box()
    assert box["x"] + box["width"] <= listbox["x"] + listbox["width"]  # the long title wraps inside its list
    page.get_by_role("option", name="Add a tokenizer…").click()
    _fits(page, width, "#tokenizer-add")
    page.goto(f"{live_server}/compare?t=gpt2&t={LONG}&text=hi")
    page.get_by_role("button", name=re.compile(r"^Show all")).click()
    page.get_by_text("Add a tokenizer…").click()
    _fits(page, width, "#compare-picker .picker-row", "#compare-picker-add")


def test_without_javascript_the_native_controls_and_the_add_form_work(browser: Browser, live_server: str):
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(f"{live_server}/?tokenizer=cl100k_base&text={quote(TEXT)}")
        native = page.locator("select#tokenizer")
        expect(native).to_be_visible()
        expect(native.locator("optgroup")).to_have_count(len(picker_groups(httpx_listed(live_server))))
        native.select_option("native-gpt2")
        page.get_by_role("button", name="Tokenize").click()
        expect(page).to_have_url(re.compile(r"/render$"))
        assert [int(t) for t in page.locator("#ids [data-id-list]").inner_text().split()] == tiktoken_encoding("gpt2").encode(TEXT)

        page.goto(f"{live_server}/")
        page.get_by_text("Add a tokenizer…").click()
        page.locator("#tokenizer-add input[name=file]").set_input_files(GPT2_FILE)
        page.get_by_label("Name").fill("nojs-browser")
        page.get_by_label("Split pattern").select_option("gpt2")
        page.get_by_role("button", name="Add tokenizer").click()
        expect(page).to_have_url(re.compile(r"/\?tokenizer=nojs-browser$"))
        expect(native).to_have_value("nojs-browser")
        expect(native.locator('optgroup[label="yours"] option')).to_have_text(["nojs-browser · 50,256"])
    finally:
        context.close()
