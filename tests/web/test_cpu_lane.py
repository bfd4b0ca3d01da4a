"""The CPU lane: tokenizing and rendering run at most ``cpu_threads`` at a time per process, first come first
served, while requests that only wait (lab trainings) keep the default thread pool."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import anyio

from app.settings import Settings
from app.web.deps import run_cpu


def test_run_cpu_runs_at_most_cpu_threads_at_once_in_arrival_order(tmp_path):
    app = SimpleNamespace(state=SimpleNamespace(settings=Settings(lab_runs_dir=tmp_path, cpu_threads=2)))
    request = SimpleNamespace(app=app)
    lock = threading.Lock()
    running, peak, started = [0], [0], []

    def work(n: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            started.append(n)
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return n * n

    async def main():
        results = {}

        async def one(n):
            results[n] = await run_cpu(request, work, n)

        async with anyio.create_task_group() as tg:
            for n in range(8):
                tg.start_soon(one, n)
                await anyio.sleep(0.001)  # arrive in order
        return results

    # In a thread of its own: the browser tests' Playwright keeps an event loop in the main thread.
    out: list[dict] = []
    runner = threading.Thread(target=lambda: out.append(anyio.run(main)))
    runner.start()
    runner.join(30)
    results = out[0]
    assert results == {n: n * n for n in range(8)}
    assert peak[0] == 2
    # First come, first served: the two tasks let in together may start in either order, no later one
    # overtakes further than that.
    assert all(abs(position - n) <= 1 for position, n in enumerate(started)), started
