"""The lab's pre-tokenizers and superwords (issue 34): three speed targets, each measured beside its peer in the same
run.

- a superword run of 1 MB of English (``en.txt`` of the shared corpora) to 8,000 merges with its transition at
  6,000, against a plain run of the same corpus and size (``gpt4`` both): within 2x;
- ``POST /api/pretokenize`` of 100 KB of English with a custom pattern (GPT-2's, written out by hand), server time
  in-process through the ASGI app: under 100 ms (beside it, the same with the shipped ``gpt4``);
- ``POST /api/train/curves`` for 3 runs x 20 points on 10 KB of held-out English: under 1 s (the runs are trained
  first and not timed).

Training is timed in this process through the lab's own training function (what the worker pool runs), runs
alternating plain and superword, the median of ``--repeat``. Requests go through the ASGI app (no network).

    python bench/bench_lab_superwords.py [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import realtext  # noqa: E402

from app.lab.algorithms import train  # noqa: E402
from app.lab.options import Options  # noqa: E402

#: GPT-2's split rule written out as a user would type it (a custom pattern: the regex module, a time budget).
CUSTOM = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def superwords(text: str, merges: int, transition: int, repeat: int) -> list[str]:
    plain_s, super_s = [], []
    for _ in range(repeat):  # alternate, so that a busy moment of the machine falls on both
        for opts, out in ((Options("byte", "gpt4", merges), plain_s),
                          (Options("byte", "gpt4", merges, superwords={"transition": transition}), super_s)):
            t = time.perf_counter()
            trained = train(text, opts, max_merges=merges)
            out.append(time.perf_counter() - t)
            assert len(trained.steps) == merges, trained.stop_reason
    plain, sup = statistics.median(plain_s), statistics.median(super_s)
    ratio = sup / plain
    return [f"| superword run, {len(text.encode()):,} bytes of English → {merges:,} merges (transition {transition:,}) "
            f"| {sup:.2f} s | plain run, same corpus and size: {plain:.2f} s | {ratio:.2f}x | ≤ 2x "
            f"({'met' if ratio <= 2 else 'missed'}) |"]


def requests(text_100k: str, held_out: str, corpus: str, merges: int, repeat: int) -> list[str]:
    from fastapi.testclient import TestClient

    from app.settings import Settings
    from app.web.app import create_app

    import tempfile

    rows = []
    settings = Settings(lab_runs_dir=Path(tempfile.mkdtemp(prefix="tokenplay-bench-sw-")), lab_pool="thread",
                        lab_quick_wait_seconds=600)
    with TestClient(create_app(settings)) as client:
        def cut(pattern: str, regex: str | None):
            body = {"text": text_100k, "pattern": pattern} | ({"pattern_regex": regex} if regex else {})
            r = client.post("/api/pretokenize", json=body)
            assert r.status_code == 200, r.text
            return r.json()["count"]

        cut("custom", CUSTOM)  # warm-up: the pattern compiled, tiktoken's tables read
        custom_ms = median_ms(lambda: cut("custom", CUSTOM), repeat * 3)
        gpt4_ms = median_ms(lambda: cut("gpt4", None), repeat * 3)
        rows.append(f"| `POST /api/pretokenize`, {len(text_100k):,} characters, custom pattern | {custom_ms:.1f} ms "
                    f"| the shipped gpt4 pattern: {gpt4_ms:.1f} ms | {custom_ms / gpt4_ms:.1f}x | < 100 ms "
                    f"({'met' if custom_ms < 100 else 'missed'}) |")

        ids = []
        for opts in ({"pattern": "gpt4"}, {"pattern": "gpt4", "superwords": {"transition": merges * 3 // 4}},
                     {"pattern": "digits-r2l"}):
            r = client.post("/api/train", json={"corpus": corpus, "algorithm": "byte", "merges": merges} | opts)
            assert r.status_code == 200 and r.json()["status"] == "done", r.text
            ids.append(r.json()["id"])

        def curves():
            r = client.post("/api/train/curves", json={"runs": ids, "text": held_out, "points": 20})
            assert r.status_code == 200, r.text
            return r.json()

        curves()  # warm-up: each run's replay (ranks, encoders) is built once per run and process
        curves_ms = median_ms(curves, repeat * 3)
        rows.append(f"| `POST /api/train/curves`, 3 runs × 20 points, {len(held_out):,} characters | {curves_ms:.1f} ms "
                    f"| - | - | < 1 s ({'met' if curves_ms < 1000 else 'missed'}) |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="a quarter of the corpus and of the merges (a smoke run)")
    ap.add_argument("--skip-training", action="store_true", help="only the two requests")
    args = ap.parse_args()
    if not realtext.available():
        raise SystemExit(f"the shared corpora are not in {realtext.CORPORA_DIR}; set TOKENPLAY_CORPORA")
    english = realtext.read("en")
    merges, transition = (2_000, 1_500) if args.quick else (8_000, 6_000)
    corpus = english[: len(english) // 4] if args.quick else english
    print("| what | ours | peer in the same run | ratio | target |")
    print("|---|---:|---|---:|---|")
    if not args.skip_training:
        for row in superwords(corpus, merges, transition, args.repeat):
            print(row, flush=True)
    held_out = english[-10_000:]
    for row in requests(english[:100_000], held_out, english[:200_000], 1_000, args.repeat):
        print(row, flush=True)
    print(f"\nLoad average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores).")


if __name__ == "__main__":
    main()
