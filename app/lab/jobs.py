"""Training off the event loop: a bounded pool of worker threads with a queue, progress and cancellation.

``submit`` refuses work when ``workers + queue`` jobs are already waiting or running (:class:`QueueFull`, which
the web layer answers with 429 and ``Retry-After``). A job trains with :func:`app.lab.algorithms.train`, which
reports progress after each merge and checks the job's cancel flag, so a cancelled job stops within one merge.
The run object in the store is the job's live view: status, progress, and at the end the steps.

The same pools run other long work for the app (measuring a corpus: :mod:`app.services.measure`): a :class:`Job`
with a ``task`` runs that instead of a training, on a record of its own kind that says what it is in its own words
(:class:`JobWords`), in a pool of its own with its own store and limits.

A training outlives a store outage (Redis restarting, a full disk) shorter than the store's ``stale_after``: the
run's latest state is kept in this process's memory, progress is written when the store answers again, and the
finished run is written by a flusher that retries with backoff (:class:`Flusher`). Only an outage longer than
``stale_after`` fails the run, and the run then says so.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable
from dataclasses import dataclass, field

from app.engines.errors import StorageFull, TokenplayError
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
#: The longest pause between two tries of writing a finished run to a store that does not answer.
RETRY_MAX = 5.0


def store_errors() -> tuple[type[BaseException], ...]:
    """What a store raises when it cannot be reached or written (Redis down, a full disk)."""
    try:
        from redis.exceptions import RedisError
    except ImportError:  # pragma: no cover - redis is a dependency
        return (OSError, StorageFull)
    return (OSError, StorageFull, RedisError)


def outage_message(seconds: float) -> str:
    return (f"the run store (Redis, or the runs directory) could not be written for more than {seconds:g} s, so "
            "this training's result could not be kept; train again")


class Flusher:
    """Writes finished runs that the store refused, retrying with backoff, from a thread of its own.

    A run that still cannot be written ``stale_after`` seconds after its first refusal becomes an error that says
    so (:func:`outage_message`), which is written as soon as the store answers. ``clock`` and ``sleep`` are the
    time the retries read (tests drive their own).
    """

    def __init__(self, store, *, clock=time.monotonic, sleep=None):
        self.store = store
        self.clock = clock
        self._wake = threading.Event()
        self._sleep = sleep or (lambda seconds: self._wake.wait(seconds))
        self._pending: dict[str, tuple[Run, float]] = {}  # run id -> (latest state, first refusal)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.flushed = threading.Event()  # set whenever nothing is pending

        self.flushed.set()

    def keep(self, run: Run) -> bool:
        """Write ``run`` now, or hand it to the flusher; True when it was written now."""
        try:
            self.store.put(run)
            return True
        except store_errors() as exc:
            log.warning("lab run %s: the run store refused its final state (%s); retrying", run.id, exc)
            with self._lock:
                first = self._pending.get(run.id, (run, self.clock()))[1]
                self._pending[run.id] = (run, first)
                self.flushed.clear()
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._loop, name="lab-flusher", daemon=True)
                    self._thread.start()
            return False

    def pending(self) -> list[str]:
        with self._lock:
            return list(self._pending)

    def _loop(self) -> None:
        pause = 0.2
        limit = getattr(self.store, "stale_after", 60.0)
        while True:
            with self._lock:
                items = list(self._pending.items())
            if not items:
                self.flushed.set()
                return
            for run_id, (run, first) in items:
                if self.clock() - first > limit and run.error != outage_message(limit):
                    # other processes have called it dead by now: it says why, rather than a half-kept result
                    run.status, run.error = "error", outage_message(limit)
                try:
                    self.store.put(run)
                except store_errors():
                    continue
                with self._lock:
                    if self._pending.get(run_id, (None,))[0] is run:
                        del self._pending[run_id]
                log.info("lab run %s: stored once the run store answered again", run_id)
            with self._lock:
                if not self._pending:
                    self.flushed.set()
                    return
            self._sleep(pause)
            pause = min(RETRY_MAX, pause * 2)


@dataclass(frozen=True)
class JobWords:
    """What a pool says of a job's record when its work does not end well, in the record's own words: a record class
    may set ``words`` (the lab's runs use :data:`TRAINING_WORDS`)."""

    cancelled: str
    unexpected: str
    no_start: str
    died: str  # {exit_code}
    too_long: str  # {limit}, {s}
    out_of_memory: str
    busy: str  # {busy}, {capacity}


TRAINING_WORDS = JobWords(
    cancelled="training was cancelled",
    unexpected=UNEXPECTED,
    no_start="the training process did not start; train again in a moment",
    died="the training process stopped unexpectedly (exit code {exit_code}); train again",
    too_long="training took longer than the lab's limit of {limit:g} second{s} and was stopped; try a smaller corpus "
    "or fewer merges",
    out_of_memory="training ran out of memory; try a smaller corpus or fewer merges",
    busy="the lab is busy: {busy} trainings are running or waiting (the limit is {capacity}); try again in a few "
    "seconds",
)


def words_of(run) -> JobWords:
    return getattr(run, "words", TRAINING_WORDS)


def progressed(run, done: int, total: int) -> None:
    """Note a job's progress on its record (a training's merges, or the record's own ``progressed``)."""
    note = getattr(run, "progressed", None)
    if note is not None:
        note(done, total)
    else:
        run.done_merges, run.target_merges = done, total


class QueueFull(TokenplayError):
    """Every worker is busy and the queue is full; try again shortly."""

    def __init__(self, message: str, retry_after: int = 5):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Job:
    """A training of ``run`` (``max_merges``, a ``prefix`` of steps, a ``force``d pair), or, with a ``task``, other
    work on a record of another kind: ``task(progress, should_stop)`` runs in the worker (a thread, or a worker
    process: then it must pickle), raises :class:`~.algorithms.Cancelled` when stopped, and answers what the
    record's ``apply`` takes."""

    run: Run
    max_merges: int = 0
    prefix: list[MergeStep] = field(default_factory=list)
    prefix_n_ties: list[int] = field(default_factory=list)
    force: tuple[int, int] | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    future: Future | None = None
    store_down_since: float | None = None  # when the run store first refused this job's progress, unanswered since
    outage: bool = False  # stopped because the store stayed unreachable past its stale_after
    task: Callable | None = None


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
        self.flusher = Flusher(store)
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
                words_of(job.run).busy.format(busy=busy, capacity=self.capacity),
                retry_after=max(2, min(30, 3 * (busy - self.workers + 1))),
            )
        with self._lock:
            self._jobs = {k: j for k, j in self._jobs.items() if not j.finished.is_set()}
            self._jobs[job.run.id] = job

    def _save(self, job: Job) -> None:
        """Write a running run's progress; a store that does not answer now is tried again at the next progress
        (the run's latest state is in this process's memory meanwhile). When it has not answered for longer than
        its ``stale_after``, the training is stopped: other processes take it for dead by then."""
        run = job.run
        try:
            self.store.put(run)
            job.store_down_since = None
        except store_errors() as exc:
            now = self.flusher.clock()
            if job.store_down_since is None:
                job.store_down_since = now
                log.warning("lab run %s: the run store did not take its progress (%s); training goes on", run.id, exc)
            elif now - job.store_down_since > getattr(self.store, "stale_after", 60.0):
                job.outage = True
                job.cancel.set()

    def _ended(self, job: Job) -> None:
        """Say why a job that was stopped for a store outage stopped."""
        if job.outage:
            job.run.status, job.run.error = "error", outage_message(getattr(self.store, "stale_after", 60.0))

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
            self._save(job)
            last_save = [time.monotonic()]

            def progress(done: int, total: int) -> None:
                progressed(run, done, total)
                now = time.monotonic()
                if now - last_save[0] > 1.0:  # other worker processes read progress from the file
                    last_save[0] = now
                    self._save(job)

            if self.wrap_progress is not None:
                progress = self.wrap_progress(progress, job.cancel.is_set)
            if job.task is not None:
                run.apply(job.task(progress, job.cancel.is_set))
                run.status = "done"
                return
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
            run.error = words_of(run).cancelled
        except TokenplayError as exc:
            run.status = "error"
            run.error = str(exc)
            run.error_field = getattr(exc, "field", None)  # the option to blame, when one is (LabOptionsError)
        except Exception:  # noqa: BLE001  # pragma: no cover - a bug; keep the worker alive and say what happened
            log.exception("job %s failed", run.id)
            run.status = "error"
            run.error = words_of(run).unexpected
        finally:
            self._ended(job)
            try:
                self.flusher.keep(run)
            finally:
                job.finished.set()

    def shutdown(self) -> None:
        self._closed.set()
        for job in list(self._jobs.values()):
            job.cancel.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
