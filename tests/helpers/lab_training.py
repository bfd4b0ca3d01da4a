"""A training for the lab tests: through the lab's JSON API (:func:`train`), or in this process into a finished
:class:`~app.lab.runs.Run` (:func:`done_run`); and a tiny corpus (:data:`LOW`)."""

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


def done_run(corpus: str, **options):
    """A finished run of ``corpus`` trained here with the lab's own training function (no pool, no store)."""
    from app.lab.algorithms import train as train_run
    from app.lab.options import Options
    from app.lab.runs import Run, new_id

    opts = Options(**options)
    run = Run(new_id(), corpus, opts)
    run.apply(train_run(corpus, opts, max_merges=10_000))
    run.status = "done"
    return run
