"""Server time of the playground for 10 KB, 100 KB and 1 MB of text, beside tiktoken's bare encode.

Measured in-process through the ASGI app (no network), as the app's own time from its ``Server-Timing`` header
(request arrival to response start, body read and rendering included): ``POST /api/tokenize`` (the full JSON answer with every
token) and the htmx fragment the page swaps in (counts, ids, the first window of coloured tokens), each run
``--repeat`` times; p50/p95 in milliseconds. tiktoken's ``encode_ordinary`` of the same text is the floor every
answer stands on, measured in the same run. Targets (issue 2): the 10 KB fragment within 20 ms at p95; the 1 MB
fragment (exact counts) within 500 ms.

    python bench/bench_api.py [--repeat 20] [--tokenizer cl100k_base]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # helpers shared with the tests

from mixed_text import mixed_text  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from app.engines import registry  # noqa: E402
from app.web.app import create_app  # noqa: E402

SIZES = {"10 KB": 10_000, "100 KB": 100_000, "1 MB": 1_000_000}
FRAGMENT = ("POST", "/render")  # the playground's htmx fragment route


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def timed(fn, repeat: int) -> list[float]:
    """Milliseconds per call; ``fn`` returns the server's own time (Server-Timing) or None to time the call."""
    fn()  # warm-up (caches, lazy loading)
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        server_ms = fn()
        out.append(server_ms if server_ms is not None else (time.perf_counter() - start) * 1000)
    return out


def server_ms(response) -> float:
    """The app's own time for a request, from its ``Server-Timing: app;dur=...`` header."""
    return float(response.headers["server-timing"].split("dur=")[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--tokenizer", default="cl100k_base")
    args = parser.parse_args()

    client = TestClient(create_app())
    client.__enter__()  # run the app's start-up (lifespan) as a real server does
    encoding = registry.get(args.tokenizer).encoding  # the tiktoken.Encoding behind the registered tokenizer
    rows = []
    for label, n in SIZES.items():
        text = mixed_text(n)
        repeat = args.repeat if n < 1_000_000 else max(5, args.repeat // 4)

        def api():
            r = client.post("/api/tokenize", json={"text": text, "tokenizer": args.tokenizer})
            assert r.status_code == 200, r.text
            return server_ms(r)

        def fragment():
            r = client.request(
                FRAGMENT[0], FRAGMENT[1], data={"text": text, "tokenizer": args.tokenizer}, headers={"HX-Request": "true"}
            )
            assert r.status_code == 200, r.text[:200]
            return server_ms(r)

        typed = iter(range(10**9))

        def typing():
            # What a typist sends: the same text with one more character each time (debounced keystrokes).
            extra = "".join(chr(97 + int(d)) for d in str(next(typed)))
            r = client.request(
                FRAGMENT[0],
                FRAGMENT[1],
                data={"text": text[: n - len(extra)] + extra, "tokenizer": args.tokenizer},
                headers={"HX-Request": "true"},
            )
            assert r.status_code == 200, r.text[:200]
            return server_ms(r)

        bare = timed(lambda: encoding.encode_ordinary(text) and None, repeat)
        for name, fn in (("api /api/tokenize", api), ("htmx fragment", fragment), ("htmx fragment, typing", typing)):
            times = timed(fn, repeat)
            rows.append((label, name, statistics.median(times), percentile(times, 0.95), statistics.median(bare)))

    print(f"tokenizer: {args.tokenizer}; times in ms; ratio = ours p50 / tiktoken encode p50 (same run)\n")
    print("| text | answer | p50 | p95 | tiktoken encode p50 | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for label, name, p50, p95, bare in rows:
        print(f"| {label} | {name} | {p50:.1f} | {p95:.1f} | {bare:.1f} | {p50 / bare:.1f}x |")


if __name__ == "__main__":
    main()
