"""A class in a real room (issue 37, part 2, the CLI's side) and a port already in use: ``tokenplay serve --class``
listens on every network interface and prints the students' join link with this machine's network address, which
answers; a taken port is said in words with a free one to use instead. Each test waits for an event (a line of the
server's output, the process ending) with a generous bound, never for a time."""

from __future__ import annotations

import ipaddress
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections import namedtuple
from pathlib import Path

import re

import httpx
import psutil
import pytest
from fastapi.testclient import TestClient
from helpers.lab_helpers import wait_done
from helpers.serving import ROOT, free_port, stop_group

from app import network
from app.classroom.reach import FIX, Reach, reach
from app.cli import class_lines
from app.settings import Settings
from app.web.app import create_app

BOUND = 600  # seconds: a deadline against hanging, not a speed requirement


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "TOKENPLAY_PUBLIC_URL")}
    return env | {"TOKENPLAY_LAB_RUNS_DIR": str(tmp_path / "runs"), "TOKENPLAY_UPLOADS_DIR": str(tmp_path / "uploads"),
                  "TOKENPLAY_LAB_POOL": "thread"}


class Lines:
    """A process's output, line by line, as it comes (a thread reads it into a queue)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.seen, self._queue = proc, [], queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, wanted: str) -> str:
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            line = self._queue.get(timeout=BOUND)
            if line is None:
                raise AssertionError(f"the process ended before printing {wanted!r}:\n" + "\n".join(self.seen))
            self.seen.append(line)
            if wanted in line:
                return line
        raise AssertionError(f"no {wanted!r} within {BOUND} s:\n" + "\n".join(self.seen))


def this_machines_addresses() -> set[str]:
    """Every IPv4 address of an interface that is up (the referee: ``ip -4 -o addr`` when present, else psutil)."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "up"], capture_output=True, text=True, check=True).stdout
        return {line.split()[3].split("/")[0] for line in out.splitlines()}
    except (OSError, subprocess.CalledProcessError):
        return {a.address for addrs in psutil.net_if_addrs().values() for a in addrs if a.family == socket.AF_INET}


def test_serve_class_listens_everywhere_and_prints_a_join_link_that_answers(tmp_path):
    lan = sorted(a for a in this_machines_addresses() if not ipaddress.ip_address(a).is_loopback)
    if not lan:
        pytest.skip("this machine has no network address besides loopback: no link could reach it")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--class", "--port", str(port), "--workers", "1", "--no-preload"],
        cwd=ROOT, env=env_for(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    try:
        lines = Lines(proc)
        lines.wait_for("Students join at")
        link = lines.wait_for("/follow").split()[-1]
        assert link.startswith("http://") and link.endswith(f":{port}/follow")
        address = link.removeprefix("http://").split(":")[0]
        assert address in lan  # this machine's network address, not 127.0.0.1
        lines.wait_for("Application startup complete")
        assert httpx.get(f"http://{address}:{port}/healthz", timeout=30).status_code == 200
        page = httpx.get(link, timeout=60)
        assert page.status_code == 200 and "join" in page.text.lower()
    finally:
        stop_group(proc, 60)


def test_a_port_in_use_is_said_in_words_with_a_free_one_to_choose(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--no-preload"],
            cwd=ROOT, env=env_for(tmp_path), capture_output=True, text=True, timeout=BOUND,
        )
    assert done.returncode == 2, done.stderr
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr
    suggested = int(done.stderr.split("tokenplay serve --port ")[1].split()[0])
    assert suggested > port and network.port_is_free("127.0.0.1", suggested)
    assert "Traceback" not in done.stderr


# -- the addresses, on interfaces the test controls -------------------------------------------------------------------

Addr = namedtuple("Addr", "family address")
Stats = namedtuple("Stats", "isup")


@pytest.fixture()
def interfaces(monkeypatch):
    addrs = {
        "lo": [Addr(socket.AF_INET, "127.0.0.1"), Addr(socket.AF_INET6, "::1")],
        "wlan0": [Addr(socket.AF_INET, "10.1.2.3"), Addr(socket.AF_INET6, "fe80::1%wlan0"),
                  Addr(socket.AF_INET6, "fd00::5")],
        "eth0": [Addr(socket.AF_INET, "192.168.1.20")],
        "down0": [Addr(socket.AF_INET, "172.16.0.9")],
    }
    stats = {"lo": Stats(True), "wlan0": Stats(True), "eth0": Stats(True), "down0": Stats(False)}
    monkeypatch.setattr(psutil, "net_if_addrs", lambda: addrs)
    monkeypatch.setattr(psutil, "net_if_stats", lambda: stats)
    monkeypatch.setattr(network, "_default_route_address", lambda: "192.168.1.20")
    monkeypatch.setenv("TOKENPLAY_PUBLIC_URL", "unset")  # recorded, so what class_lines sets is undone after
    monkeypatch.delenv("TOKENPLAY_PUBLIC_URL")


def test_every_network_address_is_listed_default_route_first(interfaces):
    assert network.network_addresses() == ["192.168.1.20", "10.1.2.3"]  # no loopback, no interface that is down
    assert network.network_addresses(ipv6=True) == ["192.168.1.20", "10.1.2.3", "fd00::5"]  # no link-local
    assert network.reachable_bases("0.0.0.0", 8000) == ["http://192.168.1.20:8000", "http://10.1.2.3:8000"]
    assert network.reachable_bases("::", 80)[-1] == "http://[fd00::5]:80"
    assert network.reachable_bases("127.0.0.1", 8000) == [] and network.reachable_bases("localhost", 8000) == []
    assert network.reachable_bases("10.1.2.3", 8000) == ["http://10.1.2.3:8000"]


def test_the_class_lines_give_every_link_and_set_the_address_the_qr_codes_use(interfaces):
    lines = class_lines("0.0.0.0", 8000)
    assert "  http://192.168.1.20:8000/follow" in lines and "  or http://10.1.2.3:8000/follow" in lines
    assert os.environ["TOKENPLAY_PUBLIC_URL"] == "http://192.168.1.20:8000"
    loopback = " ".join(class_lines("127.0.0.1", 8000))
    assert "no phone can join" in loopback and "tokenplay serve --class" in loopback


# -- what the teacher is told: the share panel and POST /api/train/{id}/session ----------------------------------------

def test_reach_follows_where_the_server_listens(interfaces):
    on_loopback = reach("127.0.0.1", 8000, None, "http://127.0.0.1:8000/")
    assert on_loopback.bases == [] and "127.0.0.1 only" in on_loopback.warning and FIX in on_loopback.warning
    everywhere = reach("0.0.0.0", 8000, None, "http://127.0.0.1:8000/")  # the teacher's browser on this machine
    assert everywhere.warning is None and everywhere.base == "http://192.168.1.20:8000"
    assert everywhere.bases == ["http://192.168.1.20:8000", "http://10.1.2.3:8000"]
    public = reach("0.0.0.0", 8000, "http://class.example:8000", "http://127.0.0.1:8000/")
    assert public.base == "http://class.example:8000" and public.bases[0] == public.base and len(public.bases) == 3
    unknown = reach(None, None, None, "http://localhost:8000/")  # another server: the teacher's address decides
    assert unknown.bases == [] and "localhost only" in unknown.warning
    assert reach(None, None, None, "http://10.1.2.3:8000/") == Reach("http://10.1.2.3:8000", ["http://10.1.2.3:8000"])


def test_reach_without_a_network_address_says_so(monkeypatch):
    monkeypatch.setattr(network, "network_addresses", lambda ipv6=False: [])
    alone = reach("0.0.0.0", 8000, None, "http://127.0.0.1:8000")
    assert alone.bases == [] and "no network address" in alone.warning


@pytest.fixture()
def trained(tmp_path):
    """An app told where it listens (as tokenplay serve tells its workers), with a finished run."""
    opened = []

    def app_with(**listen):
        settings = Settings(lab_runs_dir=tmp_path / "runs", lab_pool="thread", **listen)
        client = TestClient(create_app(settings), base_url="http://127.0.0.1:8000").__enter__()  # the teacher on this machine
        opened.append(client)
        train = {"corpus": "the cat sat on the mat " * 20, "algorithm": "byte", "pattern": "gpt2", "merges": 2}
        run_id = wait_done(client, client.post("/api/train", json=train).json()["id"])["id"]
        return client, run_id

    yield app_with
    for client in opened:
        client.__exit__(None, None, None)


def test_on_loopback_the_teacher_is_told_in_words_with_the_fix(interfaces, trained):
    client, run_id = trained(listen_host="127.0.0.1", listen_port=8000)
    body = client.post(f"/api/train/{run_id}/session").json()
    assert body["follow_urls"] == []
    assert "no phone" in body["warning"] and "make class" in body["warning"] and "tokenplay serve --class" in body["warning"]
    hx = {"HX-Request": "true"}
    for panel in (client.get(f"/lab/runs/{run_id}/share", headers=hx).text,  # before sharing, and after
                  client.post(f"/lab/runs/{run_id}/share", headers=hx).text):
        warning = re.search(r'<p class="share-warning" id="share-warning" role="status">([^<]+)</p>', panel).group(1)
        assert "listens on 127.0.0.1 only" in warning and "make class (or tokenplay serve --class)" in warning


def test_listening_everywhere_every_reachable_link_is_listed(interfaces, trained):
    client, run_id = trained(listen_host="0.0.0.0", listen_port=8000)
    body = client.post(f"/api/train/{run_id}/session").json()
    code = body["code"]
    assert "warning" not in body
    assert body["follow_urls"] == [f"http://192.168.1.20:8000/follow/{code}", f"http://10.1.2.3:8000/follow/{code}"]
    assert body["join_url"] == body["follow_urls"][0]
    panel = client.post(f"/lab/runs/{run_id}/share", headers={"HX-Request": "true"}).text
    code = re.search(r'data-code="([A-Z0-9]{6})"', panel).group(1)
    assert "share-warning" not in panel
    assert f"<title>QR code of http://192.168.1.20:8000/follow/{code}</title>" in panel
    assert f'<a href="http://10.1.2.3:8000/follow/{code}"' in panel
