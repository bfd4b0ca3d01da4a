"""Shared by the lab tests: wait for a training run to end through the JSON API (holding trainings mid-way is
:mod:`helpers.lab_hold`)."""

from __future__ import annotations

import time

#: ``lab_quick_wait_seconds`` of the tests' apps: starting a small run answers when it is done (200, the step
#: view) whatever the speed of the machine; a test that needs a run still training holds it (:class:`helpers.lab_hold.Hold`).
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
