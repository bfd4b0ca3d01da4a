"""The CPU lanes (app/web/lanes.py): tokenizing and rendering run at most ``cpu_threads`` at a time per process,
first come first served; work that uses what a user brought moves to a lane of its own, so that it never holds up
other users, and its wait there counts against its budget.

The work items wait on gates the test opens one by one, so what runs when is decided by the test, not by the
speed of the machine."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import anyio
import pytest

from app.engines import budget
from app.engines.budget import Budget, OverBudget
from app.settings import Settings
from app.web.deps import lanes_of, run_cpu
from app.web.lanes import Gate, Lanes

N = 8


def wait_for(condition, what: str, timeout: float = 60) -> None:
    """Wait until ``condition()`` holds (``timeout``: a deadline against hanging, not a speed requirement)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_run_cpu_runs_at_most_cpu_threads_at_once_in_arrival_order(tmp_path):
    app = SimpleNamespace(state=SimpleNamespace(settings=Settings(lab_runs_dir=tmp_path, cpu_threads=2)))
    request = SimpleNamespace(app=app)
    lock = threading.Lock()
    gates = [threading.Event() for _ in range(N)]
    running, started = [0], []

    def work(n: int) -> int:
        with lock:
            running[0] += 1
            started.append(n)
        assert gates[n].wait(60), f"work {n} was never let go"
        with lock:
            running[0] -= 1
        return n * n

    def in_lane() -> int:
        lane = lanes_of(app).common
        return lane.running + lane.waiting

    async def main():
        results = {}

        async def one(n):
            results[n] = await run_cpu(request, work, n)

        async with anyio.create_task_group() as tg:
            for n in range(N):
                tg.start_soon(one, n)
                while lanes_of(app).common.arrived < n + 1:
                    await anyio.sleep(0)  # task n has reached the lane before task n + 1 starts
        return results

    # In a thread of its own: the browser tests' Playwright keeps an event loop in the main thread.
    out: list[dict] = []
    runner = threading.Thread(target=lambda: out.append(anyio.run(main)))
    runner.start()
    try:
        wait_for(lambda: len(started) == 2, "the first two to start")
        wait_for(lambda: in_lane() == N, "every task to reach the lane")
        assert sorted(started) == [0, 1] and running[0] == 2
        assert lanes_of(app).common.waiting == N - 2, "the others wait their turn"
        for k in range(N):  # let the k-th started go: the next in arrival order starts, and only that one
            gates[started[k]].set()
            if k + 2 < N:
                wait_for(lambda: len(started) == k + 3, f"a task to start after {k + 1} ended")
                assert started[k + 2] == k + 2, started
                assert running[0] <= 2
    finally:
        for gate in gates:
            gate.set()
        runner.join(60)
    assert out[0] == {n: n * n for n in range(N)}
    assert sorted(started) == list(range(N))


def test_work_on_a_users_file_leaves_the_common_lane_to_others():
    """One lane thread: a request that takes a user's file and then hangs on it still lets the next request run."""
    lanes = Lanes(cpu_threads=1, untrusted_threads=1, budget_seconds=60)
    inside, release = threading.Event(), threading.Event()

    def hostile() -> str:
        budget.untrusted()  # what Tokenizers.get does for an upload
        inside.set()
        assert release.wait(60)
        return "hostile"

    results = {}
    first = threading.Thread(target=lambda: results.setdefault("hostile", lanes.run(None, hostile)))
    first.start()
    try:
        assert inside.wait(60)
        assert lanes.untrusted.running == 1 and lanes.common.running == 0
        results["other"] = lanes.run(None, lambda: "served")  # would wait forever if the lane were still held
        assert results["other"] == "served" and "hostile" not in results
    finally:
        release.set()
        first.join(60)
    assert results["hostile"] == "hostile"
    assert lanes.common.running == lanes.untrusted.running == 0


def test_waiting_for_the_users_lane_counts_against_the_budget():
    clock = [0.0]
    lanes = Lanes(cpu_threads=2, untrusted_threads=1, budget_seconds=5, clock=lambda: clock[0])
    held = lanes.untrusted.acquire()
    try:
        b = Budget(5, clock=lambda: clock[0])
        b.start()
        clock[0] = 5.0  # the budget is spent: the wait is refused at once
        b.untrusted = True
        with pytest.raises(OverBudget, match="waiting for other uploaded tokenizers' work"):
            lanes.run(b, lambda: "never")
    finally:
        lanes.untrusted.release(held)


def test_a_gate_reports_how_long_its_oldest_holder_has_run():
    clock = [10.0]
    gate = Gate(2, clock=lambda: clock[0])
    a = gate.acquire()
    clock[0] = 12.0
    b = gate.acquire()
    clock[0] = 40.0
    assert gate.oldest() == 30.0
    gate.release(a)
    assert gate.oldest() == 28.0
    gate.release(b)
    assert gate.oldest() == 0.0 and gate.acquire(timeout=0) is not None
