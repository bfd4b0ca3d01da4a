"""Where the parts are measured: in this process, in local worker processes, or on a Dask cluster.

Each executor measures every part of a :class:`Job` and hands each part's :class:`~.tally.Tally` to ``on_tally``
as it finishes (in any order: tallies merge the same in every order); ``progress(n)`` hears of input bytes done;
``should_stop()`` is asked between parts (and between documents in this process) and stops the job with
:class:`MeasureCancelled`.

- :class:`InProcess` — one worker: this process, part after part (``--workers 1``);
- :class:`ProcessPool` — ``--workers N``: N local processes (``concurrent.futures``), forked from this one with the
  tokenizers built (or, when this process runs other threads, spawned, each building them once);
- :class:`DaskExecutor` — ``--dask ADDRESS`` (an existing scheduler) or ``--dask local:N`` (a ``LocalCluster`` of N
  single-threaded worker processes): the parts become Dask tasks; the tokenizer refs are sent to every worker once.
  Dask is an optional extra (``pip install 'tokenplay[dask]'``); the files must be readable at the same path on
  every worker (a shared file system).

A part that fails in a worker (an error nobody foresaw) is reported as a problem of its file and the job goes on.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.engines.errors import TokenplayError
from app.engines.training.word_table import word_bitmap

from .refs import TokenizerRef, encoders_for
from .sources import Part, ReadOptions
from .tally import Tally, empty_tally, measure_part
from .words import WordCounter

#: Seconds to wait for a Dask scheduler to answer.
DASK_TIMEOUT = 10.0


class MeasureError(TokenplayError):
    """The job cannot run as asked (workers that cannot start, a Dask scheduler that does not answer)."""


class MeasureCancelled(TokenplayError):
    """The job was stopped before it finished."""


@dataclass(frozen=True)
class Job:
    refs: tuple[TokenizerRef, ...]
    read: ReadOptions
    parts: tuple[Part, ...]


OnTally = Callable[[Tally], None]
Progress = Callable[[int], None]
ShouldStop = Callable[[], bool]


def _never() -> bool:
    return False


def _ignore(n: int) -> None:
    pass


def _word_counter(words: dict | None, refs: Sequence[TokenizerRef], encoders) -> WordCounter | None:
    """The process's :class:`WordCounter` for these tokenizers (kept in ``words`` across parts, one job's at a
    time), or None for a fresh one."""
    if words is None:
        return None
    key = tuple(r.key for r in refs)
    counter = words.get(key)
    if counter is None:
        words.clear()
        counter = words[key] = WordCounter(encoders)
    return counter


def run_part(part: Part, refs: Sequence[TokenizerRef], read: ReadOptions, words: dict | None = None,
             progress: Progress | None = None) -> Tally:
    """Measure one part in this process (what every worker runs); a failure becomes a problem of its file (a
    cancellation, raised by ``progress``, goes through)."""
    encoders = encoders_for(refs)
    try:
        return measure_part(part, encoders, read, _word_counter(words, refs, encoders), progress)
    except MeasureCancelled:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure in a part is reported, and the job goes on
        tally = empty_tally(encoders)
        detail = f"{type(exc).__name__}: {exc}"[:300]
        tally.problems.add(part.file.label, "part_failed", part.start, part.describe(), detail)
        tally.parts, tally.weight = 1, part.weight
        return tally


class InProcess:
    """Every part in this process, in order."""

    workers = 1

    def describe(self) -> str:
        return "1 worker (this process)"

    def run(self, job: Job, on_tally: OnTally, progress: Progress = _ignore, should_stop: ShouldStop = _never) -> None:
        words: dict = {}
        for part in job.parts:
            if should_stop():
                raise MeasureCancelled("the measurement was cancelled")
            told = 0

            def step(n: int, part=part) -> None:
                nonlocal told
                n = min(n, part.weight - told)
                if n > 0:
                    told += n
                    progress(n)
                if should_stop():
                    raise MeasureCancelled("the measurement was cancelled")

            tally = run_part(part, job.refs, job.read, words, step)
            if part.weight > told:
                progress(part.weight - told)
            on_tally(tally)


# -- local processes ---------------------------------------------------------------------------------------------

_WORKER: dict = {}


def _start_worker(refs: tuple[TokenizerRef, ...], read: ReadOptions) -> None:
    _WORKER.update(refs=refs, read=read, words={})
    encoders_for(refs)  # build the tokenizers before the first part arrives


def _worker_part(part: Part) -> Tally:
    return run_part(part, _WORKER["refs"], _WORKER["read"], _WORKER["words"])


class ProcessPool:
    """``workers`` local processes, each measuring whole parts."""

    def __init__(self, workers: int, start: str | None = None):
        if workers < 1:
            raise MeasureError("--workers must be at least 1")
        self.workers = workers
        self.start = start  # "fork" or "spawn"; None: fork when that is safe

    def describe(self) -> str:
        return f"{self.workers} local worker processes"

    @staticmethod
    def _context(job: Job):
        """``fork`` when this process runs one thread (Linux): the tokenizers and the word bitmap are built here once
        and every worker starts with them; else ``spawn`` (forking a process with other threads can copy a lock
        another thread holds), each worker building its own."""
        if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
            encoders_for(job.refs)
            word_bitmap()
            return multiprocessing.get_context("fork")
        return multiprocessing.get_context("spawn")

    def run(self, job: Job, on_tally: OnTally, progress: Progress = _ignore, should_stop: ShouldStop = _never) -> None:
        context = multiprocessing.get_context(self.start) if self.start else self._context(job)
        pool = cf.ProcessPoolExecutor(self.workers, mp_context=context, initializer=_start_worker,
                                      initargs=(job.refs, job.read))
        try:
            pending = {pool.submit(_worker_part, part): part for part in job.parts}
            while pending:
                done, _ = cf.wait(pending, timeout=0.5, return_when=cf.FIRST_COMPLETED)
                if should_stop():
                    raise MeasureCancelled("the measurement was cancelled")
                for future in done:
                    part = pending.pop(future)
                    try:
                        tally = future.result()
                    except cf.process.BrokenProcessPool:
                        raise MeasureError(
                            "a worker process stopped (out of memory, or killed); measure with fewer --workers"
                        ) from None
                    progress(part.weight)
                    on_tally(tally)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


# -- Dask --------------------------------------------------------------------------------------------------------


def _dask_part(part: Part, refs: tuple[TokenizerRef, ...], read: ReadOptions) -> Tally:
    return run_part(part, refs, read, _WORKER.setdefault("words", {}))


def _dask():
    try:
        import distributed
    except ImportError:
        raise MeasureError(
            "Dask is not installed here: pip install 'tokenplay[dask]' (or measure with --workers N)"
        ) from None
    return distributed


class DaskExecutor:
    """A Dask cluster: ``address`` of a running scheduler (``tcp://host:8786``), or ``local:N`` for a
    ``LocalCluster`` of N worker processes started here (and closed with the executor). Use it as a context
    manager, or call :meth:`close`."""

    def __init__(self, address: str, timeout: float = DASK_TIMEOUT):
        self.address = address
        self.timeout = timeout
        self.client = None
        self.cluster = None
        self.workers = None

    def describe(self) -> str:
        if self.address.startswith("local:"):
            return f"a local Dask cluster of {self.address[6:]} workers"
        return f"the Dask cluster at {self.address}"

    def __enter__(self) -> DaskExecutor:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        distributed = _dask()
        import logging

        if self.address.startswith("local:"):
            try:
                n = int(self.address[len("local:") :])
            except ValueError:
                n = 0
            if n < 1:
                raise MeasureError(f"--dask local:N takes a number of workers of at least 1, not {self.address!r}")
            self.cluster = distributed.LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            self.client = distributed.Client(self.cluster)
            self.workers = n
            return
        try:
            self.client = distributed.Client(self.address, timeout=self.timeout)
        except (OSError, TimeoutError, ValueError) as exc:
            raise MeasureError(
                f"cannot reach a Dask scheduler at {self.address!r} ({_first_line(exc)}); start one with "
                "'dask scheduler' and workers with 'dask worker ADDRESS' (pip install 'tokenplay[dask]' on every "
                "machine), or measure here with --workers N or --dask local:N"
            ) from None
        self.workers = len(self.client.scheduler_info().get("workers", {}))
        if not self.workers:
            self.close()
            raise MeasureError(f"the Dask scheduler at {self.address!r} has no workers; start some with "
                               f"'dask worker {self.address}'")

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def run(self, job: Job, on_tally: OnTally, progress: Progress = _ignore, should_stop: ShouldStop = _never) -> None:
        distributed = _dask()
        if self.client is None:
            self.start()
        client = self.client
        refs = client.scatter([job.refs], broadcast=True, hash=False)[0]
        futures = [client.submit(_dask_part, part, refs, job.read, pure=False, key=f"tokenplay-measure-{part.index}-{id(job)}")
                   for part in job.parts]
        weights = {f.key: p.weight for f, p in zip(futures, job.parts)}
        try:
            for future in distributed.as_completed(futures):
                if should_stop():
                    raise MeasureCancelled("the measurement was cancelled")
                try:
                    tally = future.result()
                except Exception as exc:  # noqa: BLE001 - a worker lost (killed, out of memory) fails its task
                    raise MeasureError(f"a Dask task failed ({_first_line(exc)}); the measurement stopped") from None
                progress(weights[future.key])
                on_tally(tally)
        finally:
            client.cancel(futures)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]


def executor_for(workers: int = 1, dask: str | None = None):
    """The executor ``--workers`` and ``--dask`` ask for."""
    if dask:
        return DaskExecutor(dask)
    return InProcess() if workers == 1 else ProcessPool(workers)
