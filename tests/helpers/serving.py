"""Start the app under uvicorn in a process of its own, on a free loopback port (the load test and the
multi-process tests both need one), and stop it with its whole process group (trainer processes included)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UvicornProcess:
    """``python -m uvicorn APP`` on 127.0.0.1 with ``env`` added to this environment (``REDIS_URL`` removed
    unless given); ready once ``/healthz`` answers. Raises ``RuntimeError`` if it does not start in ``timeout``.
    ``serve="tokenplay"``: ``tokenplay serve`` instead (the app's own process manager, which loads every tokenizer
    before forking its workers; ``app`` is then the app's own), its output to ``log`` when given."""

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        workers: int = 1,
        app: str = "app.main:app",
        args: tuple[str, ...] = ("--log-level", "warning"),
        timeout: float = 30,
        serve: str = "uvicorn",
        log=None,
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        environ = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | dict(env)
        if serve == "tokenplay":
            cmd = [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        else:
            cmd = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(self.port)]
        cmd += ["--workers", str(workers), *args]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=environ, start_new_session=True, stdout=log,
                                     stderr=subprocess.STDOUT if log is not None else None)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"uvicorn did not start on port {self.port}")
            time.sleep(0.1)

    def stop(self, grace: float = 15) -> None:
        """SIGTERM the process group, SIGKILL it if it has not ended after ``grace`` seconds."""
        stop_group(self.proc, grace)


def stop_group(proc: subprocess.Popen, grace: float = 30) -> None:
    """SIGTERM the process group ``proc`` leads (started with ``start_new_session``), SIGKILL it if it has not ended
    after ``grace`` seconds."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    except ProcessLookupError:
        pass
