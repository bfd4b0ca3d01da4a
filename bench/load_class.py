"""Load test on loopback: a class of 100 students following the teacher through 20 steps (issue 27).

Starts its own server (``uvicorn app.main:app`` on a free 127.0.0.1 port, ``--workers auto`` as ``serve --workers
auto``, in a temporary directory; ``--store redis`` also starts a ``redis-server`` and sets ``REDIS_URL``) or uses
``--url`` (loopback only). It trains a run on real English text (``en.txt`` of the shared corpora), shares it,
opens ``--followers`` event streams (``GET /api/sessions/<code>/events``, each with its own ``tp_follower``
cookie, as many browsers would) and waits until each has received the current step. Then the teacher sets steps
1..``--steps`` (``POST /api/sessions/<code>/step`` with the teacher token), one every ``--interval`` seconds (a
fast autoplay), and every follower records when each event arrives.

Prints a markdown table: delivery latency (from the moment the teacher's request is sent to the moment a
follower has the event) p50/p95/p99/max over every follower and step, how many followers got every step in order
(none missing, none twice, none out of order), the followers the server counted, and the load average before and
after (the machine may be shared). ``--fetch-view`` makes each follower also ask for its new view after each
event, as the page does (``GET /follow/<code>/class``, htmx), and reports that time too. The client runs on the same CPUs as the server. Targets: every follower gets
every step in order; delivery p95 < 300 ms.

    python bench/load_class.py [--followers 100] [--steps 20] [--interval 0.3] [--workers auto] [--store redis]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # helpers shared with the tests
sys.path.insert(0, str(ROOT / "bench"))

from helpers import realtext  # noqa: E402
from load import RawClient, check_loopback, percentile  # noqa: E402
from helpers.serving import UvicornProcess  # noqa: E402

from app.cli import worker_count  # noqa: E402

TARGET_P95_MS = 300.0


class Follower:
    """One event stream on its own connection: the time each step's event arrived, in arrival order."""

    def __init__(self, n: int, host: str, port: int, code: str, fetch_view: bool = False):
        self.n, self.host, self.port, self.code = n, host, port, code
        self.got: list[tuple[int, float]] = []  # (step, perf_counter when the event was read)
        self.fetch_view = fetch_view
        self.views: list[float] = []  # ms from the event to the page's new view (--fetch-view)
        self.view_errors = 0
        self._view_client = RawClient(host, port) if fetch_view else None
        self._view_task: asyncio.Task | None = None
        self.closing = False
        self.connected = asyncio.Event()
        self.error: str | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def run(self) -> None:
        try:
            reader, self.writer = await asyncio.open_connection(self.host, self.port)
            self.writer.write(
                (
                    f"GET /api/sessions/{self.code}/events HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                    f"Accept: text/event-stream\r\nCookie: tp_follower=load-follower-{self.n:06d}\r\n\r\n"
                ).encode()
            )
            await self.writer.drain()
            status = await reader.readuntil(b"\r\n")
            if b" 200 " not in status:
                raise OSError(f"answered {status.decode().strip()}")
            chunked = False
            while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
                chunked |= line.lower().startswith(b"transfer-encoding: chunked")
            buffer = b""
            while True:
                if chunked:
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    if size == 0:
                        return
                    data = (await reader.readexactly(size + 2))[:-2]
                else:
                    data = await reader.read(65536)
                    if not data:
                        return
                buffer += data.replace(b"\r\n", b"\n")
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    for line in block.split(b"\n"):
                        if line.startswith(b"data:"):
                            event = json.loads(line[5:])
                            self.got.append((event.get("step"), time.perf_counter()))
                            if self.fetch_view and self.connected.is_set():
                                self._view()
                            self.connected.set()
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            if not self.closing:  # not the end this test asked for
                self.error = f"{type(exc).__name__}: {exc}"
            self.connected.set()

    def _view(self) -> None:
        """As follow.js does: ask for the view at the class's step (the latest request wins: the older one is
        abandoned, as htmx's hx-sync replace does)."""
        if self._view_task is not None and not self._view_task.done():
            self._view_task.cancel()  # it closes its connection; this request takes a new one
            self._view_client = RawClient(self.host, self.port)
        self._view_task = asyncio.get_running_loop().create_task(self._fetch(self._view_client, time.perf_counter()))

    async def _fetch(self, client: RawClient, since: float) -> None:
        headers = {"HX-Request": "true", "Cookie": f"tp_follower=load-follower-{self.n:06d}"}
        try:
            status, _, _ = await client.request("GET", f"/follow/{self.code}/class", b"", headers)
            if status == 200:
                self.views.append((time.perf_counter() - since) * 1000)
            else:
                self.view_errors += 1
        except asyncio.CancelledError:
            await client.close()  # a half-read answer
            raise
        except OSError:
            self.view_errors += 1

    async def drain(self) -> None:
        if self._view_task is not None:
            await asyncio.gather(self._view_task, return_exceptions=True)
        if self._view_client is not None:
            await self._view_client.close()

    def close(self) -> None:
        self.closing = True
        if self.writer is not None:
            self.writer.close()


async def request(host: str, port: int, method: str, path: str, body: dict | None = None, headers: dict | None = None):
    client = RawClient(host, port)
    try:
        data = json.dumps(body).encode() if body is not None else b""
        hdrs = {"Content-Type": "application/json", "Connection": "close"} | (headers or {})
        status, _, out = await client.request(method, path, data, hdrs)
        return status, (json.loads(out) if out else None)
    finally:
        await client.close()


async def class_session(url: str, args) -> dict:
    host, port = urlsplit(url).hostname, urlsplit(url).port
    corpus = " ".join(realtext.excerpt("en", 200_000, args.corpus_kb * 1000).split())
    status, run = await request(host, port, "POST", "/api/train", {"corpus": corpus, "pattern": "gpt2", "merges": args.steps + 5})
    if status not in (200, 202):
        raise SystemExit(f"training failed: {status} {run}")
    while run["status"] in ("queued", "running"):
        await asyncio.sleep(0.2)
        _, run = await request(host, port, "GET", f"/api/train/{run['id']}")
    status, session = await request(host, port, "POST", f"/api/train/{run['id']}/session")
    if status != 201:
        raise SystemExit(f"sharing failed: {status} {session}")
    code, auth = session["code"], {"Authorization": f"Bearer {session['teacher_token']}"}

    followers = [Follower(n, host, port, code, args.fetch_view) for n in range(args.followers)]
    tasks = [asyncio.create_task(f.run()) for f in followers]
    for f in followers:  # each one's heartbeat is stored before its first event
        await asyncio.wait_for(f.connected.wait(), 60)
    _, state = await request(host, port, "GET", f"/api/sessions/{code}")
    counted = state["followers"]

    sent: dict[int, float] = {}
    teacher_ms: list[float] = []
    for k in range(1, args.steps + 1):
        sent[k] = time.perf_counter()
        status, _ = await request(host, port, "POST", f"/api/sessions/{code}/step", {"step": k}, auth)
        teacher_ms.append((time.perf_counter() - sent[k]) * 1000)
        if status != 200:
            raise SystemExit(f"step {k} failed: {status}")
        await asyncio.sleep(args.interval)
    # wait for the last step everywhere (or give up after 10 s: what is missing then is reported)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(f.got and f.got[-1][0] == args.steps for f in followers):
        await asyncio.sleep(0.05)
    for f in followers:
        await f.drain()
        f.close()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

    expected = list(range(1, args.steps + 1))
    latencies = []
    in_order = 0
    for f in followers:
        steps = [step for step, _ in f.got[1:]]  # the first event is the state on connect (step 0)
        in_order += steps == expected and f.got[0][0] == 0
        latencies += [(at - sent[step]) * 1000 for step, at in f.got[1:] if step in sent]
    return {
        "code": code,
        "counted": counted,
        "in_order": in_order,
        "errors": [f.error for f in followers if f.error],
        "latencies": latencies,
        "teacher_ms": teacher_ms,
        "views": [v for f in followers for v in f.views],
        "view_errors": sum(f.view_errors for f in followers),
    }


def _loadavg() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def report(result: dict, args, url: str, before: str) -> bool:
    lat = result["latencies"]
    p95 = percentile(lat, 0.95)
    all_in_order = result["in_order"] == args.followers
    print(f"\n## Load: a class of {args.followers} following the teacher through {args.steps} steps\n")
    print(
        f"{url}, uvicorn workers={args.workers if not args.url else '?'}, store={args.store}, a step every "
        f"{args.interval:g} s, {os.cpu_count()} CPUs, load average (1, 5, 15 min) before: {before}, after: {_loadavg()}\n"
    )
    print("| what | value |")
    print("|---|---:|")
    print(f"| followers that got every step in order | {result['in_order']} of {args.followers} |")
    print(f"| followers counted by the server | {result['counted']} |")
    print(f"| events delivered | {len(lat)} of {args.followers * args.steps} |")
    print(f"| delivery p50 / p95 / p99 / max ms | {percentile(lat, 0.5):.1f} / {p95:.1f} / {percentile(lat, 0.99):.1f} / {max(lat) if lat else float('nan'):.1f} |")
    print(f"| teacher's step request p50 / max ms | {percentile(result['teacher_ms'], 0.5):.1f} / {max(result['teacher_ms']):.1f} |")
    if args.fetch_view:
        views = result["views"]
        print(f"| page views fetched (event to new view) / errors | {len(views)} / {result['view_errors']} |")
        print(f"| event to new view p50 / p95 / max ms | {percentile(views, 0.5):.1f} / {percentile(views, 0.95):.1f} / {max(views) if views else float('nan'):.1f} |")
    if result["errors"]:
        print(f"| stream errors | {len(result['errors'])}: {result['errors'][:3]} |")
    print("\n### Targets\n")
    print(f"- every follower gets every step in order: **{result['in_order']} of {args.followers}** — {'PASS' if all_in_order else 'FAIL'}")
    print(f"- delivery p95 < {TARGET_P95_MS:.0f} ms: **{p95:.1f} ms** — {'PASS' if p95 < TARGET_P95_MS else 'FAIL'}")
    return all_in_order and p95 < TARGET_P95_MS and result["counted"] == args.followers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="an already running server on loopback (default: start one)")
    ap.add_argument("--workers", type=worker_count, default="auto", help="uvicorn worker processes: a number, or auto")
    ap.add_argument("--store", choices=("directory", "redis"), default="directory", help="where the server keeps sessions")
    ap.add_argument("--followers", type=int, default=100)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--interval", type=float, default=0.3, help="seconds between two steps of the teacher")
    ap.add_argument("--corpus-kb", type=int, default=20, help="the run's corpus (en.txt)")
    ap.add_argument("--fetch-view", action="store_true", help="each follower also fetches its new view per event, as the page does (reported, not a target)")
    args = ap.parse_args(argv)
    args.followers = min(max(args.followers, 1), 1000)
    if not realtext.available():
        sys.exit(f"the run is trained on real text: the corpora are not in {realtext.CORPORA_DIR}; set TOKENPLAY_CORPORA")
    before = _loadavg()
    with ExitStack() as stack:
        if args.url:
            url = check_loopback(args.url)
        else:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tokenplay-class-")))
            env = {"TOKENPLAY_LAB_RUNS_DIR": str(tmp / "runs"), "TOKENPLAY_LAB_POOL": "thread"}
            if args.store == "redis":
                from helpers.redis_server import running_redis

                env["REDIS_URL"] = stack.enter_context(running_redis(tmp))
            try:
                server = UvicornProcess(env, workers=args.workers, args=("--log-level", "error", "--no-access-log"), timeout=60)
            except RuntimeError as exc:
                sys.exit(f"the server did not start: {exc}")
            stack.callback(server.stop)
            url = server.url
        result = asyncio.run(class_session(url, args))
        return 0 if report(result, args, url, before) else 1


if __name__ == "__main__":
    sys.exit(main())
