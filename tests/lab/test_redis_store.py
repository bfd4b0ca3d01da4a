"""The Redis run store against a real ``redis-server`` started on a free loopback port (and stopped afterwards).

Also: two app instances on one Redis (two worker processes, as far as the store can tell) see each other's runs,
and a run cancelled through one stops in the other.
"""

from __future__ import annotations

from dataclasses import replace

import shutil
import socket
import subprocess
import time

import pytest
from fastapi.testclient import TestClient
from helpers.lab_helpers import wait_done
from helpers.serving import free_port
from helpers.lab_hold import Hold

from app.lab.algorithms import train
from app.lab.options import Options
from app.lab.runs import Run, new_id
from app.lab.stores import STALE_MESSAGE, RedisStore, make_store
from app.settings import Settings
from app.web.app import create_app


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server is not installed: run `make system-deps` (Debian package redis-server)")
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start on port {port} (exit code {proc.poll()})")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


AAAB = {"corpus": "aaabdaaabac", "algorithm": "byte", "pattern": "none", "merges": 3}


@pytest.fixture()
def prefix():
    return f"test:{new_id()}:"


def trained_run(corpus: str = "low low low lower lower newest newest widest", merges: int = 5) -> Run:
    opts = Options("byte", "gpt2", merges)
    run = Run(new_id(), corpus, opts)
    run.apply(train(corpus, opts, max_merges=100))
    run.status = "done"
    return run


def test_put_then_get_from_a_fresh_store_gives_the_same_run(redis_url, prefix):
    run = trained_run()
    RedisStore(redis_url, prefix=prefix).put(run)
    other = RedisStore(redis_url, prefix=prefix)  # another process: empty memory
    got = other.get(run.id)
    assert got is not None and got is not run
    assert got.to_json() == run.to_json()
    assert [s.new_id for s in got.steps] == [s.new_id for s in run.steps]
    assert other.get(new_id()) is None
    assert other.get("../../etc/passwd") is None


def test_runs_expire_with_their_ttl(redis_url, prefix):
    store = RedisStore(redis_url, prefix=prefix, ttl=600)
    now = [time.time()]
    store.mem.clock = lambda: now[0]  # the memory copy's clock, moved by the test
    run = trained_run()
    store.put(run)
    key = f"{prefix}run:{run.id}"
    assert 0 < store.redis.ttl(key) <= 600, "Redis forgets the run after the ttl"
    now[0] += 601
    store.redis.delete(key)  # what Redis does when the ttl has passed
    assert RedisStore(redis_url, prefix=prefix, ttl=600).get(run.id) is None
    assert store.get(run.id) is None  # the memory copy expires too


def test_the_byte_cap_deletes_the_oldest_runs(redis_url, prefix):
    runs = [trained_run(f"corpus number {i} " * 50 + "x" * i, merges=8) for i in range(6)]
    one = len(__import__("zlib").compress(__import__("json").dumps(runs[0].to_json()).encode(), 3))
    store = RedisStore(redis_url, prefix=prefix, max_store_bytes=int(one * 3.5))
    for run in runs:
        store.put(run)
        time.sleep(0.01)  # distinct timestamps in the index (oldest first), not a race
    fresh = RedisStore(redis_url, prefix=prefix)
    kept = [r.id for r in runs if fresh.get(r.id) is not None]
    assert kept == [r.id for r in runs[-len(kept) :]], "the newest runs are the ones kept"
    assert 2 <= len(kept) <= 4
    assert store.stored_bytes() <= int(one * 3.5)


def test_a_running_run_without_heartbeat_is_reported_as_failed(redis_url, prefix):
    store = RedisStore(redis_url, prefix=prefix)
    run = Run(new_id(), "some corpus", Options("byte", "gpt2", 5), status="running")
    store.save(run)
    assert RedisStore(redis_url, prefix=prefix).get(run.id).status == "running"  # fresh heartbeat
    store.redis.delete(f"{prefix}beat:{run.id}")  # its worker process died
    got = RedisStore(redis_url, prefix=prefix).get(run.id)
    assert got.status == "error" and got.error == STALE_MESSAGE


def test_a_run_that_finishes_while_it_is_read_is_not_called_dead(redis_url, prefix):
    """Finishing deletes the heartbeat: a reader that read the run while it was running, and its heartbeat just
    after it finished, must report the finished run, not "the worker process stopped" (this made a cancel
    through another app read as an error once in a while)."""
    writer, reader = RedisStore(redis_url, prefix=prefix), RedisStore(redis_url, prefix=prefix)
    run = Run(new_id(), "corpus", Options("byte", "gpt2", 5), status="running")
    writer.put(run)
    beat_age = reader._beat_age

    def finish_then_read_the_heartbeat(run_id: str) -> float:
        writer.put(replace(run, status="cancelled", error="training was cancelled"))
        return beat_age(run_id)

    reader._beat_age = finish_then_read_the_heartbeat
    got = reader.get(run.id)
    assert got.status == "cancelled", (got.status, got.error)


def test_make_store_picks_redis_when_redis_url_is_set(redis_url, tmp_path, monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert type(make_store(Settings(lab_runs_dir=tmp_path))).__name__ == "DirectoryStore"
    assert isinstance(make_store(Settings(lab_runs_dir=tmp_path, redis_url=redis_url)), RedisStore)
    monkeypatch.setenv("REDIS_URL", redis_url)
    assert isinstance(make_store(Settings(lab_runs_dir=tmp_path)), RedisStore)


def _app(redis_url: str, tmp_path, name: str, hold: Hold | None = None):
    settings = Settings(lab_runs_dir=tmp_path / name, redis_url=redis_url, lab_progress_wrap=hold)
    return create_app(settings)  # its lifespan builds the lab on the Redis store


def test_a_run_trained_through_one_app_is_steppable_through_another(redis_url, tmp_path):
    a, b = _app(redis_url, tmp_path, "a"), _app(redis_url, tmp_path, "b")
    with TestClient(a) as ca, TestClient(b) as cb:
        r = ca.post("/api/train", json={"corpus": "aaabdaaabac", "algorithm": "byte", "pattern": "none", "merges": 3})
        assert r.status_code in (200, 202), r.text
        run_id = r.json()["id"]
        assert wait_done(ca, run_id)["status"] == "done"
        full = cb.get(f"/api/train/{run_id}").json()
        assert [s["token"] for s in full["steps"]] == ["aa", "aaa", "aaab"]
        step = cb.get(f"/api/train/{run_id}/steps/2")
        assert step.status_code == 200, step.text
        page = cb.get(f"/lab/runs/{run_id}?step=1")
        assert page.status_code == 200 and run_id in page.text
        # Manual mode through the second app continues the first app's run.
        m = cb.post(f"/api/train/{run_id}/steps/1/merge", json={"pair": ["a", "b"]})
        assert m.status_code in (200, 202), m.text
        child = wait_done(cb, m.json()["id"])
        assert child["status"] == "done" and child["parent"] == run_id
        assert ca.get(f"/api/train/{child['id']}").json()["steps"][1]["token"] == "ab"


def test_a_run_cancelled_through_another_app_stops(redis_url, tmp_path, lab_hold):
    a, b = _app(redis_url, tmp_path, "a", lab_hold), _app(redis_url, tmp_path, "b")
    with TestClient(a) as ca, TestClient(b) as cb:
        r = ca.post("/api/train", json=AAAB)
        assert r.status_code == 202, r.text
        run_id = r.json()["id"]
        lab_hold.wait_held(1)  # training in a's worker process
        c = cb.post(f"/api/train/{run_id}/cancel")
        assert c.status_code == 200 and c.json()["cancel_requested"] is True
        out = wait_done(cb, run_id)
        assert out["status"] == "cancelled", out


def test_the_queue_limit_holds_across_machines(redis_url, tmp_path, lab_hold):
    """Apps on different machines share only Redis: the limit of trainings running or waiting is the lab's."""
    settings = {"lab_workers": 1, "lab_queue": 0, "lab_pool": "process", "lab_progress_wrap": lab_hold}
    a = create_app(Settings(lab_runs_dir=tmp_path / "a", redis_url=redis_url, **settings))
    b = create_app(Settings(lab_runs_dir=tmp_path / "b", redis_url=redis_url, **settings))
    with TestClient(a) as ca, TestClient(b) as cb:
        held = ca.post("/api/train", json=AAAB)
        assert held.status_code == 202, held.text
        refused = cb.post("/api/train", json=AAAB)
        assert refused.status_code == 429 and "the limit is 1" in refused.json()["detail"]
        cb.post(f"/api/train/{held.json()['id']}/cancel")
        assert wait_done(cb, held.json()["id"])["status"] == "cancelled"
        lab_hold.release()
        again = cb.post("/api/train", json=AAAB)
        assert again.status_code in (200, 202), again.text
        assert wait_done(cb, again.json()["id"])["status"] == "done"


def test_an_uploaded_tokenizer_is_kept_in_redis_for_every_machine(redis_url, tmp_path):
    from app.engines.datafiles import data_path

    a, b = _app(redis_url, tmp_path, "a"), _app(redis_url, tmp_path, "b")  # no shared directory: only Redis
    with TestClient(a) as ca, TestClient(b) as cb:
        path = data_path("openai/gpt2.tiktoken")
        r = ca.post("/api/tokenizers", files={"file": (path.name, path.read_bytes())}, data={"pattern": "gpt2"})
        assert r.status_code == 201, r.text
        cb.cookies.update(dict(ca.cookies))  # the same browser, answered by another machine
        got = cb.post("/api/tokenize", json={"text": "hello world", "tokenizer": r.json()["name"]})
        assert got.status_code == 200 and got.json()["ids"] == [31373, 995]
