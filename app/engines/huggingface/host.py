"""A ``tokenizer.json`` a user brought, run by Hugging Face ``tokenizers`` in a process of its own: its **host**.

The library reads a file in one call that holds the GIL (a 33 MB file with 1.5 million entries: four seconds), and
matches a file's regexes in Rust, where nothing can interrupt it. In the server's process, either would stall every
other request the process serves. So each uploaded file the library runs lives in a host process
(:class:`LibraryHost`), started from a clean process (the forkserver, or spawned) on first use:

- it reads the file there and answers what the server keeps of it (:class:`~.library.LibraryFacts`: the vocabulary's
  size, special and added tokens, how pieces are spelled; the pieces themselves come on demand, a block of
  ids at a time), or the library's refusal, as the same :class:`~app.engines.errors.TokenplayError`;
- each call (encode, decode, the pieces of some ids) goes over a pipe and runs there, one at a time, under the
  calling request's budget (:mod:`app.engines.budget`): a call over it kills the host, and the next call starts a
  new one (reading the file again, which no request's budget counts: it is bounded by the file's size, see
  :data:`START_SECONDS`);
- it runs at a lower priority (``nice``), with an address-space cap set once the file is read (what the library
  built, plus :data:`CALL_MEMORY`), and ends when its server process ends (the pipe closes) or when the tokenizer
  it serves is dropped.

A host serves one tokenizer for one server process; nothing here knows the web. As with any process that is not a
fork, a host imports its starter's ``__main__`` again: a script that runs uploaded files (``untrusted=True``) keeps
its work under ``if __name__ == "__main__":`` (``tokenplay``, uvicorn and pytest do).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..budget import OverBudget, clean_context, current
from ..errors import TokenplayError

#: The longest a host may take to read its file and answer (a 64 MB file reads in well under a minute).
START_SECONDS = 120.0
#: Memory a host may use beyond what the library built from the file (its calls' own work).
CALL_MEMORY = 1 << 30
#: What the forkserver imports once for every host it forks (the library; and not the server's ``__main__``, which
#: it would import by default).
PRELOAD = ("app.engines.huggingface.library",)


class HostGone(TokenplayError):
    """A host that ended without answering (killed from outside, or crashed)."""


class LibraryHost:
    """The process that runs one ``tokenizer.json`` with the library (see the module docstring).

    ``what`` names the work in the message of a budget it goes over. The host starts in the constructor (its
    refusal of the file is raised there), and again whenever a call finds it gone.
    """

    def __init__(self, text: str, *, what: str, read: Callable[[str], tuple[Any, Any]],
                 serve: Callable[[Any, str, tuple], Any]):
        self.text = text
        self.what = what
        self._read, self._calls = read, serve  # module-level functions: the host imports them by name
        self._lock = threading.Lock()  # one call at a time: the pipe carries one conversation
        self._proc = None
        self._conn = None
        self.facts = None
        self.starts = 0
        with self._lock:
            self._start()
        weakref.finalize(self, _stop, self.__dict__)

    # -- the process ----------------------------------------------------------------------------------------------
    def _start(self) -> None:
        ctx = clean_context(PRELOAD)
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(child, self._read, self._calls), name="tokenplay-library-host",
                           daemon=True)
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        self.starts += 1
        try:
            parent.send(self.text)
            kind, value = self._receive(START_SECONDS, starting=True)
        except BaseException:
            self._kill()
            raise
        if kind != "ready":
            self._kill()
            raise value
        self.facts = value

    def _kill(self) -> None:
        _stop(self.__dict__)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def close(self) -> None:
        with self._lock:
            self._kill()

    # -- calls ----------------------------------------------------------------------------------------------------
    def call(self, method: str, *args: Any) -> Any:
        """``serve(library, method, args)`` in the host (:func:`~.library.host_call`), under the current budget: its
        answer, or its error raised here; :class:`~app.engines.budget.OverBudget` (the host killed) past the
        budget."""
        budget = current()
        with self._lock:
            if not self.alive():
                self._start()  # not counted against the budget: it is reading the file, bounded by its size
            timeout = None if budget is None else budget.check(self.what)
            try:
                self._conn.send((method, args))
            except (OSError, EOFError):
                self._kill()
                raise HostGone(f"{self.what} stopped unexpectedly; try again") from None
            kind, value = self._receive(timeout, budget=budget)
        if kind == "ok":
            return value
        raise value

    def _receive(self, timeout: float | None, *, budget=None, starting: bool = False) -> tuple[str, Any]:
        """The host's next message, waiting at most ``timeout`` seconds (and no longer than a cancelled budget)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = 0.25 if deadline is None else max(0.0, min(0.25, deadline - time.monotonic()))
            try:
                if self._conn.poll(wait):
                    kind, value = self._conn.recv()
                    break
            except (OSError, EOFError):
                self._kill()
                raise HostGone(f"{self.what} stopped unexpectedly (it may have used more memory than it may); "
                               "try again") from None
            cancelled = budget is not None and budget.cancelled
            if cancelled or (deadline is not None and time.monotonic() >= deadline):
                self._kill()
                if starting:
                    raise TokenplayError(f"reading this tokenizer.json took more than {START_SECONDS:g} s")
                raise budget.over(self.what) if budget is not None else OverBudget(f"{self.what} took too long")
            if not self._proc.is_alive() and not self._conn.poll(0):
                self._kill()
                raise HostGone(f"{self.what} stopped unexpectedly (it may have used more memory than it may); "
                               "try again")
        if kind == "memory":
            self._kill()
            raise OverBudget(f"{self.what} used more memory than it may and was stopped")
        return kind, value


def _stop(state: dict) -> None:
    """End a host's process and pipe (also when its :class:`LibraryHost` is dropped)."""
    proc, conn = state.get("_proc"), state.get("_conn")
    state["_proc"] = state["_conn"] = None
    if conn is not None:
        try:
            conn.close()
        except OSError:
            pass
    if proc is not None:
        try:
            proc.kill()
            proc.join(5)
        except (OSError, ValueError, AssertionError):
            pass


def _serve(conn, read, serve) -> None:  # pragma: no cover - runs in the host process (its answers are tested)
    """The host: read the file (``read(text)``: the library and its facts), answer its facts, then serve calls
    (``serve(library, method, args)``) until the pipe closes."""
    try:
        os.nice(10)  # the server's other users come first
    except OSError:
        pass
    try:
        text = conn.recv()
        library, facts = read(text)
    except EOFError:
        return
    except BaseException as exc:  # noqa: BLE001 - the refusal goes back to the server, which raises it
        conn.send(("error", _sendable(exc)))
        return
    del text
    _cap_memory()
    conn.send(("ready", facts))
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            outcome = ("ok", serve(library, method, args))
        except MemoryError:
            outcome = ("memory", None)
        except BaseException as exc:  # noqa: BLE001 - every outcome goes back to the server
            outcome = ("error", _sendable(exc))
        try:
            conn.send(outcome)
        except (EOFError, OSError):
            return


def _sendable(exc: BaseException) -> Exception:
    """``exc`` if it is one of ours (it pickles), else a TokenplayError with its words."""
    if isinstance(exc, TokenplayError):
        return exc
    return TokenplayError(f"Hugging Face tokenizers failed: {exc}")


def _cap_memory() -> None:  # pragma: no cover - in the host
    import resource

    with open("/proc/self/statm", "rb") as f:
        size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    try:
        resource.setrlimit(resource.RLIMIT_AS, (size + CALL_MEMORY, size + CALL_MEMORY))
    except (ValueError, OSError):
        pass
