"""A hold for tests: lab trainings that pause after their first step until the test lets them go.

Time limits, the queue and cancellation can only be tested when a training is certainly still running when the
test looks, whatever the speed of the machine. ``Settings.lab_hold_file`` (``TOKENPLAY_LAB_HOLD_FILE``) names a
file; while it exists, every lab training (in a thread or a worker process, in any server process) reports its
first step, notes its process id in ``<file>.held`` and then waits until the file is removed (the training goes
on) or it is asked to stop (the trainer's own check then cancels it before its next step).

Unset, as in production, no training is wrapped and nothing here runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

#: Seconds between two looks at the hold file while a training waits.
POLL = 0.01


def notes_of(path: Path) -> Path:
    """The file in which held trainings note their process ids, one a line."""
    return path.with_name(path.name + ".held")


def held_after_first_step(
    path: Path | str, progress: Callable[[int, int], None], should_stop: Callable[[], bool] | None
) -> Callable[[int, int], None]:
    """``progress`` that, when first called, waits while ``path`` exists and ``should_stop()`` is false."""
    path = Path(path)
    first = [True]

    def progress_then_hold(done: int, total: int) -> None:
        progress(done, total)
        if not first[0]:
            return
        first[0] = False
        if not path.exists():
            return
        with open(notes_of(path), "a", encoding="ascii") as notes:  # one short append: whole lines
            notes.write(f"{os.getpid()}\n")
        while path.exists() and not (should_stop is not None and should_stop()):
            time.sleep(POLL)

    return progress_then_hold
