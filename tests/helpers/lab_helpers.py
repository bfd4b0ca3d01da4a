"""Shared by the lab tests: wait for a training run to end through the JSON API, and hold trainings mid-way."""

from __future__ import annotations

import time
from pathlib import Path

from app.lab.hold import notes_of

#: ``lab_quick_wait_seconds`` of the tests' apps: starting a small run answers when it is done (200, the step
#: view) whatever the speed of the machine; a test that needs a run still training holds it (:class:`Hold`).
QUICK_WAIT = 60.0


def wait_done(client, run_id: str, timeout: float = 60, every: float = 0.05) -> dict:
    """Poll ``GET /api/train/{run_id}`` (any client with ``.get(url).json()``) until the run is no longer queued
    or running; fail after ``timeout`` seconds (a deadline against hanging, not a speed requirement). Returns
    the last summary."""
    deadline = time.monotonic() + timeout
    while True:
        out = client.get(f"/api/train/{run_id}").json()
        if out["status"] not in ("queued", "running"):
            return out
        assert time.monotonic() < deadline, f"training {run_id} did not finish: {out}"
        time.sleep(every)


class Hold:
    """The lab's hold for tests (``Settings.lab_hold_file``, :mod:`app.lab.hold`): while it is on, every
    training pauses after its first step, until :meth:`release` or a cancel. Pass :attr:`path` to the settings
    (``lab_hold_file=hold.path``, or ``TOKENPLAY_LAB_HOLD_FILE`` for a server process)."""

    def __init__(self, path: Path, on: bool = True):
        self.path = path
        if on:
            self.on()

    def on(self) -> None:
        self.path.touch()

    def release(self) -> None:
        """Let held trainings go on, and new ones train without pausing."""
        self.path.unlink(missing_ok=True)

    def held(self) -> list[int]:
        """The process ids of the trainings that have paused so far (one entry per training)."""
        notes = notes_of(self.path)
        return [int(line) for line in notes.read_text().split()] if notes.exists() else []

    def wait_held(self, n: int = 1, timeout: float = 60) -> list[int]:
        """Wait until ``n`` trainings are paused at the hold (``timeout``: a deadline against hanging)."""
        deadline = time.monotonic() + timeout
        while len(self.held()) < n:
            assert time.monotonic() < deadline, f"{len(self.held())} of {n} trainings reached the hold"
            time.sleep(0.01)
        return self.held()
