"""Running a training state to its target: the one loop behind ``tokenplay train``, the trainers' functions and
the BPE lab, with the limits and stop reasons they share.

:func:`run_merges` steps any state with the :class:`~app.engines.training.merge_state.MergeState` surface
(``merges``, ``done``, ``step``) until it holds a number of merges or has nothing left to merge, reporting each
step to ``progress`` and asking ``should_stop`` before each one, with the cycle collector paused
(:func:`cycle_collector_paused`). :func:`replay` re-applies merges already chosen (the lab continuing a stored run
from one of its steps). Neither prints nor times anything.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Protocol

from .steps import MergeStep

Pair = tuple[int, int]

#: Default upper bound on ``vocab_size`` for every trainer (each takes a ``max_vocab_size``-style override).
MAX_VOCAB_SIZE = 100_000

#: ``TrainResult.stop_reason`` when training reached its target.
STOP_VOCAB_SIZE = "vocab_size reached"
#: ``TrainResult.stop_reason`` (or its start) when the corpus ran out of pairs first (a state with another
#: ``min_count`` says its own: ``MergeState.stop_reason``).
STOP_NO_PAIR = "no pair occurs twice"

#: Called after each merge with ``(merges done, target merges, the step's record)``.
ProgressFn = Callable[[int, int, MergeStep], None]


_pause_lock = threading.Lock()
_pauses = 0  # trainings running in this process with the cycle collector paused
_resume = False  # whether to switch it back on when the last one ends


@contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a training runs; it comes back on when the last overlapping one ends.

    Training builds millions of lists and tuples that live for the whole run and hold no cycles, and each full
    pass of the collector walks all of them: on pattern ``none`` that was a third of the run. Reference counting
    frees memory as usual meanwhile; only cyclic garbage (which training makes none of) waits, in a process that
    serves other threads too, until the training ends.
    """
    global _pauses, _resume
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


class Cancelled(Exception):
    """Raised by :func:`run_merges` and :func:`replay` when ``should_stop()`` answers true (a cancelled job)."""


class Steppable(Protocol):
    merges: list[Pair]

    @property
    def done(self) -> bool: ...

    def step(self, force_pair: Pair | None = None, *, top_k: int = 0, max_ties: int | None = None) -> MergeStep: ...


def run_merges(
    state: Steppable,
    n_merges: int,
    *,
    top_k: int = 0,
    max_ties: int | None = None,
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> str:
    """Step ``state`` until it holds ``n_merges`` merges or is done; return the stop reason.

    ``top_k`` and ``max_ties`` go to every :meth:`step`; ``should_stop()`` answering true raises
    :class:`Cancelled` before the next step.
    """
    with cycle_collector_paused():
        while len(state.merges) < n_merges:
            if should_stop is not None and should_stop():
                raise Cancelled()
            if state.done:
                return getattr(state, "stop_reason", STOP_NO_PAIR)
            record = state.step(top_k=top_k, max_ties=max_ties)
            if progress is not None:
                progress(record.step, n_merges, record)
    return STOP_VOCAB_SIZE


def replay(state: Steppable, pairs: Iterable[Pair], should_stop: Callable[[], bool] | None = None) -> None:
    """Merge ``pairs`` in order (forced steps whose records the caller already has: no tie lists are built)."""
    for pair in pairs:
        state.step(force_pair=pair, max_ties=0)
        if should_stop is not None and should_stop():
            raise Cancelled()
