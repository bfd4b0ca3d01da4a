"""The light/dark/auto switch (static/theme.js): independent of the system's scheme, remembered across pages and
visits, applied before the page is drawn; "Auto" follows the system again. Checked on the page's real colours."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

pytestmark = pytest.mark.browser

LIGHT_BG, DARK_BG = "rgb(244, 246, 251)", "rgb(14, 17, 23)"


def background(page) -> str:
    return page.evaluate("() => getComputedStyle(document.body).backgroundColor")


@pytest.mark.parametrize(("system", "chosen", "want"), [("light", "dark", DARK_BG), ("dark", "light", LIGHT_BG)])
def test_the_switch_overrides_the_system_and_is_remembered(browser: Browser, live_server: str, system, chosen, want):
    context = browser.new_context(color_scheme=system)
    try:
        page = context.new_page()
        page.goto(live_server + "/lab")
        switch = page.get_by_label("Theme")
        expect(switch).to_be_visible()
        expect(switch).to_have_value("auto")
        assert background(page) == (LIGHT_BG if system == "light" else DARK_BG)
        switch.select_option(chosen)
        expect(page.locator("html")).to_have_attribute("data-theme", chosen)
        assert background(page) == want
        # another page, and a new visit: the choice holds, set before the first paint (no flash of the other theme)
        page.goto(live_server + "/compare")
        expect(page.get_by_label("Theme")).to_have_value(chosen)
        assert background(page) == want
        first_paint = page.evaluate("() => document.documentElement.getAttribute('data-theme')")
        assert first_paint == chosen
        page.get_by_label("Theme").select_option("auto")
        assert page.locator("html").get_attribute("data-theme") is None
        assert background(page) == (LIGHT_BG if system == "light" else DARK_BG)
        page.reload()
        expect(page.get_by_label("Theme")).to_have_value("auto")
    finally:
        context.close()


def test_the_theme_is_on_the_page_before_its_stylesheets_are_read(browser: Browser, live_server: str):
    context = browser.new_context(color_scheme="light")
    try:
        page = context.new_page()
        page.goto(live_server + "/")
        page.evaluate("() => localStorage.setItem('tp-theme', 'dark')")
        # an observer attached before any script: the attribute must already be there when <body> starts
        page.add_init_script(
            "new MutationObserver((m, o) => { if (document.body) { window.__themeAtBody ="
            " document.documentElement.getAttribute('data-theme'); o.disconnect(); } })"
            ".observe(document, {childList: true, subtree: true});"
        )
        page.reload()
        assert page.evaluate("() => window.__themeAtBody") == "dark"
    finally:
        context.close()
