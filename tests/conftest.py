"""Shared fixtures: the app under test, an HTTP client, a live server for the browser, Chromium launch args."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from fastapi.testclient import TestClient
from playwright.sync_api import expect
from helpers.serving import free_port

from app.settings import Settings
from app.web.app import create_app


@pytest.fixture(scope="session")
def settings(tmp_path_factory) -> Settings:
    # Lab runs and uploaded tokenizers go to temporary directories, never into the working tree; threads keep the
    # suite light.
    return Settings(
        lab_runs_dir=tmp_path_factory.mktemp("runs"), uploads_dir=tmp_path_factory.mktemp("uploads"), lab_pool="thread"
    )


@pytest.fixture(scope="session")
def app(settings):
    return create_app(settings)


@pytest.fixture()
def client(app) -> Iterator[TestClient]:
    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="session")
def live_server(app) -> Iterator[str]:
    """The app served by uvicorn on a free loopback port, for Playwright."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("live server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture()
def no_dialogs(page):
    """Playwright's ``page``, failing the test if any dialog (alert) opens: user text must never run."""

    def fail(dialog):
        message = dialog.message
        dialog.dismiss()
        pytest.fail(f"a dialog opened: {message!r} (user text must never run)")

    page.on("dialog", fail)
    return page


# Playwright's expect() waits up to 5 s by default; a busy CI machine gets 10 s. A check that would fail still
# fails, only later.
expect.set_options(timeout=10_000)

CHROMIUM = os.environ.get("TOKENPLAY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's Chromium (Playwright cannot download its own browser here), with its network chatter off."""
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    }
