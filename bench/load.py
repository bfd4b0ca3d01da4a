"""Load test on loopback: 50 simulated typists on the playground and 5 concurrent lab trainings.

Starts its own server (``uvicorn app.main:app`` on a free 127.0.0.1 port, ``--workers`` processes, runs in a
temporary directory) or uses ``--url`` (loopback addresses only). Bounded: ``--duration`` seconds (default 20)
and at most ``--max-requests`` requests. Each typist types into a growing ~10 KB text and sends what the page
sends, every 150–300 ms: the htmx fragment (``POST /render``, 4 in 5) or ``POST /api/tokenize`` (1 in 5). Each
trainer trains a run through ``/api/train``, polls it, steps through some merges and starts again.

``--kill-worker-at S`` (own server with ``--workers`` >= 2) SIGKILLs one uvicorn worker process S seconds in;
at the end every run seen finished is fetched again: "lost runs" must be 0.

Prints a markdown table (count, errors, p50/p95/p99/max in ms per request kind) and the targets:

    python bench/load.py [--workers 2] [--duration 20] [--typists 50] [--trainings 5] [--kill-worker-at 8]
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from corpora import mixed_text  # noqa: E402

TARGET_P95_MS = 100.0


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))] if values else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_loopback(url: str) -> str:
    host = urlsplit(url).hostname or ""
    try:
        ok = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        sys.exit(f"--url must point at this machine (127.0.0.1, ::1 or localhost), not {host!r}")
    return url.rstrip("/")


class Stats:
    def __init__(self):
        self.lat: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.codes: dict[str, dict[int | str, int]] = defaultdict(lambda: defaultdict(int))
        self.requests = 0

    def add(self, kind: str, seconds: float, status: int | str) -> None:
        self.requests += 1
        self.codes[kind][status] += 1
        if isinstance(status, int) and status < 400:
            self.lat[kind].append(seconds * 1000)
        elif status != 429:  # 429 is the lab's back-pressure, counted apart
            self.errors[kind] += 1


class Load:
    def __init__(self, url: str, args):
        self.url = url
        self.args = args
        self.stats = Stats()
        self.deadline = time.monotonic() + args.duration
        self.done_runs: set[str] = set()
        self.source = mixed_text(args.text_kb * 1000 + 4000, seed=99)

    def running(self) -> bool:
        return time.monotonic() < self.deadline and self.stats.requests < self.args.max_requests

    async def call(self, client: httpx.AsyncClient, kind: str, method: str, path: str, **kw):
        t = time.perf_counter()
        try:
            r = await client.request(method, path, **kw)
        except httpx.HTTPError as exc:
            self.stats.add(kind, time.perf_counter() - t, type(exc).__name__)
            return None
        self.stats.add(kind, time.perf_counter() - t, r.status_code)
        return r

    async def typist(self, client: httpx.AsyncClient, n: int) -> None:
        rnd = random.Random(n)
        start = rnd.randrange(0, 3000)
        size = self.args.text_kb * 1000 - rnd.randrange(200, 600)
        await asyncio.sleep(rnd.uniform(0, 0.3))
        while self.running():
            size += rnd.randint(1, 6)  # keystrokes since the last request
            text = self.source[start : start + size]
            if rnd.random() < 0.8:
                await self.call(
                    client, "typist /render (htmx)", "POST", "/render",
                    data={"text": text, "tokenizer": "cl100k_base"}, headers={"HX-Request": "true"},
                )
            else:
                await self.call(client, "typist /api/tokenize", "POST", "/api/tokenize", json={"text": text})
            await asyncio.sleep(rnd.uniform(0.15, 0.30))

    async def trainer(self, client: httpx.AsyncClient, n: int) -> None:
        rnd = random.Random(1000 + n)
        corpus = mixed_text(self.args.corpus_kb * 1000, seed=n)
        while self.running():
            body = {"corpus": corpus, "algorithm": ("byte", "char", "sentencepiece")[n % 3], "pattern": "gpt2",
                    "merges": self.args.merges}
            r = await self.call(client, "train POST /api/train", "POST", "/api/train", json=body)
            if r is None or r.status_code == 429:
                await asyncio.sleep(float(r.headers.get("retry-after", 2)) if r is not None else 1)
                continue
            if r.status_code >= 400:
                await asyncio.sleep(1)
                continue
            run = r.json()
            while run["status"] in ("queued", "running") and self.running():
                await asyncio.sleep(0.5)
                p = await self.call(client, "train poll", "GET", f"/api/train/{run['id']}")
                if p is not None and p.status_code == 200:
                    run = p.json()
            if run["status"] != "done":
                continue
            self.done_runs.add(run["id"])
            for _ in range(5):
                if not self.running():
                    break
                k = rnd.randint(0, run["merges"])
                await self.call(client, "train step GET /lab/runs/{id}?step=k", "GET", f"/lab/runs/{run['id']}",
                                params={"step": k}, headers={"HX-Request": "true"})
                await asyncio.sleep(rnd.uniform(0.2, 0.5))

    async def killer(self, server: "Server") -> None:
        await asyncio.sleep(self.args.kill_worker_at)
        pid = server.kill_one_worker()
        print(f"# killed uvicorn worker pid {pid} at {self.args.kill_worker_at:g} s", file=sys.stderr)

    async def run(self, server: "Server | None") -> None:
        limits = httpx.Limits(max_connections=self.args.typists + self.args.trainings + 10)
        async with httpx.AsyncClient(base_url=self.url, timeout=30, limits=limits) as client:
            tasks = [self.typist(client, i) for i in range(self.args.typists)]
            tasks += [self.trainer(client, i) for i in range(self.args.trainings)]
            if server is not None and self.args.kill_worker_at:
                tasks.append(self.killer(server))
            await asyncio.gather(*tasks)

    async def lost_runs(self) -> list[str]:
        lost = []
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as client:
            for run_id in sorted(self.done_runs):
                ok = False
                for _ in range(3):  # a request may land on a worker that is restarting
                    try:
                        r = await client.get(f"/api/train/{run_id}/steps/0")
                        ok = r.status_code == 200
                        break
                    except httpx.HTTPError:
                        await asyncio.sleep(0.5)
                if not ok:
                    lost.append(run_id)
        return lost


class Server:
    def __init__(self, workers: int, pool: str, app: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tmp = tempfile.TemporaryDirectory(prefix="tokenplay-load-")
        env = os.environ | {
            "TOKENPLAY_LAB_RUNS_DIR": self.tmp.name,
            "TOKENPLAY_LAB_POOL": pool,
            "TOKENPLAY_LAB_STALE_AFTER_SECONDS": "5",
        }
        cmd = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(self.port),
               "--workers", str(workers), "--log-level", "error", "--no-access-log"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit("the server did not start")
            time.sleep(0.2)
        time.sleep(1.5 * workers)  # every worker up, trainer processes warm

    def workers(self) -> list[int]:
        """Pids of the uvicorn worker processes (children of the server started with multiprocessing spawn)."""
        out = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                continue
            if ppid == self.proc.pid and b"spawn_main" in cmdline:
                out.append(int(entry))
        return out

    def kill_one_worker(self) -> int | None:
        pids = self.workers()
        if not pids:
            return None
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        except ProcessLookupError:
            pass
        self.tmp.cleanup()


def report(load: Load, elapsed: float, lost: list[str] | None, args, url: str) -> bool:
    s = load.stats
    print(f"\n## Load: {args.typists} typists ({args.text_kb} KB texts), {args.trainings} concurrent trainings")
    print(f"\n{url}, workers={args.workers if not args.url else '?'}, pool={args.pool}, {elapsed:.1f} s, "
          f"{s.requests} requests ({s.requests / elapsed:.0f}/s), {os.cpu_count()} CPUs\n")
    print("| requests | count | errors | 429 | p50 ms | p95 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind in sorted(s.codes):
        lat = s.lat[kind]
        n = sum(s.codes[kind].values())
        print(f"| {kind} | {n} | {s.errors[kind]} | {s.codes[kind].get(429, 0)} | {percentile(lat, 0.5):.1f} | "
              f"{percentile(lat, 0.95):.1f} | {percentile(lat, 0.99):.1f} | {max(lat) if lat else float('nan'):.1f} |")
    typing = [v for k, v in s.lat.items() if k.startswith("typist") for v in v]
    typing_errors = sum(v for k, v in s.errors.items() if k.startswith("typist"))
    p95 = percentile(typing, 0.95)
    ok_p95 = p95 < TARGET_P95_MS
    print("\n### Targets\n")
    print(f"- typists p95 < {TARGET_P95_MS:.0f} ms: **{p95:.1f} ms** — {'PASS' if ok_p95 else 'FAIL'}")
    print(f"- typists without errors: **{typing_errors} errors** — {'PASS' if typing_errors == 0 else 'FAIL'}")
    print(f"- trainings finished: {len(load.done_runs)}")
    other = {k: dict(v) for k, v in s.codes.items() if any(c != 200 for c in v)}
    if other:
        print(f"- status codes other than 200: {other}")
    ok = ok_p95 and typing_errors == 0
    if lost is not None:
        print(f"- worker killed mid-run, lost stored runs: **{len(lost)}** of {len(load.done_runs)} — "
              f"{'PASS' if not lost else 'FAIL'}")
        ok = ok and not lost
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="an already running server on loopback (default: start one)")
    ap.add_argument("--workers", type=int, default=2, help="uvicorn worker processes of the server started here")
    ap.add_argument("--pool", choices=("process", "thread"), default="process", help="lab training pool")
    ap.add_argument("--app", default="app.main:app", help="ASGI app of the server started here")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds (at most 120)")
    ap.add_argument("--max-requests", type=int, default=50_000)
    ap.add_argument("--typists", type=int, default=50)
    ap.add_argument("--trainings", type=int, default=5)
    ap.add_argument("--text-kb", type=int, default=10)
    ap.add_argument("--corpus-kb", type=int, default=300, help="corpus of each training")
    ap.add_argument("--merges", type=int, default=1500)
    ap.add_argument("--kill-worker-at", type=float, default=0.0, help="SIGKILL one worker this many seconds in")
    args = ap.parse_args(argv)
    args.duration = min(args.duration, 120.0)
    args.typists = min(args.typists, 200)
    args.trainings = min(args.trainings, 20)
    server = None
    if args.url:
        url = check_loopback(args.url)
    else:
        server = Server(args.workers, args.pool, args.app)
        url = server.url
    try:
        load = Load(url, args)
        t = time.monotonic()
        asyncio.run(load.run(server))
        elapsed = time.monotonic() - t
        lost = asyncio.run(load.lost_runs()) if args.kill_worker_at else None
        ok = report(load, elapsed, lost, args, url)
    finally:
        if server is not None:
            server.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
