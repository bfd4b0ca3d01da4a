"""Several worker processes: real uvicorn servers (``app.main:app``) sharing one runs directory.

- two single-worker servers on their own ports: train through one, step (and continue) through the other;
- ``--workers 2`` on one port: whichever worker answers, every run can be stepped;
- a server killed with SIGKILL mid-training loses none of the finished runs, and its unfinished run is
  reported as failed by the survivor once its heartbeat stops.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from helpers.lab_helpers import wait_done
from helpers.lab_hold import HELD_APP, Hold, held_server_env
from helpers.serving import UvicornProcess


AAAB = {"corpus": "aaabdaaabac", "algorithm": "byte", "pattern": "none", "merges": 3}


class Server(UvicornProcess):
    def __init__(self, runs_dir: Path, workers: int = 1, hold: Hold | None = None):
        env = {"TOKENPLAY_LAB_RUNS_DIR": str(runs_dir), "PYTHONUNBUFFERED": "1"}
        if hold is None:
            super().__init__(env, workers=workers)
        else:  # the app of a held server: its trainings pause at ``hold``
            super().__init__(env | held_server_env(hold), workers=workers, app=HELD_APP,
                             args=("--factory", "--log-level", "warning"))
        self.client = httpx.Client(base_url=self.url, timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            super().stop()

    def kill(self) -> None:
        """SIGKILL the server process only (its training processes notice the closed pipe and exit)."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(5)


@pytest.fixture()
def servers(tmp_path):
    started: list[Server] = []

    def start(workers: int = 1, hold: Hold | None = None) -> Server:
        s = Server(tmp_path / "runs", workers, hold)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
        try:  # the killed server's trainer processes share its session; make sure none is left
            os.killpg(s.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def test_train_through_one_server_step_through_the_other(servers):
    a, b = servers(), servers()
    r = a.client.post("/api/train", json=AAAB)
    assert r.status_code in (200, 202), r.text
    run_id = r.json()["id"]
    assert wait_done(a.client, run_id)["status"] == "done"
    full = b.client.get(f"/api/train/{run_id}").json()
    assert [s["token"] for s in full["steps"]] == ["aa", "aaa", "aaab"]
    for k in range(4):
        assert b.client.get(f"/api/train/{run_id}/steps/{k}").status_code == 200
    assert b.client.get(f"/lab/runs/{run_id}?step=2").status_code == 200
    m = b.client.post(f"/api/train/{run_id}/steps/1/merge", json={"pair": ["a", "b"]})
    assert m.status_code in (200, 202), m.text
    child = wait_done(b.client, m.json()["id"])
    assert child["parent"] == run_id
    assert [s["token"] for s in a.client.get(f"/api/train/{child['id']}").json()["steps"]][:2] == ["aa", "ab"]


def test_with_two_workers_on_one_port_every_run_is_steppable(servers):
    s = servers(workers=2)
    ids = []
    for i in range(6):
        r = s.client.post("/api/train", json=AAAB | {"corpus": f"aaabdaaabac {i} aaab"})
        assert r.status_code in (200, 202), r.text
        ids.append(r.json()["id"])
    for run_id in ids:
        assert wait_done(s.client, run_id)["status"] == "done"
    for _ in range(3):  # repeated, so both workers answer for every run
        for run_id in ids:
            r = s.client.get(f"/api/train/{run_id}/steps/2")
            assert r.status_code == 200, r.text


def test_a_killed_server_loses_no_finished_run(servers, tmp_path):
    """The survivor tells the dead server's training by its heartbeat (the mtime of ``<id>.beat``). The test is
    the clock of that heartbeat: the servers call a run stale after the default minute, far more than any pause
    between two beats on a busy machine, and once the server is dead the test dates its last beat an hour back
    (nothing beats for it any more), instead of waiting for a short threshold to pass."""
    hold = Hold(tmp_path / "hold", on=False)
    a = servers(hold=hold)
    b = servers()
    done = []
    for i in range(5):
        r = a.client.post("/api/train", json=AAAB | {"corpus": f"run {i}: aaabdaaabac aaab", "merges": 4})
        done.append(r.json()["id"])
    for run_id in done:
        assert wait_done(a.client, run_id)["status"] == "done"
    hold.on()
    big = a.client.post("/api/train", json=AAAB | {"corpus": "the run that is training: aaabdaaabac aaab"})
    assert big.status_code == 202, big.text
    big_id = big.json()["id"]
    hold.wait_held(1)
    assert b.client.get(f"/api/train/{big_id}").json()["status"] == "running"
    a.kill()  # mid-training
    for run_id in done:
        r = b.client.get(f"/api/train/{run_id}")
        assert r.status_code == 200 and r.json()["status"] == "done", r.text
        assert b.client.get(f"/api/train/{run_id}/steps/4").status_code == 200
    assert len(list((tmp_path / "runs").glob("*.json"))) == len(done) + 1
    # The run that was training is not left "running" forever: once its heartbeat stops, it reads as failed.
    beat = tmp_path / "runs" / f"{big_id}.beat"
    assert beat.exists()
    assert b.client.get(f"/api/train/{big_id}").json()["status"] == "running", "a beat a moment ago: alive"
    an_hour_ago = time.time() - 3600
    os.utime(beat, (an_hour_ago, an_hour_ago))
    out = b.client.get(f"/api/train/{big_id}").json()
    assert out["status"] == "error" and "train it again" in out["error"], out
