"""The lanes CPU-heavy work runs in, per server process: one for our own tokenizers, one for what users brought,
and one for heavy work (a big paste to parse, a big upload, a finished run's document built the first time).

Tokenizing and rendering run in threads, at most ``cpu_threads`` at a time, first come first served: with
FastAPI's default pool (40 threads) every waiting request would hold a thread and share the GIL with the others,
so under load all of them would finish late together. Work on something a user brought (an uploaded tokenizer file
or chat template) may take its whole time budget (:mod:`app.engines.budget`): the moment a request first uses such
a thing it leaves the common lane for a lane of its own (``untrusted_threads`` at a time), so other users' requests
never queue behind it. Its wait for that lane counts against its budget.

Work a route knows to be heavy before it starts (:func:`app.web.deps.run_cpu` with ``heavy=True``) goes to the
heavy lane (``heavy_threads`` at a time): it would hold a slot of the common lane for a second or more, and the
typists behind it would wait. What it cannot leave is the GIL: pure-Python work in a thread still shares the
process's CPU with the other lanes (each gets its turn every few milliseconds), while a single long call into C
that holds the GIL (reading a 33 MB JSON file, Hugging Face ``tokenizers`` reading a tokenizer.json) stalls the
whole process; such calls run in other processes (:mod:`app.engines.huggingface.host`, :func:`~app.engines.budget.
run_isolated`).

Each lane is a :class:`Gate`: slots handed out in arrival order. :meth:`Lanes.oldest` says how long the oldest work
in a lane has been running, which the health check reads to tell a stuck worker from a busy one.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from app.engines import budget as budgets

T = TypeVar("T")


class Gate:
    """``slots`` holders at a time, admitted in arrival order."""

    def __init__(self, slots: int, clock: Callable[[], float] = time.monotonic):
        self.slots = slots
        self.clock = clock
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._holders: dict[object, float] = {}  # ticket -> when it was admitted
        self.arrived = 0  # how many have asked for a slot, ever

    def acquire(self, timeout: float | None = None) -> object | None:
        """A ticket once admitted, or None when ``timeout`` seconds passed first."""
        ticket = object()
        with self._cond:
            self.arrived += 1
            self._queue.append(ticket)
            admitted = self._cond.wait_for(lambda: self._queue[0] is ticket and len(self._holders) < self.slots,
                                           timeout)
            self._queue.remove(ticket)
            if admitted:
                self._holders[ticket] = self.clock()
            self._cond.notify_all()
            return ticket if admitted else None

    def release(self, ticket: object) -> None:
        with self._cond:
            del self._holders[ticket]
            self._cond.notify_all()

    @property
    def waiting(self) -> int:
        return len(self._queue)

    @property
    def running(self) -> int:
        return len(self._holders)

    def oldest(self) -> float:
        """Seconds the longest-running holder has held its slot (0 when none does)."""
        with self._cond:
            return max((self.clock() - t for t in self._holders.values()), default=0.0)


class Lanes:
    """The common lane and the lane of users' files, with the budget every request's work runs under."""

    def __init__(self, cpu_threads: int, untrusted_threads: int, budget_seconds: float,
                 clock: Callable[[], float] = time.monotonic, heavy_threads: int = 1):
        self.common = Gate(cpu_threads, clock)
        self.untrusted = Gate(untrusted_threads, clock)
        self.heavy = Gate(heavy_threads, clock)
        self.budget_seconds = budget_seconds
        self.clock = clock

    def run(self, budget: budgets.Budget | None, fn: Callable[..., T], *args, heavy: bool = False, **kwargs) -> T:
        """``fn(*args, **kwargs)`` in a lane, under ``budget`` (a request's; None: a new one of ``budget_seconds``):
        the heavy lane when ``heavy``, else the common one (the lane of users' files once it uses one). Called in a
        worker thread; blocks while the lane is full."""
        budget = budget or budgets.Budget(self.budget_seconds, clock=self.clock)
        held: list[tuple[Gate, object]] = []

        def move() -> None:  # the request now uses a user's file: over to the other lane
            gate, ticket = held.pop()
            gate.release(ticket)
            ticket = self.untrusted.acquire(budget.remaining())
            if ticket is None:
                raise budget.over("waiting for other uploaded tokenizers' work to finish")
            held.append((self.untrusted, ticket))

        gate = self.untrusted if budget.untrusted else self.heavy if heavy else self.common
        ticket = gate.acquire(budget.remaining() if budget.untrusted else None)
        if ticket is None:
            raise budget.over("waiting for other uploaded tokenizers' work to finish")
        held.append((gate, ticket))
        previous, budget.on_untrusted = budget.on_untrusted, move
        try:
            with budgets.use(budget):
                return fn(*args, **kwargs)
        finally:
            budget.on_untrusted = previous
            for gate, ticket in held:
                gate.release(ticket)

    def oldest(self) -> float:
        """Seconds the longest-running work in any lane has been running."""
        return max(self.common.oldest(), self.untrusted.oldest(), self.heavy.oldest())
