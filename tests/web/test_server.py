"""``tokenplay serve`` (app/web/server.py): every tokenizer loaded once, before the workers are forked, so that a burst
of first uses over several workers answers every request and restarts no worker; the workers map the same table
files; a worker that dies is replaced; SIGTERM stops them all. No test here times anything: each waits for an event
(an answer, a line of the log, a process ending) with a generous bound."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from app.engines import datafiles, registry
from app.engines.registry import builder
from helpers.serving import ROOT, free_port

TEXT = "Tokenizers cut text into tokens: 東京スカイツリー, 🙂, and code like f(x) = 42."
RESTARTS = ("died", "did not answer")


class Served:
    """``python -m app.cli serve --workers N`` on a free loopback port, its log in a file."""

    def __init__(self, tmp_path: Path, workers: int, warm: bool = False, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / "serve.log"
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {
            "TOKENPLAY_LAB_RUNS_DIR": str(tmp_path / "runs"),
            "TOKENPLAY_UPLOADS_DIR": str(tmp_path / "uploads"),
            "TOKENPLAY_LAB_POOL": "thread",
            "TOKENPLAY_VOCAB_CACHE_DIR": str(tmp_path / "vocab"),
            "TOKENPLAY_VOCAB_WARM": "1" if warm else "0",
        } | (env or {})
        cmd = [sys.executable, "-m", "app.cli", "serve", "--workers", str(workers), "--port", str(self.port),
               "--log-level", "info"]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        # its children: the workers, and the vocabulary warm-up process when it runs one
        self.wait_for(lambda: self.answers() and len(self.workers()) == workers + warm, "the server to start", 600)

    def answers(self) -> bool:
        try:
            return httpx.get(self.url + "/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_for(self, condition, what: str, bound: float = 300) -> None:
        deadline = time.monotonic() + bound
        while not condition():
            if self.proc.poll() is not None:
                raise AssertionError(f"the server ended while waiting for {what}:\n{self.text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {bound} s:\n{self.text()}")
            time.sleep(0.2)

    def workers(self) -> set[int]:
        """The supervisor's child processes (its workers, and any table builder it runs)."""
        found = set()
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    stat = Path(entry.path, "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                    found.add(int(entry.name))
        return found

    def text(self) -> str:
        return self.log_path.read_text()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(120)
        finally:
            self.log.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(tmp_path_factory.mktemp("serve"), workers=2)
    try:
        yield server
    finally:
        if server.proc.poll() is None:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(30)


def _mapped_tables(pid: int) -> set[str]:
    return {line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if line.endswith(".table")}


def test_a_burst_of_first_uses_over_the_workers_answers_every_request_and_restarts_none(served):
    names = [n for n in registry.names() if not n.startswith("lab-")]
    before = served.workers()
    assert "Loaded" in served.text() and "to share between the workers" in served.text()

    def one(name: str) -> tuple[str, int, list[int]]:
        with httpx.Client(timeout=120) as client:
            r = client.post(served.url + "/api/tokenize", json={"text": TEXT, "tokenizer": name})
            return name, r.status_code, r.json().get("ids", [])

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(one, names * 4))
    assert [(n, code) for n, code, _ in answers if code != 200] == []
    assert all(ids == registry.get(n).encode(TEXT) for n, _, ids in answers)
    assert served.workers() == before, "no worker was restarted"
    assert not [line for line in served.text().splitlines() if any(word in line for word in RESTARTS)]
    stored = {Path(registry.get(n).table_file).name for n in builder.stored_names()}
    for pid in before:  # every worker maps the tables the supervisor loaded: one copy of their pages for all
        assert stored <= {Path(p).name for p in _mapped_tables(pid)}


def test_an_upload_is_built_once_and_served_by_every_worker(served):
    model = datafiles.verified_bytes("sentencepiece/jurassic-2.model")
    with httpx.Client(base_url=served.url, timeout=300) as client:
        r = client.post("/api/tokenizers", files={"file": ("mine.model", model)}, data={"name": "mine"})
        assert r.status_code == 201, r.text
        cookies = dict(client.cookies)

    def one(_) -> tuple[int, list[int]]:
        with httpx.Client(base_url=served.url, timeout=300, cookies=cookies) as client:
            r = client.post("/api/tokenize", json={"text": TEXT, "tokenizer": "mine"})
            return r.status_code, r.json().get("ids", [])

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(24)))
    want = registry.get("jurassic-2").encode(TEXT)
    assert answers == [(200, want)] * 24
    uploaded = set()
    for pid in served.workers():
        uploaded |= {p for p in _mapped_tables(pid) if Path(p).name.startswith("bytes-")}
    assert len(uploaded) == 1, "one table of the upload, whichever worker served it"


def test_a_worker_that_dies_is_replaced(served):
    before = served.workers()
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    served.wait_for(lambda: f"Worker [{victim}] died" in served.text(), "replacement of the killed worker")
    served.wait_for(lambda: len(served.workers()) == len(before) and victim not in served.workers(), "a new worker")
    with httpx.Client(timeout=60) as client:
        for _ in range(6):
            r = client.post(served.url + "/api/tokenize", json={"text": TEXT, "tokenizer": "native-gemma-3"})
            assert r.status_code == 200 and r.json()["ids"] == registry.get("native-gemma-3").encode(TEXT)


def test_sigterm_stops_the_workers_then_the_supervisor(served):
    workers = served.workers()
    assert served.stop() == 0
    assert all(not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
               for pid in workers)
    assert "Stopping parent process" in served.text()


def _children(pid: int) -> dict[int, str]:
    """The child processes of ``pid``, each with its command line."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
                cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found[int(entry.name)] = cmdline
    return found


def test_the_server_computes_the_vocabulary_reports_in_a_low_priority_process_that_ends_with_it(tmp_path):
    server = Served(tmp_path, workers=1, warm=True)
    try:
        warming = [pid for pid, cmd in _children(server.proc.pid).items() if "-m app.services.vocab" in cmd]
        assert len(warming) == 1
        assert os.getpriority(os.PRIO_PROCESS, warming[0]) >= 10  # the workers come first
        r = httpx.get(server.url + "/vocab?tokenizer=gemma-3", timeout=60)
        assert r.status_code == 200 and "262,145" in r.text  # read before the fork: no load on a first visit
        assert server.stop() == 0
        deadline = time.monotonic() + 30
        while Path(f"/proc/{warming[0]}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not Path(f"/proc/{warming[0]}").exists()
    finally:
        if server.proc.poll() is None:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(30)


HOSTILE_JSON = json.dumps({
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
    "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a+)+$"}, "behavior": "Isolated", "invert": False},
    "post_processor": None, "decoder": None,
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": {"a": 0, "!": 1},
              "merges": []},
}).encode()


def _hang(server: Served, cookies: dict) -> threading.Thread:
    """A request whose work never ends on its own: a catastrophic regex under a budget no test waits for."""

    def send() -> None:
        try:
            with httpx.Client(timeout=600, cookies=cookies) as client:
                client.post(server.url + "/api/tokenize", json={"text": "a" * 5000 + "!", "tokenizer": "native-hang"})
        except httpx.HTTPError:
            pass  # its worker was replaced, or stopped: the connection ends

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_a_stuck_worker_is_replaced_and_sigterm_drains_then_stops(tmp_path):
    """Health means serving: a worker whose CPU lane holds one request past ``stuck_after_seconds`` fails its
    health check (a real request to its own server) and is replaced, though its event loop still answers; and
    SIGTERM with such a request under way stops the server all the same (the drain is bounded)."""
    env = {"TOKENPLAY_USER_CODE_SECONDS": "100000", "TOKENPLAY_STUCK_AFTER_SECONDS": "2",
           "TOKENPLAY_DRAIN_SECONDS": "1"}
    server = Served(tmp_path, workers=1, env=env)
    try:
        with httpx.Client(base_url=server.url, timeout=300) as client:
            r = client.post("/api/tokenizers", files={"file": ("hang.json", HOSTILE_JSON)}, data={"name": "hang"})
            assert r.status_code == 201 and r.json()["warnings"], r.text
            cookies = dict(client.cookies)
        (first,) = server.workers()
        _hang(server, cookies)
        server.wait_for(lambda: f"Worker [{first}] is stuck" in server.text(), "the stuck worker to be found")
        server.wait_for(lambda: len(server.workers()) == 1 and first not in server.workers(), "a new worker")
        with httpx.Client(timeout=60) as client:
            r = client.post(server.url + "/api/tokenize", json={"text": TEXT, "tokenizer": "cl100k_base"})
            assert r.status_code == 200 and r.json()["ids"] == registry.get("cl100k_base").encode(TEXT)
        (second,) = server.workers()
        _hang(server, cookies)
        server.wait_for(lambda: _lane_busy(server), "the second hostile request to be under way")
        assert server.stop() is not None, "the server stopped"
        assert "Stopping parent process" in server.text()
        assert not Path(f"/proc/{second}").exists() or "Z" in Path(f"/proc/{second}/stat").read_text().split()[2]
    finally:
        if server.proc.poll() is None:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(30)


def _lane_busy(server: Served) -> bool:
    """Whether the worker says a request holds its lane (its health answer counts the time it has held it)."""
    try:
        return httpx.get(server.url + "/healthz", timeout=5).json().get("busy", 0) > 0
    except (httpx.HTTPError, ValueError):
        return False
