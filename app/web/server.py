"""``tokenplay serve``: load every tokenizer once, then fork the worker processes that serve the app, and keep them.

uvicorn's own ``--workers`` starts each worker as a new interpreter (it spawns), so every worker loads and keeps its own
copy of every tokenizer it serves: four workers held four copies of every rank table. Here the process that starts the
server (the supervisor) loads them first, then forks the workers, which share those pages with it:

- the tokenizers our own engines run come from their table files (:mod:`app.engines.registry.tables`), mapped: the
  operating system shares those pages whatever the processes;
- the reference libraries' (tiktoken, Hugging Face ``tokenizers``) build their own structures in memory; built before
  the fork, they are shared copy-on-write, and nothing writes them (``gc.freeze`` keeps the collector off the Python
  objects, and tiktoken's Python copy of its ranks, which its Rust core does not read, is dropped).

So a worker never loads a shipped tokenizer: its first use answers at once, and no load holds a worker's GIL for
seconds while the supervisor checks on it (a Hugging Face ``tokenizer.json`` is read in one call that holds it: two
seconds for Gemma 3 on a busy machine). Tokenizers brought later (uploads) are built into tables by a child process
and mapped. ``preload="none"`` leaves every load to the workers, on first use.

The supervisor binds the socket, loads, forks ``workers`` workers (each runs ``uvicorn.Server`` on the shared socket),
then watches them: a worker that exits, or that does not answer a health check (a ping over a pipe, answered by a
thread of the worker) within ``timeout_worker_healthcheck`` seconds, is replaced by a new fork, and the log says
which ("Worker [pid] died ..." / "... did not answer ..."). SIGINT and SIGTERM stop the workers (each finishes its
requests) and then the supervisor; SIGHUP replaces the workers one at a time, each new one serving before the old
one stops. A worker also stops when the supervisor dies.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, Pipe

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from app.settings import Settings

logger = logging.getLogger("uvicorn.error")

#: How often the supervisor looks at its workers (seconds).
TICK = 0.5


def preload(echo: Callable[[str], None] = logger.info) -> dict:
    """Load every registered tokenizer in this process (tables built first where missing, a few at a time), then
    settle the memory so that forked workers share it. Returns how long it took and what was loaded."""
    from app.engines import registry
    from app.engines.openai.encodings import TiktokenTokenizer, release_parsed_ranks
    from app.engines.registry import builder, tables
    from app.engines.registry.memory import release_freed_memory

    start = time.perf_counter()
    names = registry.names()
    stored = [n for n in names if registry.spec(n).stored]
    if stored and tables.enabled():
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
    gc.collect()
    gc.freeze()
    took = time.perf_counter() - start
    echo(f"Loaded {len(names)} tokenizers in {took:.1f} s, to share between the workers")
    return {"seconds": took, "tokenizers": len(names)}


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
        try:
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)  # the supervisor's flags are not this process's (uvicorn sets its own)
            _die_with_parent()
            random.seed()  # not the supervisor's sequence
            server = uvicorn.Server(config)

            def answer() -> None:
                try:
                    while True:
                        conn.recv()
                        conn.send(server.started)
                except (EOFError, OSError):
                    pass

            threading.Thread(target=answer, name="tokenplay-health", daemon=True).start()
            server.run(sockets=sockets)
            code = 0 if server.started else STARTUP_FAILURE
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - the worker's last words, then its exit status says it failed
            logger.exception("Worker [%d] failed", os.getpid())
        finally:
            logging.shutdown()
        return code

    def ping(self, timeout: float) -> bool | None:
        """The worker's answer (whether its server has started), or None when it does not answer in ``timeout``."""
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

    def wait(self) -> None:
        while not self.reaped():
            time.sleep(0.05)
        self.parent_conn.close()


class Supervisor:
    """Forks ``workers`` workers on ``sockets`` and keeps them (see the module docstring)."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket], workers: int):
        self.config = config
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
        for worker in self.workers:
            worker.wait()
        logger.info("Stopping parent process [%d]", os.getpid())
        return STARTUP_FAILURE if failed else 0

    def keep_alive(self) -> bool:
        """Replace every worker that ended or does not answer; True when one could not start (then all stop)."""
        timeout = self.config.timeout_worker_healthcheck
        for i, worker in enumerate(self.workers):
            if self.should_exit.is_set():
                return False
            if not worker.reaped():
                if worker.ping(timeout) is not None or self.should_exit.is_set():
                    continue
                if not worker.reaped():
                    logger.error("Worker [%d] did not answer the health check in %s s; killed, starting another",
                                 worker.pid, timeout)
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
            old.wait()
            self.workers[i] = new


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


def serve(app: str, *, host: str, port: int, workers: int, log_level: str, preload_tokenizers: bool = True) -> int:
    """Bind, load the tokenizers (unless ``preload_tokenizers`` is false), fork ``workers`` workers and keep them until
    SIGINT or SIGTERM; the exit status."""
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, workers=workers)
    sock = config.bind_socket()
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
