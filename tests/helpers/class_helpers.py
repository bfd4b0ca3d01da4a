"""Shared by the class-session tests: a clock the test moves, a trained run, a real server in a thread, and a
reader of Server-Sent Events."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from helpers.serving import free_port

from app.lab.algorithms import train
from app.lab.options import Options
from app.lab.runs import Run, new_id

#: Real English prose with a few clear first merges ("th", "he", " t"...).
ENGLISH = (
    "The teacher asked the class to watch the tokens on the board. Then the students guessed which two "
    "tokens would merge next, and the teacher stepped forward to show them. "
)


class Clock:
    """``time.time`` for the stores, moved only by the test."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def class_app(tmp, clock: Clock, **settings):
    """The app with its runs and uploads under ``tmp`` (trainings in threads), and its classroom on ``clock``."""
    from app.classroom.service import Classroom
    from app.settings import Settings
    from app.web.app import create_app

    config = Settings(lab_runs_dir=tmp / "runs", uploads_dir=tmp / "uploads", lab_pool="thread", **settings)
    app = create_app(config)
    app.state.classroom = Classroom.from_settings(config, clock=clock)
    return app


def trained_run(corpus: str = ENGLISH * 3, merges: int = 12, algorithm: str = "byte", pattern: str = "gpt2") -> Run:
    """A finished run trained in this process (no pool, no store)."""
    opts = Options(algorithm, pattern, merges)  # a unigram run: ``merges`` learned pieces
    run = Run(new_id(), corpus, opts)
    run.apply(train(corpus, opts, max_merges=1000))
    run.status = "done"
    return run


@contextmanager
def serving(app) -> Iterator[str]:
    """``app`` under uvicorn in a thread on a free loopback port (the tests close their streams before it stops)."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


class EventStream:
    """The events of an open ``text/event-stream`` response (httpx): ``next()`` blocks until the next one (the
    client's read timeout guards against a stream that never sends), skipping comment lines."""

    def __init__(self, response):
        self.response = response
        self.lines = response.iter_lines()
        self.comments = 0

    def next(self) -> dict:
        event: dict = {}
        for line in self.lines:
            if line == "":
                if "data" in event:
                    event["data"] = json.loads(event["data"])
                    return event
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            event[field] = event[field] + "\n" + value if field == "data" and "data" in event else value
        raise EOFError("the stream ended")

    def steps(self, n: int) -> list[int]:
        """The steps of the next ``n`` events."""
        return [self.next()["data"]["step"] for _ in range(n)]


def run_async(main):
    """``asyncio.run(main())`` in a thread of its own, returning its result or raising its error: once a browser
    test has run, Playwright's sync API keeps an event loop running in the main thread, where asyncio.run refuses."""
    import asyncio

    out: dict = {}

    def target():
        try:
            out["value"] = asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]
