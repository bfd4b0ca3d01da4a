"""A hold for tests: lab trainings that pause after their first step until the test lets them go.

Time limits, the queue and cancellation can only be tested when a training is certainly still running when the
test looks, whatever the speed of the machine. A :class:`Hold` is what the lab calls to wrap each training's progress
callback (``Settings.lab_progress_wrap``, or a pool's ``wrap_progress``): while its file exists, every training (in
a thread or a worker process, in any server process of the test) reports its first step, notes its process id in
``<file>.held`` and then waits until the file is removed (the training goes on) or it is asked to stop (the
trainer's own check then cancels it before its next step). It pickles (by its path), so worker processes get it too.
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


class Hold:
    """The lab's hold for tests: while it is on, every training of a lab given it (``lab_progress_wrap=hold``, or
    a pool's ``wrap_progress=hold``) pauses after its first step, until :meth:`release` or a cancel."""

    def __init__(self, path: Path, on: bool = True):
        self.path = Path(path)
        if on:
            self.on()

    def __call__(self, progress: Callable[[int, int], None], should_stop: Callable[[], bool] | None):
        return held_after_first_step(self.path, progress, should_stop)

    def on(self) -> None:
        self.path.touch()

    def release(self) -> None:
        """Let held trainings go on, and new ones train without pausing."""
        self.path.unlink(missing_ok=True)

    def held(self) -> list[int]:
        """The process ids of the trainings that have paused so far (one entry per training)."""
        notes = notes_of(self.path)
        return [int(line) for line in notes.read_text().split()] if notes.exists() else []

    def wait_held(self, n: int = 1, timeout: float = 60) -> list[int]:
        """Wait until ``n`` trainings are paused at the hold (``timeout``: a deadline against hanging)."""
        deadline = time.monotonic() + timeout
        while len(self.held()) < n:
            assert time.monotonic() < deadline, f"{len(self.held())} of {n} trainings reached the hold"
            time.sleep(0.01)
        return self.held()


#: The variable that names a test server process's hold file (:func:`held_app`).
HOLD_FILE_VARIABLE = "TOKENPLAY_TEST_HOLD_FILE"
#: What a test server process runs to be held (``uvicorn --factory``): see :func:`held_app`.
HELD_APP = "helpers.lab_hold:held_app"


def held_app():
    """The app of a test's server process whose lab trainings ``hold`` (``python -m uvicorn --factory
    helpers.lab_hold:held_app``, with :func:`held_server_env`): the settings of the environment, its lab held by the
    file :data:`HOLD_FILE_VARIABLE` names."""
    from app.settings import Settings
    from app.web.app import create_app

    return create_app(Settings(lab_progress_wrap=Hold(Path(os.environ[HOLD_FILE_VARIABLE]), on=False)))


def held_server_env(hold: Hold) -> dict[str, str]:
    """What a server process started by a test needs in its environment to run :func:`held_app` held by ``hold``."""
    tests = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH", "")) if p)
    return {HOLD_FILE_VARIABLE: str(hold.path), "PYTHONPATH": path}
