"""The CPU lane: tokenizing and rendering run at most ``cpu_threads`` at a time per process, first come first
served, while requests that only wait (lab trainings) keep the default thread pool.

The work items wait on gates the test opens one by one, so what runs when is decided by the test, not by the
speed of the machine."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import anyio

from app.settings import Settings
from app.web.deps import run_cpu

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
        stats = app.state.cpu_limiter.statistics()
        return stats.borrowed_tokens + stats.tasks_waiting

    async def main():
        results = {}

        async def one(n):
            results[n] = await run_cpu(request, work, n)

        async with anyio.create_task_group() as tg:
            for n in range(N):
                tg.start_soon(one, n)
                while getattr(app.state, "cpu_limiter", None) is None or in_lane() < n + 1:
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
        assert app.state.cpu_limiter.statistics().tasks_waiting == N - 2, "the others wait their turn"
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
