"""``tokenplay serve``: load every tokenizer once, then fork the worker processes that serve the app, and keep them.

uvicorn's own ``--workers`` starts each worker as a new interpreter (it spawns), so every worker loads and keeps its own
copy of every tokenizer it serves: four workers held four copies of every rank table. Here the process that starts the
server (the supervisor) loads them first, then forks the workers, which share those pages with it:

- the tokenizers our own engines run come from their table files (:mod:`app.engines.registry.table_files`), mapped: the
  operating system shares those pages whatever the processes;
- the reference libraries' (tiktoken, Hugging Face ``tokenizers``) build their own structures in memory; built before
  the fork, they are shared copy-on-write, and nothing writes them (``gc.freeze`` keeps the collector off the Python
  objects, and tiktoken's Python copy of its ranks, which its Rust core does not read, is dropped).

So a worker never loads a shipped tokenizer: its first use answers at once, and no load holds a worker's GIL for
seconds while the supervisor checks on it (a Hugging Face ``tokenizer.json`` is read in one call that holds it: two
seconds for Gemma 3 on a busy machine). Tokenizers brought later (uploads) are built into tables by a child process
and mapped. ``preload="none"`` leaves every load to the workers, on first use.

The supervisor binds the socket, loads, forks ``workers`` workers (each runs ``uvicorn.Server`` on the shared socket),
then watches them: a worker that exits, or that fails a health check within ``timeout_worker_healthcheck`` seconds,
is replaced by a new fork, and the log says which ("Worker [pid] died ..." / "... did not answer ..." / "... is
stuck ..."). The health check is a real request: the supervisor pings the worker over a pipe, and a thread of the
worker asks the worker's own server ``GET /healthz`` over a Unix socket only it listens on, which the event loop
answers, and which says "stuck" (503) when one request has held the CPU lane longer than ``stuck_after_seconds``
(work on a user's file stops at its budget far earlier; this is the last resort). SIGINT and SIGTERM stop the
workers: each finishes its requests for at most ``drain_seconds`` (uvicorn's graceful shutdown), and a worker still
there a few seconds later is killed; then the supervisor stops. SIGHUP replaces the workers one at a time, each new
one serving before the old one stops. A worker also stops when the supervisor dies.
"""

from __future__ import annotations

import ctypes
import gc
import http.client
import logging
import os
import random
import signal
import socket
import tempfile
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, Pipe

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from app.engines.errors import TokenplayError
from app.settings import Settings

logger = logging.getLogger("uvicorn.error")

#: How often the supervisor looks at its workers (seconds).
TICK = 0.5
#: Seconds past the drain that a stopping worker is given before it is killed.
KILL_GRACE = 5.0
#: What a worker's health thread answers when its server says it is stuck (or does not answer its own request).
STUCK = "stuck"


def preload(echo: Callable[[str], None] = logger.info) -> dict:
    """Load every registered tokenizer in this process (tables built first where missing, a few at a time), then
    settle the memory so that forked workers share it. Returns how long it took and what was loaded."""
    from app.engines import registry
    from app.engines.openai.encodings import TiktokenTokenizer, release_parsed_ranks
    from app.engines.registry import builder, table_files
    from app.engines.registry.memory import release_freed_memory

    start = time.perf_counter()
    names = registry.names()
    stored = [n for n in names if registry.spec(n).stored]
    if stored and table_files.enabled():
        jobs = max(1, len(os.sched_getaffinity(0)))
        builder.build_all(stored, jobs=jobs, echo=lambda line: logger.debug("table %s", line))
    for name in names:
        tok = registry.get(name)
        if isinstance(tok, TiktokenTokenizer):
            tok.drop_python_ranks()
    if Settings().vocab_warm:  # every shipped vocabulary read once here: the workers share them (the vocabulary pages)
        from app.services.vocab import read_vocabularies

        read_vocabularies()
    release_parsed_ranks()
    release_freed_memory()
    warm_pages()
    gc.collect()
    gc.freeze()
    took = time.perf_counter() - start
    echo(f"Loaded {len(names)} tokenizers in {took:.1f} s, to share between the workers")
    return {"seconds": took, "tokenizers": len(names)}


def warm_pages() -> None:
    """Before the workers fork, what the pages' first visits would otherwise compute, so that every worker starts
    with it: the UDHR texts and the languages page's default counts (read from the files ``tokenplay precompute``
    wrote at install, or computed), and the oddities' explanations (what a model builds on its first explanation
    lives in the process: Jurassic-2's takes seconds)."""
    from app.engines import registry
    from app.features import languages, oddities

    for name in languages.PRECOMPUTED:
        languages.token_counts(registry.get(name), languages.SHIPPED + name)
    oddities.warm()


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when its parent (the supervisor) dies (elsewhere: nothing)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Worker:
    """One forked worker process: ``uvicorn.Server(config)`` on the shared sockets, and a thread answering pings."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket], others: list[Connection] = ()):
        self.parent_conn, child_conn = Pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the worker: the supervisor's ends of the pipes are not its own
            for conn in (self.parent_conn, *others):
                conn.close()
            os._exit(self._serve(config, sockets, child_conn))
        child_conn.close()
        self.exitcode: int | None = None

    @staticmethod
    def _serve(config: uvicorn.Config, sockets: list[socket.socket], conn: Connection) -> int:
        code = 1
        private = None
        try:
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)  # the supervisor's flags are not this process's (uvicorn sets its own)
            _die_with_parent()
            random.seed()  # not the supervisor's sequence
            server = uvicorn.Server(config)
            private = _private_socket()
            path = private.getsockname()
            timeout = max(1.0, config.timeout_worker_healthcheck - 1)

            def answer() -> None:
                try:
                    while True:
                        conn.recv()
                        conn.send(_health(path, timeout) if server.started else False)
                except (EOFError, OSError):
                    pass

            threading.Thread(target=answer, name="tokenplay-health", daemon=True).start()
            server.run(sockets=[*sockets, private])
            code = 0 if server.started else STARTUP_FAILURE
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - the worker's last words, then its exit status says it failed
            logger.exception("Worker [%d] failed", os.getpid())
        finally:
            if private is not None:
                _unlink(private)
            logging.shutdown()
        return code

    def ping(self, timeout: float) -> bool | str | None:
        """The worker's answer (whether its server has started, or :data:`STUCK`), or None when it does not answer
        in ``timeout``."""
        try:
            self.parent_conn.send(b"ping")
            if self.parent_conn.poll(timeout):
                return self.parent_conn.recv()
        except (OSError, EOFError):
            pass
        return None

    def reaped(self) -> bool:
        """Whether the process has ended (its exit status is then in ``exitcode``)."""
        if self.exitcode is not None:
            return True
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            self.exitcode = -1
            return True
        if pid == 0:
            return False
        self.exitcode = os.waitstatus_to_exitcode(status)
        return True

    def signal(self, sig: int) -> None:
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def wait(self, bound: float | None = None) -> None:
        """Wait for the process to end; after ``bound`` seconds, kill it."""
        deadline = None if bound is None else time.monotonic() + bound
        while not self.reaped():
            if deadline is not None and time.monotonic() > deadline:
                logger.error("Worker [%d] did not stop in %s s; killed", self.pid, bound)
                self.signal(signal.SIGKILL)
                deadline = None
            time.sleep(0.05)
        self.parent_conn.close()


class Supervisor:
    """Forks ``workers`` workers on ``sockets`` and keeps them (see the module docstring)."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket], workers: int):
        self.config = config
        #: How long a stopping worker may finish its requests before it is killed.
        self.stop_bound = (config.timeout_graceful_shutdown or 0) + KILL_GRACE
        self.sockets = sockets
        self.count = workers
        self.workers: list[Worker] = []
        self.should_exit = threading.Event()
        self.signals: list[int] = []
        self.restarted = 0

    def _on_signal(self, sig, frame) -> None:
        self.signals.append(sig)
        if sig in (signal.SIGINT, signal.SIGTERM):
            self.should_exit.set()

    def run(self) -> int:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        logger.info("Started parent process [%d]", os.getpid())
        for _ in range(self.count):
            self.workers.append(self._fork())
        failed = False
        while not self.should_exit.wait(TICK):
            if signal.SIGHUP in self.signals:
                self.signals.clear()
                self.replace_all()
            failed = self.keep_alive()
            if failed:
                break
        for worker in self.workers:
            worker.signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_bound
        for worker in self.workers:
            worker.wait(max(0.0, deadline - time.monotonic()))
        logger.info("Stopping parent process [%d]", os.getpid())
        return STARTUP_FAILURE if failed else 0

    def keep_alive(self) -> bool:
        """Replace every worker that ended or does not answer; True when one could not start (then all stop)."""
        timeout = self.config.timeout_worker_healthcheck
        for i, worker in enumerate(self.workers):
            if self.should_exit.is_set():
                return False
            if not worker.reaped():
                answer = worker.ping(timeout)
                if (answer is not None and answer != STUCK) or self.should_exit.is_set():
                    continue
                if not worker.reaped():
                    if answer == STUCK:
                        logger.error("Worker [%d] is stuck (its server cannot answer a request in time); killed, "
                                     "starting another", worker.pid)
                    else:
                        logger.error("Worker [%d] did not answer the health check in %s s; killed, starting "
                                     "another", worker.pid, timeout)
                    worker.signal(signal.SIGKILL)
                    worker.wait()
                    self._replace(i)
                    continue
            if self.should_exit.is_set():
                return False
            if worker.exitcode == STARTUP_FAILURE:
                logger.error("Worker [%d] failed to start; stopping", worker.pid)
                return True
            logger.warning("Worker [%d] died (exit status %s); starting another", worker.pid, worker.exitcode)
            self._replace(i)
        return False

    def _replace(self, i: int) -> None:
        self.workers[i].parent_conn.close()
        self.workers[i] = self._fork()
        self.restarted += 1

    def _fork(self) -> Worker:
        return Worker(self.config, self.sockets, [w.parent_conn for w in self.workers])

    def replace_all(self) -> None:
        """Replace the workers one at a time: each new one answers before the old one is asked to stop."""
        for i, old in enumerate(list(self.workers)):
            new = self._fork()
            deadline = time.monotonic() + self.config.timeout_worker_healthcheck + 30
            while time.monotonic() < deadline and not new.reaped() and new.ping(1) is not True:
                time.sleep(0.1)
            if new.reaped():
                logger.error("A new worker did not start; keeping worker [%d]", old.pid)
                return
            old.signal(signal.SIGTERM)
            old.wait(self.stop_bound)
            self.workers[i] = new


def _private_socket() -> socket.socket:
    """A Unix socket only this worker listens on (its health check's requests reach this worker, no other)."""
    path = os.path.join(tempfile.gettempdir(), f"tokenplay-health-{os.getpid()}-{random.getrandbits(32):08x}.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    os.chmod(path, 0o600)
    sock.listen(8)
    return sock


def _unlink(sock: socket.socket) -> None:
    try:
        path = sock.getsockname()
        sock.close()
        os.unlink(path)
    except OSError:
        pass


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def _health(path: str, timeout: float) -> bool | str:
    """True when the worker's own server answers ``GET /healthz`` with 200 within ``timeout``, else :data:`STUCK`."""
    conn = _UnixConnection(path, timeout)
    try:
        conn.request("GET", "/healthz")
        return True if conn.getresponse().status == 200 else STUCK
    except (OSError, http.client.HTTPException):
        return STUCK
    finally:
        conn.close()


class PortInUseError(TokenplayError):
    """The address and port a server was asked to listen on are taken (its message says how to choose another)."""


def check_port(host: str, port: int) -> None:
    """Raise :class:`PortInUseError`, in words and with a free port to use instead, when ``host``:``port`` is taken."""
    from app.network import free_port_after, port_is_free

    if port and not port_is_free(host, port):
        other = free_port_after(host, port)
        instead = f"--port {other}" if other else "--port with another number"
        make = f" (make run: PORT={other} make run)" if other else ""
        raise PortInUseError(
            f"port {port} on {host} is already in use: another Tokenplay, or another program, is listening there. "
            f"Stop it, or choose another port: tokenplay serve {instead}{make}"
        )


def _warm_vocabularies() -> subprocess.Popen | None:
    """Compute the vocabulary pages' reports ahead, in a process of their own at low priority that ends with the
    supervisor (:func:`app.services.vocab.warm`); None when the settings say not to."""
    if not Settings().vocab_warm:
        return None

    def lowly() -> None:
        os.nice(10)
        _die_with_parent()

    return subprocess.Popen([sys.executable, "-m", "app.services.vocab"], preexec_fn=lowly,
                            stdout=subprocess.DEVNULL)


def serve(app: str, *, host: str, port: int, workers: int, log_level: str, preload_tokenizers: bool = True,
          drain_seconds: float = 10.0, announce: Callable[[int], None] | None = None,
          forwarded_allow_ips: str | None = None) -> int:
    """Bind, load the tokenizers (unless ``preload_tokenizers`` is false), fork ``workers`` workers and keep them until
    SIGINT or SIGTERM (each worker finishes its requests for at most ``drain_seconds``); the exit status. A port in
    use raises :class:`PortInUseError` before anything starts; ``announce`` is called with the port once it is
    bound (what ``tokenplay serve --class`` prints). ``forwarded_allow_ips``: the reverse proxies whose
    ``X-Forwarded-Proto`` / ``-For`` uvicorn trusts (None: none, whatever uvicorn's own default)."""
    check_port(host, port)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, workers=workers,
                            timeout_graceful_shutdown=drain_seconds, proxy_headers=bool(forwarded_allow_ips),
                            forwarded_allow_ips=forwarded_allow_ips or "127.0.0.1")
    sock = config.bind_socket()
    if announce is not None:
        announce(sock.getsockname()[1])
    try:
        if preload_tokenizers:
            preload()
        else:
            gc.collect()
            gc.freeze()
        threads = threading.active_count()
        if threads > 1:  # forking with other threads running could copy a lock they hold
            logger.warning("%d threads run in the supervisor before forking", threads)
        warming = _warm_vocabularies() if preload_tokenizers else None
        try:
            return Supervisor(config, [sock], workers).run()
        finally:
            if warming is not None and warming.poll() is None:
                warming.terminate()
    finally:
        sock.close()
