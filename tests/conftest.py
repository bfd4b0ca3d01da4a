"""Shared fixtures: the app under test, an HTTP client, a live server for the browser, Chromium launch args."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from fastapi.testclient import TestClient
from playwright.sync_api import expect
from helpers.lab_helpers import QUICK_WAIT
from helpers.lab_hold import Hold
from helpers.unique_ids import pytest_collection_modifyitems  # noqa: F401  (a hook: two tests may not share an id)
from helpers.serving import free_port

from app.settings import Settings
from app.web.app import create_app


# Hypothesis judges no test by the machine's speed: no deadline per example, and slow data generation is no
# failure (its default 200 ms deadline and "too slow" check fail on a busy machine). Its examples are the same on
# every run (derandomize): a suite that passed on one clone passes on the next, and an edge case found while
# working becomes an @example. Tests that set their own settings inherit these unless they name them.
hypothesis_settings.register_profile("tokenplay", deadline=None, derandomize=True,
                                     suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("tokenplay")

# The budget of work on a user's file (app/engines/budget.py) is a time limit: on a busy machine ordinary work on
# an uploaded tokenizer could pass the default. Tests that are about the budget set a small one of their own on
# work that is hostile on any machine; everything else gets one that only a hang would reach.
os.environ.setdefault("TOKENPLAY_USER_CODE_SECONDS", "600")


@pytest.fixture(scope="session")
def settings(tmp_path_factory) -> Settings:
    # Lab runs and uploaded tokenizers go to temporary directories, never into the working tree; threads keep the
    # suite light. The hold file does not exist unless a test puts it there (``live_lab_hold``).
    return Settings(
        lab_runs_dir=tmp_path_factory.mktemp("runs"),
        measure_dir=tmp_path_factory.mktemp("measure"),
        measure_pool="thread",
        uploads_dir=tmp_path_factory.mktemp("uploads"),
        vocab_cache_dir=tmp_path_factory.mktemp("vocab"),
        lab_pool="thread",
        lab_quick_wait_seconds=QUICK_WAIT,
        lab_progress_wrap=Hold(tmp_path_factory.mktemp("hold") / "hold", on=False),
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
def lab_hold(tmp_path) -> Iterator[Hold]:
    """The lab's test hold, on: trainings of an app given ``lab_progress_wrap=lab_hold`` pause after their first
    step until the test releases them (released at the end of the test)."""
    hold = Hold(tmp_path / "hold")
    yield hold
    hold.release()


@pytest.fixture()
def live_lab_hold(app, live_server) -> Iterator[Hold]:
    """The test hold of the shared app (and its live server), on: its trainings pause after their first step, and
    starting one answers at once with its progress. Released at the end of the test."""
    lab = app.state.lab
    hold = app.state.settings.lab_progress_wrap
    hold.on()
    lab.quick_wait = 0.0
    try:
        yield hold
    finally:
        hold.release()
        lab.quick_wait = QUICK_WAIT


@pytest.fixture()
def no_dialogs(page):
    """Playwright's ``page``, failing the test if any dialog (alert) opens: user text must never run."""

    def fail(dialog):
        message = dialog.message
        dialog.dismiss()
        pytest.fail(f"a dialog opened: {message!r} (user text must never run)")

    page.on("dialog", fail)
    return page


# Playwright's expect() waits up to 5 s by default. Its wait is a deadline against hanging, not a speed
# requirement: on a busy shared machine a model's first load alone can take 15 s, so it gets 30 s. A check that
# would fail still fails, only later; one that passes does not wait longer.
expect.set_options(timeout=30_000)

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
