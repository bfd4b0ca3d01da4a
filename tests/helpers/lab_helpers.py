"""Shared by the lab tests: wait for a training run to end through the JSON API."""

from __future__ import annotations

import time


def wait_done(client, run_id: str, timeout: float = 60, every: float = 0.05) -> dict:
    """Poll ``GET /api/train/{run_id}`` (any client with ``.get(url).json()``) until the run is no longer queued
    or running; fail after ``timeout`` seconds. Returns the last summary."""
    deadline = time.monotonic() + timeout
    while True:
        out = client.get(f"/api/train/{run_id}").json()
        if out["status"] not in ("queued", "running"):
            return out
        assert time.monotonic() < deadline, f"training {run_id} did not finish: {out}"
        time.sleep(every)
