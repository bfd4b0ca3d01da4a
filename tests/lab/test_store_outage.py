"""A training outlives a run-store outage shorter than the store's ``stale_after`` (issue 38, part 3): the run's
latest state stays in memory, progress that the store refuses is written later, and the finished run is written
by the flusher once the store answers; only a longer outage fails the run, saying why.

The race that failed a training in a probe: the store refusing a progress write (Redis restarting) raised out of
the training's supervision and marked the run failed, for good. Here the outage begins the moment the run is
queued, so the training's first write meets it whatever the machine's speed; the flusher's clock and pauses are
the test's own."""

from __future__ import annotations

import threading

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from app.lab.jobs import Flusher, Job, JobPool, outage_message
from app.lab.options import Options
from app.lab.runs import Run, new_id
from app.lab.stores import DirectoryStore

CORPUS = "low lower lowest newer newest wider widest " * 20


class FlakyStore:
    """A directory store that refuses every write while ``down`` (as Redis does while it restarts); it goes down
    the moment a run is admitted when ``down_after_admit`` is set."""

    def __init__(self, inner: DirectoryStore):
        self.inner = inner
        self.down = False
        self.down_after_admit = False
        self.refused = 0
        self.stale_after = inner.stale_after
        self.mem = inner.mem

    def _check(self) -> None:
        if self.down:
            self.refused += 1
            raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    def admit(self, run: Run, capacity: int):
        self._check()
        busy = self.inner.admit(run, capacity)
        self.down = self.down or self.down_after_admit
        return busy

    def put(self, run: Run, *, persist: bool = True) -> None:
        self.inner.mem.put(run)
        self._check()
        self.inner.put(run, persist=persist)

    def save(self, run: Run) -> None:
        self._check()
        self.inner.save(run)

    def beat(self, run_id: str) -> None:
        self._check()
        self.inner.beat(run_id)

    def stored(self, run_id: str) -> Run | None:
        """The run as another process reads it from the shared directory."""
        return self.inner._load(run_id)


class Ticks:
    """The flusher's clock and pauses: a pause returns when the test says so."""

    def __init__(self):
        self.now = 0.0
        self.go = threading.Semaphore(0)
        self.pauses = 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses += 1
        assert self.go.acquire(timeout=60), "the flusher was never let go"


@pytest.fixture()
def store(tmp_path):
    return FlakyStore(DirectoryStore(tmp_path / "runs", max_runs=16, max_bytes=1 << 28, ttl=3600, stale_after=60))


def run_in(pool: JobPool) -> Job:
    run = Run(id=new_id(), corpus=CORPUS, options=Options(algorithm="byte", pattern="gpt2", merges=20))
    return pool.submit(Job(run, max_merges=100))


def test_a_short_outage_from_the_first_write_on_does_not_fail_the_training(store):
    ticks = Ticks()
    pool = JobPool(store, workers=1, queue=1)
    pool.flusher = Flusher(store, clock=ticks.clock, sleep=ticks.sleep)
    try:
        store.down_after_admit = True
        job = run_in(pool)
        assert job.finished.wait(60)
        assert store.refused >= 2, "the outage met the training's writes"
        assert job.run.status == "done" and len(job.run.steps) >= 10, job.run.error  # trained, in memory
        assert pool.flusher.pending() == [job.run.id]
        assert store.stored(job.run.id).status == "queued", "nothing reached the store yet"
        store.down = False  # the store is back
        ticks.go.release()
        assert pool.flusher.flushed.wait(60)
        stored = store.stored(job.run.id)
        assert stored.status == "done" and stored.steps == job.run.steps and stored.error is None
    finally:
        ticks.go.release(10)
        pool.shutdown()


def test_an_outage_longer_than_stale_after_fails_the_run_in_words(store):
    ticks = Ticks()
    pool = JobPool(store, workers=1, queue=1)
    pool.flusher = Flusher(store, clock=ticks.clock, sleep=ticks.sleep)
    try:
        store.down_after_admit = True
        job = run_in(pool)
        assert job.finished.wait(60) and pool.flusher.pending() == [job.run.id]
        ticks.now += store.stale_after + 1  # the store stays down past the time other processes wait for a beat
        ticks.go.release()
        while ticks.pauses < 2:  # the flusher tried again (still refused) and pauses
            assert pool.flusher.pending(), "nothing can have been written"
            threading.Event().wait(0.01)
        store.down = False
        ticks.go.release()
        assert pool.flusher.flushed.wait(60)
        stored = store.stored(job.run.id)
        assert stored.status == "error" and stored.error == outage_message(store.stale_after)
        assert "could not be written for more than 60 s" in stored.error
    finally:
        ticks.go.release(10)
        pool.shutdown()


def test_a_training_whose_progress_is_refused_past_stale_after_is_stopped(store):
    ticks = Ticks()
    pool = JobPool(store, workers=1, queue=1)
    pool.flusher = Flusher(store, clock=ticks.clock, sleep=ticks.sleep)
    try:
        run = Run(id=new_id(), corpus=CORPUS, options=Options(algorithm="byte", pattern="gpt2", merges=20))
        job = Job(run, max_merges=100)
        store.down = True
        pool._save(job)  # the first refusal: training goes on
        assert job.store_down_since == 0.0 and not job.cancel.is_set()
        ticks.now += store.stale_after / 2
        pool._save(job)
        assert not job.cancel.is_set()
        ticks.now += store.stale_after
        pool._save(job)  # past stale_after: stopped, and it will say why
        assert job.cancel.is_set() and job.outage
        pool._ended(job)
        assert run.status == "error" and run.error == outage_message(store.stale_after)
        store.down = False
        pool._save(job)
        assert job.store_down_since is None
    finally:
        pool.shutdown()
