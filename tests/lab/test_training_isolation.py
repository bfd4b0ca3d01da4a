"""While a large training runs, typing in the playground stays fast.

A real uvicorn server (``app.main:app``: trainings in worker processes) on a free loopback port. The test
measures ``/api/tokenize`` latency on a 10 KB text without training (baseline), then again while a large lab
training runs, and checks the second stays within a generous multiple of the first. A functional isolation
check (the training must not stall the web process), not a speed benchmark: ``bench/load.py`` measures speed.
"""

from __future__ import annotations

import time

import httpx
import pytest

from helpers.mixed_text import mixed_text
from helpers.serving import UvicornProcess
from helpers.slow_corpus import LONG_TRAINING, slow_corpus


@pytest.fixture()
def server(tmp_path):
    proc = UvicornProcess({"TOKENPLAY_LAB_RUNS_DIR": str(tmp_path / "runs"), "TOKENPLAY_LAB_POOL": "process"})
    try:
        yield proc.url
    finally:
        proc.stop()


def p95(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


def measure(client: httpx.Client, text: str, n: int) -> list[float]:
    out = []
    for i in range(n):
        body = {"text": text[: len(text) - (i % 7)], "tokenizer": "cl100k_base"}  # typing: the text changes
        t = time.perf_counter()
        r = client.post("/api/tokenize", json=body)
        out.append(time.perf_counter() - t)
        assert r.status_code == 200, r.text[:200]
    return out


def test_tokenize_latency_during_a_large_training(server):
    text = mixed_text(10_000)
    with httpx.Client(base_url=server, timeout=30) as client:
        measure(client, text, 10)  # warm up (tokenizer load, caches)
        baseline = measure(client, text, 40)
        r = client.post("/api/train", json={"corpus": slow_corpus()} | LONG_TRAINING)
        assert r.status_code == 202, r.text[:200]
        run_id = r.json()["id"]
        deadline = time.monotonic() + 30
        while client.get(f"/api/train/{run_id}").json()["status"] != "running":
            assert time.monotonic() < deadline, "the training did not start"
            time.sleep(0.05)
        during = measure(client, text, 40)
        status = client.get(f"/api/train/{run_id}").json()
        assert status["status"] == "running", "the training ended before the measurement did; use a larger one"
        client.post(f"/api/train/{run_id}/cancel")
    base95, during95 = p95(baseline), p95(during)
    print(f"\n/api/tokenize 10 KB p95: {base95 * 1000:.1f} ms idle, {during95 * 1000:.1f} ms during training")
    assert during95 < 5 * base95 + 0.050, (base95, during95)
