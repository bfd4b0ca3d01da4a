"""The lab's run stores (memory LRU with byte cap and age, directory with expiry and a byte cap, heartbeats,
cross-process cancel) and the process-based training pool (queue full -> 429 with Retry-After, time limit,
cancel, a killed trainer process, the same answers as the thread pool)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.lab.algorithms import train
from app.lab.options import Options
from app.lab.jobs import Job, QueueFull
from app.lab.runs import Run, new_id
from app.lab.stores import STALE_MESSAGE, DirectoryStore, MemoryLRU, make_store
from app.lab.workers import ProcessJobPool, make_pool
from app.settings import Settings
from app.web.app import create_app

ROOT = Path(__file__).resolve().parents[2]

from helpers.lab_helpers import QUICK_WAIT, wait_done  # noqa: E402
from helpers.word_corpus import random_words  # noqa: E402


def done_run(corpus: str = "low low low lower lower newest newest widest", merges: int = 5) -> Run:
    opts = Options("byte", "gpt2", merges)
    run = Run(new_id(), corpus, opts)
    run.apply(train(corpus, opts, max_merges=100))
    run.status = "done"
    return run


# -- memory LRU ------------------------------------------------------------------------------------------------------


def test_lru_is_capped_by_count_and_bytes_and_keeps_running_runs():
    runs = [done_run(f"text {i} " * 200) for i in range(6)]
    one = runs[0].estimated_bytes()
    lru = MemoryLRU(max_runs=100, max_bytes=int(one * 3.5))
    live = Run(new_id(), "x" * 100_000, Options("byte", "gpt2", 5), status="running")
    lru.put(live)
    for r in runs:
        lru.put(r)
    assert lru.total_bytes <= one * 3.5
    assert [r.id for r in runs if lru.get(r.id)] == [r.id for r in runs[-3:]]
    assert lru.get(live.id) is live, "a run still training is never dropped"
    small = MemoryLRU(max_runs=2)
    for r in runs:
        small.put(r)
    assert len(small) == 2 and small.get(runs[-1].id) is runs[-1]


def test_lru_forgets_runs_older_than_the_ttl():
    now = [1000.0]
    lru = MemoryLRU(ttl=60, clock=lambda: now[0])
    r, live = done_run(), Run(new_id(), "corpus", Options("byte", "gpt2", 5), status="running")
    lru.put(r)
    lru.put(live)
    now[0] += 60
    assert lru.get(r.id) is r, "kept for ttl seconds"
    now[0] += 1
    assert lru.get(r.id) is None and lru.total_bytes == 0
    assert lru.get(live.id) is live, "a run still training does not expire"


# -- directory store --------------------------------------------------------------------------------------------------


def test_directory_store_round_trip_and_bad_ids(tmp_path):
    store = DirectoryStore(tmp_path)
    r = done_run()
    store.put(r)
    other = DirectoryStore(tmp_path)  # another process
    got = other.get(r.id)
    assert got is not None and got is not r and got.to_json() == r.to_json()
    for bad in ("../x", "", "zz", "a" * 64, "../../etc/passwd"):
        assert other.get(bad) is None


def test_directory_store_expires_and_caps(tmp_path):
    store = DirectoryStore(tmp_path, ttl=3600, max_store_bytes=10**9)
    runs = [done_run(f"corpus {i} " * 100) for i in range(5)]
    for i, r in enumerate(runs):
        store.put(r)
        old = time.time() - 7200 if i == 0 else time.time() - (10 - i)
        os.utime(tmp_path / f"{r.id}.json", (old, old))
    fresh = DirectoryStore(tmp_path, ttl=3600)
    assert fresh.get(runs[0].id) is None, "older than the TTL: not served"
    size = (tmp_path / f"{runs[1].id}.json").stat().st_size
    capped = DirectoryStore(tmp_path, ttl=3600, max_store_bytes=int(size * 2.5))
    removed = capped.sweep(force=True)
    assert removed == 3  # the expired one and the two oldest beyond the cap
    left = sorted(p.stem for p in tmp_path.glob("*.json"))
    assert left == sorted(r.id for r in runs[-2:])


def test_a_running_run_without_heartbeat_reads_as_failed(tmp_path):
    store = DirectoryStore(tmp_path, stale_after=60)
    run = Run(new_id(), "corpus", Options("byte", "gpt2", 5), status="running")
    store.save(run)
    assert DirectoryStore(tmp_path, stale_after=60).get(run.id).status == "running"
    old = time.time() - 120
    os.utime(tmp_path / f"{run.id}.beat", (old, old))
    got = DirectoryStore(tmp_path, stale_after=60).get(run.id)
    assert got.status == "error" and got.error == STALE_MESSAGE


def test_make_store_and_pool_follow_the_settings(tmp_path, monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)
    s = Settings(lab_runs_dir=tmp_path, lab_run_ttl_seconds=60, lab_memory_bytes=1000, lab_max_runs=3)
    store = make_store(s)
    assert isinstance(store, DirectoryStore) and store.ttl == 60 and store.mem.max_bytes == 1000
    pool = make_pool(store, s)
    assert isinstance(pool, ProcessJobPool)
    pool.shutdown()
    thread_pool = make_pool(store, Settings(lab_runs_dir=tmp_path, lab_pool="thread"))
    assert type(thread_pool).__name__ == "JobPool"
    thread_pool.shutdown()


# -- process pool ---------------------------------------------------------------------------------------------------


def wait(pool, run: Run, timeout: float = 60) -> Run:
    assert pool.wait(run.id, timeout), f"run {run.id} did not finish: {run.status}"
    return run


def test_process_pool_trains_like_the_thread_pool(tmp_path):
    pool = ProcessJobPool(DirectoryStore(tmp_path), 2, 2)
    try:
        for algorithm in ("byte", "char", "sentencepiece"):
            corpus = "low low low lower lower newest newest widest " * 5
            opts = Options(algorithm, "gpt2", 12)
            run = wait(pool, pool.submit(Job(Run(new_id(), corpus, opts), 100)).run)
            assert run.status == "done", run.error
            reference = train(corpus, opts, max_merges=100)
            assert [s.pair for s in run.steps] == [s.pair for s in reference.steps]
            assert run.model == reference.model
            stored = DirectoryStore(tmp_path).get(run.id)
            assert [s.pair for s in stored.steps] == [s.pair for s in run.steps]
    finally:
        pool.shutdown()


AAAB = Options("byte", "none", 3)


def submit(pool, corpus: str = "aaabdaaabac", options: Options = AAAB) -> Run:
    return pool.submit(Job(Run(new_id(), corpus, options), 100)).run


def test_queue_full_then_cancel_then_time_limit(tmp_path, lab_hold):
    pool = ProcessJobPool(DirectoryStore(tmp_path), 1, 1, time_limit=0.5, wrap_progress=lab_hold)
    try:
        first = submit(pool)  # held after its first merge: it can only end by the time limit
        second = submit(pool)
        with pytest.raises(QueueFull) as exc:
            submit(pool)
        assert exc.value.retry_after >= 1 and "busy" in str(exc.value)
        assert pool.cancel(second.id)  # queued: cancelled before it starts
        wait(pool, first)
        assert first.status == "error" and "limit of 0.5 seconds" in first.error, (first.status, first.error)
        wait(pool, second)
        assert second.status == "cancelled" and second.steps == []
        lab_hold.release()
        again = wait(pool, submit(pool))
        assert again.status == "done", "the pool still works after a killed trainer"
        assert [s.pair for s in again.steps] == [s.pair for s in train("aaabdaaabac", AAAB, max_merges=100).steps]
    finally:
        pool.shutdown()


def test_cancel_a_running_training_and_through_the_store(tmp_path, lab_hold):
    # A generous grace: a trainer that did not stop by itself would be killed and replaced, which the test sees.
    pool = ProcessJobPool(DirectoryStore(tmp_path), 1, 2, cancel_grace=60, wrap_progress=lab_hold)
    other = ProcessJobPool(DirectoryStore(tmp_path), 1, 1, warm=False)  # another web process
    try:
        run = submit(pool)
        [pid] = lab_hold.wait_held(1)
        assert run.status == "running" and pid in pool.worker_pids()
        assert pool.cancel(run.id)
        wait(pool, run)
        assert run.status == "cancelled" and run.error == "training was cancelled"
        assert pool.worker_pids() == [pid], "the trainer stopped by itself and takes the next job"
        run2 = submit(pool)
        assert lab_hold.wait_held(2) == [pid, pid]
        assert other.cancel(run2.id), "a run held by another process is cancelled through the store"
        assert other.wait(run2.id, 60)
        assert run2.status == "cancelled"
        stored = DirectoryStore(tmp_path).get(run2.id)
        assert stored.status == "cancelled"
    finally:
        pool.shutdown()
        other.shutdown()


def test_a_killed_trainer_process_fails_its_run_and_is_replaced(tmp_path, lab_hold):
    pool = ProcessJobPool(DirectoryStore(tmp_path), 1, 1, wrap_progress=lab_hold)
    try:
        run = submit(pool)
        [pid] = lab_hold.wait_held(1)  # mid-training
        os.kill(pid, signal.SIGKILL)
        wait(pool, run)
        assert run.status == "error" and "stopped unexpectedly" in run.error, (run.status, run.error)
        lab_hold.release()
        ok = wait(pool, submit(pool))
        assert ok.status == "done"
        assert pid not in pool.worker_pids()
    finally:
        pool.shutdown()


def test_the_lab_api_on_the_process_pool(tmp_path, lab_hold):
    """Its one place taken by a held training (429 for another), the training cancelled, then a new one trains.
    The new one is started once the pool has let the cancelled job go (its ``finished`` event, set once the run
    store has the run as cancelled), not as soon as the run reads "cancelled": the run reads so a moment before
    the store is written, and until then the store counts it among the trainings, so a new run would be refused
    as the lab being busy. Cancel's answer waits for that event only 2 seconds, which a busy machine can
    exceed."""
    settings = Settings(lab_runs_dir=tmp_path, lab_workers=1, lab_queue=0, lab_progress_wrap=lab_hold)
    with TestClient(create_app(settings)) as c:  # the app's lifespan owns the lab (a process pool here)
        held = c.post("/api/train", json={"corpus": "aaabdaaabac", "pattern": "none", "merges": 3})
        assert held.status_code == 202 and held.json()["status"] in ("queued", "running"), held.text
        run_id = held.json()["id"]
        lab_hold.wait_held(1)
        assert c.get(f"/api/train/{run_id}").json()["status"] == "running"
        busy = c.post("/api/train", json={"corpus": "aaabdaaabac", "merges": 3})
        assert busy.status_code == 429 and int(busy.headers["Retry-After"]) > 0, busy.text
        cancel = c.post(f"/api/train/{run_id}/cancel")
        assert cancel.status_code == 200 and cancel.json()["cancel_requested"] is True
        assert c.app.state.lab.pool.wait(run_id, 60), "the cancelled training did not end"
        assert c.get(f"/api/train/{run_id}").json()["status"] == "cancelled"
        assert DirectoryStore(tmp_path).get(run_id).status == "cancelled"
        lab_hold.release()
        r = c.post("/api/train", json={"corpus": "aaabdaaabac", "algorithm": "byte", "pattern": "none", "merges": 3})
        assert r.status_code in (200, 202)
        assert wait_done(c, r.json()["id"])["status"] == "done"


def test_registry_first_use_is_safe_from_many_threads():
    """Concurrent first requests of a fresh worker process must not see a half-registered tokenizer table."""
    code = (
        "import threading\n"
        "from app.engines import registry\n"
        "errs = []\n"
        "b = threading.Barrier(16)\n"
        "def f():\n"
        "    b.wait()\n"
        "    try:\n"
        "        registry.get('cl100k_base')\n"
        "    except Exception as e:\n"
        "        errs.append(type(e).__name__)\n"
        "ts = [threading.Thread(target=f) for _ in range(16)]\n"
        "[t.start() for t in ts]\n"
        "[t.join() for t in ts]\n"
        "print(len(errs))\n"
    )
    failures = 0
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
        )
        assert out.returncode == 0, out.stderr[-500:]
        failures += int(out.stdout.strip())
    assert failures == 0, (
        f"{failures} of 48 concurrent first calls raised UnknownTokenizerError: a fresh worker answered 404"
    )


def test_lab_tokenizers_in_the_registry_stay_bounded(tmp_path):
    from app.engines import registry

    settings = Settings(lab_runs_dir=tmp_path, lab_pool="thread", lab_max_runs=4, lab_quick_wait_seconds=QUICK_WAIT)
    before = {n for n in registry.names() if n.startswith("lab-")}
    with TestClient(create_app(settings)) as c:
        for i in range(12):
            r = c.post("/api/train", json={"corpus": f"run {i} aaabdaaabac", "pattern": "none", "merges": 2})
            assert r.status_code == 200, r.text
            assert c.post(f"/api/train/{r.json()['id']}/use").status_code == 200
    added = {n for n in registry.names() if n.startswith("lab-")} - before
    for name in added:
        registry.unregister(name)
    assert len(added) <= settings.lab_max_runs, f"{len(added)} lab tokenizers registered and kept"


def test_a_training_over_the_memory_limit_fails_cleanly(tmp_path):
    pool = ProcessJobPool(DirectoryStore(tmp_path), 1, 1, memory_limit_mb=250)
    try:
        big = random_words(4_000_000)  # pairs keep occurring: the trainer's needs grow with the corpus and merges
        # the wait is a guard against a hang, not a race: how long the limit takes to reach depends on the machine
        run = wait(pool, pool.submit(Job(Run(new_id(), big, Options("byte", "gpt2", 8192)), 8192)).run, timeout=900)
        assert run.status == "error" and "memory" in run.error, (run.status, run.error)
        ok = wait(pool, pool.submit(Job(Run(new_id(), "aaabdaaabac", Options("byte", "none", 3)), 100)).run)
        assert ok.status == "done", "a fresh training process takes the next job"
    finally:
        pool.shutdown()


@pytest.mark.parametrize("pool", ["thread", "process"])
def test_the_queue_limit_holds_for_the_whole_app(tmp_path, pool, lab_hold):
    """Two processes' apps (here: two app objects) share one run store: the limit of trainings running or
    waiting is the lab's, not each process's (workers 1 + queue 1 = 2 in all)."""
    settings = Settings(lab_runs_dir=tmp_path, lab_workers=1, lab_queue=1, lab_pool=pool, lab_progress_wrap=lab_hold)
    body = {"corpus": "aaabdaaabac", "algorithm": "byte", "pattern": "none", "merges": 3}
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        first = one.post("/api/train", json=body)
        second = two.post("/api/train", json=body)
        assert first.status_code == 202 and second.status_code == 202, (first.text, second.text)
        lab_hold.wait_held(2)  # one in each app: both are training
        for client in (one, two):
            refused = client.post("/api/train", json=body)
            assert refused.status_code == 429 and "the limit is 2" in refused.json()["detail"]
        one.post(f"/api/train/{first.json()['id']}/cancel")
        assert wait_done(one, first.json()["id"])["status"] == "cancelled"
        # the place it held is free again, for either process
        third = two.post("/api/train", json=body)
        assert third.status_code == 202, third.text
        assert two.post("/api/train", json=body).status_code == 429
        lab_hold.release()
        assert wait_done(two, second.json()["id"])["status"] == "done"
        assert wait_done(two, third.json()["id"])["status"] == "done"
