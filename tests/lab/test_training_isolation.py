"""While a lab training runs, the web process keeps answering: trainings run in worker processes of their own, at a
lower priority than the web process.

A real uvicorn server (``app.main:app``, as deployed: trainings in worker processes) on a free loopback port,
with the lab's test hold (``helpers.lab_hold.held_app``), so that the training is certainly still running while the
test looks, whatever the speed of the machine. How fast typing stays during trainings is measured by
``bench/load.py`` ("same with 5 trainings running"), not asserted here.
"""

from __future__ import annotations

import os

import httpx
import pytest
from helpers.lab_helpers import wait_done
from helpers.lab_hold import HELD_APP, Hold, held_server_env
from helpers.mixed_text import mixed_text
from helpers.serving import UvicornProcess

from app.lab.workers import NICE


@pytest.fixture()
def hold(tmp_path):
    hold = Hold(tmp_path / "hold")
    yield hold
    hold.release()


@pytest.fixture()
def server(tmp_path, hold):
    proc = UvicornProcess(
        {"TOKENPLAY_LAB_RUNS_DIR": str(tmp_path / "runs"), "TOKENPLAY_LAB_POOL": "process"} | held_server_env(hold),
        app=HELD_APP,
        args=("--factory", "--log-level", "warning"),
    )
    try:
        yield proc
    finally:
        proc.stop()


def test_a_training_runs_in_a_lower_priority_process_while_the_server_answers(server, hold):
    text = mixed_text(10_000)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        body = {"corpus": text, "algorithm": "byte", "pattern": "gpt2", "merges": 50}
        r = client.post("/api/train", json=body)
        assert r.status_code == 202, r.text[:200]
        run_id = r.json()["id"]
        [trainer] = hold.wait_held(1)
        assert trainer != server.proc.pid, "the training runs outside the web process"
        web_nice = os.getpriority(os.PRIO_PROCESS, server.proc.pid)
        assert os.getpriority(os.PRIO_PROCESS, trainer) == min(19, web_nice + NICE), "and after the web process"
        expected = client.post("/api/tokenize", json={"text": text, "tokenizer": "cl100k_base"}).json()["ids"]
        for i in range(20):  # typing: the text changes
            got = client.post("/api/tokenize", json={"text": text[: len(text) - i], "tokenizer": "cl100k_base"})
            assert got.status_code == 200, got.text[:200]
        assert got.json()["ids"][:100] == expected[:100]
        status = client.get(f"/api/train/{run_id}").json()
        assert status["status"] == "running" and status["progress"]["done"] >= 1, status
        hold.release()
        out = wait_done(client, run_id)
        assert out["status"] == "done" and out["merges"] == 50, out
