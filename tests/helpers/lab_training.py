"""A training through the lab's JSON API, for the lab tests: :func:`train` and a tiny corpus (:data:`LOW`)."""

from __future__ import annotations

from .lab_helpers import wait_done

#: A tiny corpus whose merges are easy to follow (``low``, ``lower``, ``newest``, ``widest``).
LOW = "low low low low low lower lower newest newest newest newest newest newest widest widest widest"


def train(client, **body) -> dict:
    """Train ``body`` through ``POST /api/train`` and wait for the run: its summary, which must say ``done``."""
    r = client.post("/api/train", json=body)
    assert r.status_code in (200, 202), r.text
    out = r.json()
    if out["status"] in ("queued", "running"):
        out = wait_done(client, out["id"], timeout=30)
    assert out["status"] == "done", out
    return out
