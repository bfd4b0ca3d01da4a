"""Load test on loopback: 50 simulated typists on the playground and 5 concurrent lab trainings.

Starts its own server (``tokenplay serve`` on a free 127.0.0.1 port, as ``make run`` and the Docker image run it:
every tokenizer loaded once, then ``--workers`` processes forked, ``auto`` by default as ``serve --workers auto``;
``--serve uvicorn`` for ``uvicorn app.main:app --workers``; runs in a temporary directory) or uses ``--url`` (loopback addresses only);
the client runs on the same CPUs. Bounded: ``--duration`` seconds (default 20) and at most ``--max-requests``
requests. Each typist types its own real text: ``--text-kb``/2 KB of ``en.txt`` and as much of ``ja.txt`` (the
shared corpora, read through ``tests/helpers/realtext.py``), each from the typist's own offset, so no two typists send
the same text and no answer is a cache hit of another typist's. It starts with most of the text typed, and every
150–300 ms sends what the page sends for its next keystrokes: the htmx fragment (``POST /render``, its form as
multipart, 4 in 5) or ``POST /api/tokenize`` (1 in 5). Each trainer starts a run through ``/api/train``, polls its
progress fragment as the page does, opens five steps (htmx) and starts again.

``--kill-worker-at S`` (own server with ``--workers`` >= 2) SIGKILLs one uvicorn worker process S seconds in;
at the end every run seen finished is fetched again: "lost runs" must be 0.

Prints a markdown table (count, errors, p50/p95/p99/max in ms per request kind; the server's own time from its
``Server-Timing`` beside it, so queueing shows as the difference), the load average before and after (the
machine may be shared), and the targets (issue 16: typists' p95 under 100 ms, no errors):

    python bench/load.py [--workers auto] [--duration 20] [--typists 50] [--trainings 5] [--kill-worker-at 8]
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # helpers shared with the tests

from helpers import realtext  # noqa: E402
from helpers.mixed_text import mixed_text  # noqa: E402
from helpers.serving import UvicornProcess  # noqa: E402

from app.cli import worker_count  # noqa: E402

TARGET_P95_MS = 100.0


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))] if values else float("nan")


def check_loopback(url: str) -> str:
    host = urlsplit(url).hostname or ""
    try:
        ok = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        sys.exit(f"--url must point at this machine (127.0.0.1, ::1 or localhost), not {host!r}")
    return url.rstrip("/")


class RawClient:
    """A minimal keep-alive HTTP/1.1 client on asyncio streams: far cheaper per request than a full client, so
    the load generator (on the same CPUs as the server) takes less of the machine it measures."""

    def __init__(self, host: str, port: int, timeout: float = 30.0):
        self.host, self.port, self.timeout = host, port, timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"", headers: dict | None = None):
        # No silent retry: a request that fails (say its worker was killed) is counted as an error, as a
        # browser would show one; the next request opens a new connection.
        try:
            return await asyncio.wait_for(self._request(method, path, body, headers or {}), self.timeout)
        except (ConnectionError, asyncio.IncompleteReadError, OSError) as exc:
            await self.close()
            raise OSError(f"connection failed: {type(exc).__name__}") from None
        except TimeoutError:
            await self.close()
            raise OSError("timeout") from None

    async def _request(self, method: str, path: str, body: bytes, headers: dict):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await self.writer.drain()
        status_line = await self.reader.readuntil(b"\r\n")
        if not status_line:
            raise ConnectionResetError("closed")
        status = int(status_line.split()[1])
        resp_headers = {}
        while True:
            line = await self.reader.readuntil(b"\r\n")
            if line == b"\r\n":
                break
            k, _, v = line.decode("latin-1").partition(":")
            resp_headers[k.strip().lower()] = v.strip()
        if "content-length" in resp_headers:
            data = await self.reader.readexactly(int(resp_headers["content-length"]))
        elif resp_headers.get("transfer-encoding") == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                parts.append(await self.reader.readexactly(size + 2))
                if size == 0:
                    break
            data = b"".join(p[:-2] for p in parts)
        else:
            data = await self.reader.read()
            await self.close()
        if resp_headers.get("connection") == "close":
            await self.close()
        return status, resp_headers, data


def multipart(fields: dict[str, str]) -> tuple[bytes, str]:
    """A multipart/form-data body of text fields, and its Content-Type (what the page's forms post)."""
    boundary = "----tokenplay-load-" + os.urandom(8).hex()
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value.encode() + b"\r\n"
        for name, value in fields.items()
    ]
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def typist_text(n: int, typists: int, text_kb: int) -> str:
    """Typist ``n``'s own text: ``text_kb``/2 KB of en.txt and of ja.txt, from offsets spread over the files."""
    half = text_kb * 1000 // 2
    spread = 1_000_000 // max(1, typists)  # the corpora are 1 MB each
    return realtext.excerpt("en", n * spread, half) + realtext.excerpt("ja", 500_000 + n * spread, half)


class Stats:
    def __init__(self):
        self.lat: dict[str, list[float]] = defaultdict(list)
        self.server: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.codes: dict[str, dict[int | str, int]] = defaultdict(lambda: defaultdict(int))
        self.requests = 0

    def add(self, kind: str, seconds: float, status: int | str, server_ms: float | None = None) -> None:
        self.requests += 1
        self.codes[kind][status] += 1
        if isinstance(status, int) and status < 400:
            self.lat[kind].append(seconds * 1000)
            if server_ms is not None:
                self.server[kind].append(server_ms)
        elif status != 429:  # 429 is the lab's back-pressure, counted apart
            self.errors[kind] += 1


def _server_ms(headers: dict) -> float | None:
    timing = headers.get("server-timing", "")
    if "dur=" in timing:
        try:
            return float(timing.split("dur=")[1].split(";")[0].split(",")[0])
        except ValueError:
            return None
    return None


class Load:
    def __init__(self, url: str, args):
        self.url = url
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.args = args
        self.stats = Stats()
        self.deadline = time.monotonic() + args.duration
        self.done_runs: set[str] = set()
        self.killed: int | None = None

    def running(self) -> bool:
        return time.monotonic() < self.deadline and self.stats.requests < self.args.max_requests

    async def call(
        self,
        client: RawClient,
        kind: str,
        method: str,
        path: str,
        *,
        json_body=None,
        form=None,
        headers: dict | None = None,
    ):
        hdrs = dict(headers or {})
        body = b""
        if json_body is not None:
            body = json.dumps(json_body).encode()
            hdrs["Content-Type"] = "application/json"
        elif form is not None:
            body, hdrs["Content-Type"] = multipart(form)
        t = time.perf_counter()
        try:
            status, resp_headers, data = await client.request(method, path, body, hdrs)
        except OSError as exc:
            self.stats.add(kind, time.perf_counter() - t, str(exc).split(":")[0])
            return None
        self.stats.add(kind, time.perf_counter() - t, status, _server_ms(resp_headers))
        return status, resp_headers, data

    async def typist(self, n: int) -> None:
        rnd = random.Random(n)
        client = RawClient(self.host, self.port)
        source = typist_text(n, self.args.typists, self.args.text_kb)
        start = len(source) - rnd.randrange(300, 600)  # most of it typed already
        size = start
        await asyncio.sleep(rnd.uniform(0, 0.3))
        while self.running():
            size += rnd.randint(1, 6)  # keystrokes since the last request
            if size > len(source):  # the end: as if the last lines were deleted and typed again
                size = start
            text = source[:size]
            if rnd.random() < 0.8:
                await self.call(
                    client,
                    "typist POST /render (htmx fragment)",
                    "POST",
                    "/render",
                    form={"text": text, "tokenizer": "cl100k_base"},
                    headers={"HX-Request": "true"},
                )
            else:
                await self.call(client, "typist POST /api/tokenize", "POST", "/api/tokenize", json_body={"text": text})
            await asyncio.sleep(rnd.uniform(0.15, 0.30))
        await client.close()

    async def trainer(self, n: int) -> None:
        rnd = random.Random(1000 + n)
        client = RawClient(self.host, self.port)
        corpus = mixed_text(self.args.corpus_kb * 1000, seed=n)
        while self.running():
            body = {
                "corpus": corpus,
                "algorithm": ("byte", "char", "sentencepiece")[n % 3],
                "pattern": "gpt2",
                "merges": self.args.merges,
            }
            r = await self.call(client, "train POST /api/train", "POST", "/api/train", json_body=body)
            if r is None or r[0] == 429:
                await asyncio.sleep(float(r[1].get("retry-after", 2)) if r is not None else 1)
                continue
            if r[0] >= 400:
                await asyncio.sleep(1)
                continue
            run = json.loads(r[2])
            # As the page does: poll the progress fragment (every 500 ms) until it answers with HX-Redirect.
            done = run["status"] == "done"
            while run["status"] in ("queued", "running") and self.running():
                await asyncio.sleep(0.5)
                p = await self.call(
                    client,
                    "train GET /lab/runs/{id}/progress (htmx poll)",
                    "GET",
                    f"/lab/runs/{run['id']}/progress",
                    headers={"HX-Request": "true"},
                )
                if p is not None and p[0] == 200 and "hx-redirect" in p[1]:
                    done = True
                    break
                if p is not None and p[0] >= 400:
                    break
            if not done:
                continue
            self.done_runs.add(run["id"])
            for _ in range(5):
                if not self.running():
                    break
                k = rnd.randint(0, self.args.merges)  # the page shows the last step for a larger k
                await self.call(
                    client,
                    "train GET /lab/runs/{id}?step=k (htmx)",
                    "GET",
                    f"/lab/runs/{run['id']}?step={k}",
                    headers={"HX-Request": "true"},
                )
                await asyncio.sleep(rnd.uniform(0.2, 0.5))
        await client.close()

    async def killer(self, server: Server) -> None:
        await asyncio.sleep(self.args.kill_worker_at)
        self.killed = server.kill_one_worker()

    async def warm_up(self) -> None:
        """Sequential requests first, so every worker has loaded the tokenizer before the typists start."""
        client = RawClient(self.host, self.port)
        for _ in range(4 * max(1, self.args.workers)):
            await client.request(
                "POST",
                "/api/tokenize",
                json.dumps({"text": "warm up"}).encode(),
                {"Content-Type": "application/json", "Connection": "close"},
            )
            await client.close()
        await client.close()

    async def run(self, server: Server | None) -> None:
        if not self.args.cold:
            await self.warm_up()
            self.deadline = time.monotonic() + self.args.duration
        tasks = [self.typist(i) for i in range(self.args.typists)]
        tasks += [self.trainer(i) for i in range(self.args.trainings)]
        if server is not None and self.args.kill_worker_at:
            tasks.append(self.killer(server))
        await asyncio.gather(*tasks)

    async def lost_runs(self) -> list[str]:
        lost = []
        for run_id in sorted(self.done_runs):
            ok = False
            for _ in range(5):  # a request may land on a worker that is restarting
                client = RawClient(self.host, self.port)
                try:
                    status, _, _ = await client.request("GET", f"/api/train/{run_id}/steps/0", b"", {})
                    ok = status == 200
                    break
                except OSError:
                    await asyncio.sleep(0.5)
                finally:
                    await client.close()
            if not ok:
                lost.append(run_id)
        return lost


class Server(UvicornProcess):
    def __init__(self, workers: int, pool: str, app: str, serve: str = "tokenplay"):
        self.tmp = tempfile.TemporaryDirectory(prefix="tokenplay-load-")
        self.serve = serve
        env = {
            "TOKENPLAY_LAB_RUNS_DIR": self.tmp.name,
            "TOKENPLAY_LAB_POOL": pool,
            "TOKENPLAY_LAB_STALE_AFTER_SECONDS": "5",
        }
        try:
            if serve == "tokenplay":  # loads every tokenizer, then forks the workers
                super().__init__(env, workers=workers, args=("--log-level", "error"), timeout=600, serve=serve)
            else:
                super().__init__(
                    env, workers=workers, app=app, args=("--log-level", "error", "--no-access-log"), timeout=60
                )
        except RuntimeError as exc:
            sys.exit(f"the server did not start: {exc}")
        time.sleep(1.5 * workers)  # every worker up, trainer processes warm

    def workers(self) -> list[int]:
        """Pids of the worker processes: the children of ``tokenplay serve`` (forked), or of uvicorn started with
        multiprocessing spawn."""
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
            if ppid == self.proc.pid and (self.serve == "tokenplay" or b"spawn_main" in cmdline):
                out.append(int(entry))
        return out

    def kill_one_worker(self) -> int | None:
        pids = self.workers()
        if not pids:
            return None
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def stop(self) -> None:
        super().stop(grace=20)
        self.tmp.cleanup()


def _loadavg() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def report(load: Load, elapsed: float, lost: list[str] | None, args, url: str) -> bool:
    s = load.stats
    offered = args.typists / 0.225
    print(
        f"\n## Load: {args.typists} typists (each its own {args.text_kb} KB of en.txt + ja.txt), "
        f"{args.trainings} concurrent trainings\n"
    )
    print(
        f"{url}, {args.serve if not args.url else 'a'} server, workers={args.workers if not args.url else '?'}, "
        f"lab pool={args.pool}, "
        f"{elapsed:.1f} s, {s.requests} requests ({s.requests / elapsed:.0f}/s; the typists alone would send "
        f"~{offered:.0f}/s if answered at once), {os.cpu_count()} CPUs, load average (1, 5, 15 min) before: "
        f"{args.loadavg}, after: {_loadavg()}\n"
    )
    print("| requests | count | errors | 429 | p50 ms | p95 ms | p99 ms | max ms | server p50 ms | server p95 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind in sorted(s.codes):
        lat, srv = s.lat[kind], s.server[kind]
        n = sum(s.codes[kind].values())
        print(
            f"| {kind} | {n} | {s.errors[kind]} | {s.codes[kind].get(429, 0)} | {percentile(lat, 0.5):.1f} | "
            f"{percentile(lat, 0.95):.1f} | {percentile(lat, 0.99):.1f} | {max(lat) if lat else float('nan'):.1f} | "
            f"{percentile(srv, 0.5):.1f} | {percentile(srv, 0.95):.1f} |"
        )
    typing = [v for k, vals in s.lat.items() if k.startswith("typist") for v in vals]
    typing_errors = sum(v for k, v in s.errors.items() if k.startswith("typist"))
    p95 = percentile(typing, 0.95)
    ok_p95 = p95 < TARGET_P95_MS
    print("\n### Targets\n")
    print(
        f"- typists p95 < {TARGET_P95_MS:.0f} ms: **{p95:.1f} ms** ({len(typing)} requests; "
        f"p50 {percentile(typing, 0.5):.1f}, p99 {percentile(typing, 0.99):.1f}) — {'PASS' if ok_p95 else 'FAIL'}"
    )
    if lost is None:
        print(f"- typists without errors: **{typing_errors} errors** — {'PASS' if typing_errors == 0 else 'FAIL'}")
    else:  # the no-error target is for a run without a kill: requests in flight on the killed worker fail
        print(f"- typist errors: **{typing_errors}** (requests in flight on the killed worker; not a target here)")
    print(f"- trainings finished: {len(load.done_runs)}")
    other = {k: dict(v) for k, v in s.codes.items() if any(c != 200 for c in v)}
    if other:
        print(f"- answers other than 200: {other}")
    ok = ok_p95 and (typing_errors == 0 or lost is not None)
    if lost is not None:
        print(
            f"- worker pid {load.killed} SIGKILLed {args.kill_worker_at:g} s in; stored runs lost: **{len(lost)}** of "
            f"{len(load.done_runs)} finished — {'PASS' if not lost else 'FAIL'}"
        )
        ok = ok and not lost
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="an already running server on loopback (default: start one)")
    ap.add_argument(
        "--workers",
        type=worker_count,
        default="auto",
        help="uvicorn worker processes of the server started here: a number, or auto (two per CPU, as serve does)",
    )
    ap.add_argument("--pool", choices=("process", "thread"), default="process", help="lab training pool")
    ap.add_argument("--app", default="app.main:app", help="ASGI app of the server started here (--serve uvicorn)")
    ap.add_argument(
        "--serve",
        choices=("tokenplay", "uvicorn"),
        default="tokenplay",
        help="the server started here: tokenplay serve (every tokenizer loaded once, the workers forked and sharing "
        "it: what make run and the Docker image run) or uvicorn's own --workers (each worker loads its own)",
    )
    ap.add_argument("--duration", type=float, default=20.0, help="seconds (at most 120)")
    ap.add_argument("--max-requests", type=int, default=50_000)
    ap.add_argument("--typists", type=int, default=50)
    ap.add_argument("--trainings", type=int, default=5)
    ap.add_argument("--text-kb", type=int, default=10, help="each typist's text: half en.txt, half ja.txt")
    ap.add_argument("--corpus-kb", type=int, default=300, help="corpus of each training")
    ap.add_argument("--merges", type=int, default=1500)
    ap.add_argument("--cold", action="store_true", help="no sequential warm-up requests before the load")
    ap.add_argument("--kill-worker-at", type=float, default=0.0, help="SIGKILL one worker this many seconds in")
    args = ap.parse_args(argv)
    args.duration = min(args.duration, 120.0)
    args.typists = min(args.typists, 200)
    args.trainings = min(args.trainings, 20)
    if not realtext.available():
        sys.exit(f"the typists type real text: the corpora are not in {realtext.CORPORA_DIR}; set TOKENPLAY_CORPORA")
    args.loadavg = _loadavg()
    server = None
    if args.url:
        url = check_loopback(args.url)
    else:
        server = Server(args.workers, args.pool, args.app, args.serve)
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
