"""Training in worker *processes*: CPU-heavy merges never hold the web process's GIL.

:class:`ProcessJobPool` has :class:`app.lab.jobs.JobPool`'s interface (``submit``, ``wait``, ``cancel``,
``active``, ``shutdown``, ``store``, ``workers``, ``capacity``) and takes the same :class:`~app.lab.jobs.Job`
objects, so the lab can swap one for the other. Per job:

- at most ``workers`` jobs train at once, ``queue`` more may wait; beyond that :class:`~app.lab.jobs.QueueFull`
  (429 with ``Retry-After``);
- a supervisor thread in the web process forks a child from a *forkserver* (safe in a threaded server, fast
  because the training modules are preloaded there), reads its progress from a pipe and updates the run;
- each training process runs niced, with an address-space limit (``memory_limit_mb``: MemoryError, not an
  exhausted machine);
- cancellation: a message down the pipe stops the child within one merge; if it does not stop within a grace
  period, or the job passes ``time_limit`` seconds, the child is killed;
- a run can be cancelled from any worker process: ``cancel`` of a job this process does not hold writes a
  request into the shared store, which the owning supervisor polls;
- heartbeats of queued and running jobs go to the store, so another process can tell a live training from one
  whose worker process died.

:func:`make_pool` picks this pool or the thread pool from ``settings.lab_pool``.
"""

from __future__ import annotations

import os
import queue as queue_mod
import threading
import time
from functools import partial
from concurrent.futures import ThreadPoolExecutor

from app.engines.budget import clean_context
from app.engines.errors import TokenplayError

from .algorithms import Cancelled
from .options import Options
from .jobs import BoundedJobs, Job, ProgressWrap, log, progressed, words_of

#: Modules the forkserver imports once, so each forked trainer starts in milliseconds.
PRELOAD = ["app.lab.algorithms"]
#: Seconds a cancelled child gets to stop by itself before it is killed.
CANCEL_GRACE = 2.0
#: Seconds between progress messages from a child.
PROGRESS_EVERY = 0.2
#: Niceness of the training processes (0..19): when the CPUs are busy, requests go first.
NICE = int(os.environ.get("TOKENPLAY_LAB_NICE", "15"))

_CTX = None
_CTX_LOCK = threading.Lock()


def _context():
    global _CTX
    with _CTX_LOCK:
        if _CTX is None:
            _CTX = clean_context(tuple(PRELOAD))
        return _CTX


def _training(corpus: str, options: dict, max_merges: int, prefix, prefix_n_ties, force, progress, should_stop):
    """A training as a job's task (:func:`_task` runs it in a worker process)."""
    from .algorithms import train

    return train(corpus, Options.from_dict(options), max_merges=max_merges, prefix=prefix, prefix_n_ties=prefix_n_ties,
                 force=force, progress=progress, should_stop=should_stop)


def _task(conn, task, wrap_progress: ProgressWrap | None = None) -> None:
    """Run a job's ``task`` (a training, or the task of a :class:`~.jobs.Job`) in a worker process:
    ``("progress", done, total)`` now and then (``wrap_progress``: what wraps the progress callback for tests), then
    one final message, ``should_stop`` being anything sent down the pipe; running out of memory, or failing
    unforeseen, is said in the parent, in the record's own words."""
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY:
            last[0] = now
            conn.send(("progress", done, total))

    if wrap_progress is not None:
        progress = wrap_progress(progress, conn.poll)
    try:
        conn.send(("done", task(progress, conn.poll)))
    except Cancelled:
        conn.send(("cancelled",))
    except TokenplayError as exc:
        conn.send(("error", str(exc)))
    except MemoryError:
        conn.send(("out of memory",))
    except Exception:  # noqa: BLE001  # pragma: no cover - a bug: the exception to the log, words to the user
        log.exception("a job failed in its worker process")
        conn.send(("unexpected",))


def _worker_main(conn, memory_limit_mb: int = 0) -> None:
    """A worker process: train the jobs that come down the pipe, one at a time, until the pipe closes."""
    import app.lab.algorithms  # noqa: F401 - import once, before the first job

    try:  # training is batch work: the web processes answering typists come first
        os.nice(NICE)
    except OSError:  # pragma: no cover
        pass
    if memory_limit_mb > 0:  # a runaway training gets MemoryError here instead of the machine running out
        import resource

        limit = memory_limit_mb << 20
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ValueError, OSError):  # pragma: no cover - e.g. a hard limit below ours
            pass
    try:
        conn.send(("ready",))
        while True:
            msg = conn.recv()
            if msg[0] == "task":
                _task(conn, *msg[1:])
            elif msg[0] == "exit":
                return
            # anything else (a late "stop" for a job that had already finished) is ignored
    except (EOFError, OSError):  # the web process went away (or shut the pool down): nothing to report to
        return


class _Worker:
    """One long-lived training process and the parent's end of its pipe."""

    def __init__(self, memory_limit_mb: int = 0):
        ctx = _context()
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker_main, args=(child, memory_limit_mb), name="lab-trainer", daemon=True)
        self.proc.start()
        child.close()
        self.jobs = 0
        self.ready = False
        self._close_lock = threading.Lock()
        self._closed = False

    def wait_ready(self, timeout: float = 60.0) -> bool:
        if not self.ready and self.conn.poll(timeout):
            try:
                self.ready = self.conn.recv() == ("ready",)
            except (EOFError, OSError):
                return False
        return self.ready

    def alive(self) -> bool:
        return self.proc.is_alive()

    # kill and stop may run at once for one worker (a job's end and the pool's shutdown, in two threads): the
    # second to reap the process can meet a closed handle, which only means that the process is gone.
    _GONE = (OSError, ValueError, EOFError, AssertionError)

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.join(5)
        except self._GONE:
            pass
        finally:
            self._close()

    def stop(self) -> None:
        try:
            self.conn.send(("exit",))
        except (OSError, ValueError):
            pass
        try:
            self.proc.join(2)
            if self.proc.is_alive():
                self.proc.kill()
        except self._GONE:
            pass
        self._close()

    def _close(self) -> None:
        """Close the pipe once: the second of two threads to get here (a job's end and the pool's shutdown) would
        close a descriptor number that may already belong to another file."""
        with self._close_lock:
            if not self._closed:
                self._closed = True
                self.conn.close()


class ProcessJobPool(BoundedJobs):
    #: A worker process is replaced after this many jobs (memory a large training leaves behind goes back).
    RECYCLE_AFTER = 20

    def __init__(
        self,
        store,
        workers: int = 2,
        queue: int = 8,
        *,
        time_limit: float = 300.0,
        memory_limit_mb: int = 2048,
        cancel_grace: float = CANCEL_GRACE,
        warm: bool = True,
        wrap_progress: ProgressWrap | None = None,
    ):
        super().__init__(store, workers, queue, wrap_progress=wrap_progress)
        self.memory_limit_mb = memory_limit_mb
        self.time_limit = time_limit
        self.cancel_grace = cancel_grace
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lab-supervise")
        self._idle: queue_mod.SimpleQueue = queue_mod.SimpleQueue()
        self._all: list[_Worker] = []
        for _ in range(workers):
            self._idle.put(None)  # a slot; its process starts on first use, or now when warm
        if warm:
            threading.Thread(target=self._warm, name="lab-warm", daemon=True).start()

    def _warm(self) -> None:
        slots = [self._idle.get() for _ in range(self.workers)]
        try:
            slots = [w if w is not None else self._spawn() for w in slots]
        except Exception:  # noqa: BLE001, S110  # pragma: no cover - the first job will report the problem
            pass
        for w in slots:
            self._idle.put(w)

    def _spawn(self) -> _Worker:
        w = _Worker(self.memory_limit_mb)
        with self._lock:
            self._all = [x for x in self._all if x.alive()] + [w]
        return w

    def worker_pids(self) -> list[int]:
        return [w.proc.pid for w in self._all if w.alive()]

    # JobPool's interface -----------------------------------------------------------------------------------------
    def submit(self, job: Job) -> Job:
        self._admit(job)
        job.future = self._executor.submit(self._supervise, job)
        return job

    def wait(self, run_id: str, timeout: float) -> bool:
        job = self._jobs.get(run_id)
        if job is not None:
            return job.finished.wait(timeout)
        # Another process's job: watch the shared store.
        deadline = time.monotonic() + timeout
        while True:
            run = self.store.get(run_id)
            if run is None or run.finished:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def cancel(self, run_id: str) -> bool:
        """Ask a queued or running job to stop, here or (through the store) in another worker process."""
        job = self._jobs.get(run_id)
        if job is not None:
            if job.finished.is_set():
                return False
            job.cancel.set()
            return True
        run = self.store.get(run_id)
        if run is None or run.finished or not hasattr(self.store, "request_cancel"):
            return False
        self.store.request_cancel(run_id)
        return True

    def shutdown(self) -> None:
        self._closed.set()
        for job in list(self._jobs.values()):
            job.cancel.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
        for w in list(self._all):
            threading.Thread(target=w.stop, daemon=True).start()

    # supervision -------------------------------------------------------------------------------------------------
    def _remote_cancel(self, run_id: str) -> bool:
        check = getattr(self.store, "cancel_requested", None)
        try:
            return bool(check and check(run_id))
        except Exception:  # noqa: BLE001  # pragma: no cover
            return False

    def _supervise(self, job: Job) -> None:
        run = job.run
        worker = self._idle.get()
        keep = False
        try:
            if job.cancel.is_set() or self._remote_cancel(run.id) or self._closed.is_set():
                raise Cancelled()
            if worker is None or not worker.alive():
                worker = self._spawn()
            if not worker.wait_ready():
                run.status, run.error = "error", words_of(run).no_start
                return  # the worker is replaced below
            run.status = "running"
            self._save(job)
            worker.jobs += 1
            task = job.task or partial(_training, run.corpus, run.options.to_dict(), job.max_merges, job.prefix,
                                       job.prefix_n_ties, job.force)
            worker.conn.send(("task", task, self.wrap_progress))
            keep = self._follow(job, worker)
        except Cancelled:
            run.status, run.error = "cancelled", words_of(run).cancelled
            keep = True
        except Exception:  # noqa: BLE001  # pragma: no cover - a bug; keep the pool alive and say what happened
            log.exception("job %s: supervising its work failed", run.id)
            run.status, run.error = "error", words_of(run).unexpected
        finally:
            self._ended(job)
            try:
                self.flusher.keep(run)
            finally:
                job.finished.set()
                if worker is not None and (not keep or worker.jobs >= self.RECYCLE_AFTER or self._closed.is_set()):
                    worker.kill() if not keep else worker.stop()
                    worker = None
                if worker is None and not self._closed.is_set():
                    try:
                        worker = self._spawn()  # replace it now, so the next job does not wait for a start
                    except Exception:  # noqa: BLE001  # pragma: no cover
                        worker = None
                self._idle.put(worker)

    def _follow(self, job: Job, worker: _Worker) -> bool:
        """Relay progress until the job ends; ``True`` when the worker process can take another job."""
        run, conn, proc = job.run, worker.conn, worker.proc
        words = words_of(run)
        started = time.monotonic()
        cancel_sent: float | None = None
        last_save = last_remote = started
        while True:
            now = time.monotonic()
            if cancel_sent is None and (job.cancel.is_set() or self._closed.is_set()):
                cancel_sent = now
                conn.send(("stop",))
            if cancel_sent is None and now - last_remote > 0.5:
                last_remote = now
                if self._remote_cancel(run.id):
                    job.cancel.set()
                    continue
            if cancel_sent is not None and now - cancel_sent > self.cancel_grace:
                run.status, run.error = "cancelled", words.cancelled
                return False
            if now - started > self.time_limit:
                run.status = "error"
                run.error = words.too_long.format(limit=self.time_limit, s="" if self.time_limit == 1 else "s")
                return False
            try:
                msg = conn.recv() if conn.poll(0.1) else None
            except (EOFError, OSError):
                msg = ("died",)
            if msg is None:
                if proc.is_alive():
                    continue
                msg = ("died",)
            kind = msg[0]
            if kind == "progress":
                progressed(run, msg[1], msg[2])
                if now - last_save > 1.0:  # other worker processes read progress from the store
                    last_save = now
                    self._save(job)
                continue
            if kind == "done":
                run.apply(msg[1])
                run.status = "done"
                return True
            if kind == "cancelled":
                run.status, run.error = "cancelled", words.cancelled
                return True
            if kind == "died":
                proc.join(1)
                run.status = "error"
                run.error = words.died.format(exit_code=proc.exitcode)
                return False
            if kind in ("out of memory", "unexpected"):  # a task's: said here, in its record's words
                run.status = "error"
                run.error = words.out_of_memory if kind == "out of memory" else words.unexpected
                return kind == "unexpected"
            run.status, run.error = "error", msg[1]
            return len(msg) < 3  # ("error", message, "replace"): the process is not fit for another job


def make_pool(store, settings):
    """The worker pool the settings ask for (``lab_pool``: ``process``, the default, or ``thread``)."""
    workers, queue = settings.lab_workers, settings.lab_queue
    if getattr(settings, "lab_pool", "process") == "thread":
        from .jobs import JobPool

        return JobPool(store, workers, queue, wrap_progress=getattr(settings, "lab_progress_wrap", None))
    return ProcessJobPool(
        store,
        workers,
        queue,
        time_limit=getattr(settings, "lab_time_limit_seconds", 300.0),
        memory_limit_mb=getattr(settings, "lab_trainer_memory_mb", 2048),
        wrap_progress=getattr(settings, "lab_progress_wrap", None),
    )
