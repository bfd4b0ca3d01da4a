"""Limits on work that runs what a user wrote: a regex in an uploaded tokenizer file, a chat template, a lab pattern.

A regex can take exponential time (``(a+)+$`` on ``aaaa…!``) and a template can loop or allocate without end, so
such work runs under a **budget**: seconds of work for one request, counted from the first moment user-written code
runs (a request that waits its turn spends nothing). The web layer opens one per request (:func:`use`); code
outside a request (the CLI, the tests' own calls) runs without one, unlimited, unless it opens one itself.

- :class:`UserPattern` is a compiled ``regex`` pattern whose every match runs with the budget's time left as the
  ``regex`` module's own ``timeout``, and which checks the clock between matches (a pattern that is only quadratic
  takes each match quickly and all of them slowly); matching releases the GIL (``concurrent=True``), so other
  requests of the process go on meanwhile. Every regex a tokenizer file brings is compiled as one.
- :func:`run_isolated` runs a call in a forked child process with a memory cap and kills it when the budget runs
  out: for code that cannot be interrupted where it runs (Hugging Face ``tokenizers`` matching an uploaded regex in
  Rust, a template's loop), whatever it does.
- :func:`untrusted` is called where a request first uses something a user brought; the budget passes it on to the
  hook its opener set (the web layer moves the request to a lane of its own, so that other users' requests never
  queue behind it).
- :func:`probe_pattern` tries a regex on a few adversarial texts when a file is uploaded, to say early that a
  pattern is dangerous.

Over its budget, work raises :class:`OverBudget`, whose message says what took too long ("this tokenizer's
pre-tokenizer regex took more than 3 s on this text"). Nothing here knows about HTTP.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, TypeVar

import regex

from .errors import TokenplayError

T = TypeVar("T")


class OverBudget(TokenplayError):
    """Work on something a user wrote that went over its time or memory budget; the message says which and what."""


class Budget:
    """``seconds`` of work on user-written code for one request, started on first use (:meth:`start`).

    ``clock`` is the time source (tests pass their own); ``on_untrusted`` is called once, the first time the
    request uses something a user brought (:func:`untrusted`).
    """

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic,
                 on_untrusted: Callable[[], None] | None = None):
        if seconds <= 0:
            raise ValueError(f"a budget is a positive number of seconds, not {seconds!r}")
        self.seconds = seconds
        self.clock = clock
        self.on_untrusted = on_untrusted
        self.deadline: float | None = None
        self.untrusted = False
        self.cancelled = False

    def start(self) -> float:
        """The deadline, set by the first call."""
        if self.deadline is None:
            self.deadline = self.clock() + self.seconds
        return self.deadline

    def remaining(self) -> float:
        """Seconds left (0 once over, or once cancelled: the client is gone)."""
        if self.cancelled:
            return 0.0
        return max(0.0, self.start() - self.clock())

    def cancel(self) -> None:
        """Stop the work at its next check: nobody waits for its answer any more."""
        self.cancelled = True

    def over(self, what: str) -> OverBudget:
        if self.cancelled:
            return OverBudget(f"{what} was stopped: the request was cancelled")
        return OverBudget(f"{what} took more than {_seconds(self.seconds)} on this text; a simpler text, or a "
                          "tokenizer whose regex does not backtrack so much, is served")

    def check(self, what: str) -> float:
        """The seconds left; raises :class:`OverBudget` naming ``what`` when none are."""
        left = self.remaining()
        if left <= 0:
            raise self.over(what)
        return left


def _seconds(seconds: float) -> str:
    return f"{seconds:g} s"


_CURRENT: ContextVar[Budget | None] = ContextVar("tokenplay_budget", default=None)


def current() -> Budget | None:
    """The budget of the work under way, or None (no limit)."""
    return _CURRENT.get()


@contextmanager
def use(budget: Budget | None) -> Iterator[Budget | None]:
    """Run the block under ``budget`` (None: without one)."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


def untrusted() -> None:
    """Say that the work under way now uses something a user brought (an uploaded tokenizer or template): the
    budget's opener is told once (its ``on_untrusted`` hook)."""
    budget = _CURRENT.get()
    if budget is None or budget.untrusted:
        return
    budget.untrusted = True
    if budget.on_untrusted is not None:
        budget.on_untrusted()


# -- regexes ------------------------------------------------------------------------------------------------------
class UserPattern:
    """A ``regex`` pattern written by a user, run under the current budget (see the module docstring).

    It offers what the engines call on a compiled pattern (``finditer``, ``findall``, ``search``, ``match``,
    ``fullmatch``, ``sub``, ``split``, ``pattern``, ``groups``, ``flags``), and pickles as its source (a tokenizer's
    table file holds it). ``role`` names it in the message of :class:`OverBudget` ("this tokenizer's pre-tokenizer
    regex").

    >>> p = UserPattern(r"\\d+", "a test regex")
    >>> [m.group() for m in p.finditer("a1b22")], p.sub("#", "a1b22"), p.pattern
    (['1', '22'], 'a#b#', '\\\\d+')
    """

    __slots__ = ("compiled", "role")

    def __init__(self, pattern: str | regex.Pattern, role: str, flags: int = 0):
        self.compiled = pattern if isinstance(pattern, regex.Pattern) else regex.compile(pattern, flags)
        self.role = role

    def __reduce__(self):
        return _user_pattern, (self.compiled.pattern, self.compiled.flags, self.role)

    def __repr__(self) -> str:
        return f"UserPattern({self.compiled.pattern!r}, {self.role!r})"

    @property
    def pattern(self) -> str:
        return self.compiled.pattern

    @property
    def groups(self) -> int:
        return self.compiled.groups

    @property
    def flags(self) -> int:
        return self.compiled.flags

    @property
    def groupindex(self):
        return self.compiled.groupindex

    def _run(self, method: str, *args, **kwargs):
        budget = _CURRENT.get()
        if budget is None:
            return getattr(self.compiled, method)(*args, **kwargs)
        try:
            return getattr(self.compiled, method)(*args, timeout=budget.check(self.role), concurrent=True, **kwargs)
        except TimeoutError:
            raise budget.over(self.role) from None

    def finditer(self, string: str, *args, **kwargs) -> Iterator[regex.Match]:
        budget = _CURRENT.get()
        if budget is None:
            yield from self.compiled.finditer(string, *args, **kwargs)
            return
        # The ``timeout`` of ``finditer`` bounds the whole iteration, wall clock from here; the budget's own clock
        # (a test's, or a cancellation) is read again every few hundred matches, so a long text of short matches
        # pays for it once in a while, not per match.
        found = self.compiled.finditer(string, *args, timeout=budget.check(self.role), concurrent=True, **kwargs)
        deadline, clock = budget.start(), budget.clock
        try:
            for n, match in enumerate(found):
                yield match
                if not n & 255 and (budget.cancelled or clock() >= deadline):
                    raise budget.over(self.role)
        except TimeoutError:
            raise budget.over(self.role) from None

    def findall(self, string: str, *args, **kwargs) -> list:
        return self._run("findall", string, *args, **kwargs)

    def search(self, string: str, *args, **kwargs):
        return self._run("search", string, *args, **kwargs)

    def match(self, string: str, *args, **kwargs):
        return self._run("match", string, *args, **kwargs)

    def fullmatch(self, string: str, *args, **kwargs):
        return self._run("fullmatch", string, *args, **kwargs)

    def sub(self, repl, string: str, *args, **kwargs) -> str:
        return self._run("sub", repl, string, *args, **kwargs)

    def split(self, string: str, *args, **kwargs) -> list:
        return self._run("split", string, *args, **kwargs)


def _user_pattern(pattern: str, flags: int, role: str) -> UserPattern:
    return UserPattern(regex.compile(pattern, flags), role)


#: The texts :func:`probe_pattern` tries, built around characters the pattern names: a long run of one character
#: then a character that spoils the match at the end (what makes nested quantifiers backtrack).
_PROBE_RUN = 4_096
_PROBE_ENDS = ("!", "\n", "\x00", " ")
_PROBE_CHARS = "a0 \t-_.x"


def probe_pattern(compiled: regex.Pattern, *, seconds: float = 0.25, budget_seconds: float | None = None) -> str | None:
    """A warning in words when ``compiled`` is catastrophically slow on one of a few adversarial texts (each tried
    for at most ``seconds``), else None. A pattern that passes may still be slow on other texts: requests stay
    under their budget whatever the probe said.

    >>> probe_pattern(regex.compile(r"(a+)+$"), seconds=0.05) is not None
    True
    >>> probe_pattern(regex.compile(r"\\w+|\\s+"), seconds=0.05) is None
    True
    """
    literals = [c for c in dict.fromkeys(compiled.pattern) if c.isalnum() or c in " \t-_.,;:'\""][:12]
    for char in dict.fromkeys(literals + list(_PROBE_CHARS)):
        for end in _PROBE_ENDS:
            text = char * _PROBE_RUN + end
            try:
                deadline = time.monotonic() + seconds
                for _ in compiled.finditer(text, timeout=seconds, concurrent=True):
                    if time.monotonic() > deadline:
                        raise TimeoutError
            except TimeoutError:
                shown = (char * 4 + "…" + end).encode("unicode_escape").decode("ascii")
                limit = f"; requests on it are stopped after {_seconds(budget_seconds)}" if budget_seconds else ""
                return (f"the regex {compiled.pattern!r} backtracks catastrophically on some texts (such as "
                        f"'{shown}', {_PROBE_RUN:,} times the first character): it may be very slow{limit}")
    return None


# -- isolated calls -----------------------------------------------------------------------------------------------
#: How a child reports: a pickled ``(kind, value)`` with kind "ok", "error" (a TokenplayError, pickled), "message"
#: (an error that does not pickle: its class name and message) or "memory".
_RESULT_LIMIT = 1 << 31


def _child(fn: Callable[..., T], args: tuple, write_fd: int, memory_bytes: int | None) -> None:
    """In the forked child: run ``fn(*args)`` and write its pickled outcome; never returns."""
    status = 0
    try:
        try:
            os.nice(10)  # the parent's other users come first
        except OSError:
            pass
        if memory_bytes is not None:
            import resource

            with open("/proc/self/statm", "rb") as f:
                size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            resource.setrlimit(resource.RLIMIT_AS, (size + memory_bytes, size + memory_bytes))
        try:
            outcome = ("ok", fn(*args))
        except MemoryError:
            outcome = ("memory", None)
        except RecursionError:
            outcome = ("message", ("RecursionError", "it nests too deeply"))
        except BaseException as exc:  # noqa: BLE001 - every outcome goes back to the parent, which raises it
            outcome = ("error", exc) if isinstance(exc, TokenplayError) else ("message", (type(exc).__name__, str(exc)))
        try:
            data = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an error holding something that does not pickle (or no memory left to
            # pickle it, right after work that used the child's whole cap): its class's name and its words
            value = outcome[1]
            if outcome[0] == "error":
                data = pickle.dumps(("rebuild", (type(value).__module__, type(value).__qualname__, str(value))))
            else:
                data = pickle.dumps(("message", (type(value).__name__, str(value))))
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view) :]
    except BaseException:  # noqa: BLE001 - nothing may escape a forked child: it exits
        status = 1
    finally:
        os._exit(status)


def run_isolated(fn: Callable[..., T], *args: Any, what: str, memory_bytes: int | None = 512 << 20,
                 hold: AbstractContextManager | None = None, reset: Callable[[], None] | None = None) -> T:
    """``fn(*args)`` run in a forked child process, under the current budget (none: no time limit) and with at most
    ``memory_bytes`` more memory than the parent had; its result (which must pickle) or its error comes back.

    Over time, the child is killed and :class:`OverBudget` names ``what``; out of memory, the same in words. An
    error that is a :class:`~app.engines.errors.TokenplayError` is raised as it was; any other as a
    TokenplayError with its message. ``hold`` (a lock) is held while the child is forked, and ``reset`` runs first
    in the child (to replace that lock, and any other the forking thread held).

    >>> run_isolated(sum, [1, 2, 3], what="a sum")
    6
    """
    budget = _CURRENT.get()
    timeout = None if budget is None else budget.check(what)
    read_fd, write_fd = os.pipe()
    with hold if hold is not None else nullcontext():
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (its outcome is read below)
        os.close(read_fd)
        if reset is not None:
            reset()
        _child(fn, args, write_fd, memory_bytes)
    os.close(write_fd)
    chunks: list[bytes] = []
    killed = False
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        size = 0
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if budget is not None and budget.cancelled:
                wait = 0.0
            ready, _, _ = select.select([read_fd], [], [], wait if wait is None else min(wait, 0.25))
            if not ready:
                if budget is not None and (budget.cancelled or time.monotonic() >= deadline):
                    killed = True
                    break
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > _RESULT_LIMIT:
                killed = True
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        if killed:
            _kill(pid)
        _, status = os.waitpid(pid, 0)
    if killed:
        raise budget.over(what) if budget is not None else OverBudget(f"{what} gave too large an answer")
    if not chunks:
        code = os.waitstatus_to_exitcode(status)
        if code == -signal.SIGKILL or code == -signal.SIGSEGV or code == -signal.SIGABRT:
            raise OverBudget(f"{what} used more memory than it may ({(memory_bytes or 0) >> 20} MB) and was stopped")
        raise OverBudget(f"{what} failed (its process ended with status {code})")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "ok":
        return value
    if kind == "error":
        raise value
    if kind == "memory":
        raise OverBudget(f"{what} used more memory than it may ({(memory_bytes or 0) >> 20} MB) and was stopped")
    if kind == "rebuild":  # a TokenplayError that did not pickle: the same class with the same words
        module, name, message = value
        found = getattr(sys.modules.get(module), name, None)
        if isinstance(found, type) and issubclass(found, TokenplayError):
            try:
                error = found(message)
            except TypeError:  # a constructor that wants more than its words
                error = None
            if error is not None:
                raise error
        raise TokenplayError(message)
    _name, message = value
    raise TokenplayError(f"{what} failed: {message}")


def clean_context(preload: tuple[str, ...] = ()):
    """A ``multiprocessing`` context whose processes start clean: forked from the forkserver (a small process of
    its own, never this server's threads and memory), else spawned. ``preload``: modules the forkserver imports once,
    for every process it forks (set before it starts)."""
    import multiprocessing

    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    if preload and method == "forkserver":
        context.set_forkserver_preload(list(preload))
    return context


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
