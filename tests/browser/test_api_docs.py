"""The API docs page works offline in Chromium: Swagger UI comes from our own install and lists the API, and the
page asks nothing of any host but ours."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_the_api_docs_render_from_our_own_files(page: Page, live_server: str):
    ours = urlsplit(live_server).netloc
    elsewhere: list[str] = []
    page.on("request", lambda r: None if urlsplit(r.url).netloc in (ours, "") else elsewhere.append(r.url))
    page.goto(live_server + "/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Tokenplay")
    expect(page.locator(".opblock-summary-path", has_text="/api/tokenize").first).to_be_visible()
    # open one operation: its schema renders from /openapi.json
    page.locator(".opblock-summary", has_text="/api/tokenize").first.click()
    expect(page.locator(".opblock-body").first).to_be_visible()
    assert elsewhere == []


def test_the_api_docs_list_each_operation_once_under_its_section(page: Page, live_server: str, app):
    schema = app.openapi()
    operations = [(m, p, op) for p, ops in schema["paths"].items() for m, op in ops.items()]
    page.goto(live_server + "/docs")
    expect(page.locator(".opblock")).to_have_count(len(operations))
    sections = page.locator(".opblock-tag-section")
    expect(sections).to_have_count(len(schema["tags"]))
    for method, path, op in operations:
        block = page.locator(f".opblock-{method}", has=page.locator(f'.opblock-summary-path[data-path="{path}"]'))
        expect(block).to_have_count(1)
        expect(block.locator(".opblock-summary-description")).to_have_text(op["summary"])
