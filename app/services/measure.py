"""Measuring a corpus as the app does it: the measure page, ``/api/measure``, and ``tokenplay measure``'s names.

- :class:`Measurements` — the app's measurements (one per app, made in its lifespan): :meth:`~Measurements.start`
  takes the tokenizers' names (resolved for one browser, :class:`~app.services.catalog.Tokenizers`), files uploaded
  for it (kept in a folder of their own while it runs, at most ``measure_max_upload_bytes`` in all) or files of the
  corpus folder the server was started with (``tokenplay serve --corpus-dir``, read where they are), and the
  options; it runs in the lab's job pools (:mod:`app.lab.jobs`, :mod:`app.lab.workers`: a worker process, a queue
  with a limit, cancellation, heartbeats) as a :class:`Measurement` record kept in a store of the lab's kind (a
  directory or Redis), so the page that started it can be reloaded, and any worker process answers for it;
- :class:`Measurement` — the record: status, progress (input bytes), and when done the report
  (:meth:`app.features.measure.Report.to_dict`), exported as CSV or JSON;
- :func:`cli_ref` — a name as ``tokenplay measure --tokenizers`` takes it: a registered name, ``lab-<id>`` from the
  lab's run store, ``upload:<id>`` from the uploads store, or a tokenizer file's path.

The measuring itself is :mod:`app.features.measure`; nothing here knows about requests or HTML.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import BinaryIO

from app.engines import registry
from app.engines.errors import TokenplayError, UnknownTokenizerError
from app.features import measure as feature
from app.features.measure import FigureOptions, ReadOptions, Report, TokenizerRef
from app.features.measure.figures import FIGURES
from app.features.measure.sources import KINDS, kind_of
from app.lab.algorithms import Cancelled
from app.lab.jobs import Job, JobPool, JobWords
from app.lab.runs import new_id, valid_id
from app.settings import Settings

from .catalog import Tokenizers
from .errors import NotFoundError, TooLargeError, export_format

EXPORT_FORMATS = ("csv", "json")
#: Files of the corpus folder listed on the page (the first ones, in name order).
MAX_LISTED = 2000


class MeasureOptionsError(TokenplayError):
    """A measurement asked for with no tokenizer, no file, or options that do not fit."""


class MeasurementFinished(TokenplayError):
    """A measurement that has finished cannot be cancelled."""


MEASURE_WORDS = JobWords(
    cancelled="the measurement was cancelled",
    unexpected="the measurement failed unexpectedly (the server's log has the details); measure again, and report it "
    "if it happens again",
    no_start="the measuring process did not start; measure again in a moment",
    died="the measuring process stopped unexpectedly (exit code {exit_code}); measure again with fewer or smaller "
    "files",
    too_long="the measurement took longer than the limit of {limit:g} second{s} and was stopped; measure fewer or "
    "smaller files",
    out_of_memory="the measurement ran out of memory; measure fewer or smaller files",
    busy="measurements are busy: {busy} are running or waiting (the limit is {capacity}); try again in a little while",
)


@dataclass
class Measurement:
    """One measurement: what was asked, how far it got, and its report when done."""

    id: str
    tokenizers: list[str]
    inputs: list[dict]  # {"name", "bytes", "source": "upload" | "corpus"}
    options: dict  # field, group_by, reference_group, reference_tokenizer
    status: str = "queued"  # queued, running, done, error, cancelled
    error: str | None = None
    done_bytes: int = 0
    total_bytes: int = 0
    report: dict | None = None
    created: float = field(default_factory=time.time)
    folder: str | None = None  # where its uploaded files are kept while it runs

    words = MEASURE_WORDS
    stale_message = "the worker process measuring this corpus stopped before it finished; measure it again"

    @property
    def finished(self) -> bool:
        return self.status in ("done", "error", "cancelled")

    @property
    def percent(self) -> float:
        if self.status == "done":
            return 100.0
        return 100.0 * self.done_bytes / self.total_bytes if self.total_bytes else 0.0

    def progressed(self, done: int, total: int) -> None:
        self.done_bytes, self.total_bytes = done, total

    def apply(self, report: dict) -> None:
        self.report = report
        self.done_bytes = self.total_bytes = report.get("corpus", {}).get("input_bytes", self.total_bytes)

    def estimated_bytes(self) -> int:
        return 1000 + len(repr(self.report)) if self.report else 1000

    def to_json(self, *, with_steps: bool = True) -> dict:
        return {
            "format": "tokenplay-measurement/1", "id": self.id, "tokenizers": self.tokenizers, "inputs": self.inputs,
            "options": self.options, "status": self.status, "error": self.error, "done_bytes": self.done_bytes,
            "total_bytes": self.total_bytes, "report": self.report, "created": self.created, "folder": self.folder,
        }

    @classmethod
    def from_json(cls, d: dict) -> Measurement:
        return cls(
            id=d["id"], tokenizers=list(d["tokenizers"]), inputs=list(d["inputs"]), options=dict(d["options"]),
            status=d["status"], error=d.get("error"), done_bytes=d.get("done_bytes", 0),
            total_bytes=d.get("total_bytes", 0), report=d.get("report"), created=d.get("created", 0.0),
            folder=d.get("folder"),
        )

    def to_dict(self) -> dict:
        """``GET /api/measure/{id}``'s answer."""
        return {
            "id": self.id, "status": self.status, "error": self.error, "tokenizers": self.tokenizers,
            "inputs": self.inputs, "options": self.options,
            "progress": {"done_bytes": self.done_bytes, "total_bytes": self.total_bytes,
                         "percent": round(self.percent, 1)},
            "report": self.report,
        }


# -- what runs in the worker -------------------------------------------------------------------------------------


def run_measurement(paths: list, refs: tuple[TokenizerRef, ...], read: ReadOptions, options: FigureOptions,
                    folder: str | None, dask: str | None, progress, should_stop) -> dict:
    """Measure ``paths`` (``(path, name)`` pairs; in a worker of the job pool): the report as a dict. ``progress(done, total)`` hears of
    input bytes; ``should_stop()`` cancels (:class:`~app.lab.algorithms.Cancelled`). The uploaded files' folder is
    deleted at the end, whatever the end."""
    total = [0]
    done = [0]

    def on_plan(corpus) -> None:
        total[0] = corpus.total_bytes
        progress(0, total[0])

    def step(n: int) -> None:
        done[0] += n
        progress(min(done[0], total[0]), total[0])

    executor = feature.executor_for(1, dask)
    try:
        report = feature.measure(paths, refs, read=read, options=options, executor=executor, progress=step,
                                 should_stop=should_stop, on_plan=on_plan)
        return report.to_dict()
    except feature.MeasureCancelled:
        raise Cancelled() from None
    finally:
        if isinstance(executor, feature.DaskExecutor):
            executor.close()
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


# -- the app's measurements --------------------------------------------------------------------------------------


def _safe_name(filename: str) -> str:
    """An uploaded file's name as kept on disk: its last part, letters, digits, ``.``, ``_`` and ``-`` only.

    >>> _safe_name("../../etc/passwd"), _safe_name("my corpus.jsonl.gz"), _safe_name("")
    ('passwd', 'my-corpus.jsonl.gz', 'file')
    """
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", filename.replace("\\", "/").rsplit("/", 1)[-1]).strip("-.")
    return name[:120] or "file"


class Measurements:
    """The app's measurements: a store of :class:`Measurement` records and a job pool that runs them."""

    def __init__(self, store, pool, settings: Settings):
        self.store = store
        self.pool = pool
        self.settings = settings
        self.folders = Path(settings.measure_dir) / "files"
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> Measurements:
        from app.lab.stores import DirectoryStore, RedisStore, redis_url

        common = {"max_runs": 64, "max_bytes": 64 << 20, "ttl": settings.measure_ttl_seconds,
                  "stale_after": settings.lab_stale_after_seconds}
        url = redis_url(settings)
        if url:
            store = RedisStore(url, prefix="tokenplay:measure:", max_store_bytes=256 << 20, record=Measurement, **common)
        else:
            store = DirectoryStore(Path(settings.measure_dir) / "jobs", max_store_bytes=256 << 20, record=Measurement,
                                   **common)
        wrap = settings.measure_progress_wrap
        if settings.measure_pool == "thread":
            pool = JobPool(store, settings.measure_workers, settings.measure_queue, wrap_progress=wrap)
        else:
            from app.lab.workers import ProcessJobPool

            pool = ProcessJobPool(store, settings.measure_workers, settings.measure_queue,
                                  time_limit=settings.measure_time_limit_seconds, memory_limit_mb=0, warm=False,
                                  wrap_progress=wrap)
        return cls(store, pool, settings)

    # -- what a request asks ----------------------------------------------------------------------------------------
    def get(self, measurement_id: str) -> Measurement:
        """The measurement, or :class:`~app.services.errors.NotFoundError`."""
        found = self.store.get(measurement_id) if valid_id(measurement_id) else None
        if found is None:
            raise NotFoundError(f"no measurement {measurement_id!r} (it may have expired); start a new one")
        if found.finished and found.folder and os.path.isdir(found.folder):  # a measurement killed mid-way
            shutil.rmtree(found.folder, ignore_errors=True)
        return found

    def mine(self, ids: Iterable[str]) -> list[Measurement]:
        """The measurements of ``ids`` still kept, most recent first."""
        out = []
        for measurement_id in ids:
            found = self.store.get(measurement_id) if valid_id(measurement_id) else None
            if found is not None:
                out.append(found)
        return sorted(out, key=lambda m: -m.created)

    def cancel(self, measurement_id: str) -> Measurement:
        found = self.get(measurement_id)
        if found.finished:
            raise MeasurementFinished(f"the measurement has ended ({found.status}); there is nothing to cancel")
        self.pool.cancel(measurement_id)
        return found

    def export(self, measurement_id: str, fmt: str) -> tuple[bytes, str]:
        """A finished measurement's report as CSV or JSON: (body, media type)."""
        export_format(fmt, EXPORT_FORMATS)
        found = self.get(measurement_id)
        if found.status != "done" or found.report is None:
            raise MeasurementFinished(f"the measurement is {found.status}; its report can be downloaded once it is done")
        report = report_of(found.report)
        if fmt == "csv":
            return report.csv().encode("utf-8"), "text/csv; charset=utf-8"
        return report.json(), "application/json"

    def corpus_files(self) -> list[dict]:
        """The files of the corpus folder measure can read (``{"path", "bytes"}``, relative paths, in name order; the
        first :data:`MAX_LISTED`), or [] when the server has none."""
        root = self.settings.corpus_dir
        if root is None or not Path(root).is_dir():
            return []
        out = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.startswith(".") or kind_of(name)[0] is None:
                    continue
                path = Path(folder) / name
                try:
                    size = path.stat().st_size
                except OSError:
                    continue
                out.append({"path": path.relative_to(root).as_posix(), "bytes": size})
                if len(out) >= MAX_LISTED:
                    return out
        return out

    def start(
        self,
        tokenizers: Tokenizers,
        names: list[str],
        *,
        files: Iterable[tuple[str, BinaryIO]] = (),
        corpus: Iterable[str] = (),
        field_name: str = "text",
        group_by: str | None = None,
        reference_group: str | None = None,
        reference_tokenizer: str | None = None,
    ) -> Measurement:
        """Queue a measurement (:class:`~app.lab.jobs.QueueFull` when the queue is full) and answer its record."""
        names = list(dict.fromkeys(n.strip() for n in names if n and n.strip()))
        if not names:
            raise MeasureOptionsError("choose at least one tokenizer to measure with")
        if len(names) > self.settings.measure_max_tokenizers:
            raise MeasureOptionsError(
                f"{len(names)} tokenizers; one measurement takes up to {self.settings.measure_max_tokenizers}"
            )
        refs = tuple(browser_ref(tokenizers, name) for name in names)
        measured = [r.name for r in refs]
        reference_tokenizer = (reference_tokenizer or "").strip() or None
        if reference_tokenizer is not None:
            reference_tokenizer = tokenizers.resolve(reference_tokenizer)
            if reference_tokenizer not in measured:
                raise MeasureOptionsError(
                    f"the reference tokenizer {reference_tokenizer!r} is not among those measured ({', '.join(measured)})"
                )
        group_by = feature.check_group_by((group_by or "").strip() or None)
        reference_group = (reference_group or "").strip() or None
        if reference_group is not None and group_by is None:
            raise MeasureOptionsError("a reference group needs the documents grouped (by file or by a field)")
        field_name = (field_name or "").strip() or "text"
        picked = self._corpus_paths(corpus)
        paths: list = [(str(path), rel) for rel, path in picked]  # each called by its name in the corpus folder
        measurement_id = new_id()
        folder = self.folders / measurement_id
        inputs = [{"name": rel, "bytes": path.stat().st_size if path.is_file() else None, "source": "corpus"}
                  for rel, path in picked]
        saved = self._save_uploads(files, folder)
        if not paths and not saved:
            shutil.rmtree(folder, ignore_errors=True)
            raise MeasureOptionsError("choose files to measure: upload some, or pick them from the corpus folder")
        inputs += [{"name": name, "bytes": size, "source": "upload"} for name, size in saved]
        paths += [(str(folder / name), name) for name, _ in saved]  # called by the names they were uploaded as
        record = Measurement(
            measurement_id, measured, inputs,
            {"field": field_name, "group_by": group_by, "reference_group": reference_group,
             "reference_tokenizer": reference_tokenizer},
            folder=str(folder) if saved else None,
        )
        read = ReadOptions(field=field_name, group_by=group_by)
        options = FigureOptions(reference_group=reference_group, reference_tokenizer=reference_tokenizer)
        task = partial(run_measurement, paths, refs, read, options, record.folder, self.settings.measure_dask)
        try:
            self.pool.submit(Job(record, task=task))
        except Exception:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return record

    def shutdown(self) -> None:
        self.pool.shutdown()

    # -- inputs -----------------------------------------------------------------------------------------------------
    def _corpus_paths(self, corpus: Iterable[str]) -> list[tuple[str, Path]]:
        """The corpus folder's files (or folders, ``.`` for all of it) named, each checked to be inside it: (name,
        path) pairs."""
        chosen = list(dict.fromkeys(c.strip() for c in corpus if c and c.strip()))
        if not chosen:
            return []
        root = self.settings.corpus_dir
        if root is None:
            raise NotFoundError("this server has no corpus folder to pick from (start it with tokenplay serve "
                                "--corpus-dir DIR); upload the files instead")
        base = Path(root).resolve()
        out = []
        for rel in chosen:
            path = (base / rel).resolve()
            if (path != base and base not in path.parents) or not path.exists():
                raise NotFoundError(f"no file {rel!r} in the corpus folder")
            out.append((rel if path != base else base.name, path))
        return out

    def _save_uploads(self, files: Iterable[tuple[str, BinaryIO]], folder: Path) -> list[tuple[str, int]]:
        """Copy the uploaded files into ``folder`` (unique names), refusing more than the upload limit in all."""
        limit = self.settings.measure_max_upload_bytes
        saved: list[tuple[str, int]] = []
        used: set[str] = set()
        total = 0
        for filename, stream in files:
            if not filename and not stream:
                continue
            name = _safe_name(filename)
            if kind_of(name)[0] is None:
                name += ".txt"  # a file of another kind is read as text, as the CLI reads one named on its own
            base, k = name, 2
            while name in used:
                name = f"{k}-{base}"
                k += 1
            used.add(name)
            folder.mkdir(parents=True, exist_ok=True)
            size = 0
            with open(folder / name, "wb") as out:
                while chunk := stream.read(1 << 20):
                    size += len(chunk)
                    total += len(chunk)
                    if total > limit:
                        out.close()
                        shutil.rmtree(folder, ignore_errors=True)
                        raise TooLargeError(f"the files are over {size_text(limit)} in all; one measurement uploads up "
                                            f"to {size_text(limit)} (measure large corpora with tokenplay measure)")
                    out.write(chunk)
            saved.append((name, size))
        return saved


def size_text(n: int) -> str:
    """``200 MB``, ``1,000 bytes``.

    >>> size_text(200 << 20), size_text(1000)
    ('200 MB', '1,000 bytes')
    """
    return f"{n / (1 << 20):g} MB" if n >= 1 << 20 else f"{n:,} bytes"


def report_of(d: dict) -> Report:
    """A :class:`~app.features.measure.Report` from its dict (a stored measurement's report)."""
    from app.features.measure.sources import Problem

    problems = [Problem(p["file"], p["kind"], p["count"], (0, p["first"])) for p in d.get("problems", [])]
    report = Report(d["tokenizers"], d["corpus"], problems, d["options"], d.get("run", {}).get("seconds", 0.0),
                    d.get("run", {}).get("executor", ""))
    return report


# -- names ---------------------------------------------------------------------------------------------------------


def browser_ref(tokenizers: Tokenizers, name: str) -> TokenizerRef:
    """The ref of a name one browser may use (:class:`~app.services.catalog.Tokenizers`): a shipped tokenizer, one
    of its lab runs, one of its uploads (:class:`~app.engines.errors.UnknownTokenizerError` for anything else)."""
    canonical = tokenizers.resolve(name)
    upload = tokenizers.upload_of(canonical)
    if upload is not None:
        return feature.bytes_ref(canonical, upload.data, engine=upload.engines[canonical], pattern=upload.pattern,
                                 special_tokens=list(upload.special_tokens))
    from app.lab.run_tokenizers import PREFIX, is_lab_name

    if is_lab_name(canonical):
        run = tokenizers.lab.get(canonical[len(PREFIX) :])
        if run is not None and run.status == "done":
            return feature.callable_ref(canonical, "lab:" + run.id, partial(lab_run_tokenizer, run))
    return feature.registry_ref(canonical)


def lab_run_tokenizer(run):
    """A lab run's tokenizer, as "use in playground" builds it (picklable for worker processes: the run and this
    function's name)."""
    from app.lab.run_tokenizers import spec_for

    return spec_for(run).factory()


def cli_ref(name: str, settings: Settings | None = None) -> TokenizerRef:
    """The tokenizer ``tokenplay measure --tokenizers`` names: a registered name or alias; ``lab-<id>``, a lab run in
    the run store the server uses (``TOKENPLAY_LAB_RUNS_DIR`` or ``REDIS_URL``); ``upload:<id>``, an uploaded
    tokenizer in the uploads store; or the path of a tokenizer file."""
    try:
        return feature.registry_ref(name)
    except UnknownTokenizerError:
        pass
    if name.startswith("lab-"):
        from app.lab.stores import make_store

        run = make_store(settings or Settings()).get(name[len("lab-") :])
        if run is None or run.status != "done":
            raise TokenplayError(f"no finished lab run {name[4:]!r} in the lab's run store; train it first (tokenplay "
                                 "serve, /lab) or point TOKENPLAY_LAB_RUNS_DIR / REDIS_URL at the server's store")
        return feature.callable_ref(name, "lab:" + run.id, partial(lab_run_tokenizer, run))
    if name.startswith("upload:"):
        from .uploads import Uploads

        upload = Uploads.from_settings(settings or Settings()).store.get(name[len("upload:") :])
        if upload is None:
            raise TokenplayError(f"no uploaded tokenizer {name[7:]!r} in the uploads store (TOKENPLAY_UPLOADS_DIR "
                                 "or REDIS_URL); its id is in the browser's tp_tok cookie")
        return feature.bytes_ref(upload.name, upload.data, engine=upload.engines[upload.name], pattern=upload.pattern,
                                 special_tokens=list(upload.special_tokens))
    path = Path(name)
    if path.is_file():
        from app.engines.registry.files import entry_name, read_file
        from app.engines.registry.loaders import detect_format

        data = read_file(path)
        engine = "huggingface" if detect_format(data) == "tokenizer.json" else "tokenplay"
        return feature.bytes_ref(entry_name(path), data, engine=engine, filename=path.name)
    registry.get(name)  # raises UnknownTokenizerError listing the valid names
    raise AssertionError("unreachable")


#: What the page's table and the downloads hold (the report's figures).
__all__ = ["EXPORT_FORMATS", "FIGURES", "KINDS", "Measurement", "Measurements", "browser_ref", "cli_ref"]
