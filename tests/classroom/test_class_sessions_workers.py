"""Class sessions across worker processes and machines (issue 27), on real uvicorn servers (``app.main:app``):

- two servers sharing one runs directory (two workers of one machine, the directory store): followers on both,
  the teacher stepping through either, and every follower gets every step in order; followers counted over both;
- ``--workers 2`` on one port, a dozen followers;
- two servers on one Redis and *separate* directories (two machines): pub/sub carries the steps;
- SIGTERM ends open event streams, so the server stops instead of waiting for them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from helpers.class_helpers import ENGLISH, EventStream
from helpers.lab_helpers import wait_done
from helpers.redis_server import running_redis
from helpers.serving import UvicornProcess

TRAIN = {"corpus": ENGLISH * 3, "algorithm": "byte", "pattern": "gpt2", "merges": 12}
STEPS = [1, 2, 3, 5, 4, 8, 12, 0, 6]


class Server(UvicornProcess):
    def __init__(self, runs_dir: Path, workers: int = 1, **env):
        super().__init__({"TOKENPLAY_LAB_RUNS_DIR": str(runs_dir), "TOKENPLAY_LAB_POOL": "thread"} | env, workers=workers)
        self.client = httpx.Client(base_url=self.url, timeout=30)


@pytest.fixture()
def servers():
    started: list[Server] = []

    def start(runs_dir: Path, workers: int = 1, **env) -> Server:
        s = Server(runs_dir, workers, **env)
        started.append(s)
        return s

    yield start
    for s in started:
        s.client.close()
        s.stop()


class Follower:
    """One browser's event stream, read in a thread into ``steps``."""

    def __init__(self, url: str, code: str, name: str):
        self.http = httpx.Client(base_url=url, timeout=30, cookies={"tp_follower": f"browser-{name:0>12}"})
        self.request = self.http.stream("GET", f"/api/sessions/{code}/events")
        self.events = EventStream(self.request.__enter__())
        self.first = self.events.next()["data"]  # connected: its heartbeat is stored
        self.steps: list[int] = []
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def read(self, n: int) -> None:
        def run():
            try:
                self.steps += self.events.steps(n)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                self.error = exc

        self.thread = threading.Thread(target=run)
        self.thread.start()

    def close(self) -> None:
        if self.thread is not None:
            self.thread.join(30)
        self.request.__exit__(None, None, None)
        self.http.close()


def share(server: Server) -> tuple[str, dict]:
    r = server.client.post("/api/train", json=TRAIN)
    run_id = wait_done(server.client, r.json()["id"])["id"]
    body = server.client.post(f"/api/train/{run_id}/session").json()
    return body["code"], {"Authorization": f"Bearer {body['teacher_token']}"}


def teach(followers: list[Follower], stepping: list[Server], code: str, teacher: dict) -> None:
    """Each follower reads as many events as there are steps; the teacher steps through the servers in turn."""
    for f in followers:
        f.read(len(STEPS))
    for i, k in enumerate(STEPS):
        r = stepping[i % len(stepping)].client.post(f"/api/sessions/{code}/step", json={"step": k}, headers=teacher)
        assert r.status_code == 200, r.text
    for f in followers:
        f.thread.join(30)
        assert f.error is None, f.error
        assert f.steps == STEPS


def test_followers_on_two_workers_get_every_step_in_order(servers, tmp_path):
    a, b = servers(tmp_path / "runs"), servers(tmp_path / "runs")
    code, teacher = share(a)
    followers = [Follower(b.url, code, f"b{i}") for i in range(3)] + [Follower(a.url, code, "a0")]
    try:
        assert all(f.first["step"] == 0 for f in followers)
        assert a.client.get(f"/api/sessions/{code}").json()["followers"] == 4
        assert b.client.get(f"/api/sessions/{code}").json()["followers"] == 4
        teach(followers, [a, b], code, teacher)
    finally:
        for f in followers:
            f.close()


def test_a_dozen_followers_on_workers_2(servers, tmp_path):
    s = servers(tmp_path / "runs", workers=2)
    code, teacher = share(s)
    followers = [Follower(s.url, code, f"w{i}") for i in range(12)]
    try:
        assert s.client.get(f"/api/sessions/{code}").json()["followers"] == 12
        teach(followers, [s], code, teacher)
    finally:
        for f in followers:
            f.close()


def test_two_machines_on_one_redis(servers, tmp_path):
    with running_redis(tmp_path) as url:
        a = servers(tmp_path / "machine-a", REDIS_URL=url)
        b = servers(tmp_path / "machine-b", REDIS_URL=url)
        code, teacher = share(a)
        followers = [Follower(b.url, code, f"r{i}") for i in range(3)] + [Follower(a.url, code, "ra")]
        try:
            assert b.client.get(f"/api/sessions/{code}").json()["followers"] == 4
            teach(followers, [a, b], code, teacher)
        finally:
            for f in followers:
                f.close()
        assert not list(tmp_path.glob("machine-*/sessions"))  # nothing went to a directory


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_ends_open_streams(servers, tmp_path, workers):
    s = servers(tmp_path / "runs", workers=workers)
    code, _ = share(s)
    followers = [Follower(s.url, code, f"t{i}") for i in range(3)]
    for f in followers:
        f.read(1)  # waiting for a step that never comes
    os.killpg(s.proc.pid, signal.SIGTERM)
    try:
        # Without sse-starlette's shutdown handling uvicorn would wait for these streams forever. (uvicorn
        # raises the signal again once it has shut down: the exit status is SIGTERM's.)
        assert s.proc.wait(60) in (0, -signal.SIGTERM)
    except subprocess.TimeoutExpired:
        pytest.fail("the server did not stop: its event streams kept it waiting")
    for f in followers:
        f.thread.join(30)
        assert isinstance(f.error, (EOFError, httpx.HTTPError)), f.error  # the stream ended
        f.close()
