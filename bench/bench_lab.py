"""BPE lab: server time to jump to any step of a run on a 1 MB corpus with 4096 merges (target: < 50 ms).

The corpus is generated here from a fixed seed (pseudo-English words from a syllable table, punctuation, some
Japanese), so every run measures the same text. The run is trained once through the lab's worker pool (its
time is printed, not a target); then, in-process through the ASGI app (no network), for steps spread over the
run in a shuffled order (so the per-step cache never helps):

- ``GET /lab/runs/{id}?step=k`` with ``HX-Request`` (the step block the page swaps in: merge card, pair table,
  merge list, coloured corpus window, chart);
- ``GET /api/train/{id}/steps/{k}`` (the JSON state);
- the same step block right after the run is loaded from disk by a fresh app (cold: builds the run's view).

Stepping never trains: each answer reads the stored records and encodes only the visible 2,000 characters.

    python bench/bench_lab.py [--chars 1000000] [--merges 4096] [--steps 60]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app

SYLLABLES = [
    "the", "an", "ing", "er", "ed", "on", "re", "in", "at", "es", "or", "al", "ti", "ent", "ion", "ver",
    "com", "pro", "con", "tra", "ble", "ly", "ment", "ous", "ful", "der", "pre", "sta", "mar", "ket", "lo",
    "w", "est", "new", "wid", "ra", "be", "to", "ka", "ta", "mi", "yo", "su", "qu", "ix", "oz", "uv", "gy",
    "fe", "ph", "ck", "sh", "th", "wr",
]
JAPANESE = ["東京は日本の首都です。", "京都は古い都です。", "日本語の文を少し混ぜます。"]


def corpus(n_chars: int, seed: int = 5) -> str:
    """About ``n_chars`` characters of deterministic pseudo-text (same seed, same text, on any machine)."""
    rng = random.Random(seed)
    words = ["".join(rng.choice(SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 4)))) for _ in range(40000)]
    weights = [1 / (i + 1) for i in range(len(words))]  # Zipf-like: a few words are very common
    out: list[str] = []
    size = 0
    while size < n_chars:
        sentence = " ".join(rng.choices(words, weights, k=rng.randint(4, 14))).capitalize()
        sentence += rng.choice(".,.;!?") + (" " if rng.random() < 0.9 else "\n")
        if rng.random() < 0.02:
            sentence += rng.choice(JAPANESE)
        out.append(sentence)
        size += len(sentence)
    return "".join(out)[:n_chars]


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


CPU: list[float] = []  # CPU time of the last timed() calls, next to their wall time


def timed(fn) -> float:
    """Wall time of ``fn()`` in ms; its CPU time (this process, all threads) goes to ``CPU``. On a busy
    machine wall time includes waiting for a core; CPU time is what the request itself cost."""
    c = time.process_time()
    t = time.perf_counter()
    fn()
    wall = (time.perf_counter() - t) * 1000
    CPU.append((time.process_time() - c) * 1000)
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", type=int, default=1_000_000)
    ap.add_argument("--merges", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=60, help="steps jumped to per measurement")
    ap.add_argument("--algorithm", default="byte", choices=("byte", "char", "sentencepiece"))
    ap.add_argument("--pattern", default="gpt2")
    args = ap.parse_args()

    text = corpus(args.chars)
    runs_dir = Path(tempfile.mkdtemp(prefix="tokenplay-bench-lab-"))
    settings = Settings(lab_runs_dir=runs_dir)
    with TestClient(create_app(settings)) as client:
        t0 = time.perf_counter()
        body = {"corpus": text, "algorithm": args.algorithm, "pattern": args.pattern, "merges": args.merges}
        run = client.post("/api/train", json=body).json()
        while run["status"] in ("queued", "running"):
            time.sleep(0.2)
            run = client.get(f"/api/train/{run['id']}").json()
        train_s = time.perf_counter() - t0
        if run["status"] != "done":
            raise SystemExit(f"training ended with status {run['status']}: {run.get('error')}")
        rid, n = run["id"], run["merges"]
        rng = random.Random(7)
        ks = rng.sample(range(n + 1), min(args.steps, n + 1))
        hx = {"HX-Request": "true"}

        def page(k: int):
            r = client.get(f"/lab/runs/{rid}?step={k}", headers=hx)
            assert r.status_code == 200 and f'data-step="{k}"' in r.text

        def api(k: int):
            r = client.get(f"/api/train/{rid}/steps/{k}")
            assert r.status_code == 200 and r.json()["step"] == k

        page(n)  # warm-up: the run's view (ranks, window) is built once per run and process
        CPU.clear()
        page_ms = [timed(lambda k=k: page(k)) for k in ks]
        page_cpu = list(CPU)
        rng.shuffle(ks)
        CPU.clear()
        api_ms = [timed(lambda k=k: api(k)) for k in ks]
        api_cpu = list(CPU)

    cold_ms = []
    CPU.clear()
    for k in ks[:5]:
        with TestClient(create_app(settings)) as fresh:  # a new worker process: the run comes from disk
            cold_ms.append(timed(lambda k=k: fresh.get(f"/lab/runs/{rid}?step={k}", headers=hx)))

    print(f"Corpus: {len(text):,} characters ({len(text.encode()):,} bytes), {args.algorithm}, pattern {args.pattern}; "
          f"{n:,} merges trained in {train_s:.1f} s (worker pool; not a target).\n")
    cold_cpu = list(CPU)
    print("| request (server time, in-process) | steps | p50 ms | p95 ms | max ms | CPU p50 ms | CPU p95 ms | target |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, ms, cpu, target in (
        ("step block (htmx), jump to step k", page_ms, page_cpu, "< 50 ms"),
        ("`GET /api/train/{id}/steps/{k}`", api_ms, api_cpu, "< 50 ms"),
        ("step block, run just loaded from disk (cold)", cold_ms, cold_cpu, "-"),
    ):
        print(f"| {name} | {len(ms)} | {statistics.median(ms):.1f} | {percentile(ms, 0.95):.1f} | {max(ms):.1f} "
              f"| {statistics.median(cpu):.1f} | {percentile(cpu, 0.95):.1f} | {target} |")
    print(f"\nLoad average during the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores).")


if __name__ == "__main__":
    main()
