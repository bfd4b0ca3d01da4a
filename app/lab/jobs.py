"""Training off the event loop: a bounded pool of worker threads with a queue, progress and cancellation.

``submit`` refuses work when ``workers + queue`` jobs are already waiting or running (:class:`QueueFull`, which
the web layer answers with 429 and ``Retry-After``). A job trains with :func:`app.lab.algorithms.train`, which
reports progress after each merge and checks the job's cancel flag, so a cancelled job stops within one merge.
The run object in the store is the job's live view: status, progress, and at the end the steps.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable
from dataclasses import dataclass, field

from app.engines.errors import TokenplayError
from app.engines.training.steps import MergeStep

from .algorithms import Cancelled, train
from .runs import Run


log = logging.getLogger(__name__)

#: A training's progress callback, ``progress(done, total)``.
Progress = Callable[[int, int], None]
#: What wraps it for tests: ``wrap(progress, should_stop)`` answers the callback the training calls.
ProgressWrap = Callable[[Progress, Callable[[], bool]], Progress]

#: What a run says when its training failed for a reason the lab did not foresee (the log has the exception; a
#: user never reads an exception's name).
UNEXPECTED = (
    "training failed unexpectedly (the server's log has the details); train again, and report it if it happens again"
)

#: Seconds between heartbeats of a process's queued and running jobs (at most a quarter of the store's
#: ``stale_after``).
BEAT_EVERY = 5.0


class QueueFull(TokenplayError):
    """Every worker is busy and the queue is full; try again shortly."""

    def __init__(self, message: str, retry_after: int = 5):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Job:
    run: Run
    max_merges: int
    prefix: list[MergeStep] = field(default_factory=list)
    prefix_n_ties: list[int] = field(default_factory=list)
    force: tuple[int, int] | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    future: Future | None = None


class BoundedJobs:
    """Admission shared by the thread and process pools: at most ``workers + queue`` jobs running or waiting in
    the whole app (every process sharing the run store: ``store.admit``), and heartbeats of this process's
    unfinished jobs, so that another process can tell them alive.

    Subclasses hand an admitted job to their executor. ``wrap_progress`` (``None`` in production) wraps each
    training's progress callback: ``wrap_progress(progress, should_stop)`` answers the callback to use, so that a
    test can pause a training it looks at (``Settings.lab_progress_wrap``).
    """

    def __init__(self, store, workers: int, queue: int, *, wrap_progress: ProgressWrap | None = None):
        self.store = store
        self.workers = workers
        self.capacity = workers + queue
        self.wrap_progress = wrap_progress
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._beater = threading.Thread(target=self._beat_loop, name="lab-heartbeat", daemon=True)
        self._beater.start()

    def active(self) -> int:
        with self._lock:
            return sum(1 for j in self._jobs.values() if not j.finished.is_set())

    def _admit(self, job: Job) -> None:
        """Store ``job``'s run as queued, or raise :class:`QueueFull` with a retry hint. A store that cannot be
        written (a full disk, Redis down) raises, and the job holds no place anywhere."""
        job.run.status = "queued"
        busy = self.store.admit(job.run, self.capacity)
        if busy is not None:
            job.finished.set()
            raise QueueFull(
                f"the lab is busy: {busy} trainings are running or waiting (the limit is {self.capacity}); "
                "try again in a few seconds",
                retry_after=max(2, min(30, 3 * (busy - self.workers + 1))),
            )
        with self._lock:
            self._jobs = {k: j for k, j in self._jobs.items() if not j.finished.is_set()}
            self._jobs[job.run.id] = job

    def _beat_loop(self) -> None:
        every = min(BEAT_EVERY, getattr(self.store, "stale_after", 60.0) / 4)
        while not self._closed.wait(every):
            for run_id, job in list(self._jobs.items()):
                if not job.finished.is_set():
                    try:
                        self.store.beat(run_id)
                    except Exception:  # noqa: BLE001, S110  # pragma: no cover - a store hiccup must not stop the beats
                        pass


class JobPool(BoundedJobs):
    def __init__(self, store, workers: int = 2, queue: int = 8, *, wrap_progress: ProgressWrap | None = None):
        super().__init__(store, workers, queue, wrap_progress=wrap_progress)
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lab-train")

    def submit(self, job: Job) -> Job:
        self._admit(job)
        job.future = self._executor.submit(self._work, job)
        return job

    def wait(self, run_id: str, timeout: float) -> bool:
        job = self._jobs.get(run_id)
        return True if job is None else job.finished.wait(timeout)

    def cancel(self, run_id: str) -> bool:
        """Ask a queued or running job to stop; ``False`` when there is no such unfinished job here."""
        job = self._jobs.get(run_id)
        if job is None or job.finished.is_set():
            return False
        job.cancel.set()
        return True

    def _work(self, job: Job) -> None:
        run = job.run
        try:
            if job.cancel.is_set():
                raise Cancelled()
            run.status = "running"
            self.store.save(run)
            last_save = [time.monotonic()]

            def progress(done: int, total: int) -> None:
                run.done_merges, run.target_merges = done, total
                now = time.monotonic()
                if now - last_save[0] > 1.0:  # other worker processes read progress from the file
                    last_save[0] = now
                    self.store.save(run)

            if self.wrap_progress is not None:
                progress = self.wrap_progress(progress, job.cancel.is_set)
            trained = train(
                run.corpus,
                run.options,
                max_merges=job.max_merges,
                prefix=job.prefix,
                prefix_n_ties=job.prefix_n_ties,
                force=job.force,
                progress=progress,
                should_stop=job.cancel.is_set,
            )
            run.apply(trained)
            run.status = "done"
        except Cancelled:
            run.status = "cancelled"
            run.error = "training was cancelled"
        except TokenplayError as exc:
            run.status = "error"
            run.error = str(exc)
        except Exception:  # noqa: BLE001  # pragma: no cover - a bug; keep the worker alive and say what happened
            log.exception("lab run %s: training failed", run.id)
            run.status = "error"
            run.error = UNEXPECTED
        finally:
            try:
                self.store.put(run)
            finally:
                job.finished.set()

    def shutdown(self) -> None:
        self._closed.set()
        for job in list(self._jobs.values()):
            job.cancel.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
