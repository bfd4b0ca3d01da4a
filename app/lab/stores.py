"""Where lab runs are kept when more than one worker process serves the app: a directory, or Redis.

Both stores have one interface (``put(run, persist=True)``, ``save(run)``, ``get(run_id)``), so the lab and
its worker pool can use either, with what several processes need:

- a bounded in-memory LRU in front (:class:`MemoryLRU`): at most ``max_runs`` runs *and* ``max_bytes`` of
  estimated size, and nothing older than ``ttl`` seconds; a run still training is never dropped (it is the
  job's live object);
- expiry in the shared store too: files older than ``ttl`` are swept (and the oldest ones beyond
  ``max_store_bytes``), Redis keys carry a TTL and the oldest runs beyond the byte cap are deleted;
- cross-process cancellation (``request_cancel`` / ``cancel_requested``) and heartbeats of running trainings
  (``beat``), so a run whose worker process died is reported as failed instead of "running" forever;
- admission for the whole app (``admit``): a run is stored as queued only while fewer than the lab's capacity of
  runs, counted over every process sharing the store (and, with Redis, every machine), are queued or running
  with a fresh heartbeat.

A store keeps records of one kind (``record``: :class:`~app.lab.runs.Run` by default): anything with an ``id``,
``finished``, ``to_json(with_steps=...)``, ``from_json(...)`` and ``estimated_bytes()``. Uploaded tokenizers
are kept the same way (:mod:`app.services.uploads`). :func:`make_store` picks Redis when ``REDIS_URL`` (or
``TOKENPLAY_REDIS_URL``) is set, else the directory.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import orjson

from app.engines.training import cycle_collector_paused

from .files import touch, write_whole
from .runs import Run, valid_id
from .sweeps import Sweeps, entries

#: A running run whose heartbeat is older than this is reported as failed (its worker process is gone).
STALE_AFTER = 60.0
STALE_MESSAGE = "the worker process training this run stopped before it finished; train it again"


class MemoryLRU:
    """Records (runs) by id, most recent last, bounded by count, estimated bytes and age (``clock``: seconds, as
    ``time.time``; tests pass a clock they move)."""

    def __init__(
        self,
        max_runs: int = 64,
        max_bytes: int = 256 << 20,
        ttl: float = 7 * 86400,
        clock: Callable[[], float] = time.time,
    ):
        self.max_runs = max_runs
        self.max_bytes = max_bytes
        self.ttl = ttl
        self.clock = clock
        self._mem: OrderedDict[str, tuple[Run, int, float]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._mem)

    @property
    def total_bytes(self) -> int:
        return self._bytes

    def put(self, run: Run) -> None:
        size = run.estimated_bytes() if run.finished else 0
        with self._lock:
            old = self._mem.pop(run.id, None)
            if old is not None:
                self._bytes -= old[1]
            self._mem[run.id] = (run, size, self.clock())
            self._bytes += size
            self._evict()

    def _evict(self) -> None:
        now = self.clock()
        for run_id, (run, size, added) in list(self._mem.items()):
            if run.finished and now - added > self.ttl:
                del self._mem[run_id]
                self._bytes -= size
        for run_id, (run, size, _) in list(self._mem.items()):  # oldest first
            if len(self._mem) <= self.max_runs and self._bytes <= self.max_bytes:
                break
            if run.finished:  # never drop a run still training
                del self._mem[run_id]
                self._bytes -= size

    def get(self, run_id: str) -> Run | None:
        with self._lock:
            hit = self._mem.get(run_id)
            if hit is None:
                return None
            run, size, added = hit
            if run.finished and self.clock() - added > self.ttl:
                del self._mem[run_id]
                self._bytes -= size
                return None
            self._mem.move_to_end(run_id)
            return run

    def drop(self, run_id: str) -> None:
        with self._lock:
            hit = self._mem.pop(run_id, None)
            if hit is not None:
                self._bytes -= hit[1]


class _SharedStore:
    """What both stores share: the memory LRU, ``put``/``get`` over ``_write``/``_read`` of the shared copy."""

    def __init__(self, max_runs: int, max_bytes: int, ttl: float, stale_after: float = STALE_AFTER, record=Run):
        #: What a record is called in a message (a full disk's): "the lab run", "the tokenizer file".
        self.what = getattr(record, "STORED_AS", "the record")
        self.ttl = ttl
        self.stale_after = stale_after
        self.record = record
        self.mem = MemoryLRU(max_runs, max_bytes, ttl)

    # the stores' interface --------------------------------------------------------------------------------------
    def put(self, run: Run, *, persist: bool = True) -> None:
        self.mem.put(run)
        if persist:
            self.save(run)

    def save(self, run: Run) -> None:
        # orjson: ~10x the stdlib's speed; a running run is saved every second with its whole corpus. The collector
        # is paused while a finished run's thousands of step rows are built (each pass would walk them all)
        with cycle_collector_paused():
            data = orjson.dumps(run.to_json(with_steps=run.finished))
        self._write(run.id, data, finished=run.finished)  # with a heartbeat when unfinished, in one step

    def get(self, run_id: str) -> Run | None:
        if not valid_id(run_id):
            return None
        run = self.mem.get(run_id)
        if run is not None:
            return run
        run = self._load(run_id)
        if run is not None and not run.finished and self._beat_age(run_id) > self.stale_after:
            # Finishing removes the heartbeat, so a run that finished between the two reads looks dead: read
            # it again, and call it dead only if it is still unfinished (not kept in memory: it may yet beat).
            run = self._load(run_id)
            if run is not None and not run.finished:
                run.status, run.error = "error", getattr(self.record, "stale_message", STALE_MESSAGE)
                return run
        if run is not None and run.finished:
            self.mem.put(run)
        return run

    def admit(self, run: Run, capacity: int) -> int | None:
        """Store ``run`` (queued) if fewer than ``capacity`` runs are queued or running in the whole app, and
        answer None; else store nothing and answer how many are."""
        with self._admission():
            busy = self._busy()
            if busy >= capacity:
                return busy
            try:
                self.put(run)
            except BaseException:
                self.mem.drop(run.id)  # not stored (a full disk): it was never admitted
                raise
        return None

    def _load(self, run_id: str) -> Run | None:
        data = self._read(run_id)
        if data is None:
            return None
        try:
            with cycle_collector_paused():
                return self.record.from_json(orjson.loads(data))
        except (ValueError, KeyError, TypeError):
            return None

    # several processes ---------------------------------------------------------------------------------------
    def beat(self, run_id: str) -> None:
        raise NotImplementedError

    def _beat_age(self, run_id: str) -> float:
        raise NotImplementedError

    def request_cancel(self, run_id: str) -> None:
        raise NotImplementedError

    def cancel_requested(self, run_id: str) -> bool:
        raise NotImplementedError

    def _write(self, run_id: str, data: bytes, *, finished: bool) -> None:
        raise NotImplementedError

    def _read(self, run_id: str) -> bytes | None:
        raise NotImplementedError

    def _admission(self):
        """A lock held across every process sharing the store, while one admission counts and stores."""
        raise NotImplementedError

    def _busy(self) -> int:
        """Runs queued or running, with a heartbeat younger than ``stale_after``."""
        raise NotImplementedError


class DirectoryStore(_SharedStore):
    """One ``<id>.json`` per run in a directory (atomic replace), shared by every process on the machine.

    Files older than ``ttl`` seconds are removed by a sweep (at most once a minute, on writes), and the oldest
    finished runs beyond ``max_store_bytes`` too. ``<id>.beat`` / ``<id>.cancel`` mark running trainings.
    """

    def __init__(
        self,
        directory: Path,
        max_runs: int = 64,
        *,
        max_bytes: int = 256 << 20,
        ttl: float = 7 * 86400,
        max_store_bytes: int = 2 << 30,
        stale_after: float = STALE_AFTER,
        record=Run,
    ):
        super().__init__(max_runs, max_bytes, ttl, stale_after, record)
        self.directory = Path(directory)
        self.max_store_bytes = max_store_bytes
        self._sweeps = Sweeps()

    def _path(self, run_id: str, ext: str = "json") -> Path:
        return self.directory / f"{run_id}.{ext}"

    def _write(self, run_id: str, data: bytes, *, finished: bool) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if not finished:  # the heartbeat first: a reader never sees a running run without one
            self.beat(run_id)
        write_whole(self._path(run_id), data, self.what)  # whole or not at all: no .tmp left on a full disk
        if finished:
            for ext in ("beat", "cancel"):
                self._path(run_id, ext).unlink(missing_ok=True)
        self.sweep()

    def _read(self, run_id: str) -> bytes | None:
        path = self._path(run_id)
        try:
            if time.time() - path.stat().st_mtime > self.ttl:
                return None
            return path.read_bytes()
        except OSError:
            return None

    def beat(self, run_id: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        touch(self._path(run_id, "beat"), self.what)  # its mtime is the heartbeat

    def _beat_age(self, run_id: str) -> float:
        try:
            return time.time() - self._path(run_id, "beat").stat().st_mtime
        except OSError:
            try:  # runs written by a store without heartbeats: judge by the run file itself
                return time.time() - self._path(run_id).stat().st_mtime
            except OSError:
                return float("inf")

    @contextmanager
    def _admission(self):
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / ".admission", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            yield

    def _busy(self) -> int:
        now = time.time()
        busy = 0
        for entry in entries(self.directory) or []:
            if entry.name.endswith(".beat"):
                try:
                    busy += now - entry.stat().st_mtime <= self.stale_after
                except OSError:
                    continue
        return busy

    def request_cancel(self, run_id: str) -> None:
        if valid_id(run_id):
            self.directory.mkdir(parents=True, exist_ok=True)
            touch(self._path(run_id, "cancel"), "the request to stop the training")

    def cancel_requested(self, run_id: str) -> bool:
        return self._path(run_id, "cancel").exists()

    def sweep(self, *, force: bool = False) -> int:
        """Remove expired runs (and the oldest beyond the byte cap); returns how many files went."""
        return self._sweeps.run(time.time(), force, self._sweep)

    def _sweep(self, now: float) -> int:
        found = entries(self.directory)
        if found is None:
            return 0
        removed = 0
        files = []
        for entry in found:
            try:
                st = entry.stat()
            except OSError:
                continue
            age = now - st.st_mtime
            leftover_tmp = entry.name.endswith(".tmp") and age > 3600
            old_marker = entry.name.endswith((".beat", ".cancel")) and age > max(self.ttl, 86400)
            if leftover_tmp or old_marker:
                Path(entry.path).unlink(missing_ok=True)
            elif entry.name.endswith(".json"):
                if age > self.ttl:
                    self._remove(entry.name[:-5])
                    removed += 1
                else:
                    files.append((st.st_mtime, st.st_size, entry.name[:-5]))
        total = sum(size for _, size, _ in files)
        for _, size, run_id in sorted(files):
            if total <= self.max_store_bytes:
                break
            if self._path(run_id, "beat").exists():  # still training
                continue
            self._remove(run_id)
            total -= size
            removed += 1
        return removed

    def _remove(self, run_id: str) -> None:
        for ext in ("json", "beat", "cancel"):
            self._path(run_id, ext).unlink(missing_ok=True)
        self.mem.drop(run_id)


class RedisStore(_SharedStore):
    """Runs in Redis: ``<prefix>run:<id>`` (zlib-compressed JSON) with a TTL, shared by every worker and host.

    ``<prefix>index`` (sorted set, score = write time) and ``<prefix>sizes`` (hash) track the stored runs so the
    oldest finished ones are deleted when their total passes ``max_store_bytes``.
    """

    def __init__(
        self,
        url: str,
        max_runs: int = 64,
        *,
        max_bytes: int = 256 << 20,
        ttl: float = 7 * 86400,
        max_store_bytes: int = 512 << 20,
        prefix: str = "tokenplay:lab:",
        client=None,
        stale_after: float = STALE_AFTER,
        record=Run,
    ):
        super().__init__(max_runs, max_bytes, ttl, stale_after, record)
        self.redis = client if client is not None else connect_redis(url)
        self.url = url
        self.prefix = prefix
        self.max_store_bytes = max_store_bytes

    def _key(self, kind: str, run_id: str = "") -> str:
        return f"{self.prefix}{kind}:{run_id}" if run_id else f"{self.prefix}{kind}"

    def _write(self, run_id: str, data: bytes, *, finished: bool) -> None:
        blob = zlib.compress(data, 3)
        ttl = max(1, int(self.ttl))
        p = self.redis.pipeline()
        p.set(self._key("run", run_id), blob, ex=ttl)
        p.zadd(self._key("index"), {run_id: time.time()})
        p.hset(self._key("sizes"), run_id, len(blob))
        if finished:
            p.delete(self._key("beat", run_id), self._key("cancel", run_id))
            p.zrem(self._key("active"), run_id)
        else:  # in the same transaction: a reader never sees a running run without a heartbeat
            p.set(self._key("beat", run_id), str(time.time()), ex=int(self.stale_after * 10) + 1)
            p.zadd(self._key("active"), {run_id: time.time()})
        p.execute()
        if finished:
            self.trim()

    def _read(self, run_id: str) -> bytes | None:
        blob = self.redis.get(self._key("run", run_id))
        if blob is None:
            return None
        try:
            return zlib.decompress(blob)
        except zlib.error:
            return None

    def beat(self, run_id: str) -> None:
        p = self.redis.pipeline()
        p.set(self._key("beat", run_id), str(time.time()), ex=int(self.stale_after * 10) + 1)
        p.zadd(self._key("active"), {run_id: time.time()}, xx=True)  # a late beat never revives a finished run
        p.execute()

    #: Count the fresh entries of the active set and, when under the capacity, add one: atomically, in Redis.
    _ADMIT = """
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
        local busy = redis.call('ZCARD', KEYS[1])
        if busy >= tonumber(ARGV[2]) then return busy end
        redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
        return -1
    """

    def admit(self, run: Run, capacity: int) -> int | None:
        now = time.time()
        busy = self.redis.eval(self._ADMIT, 1, self._key("active"), now - self.stale_after, capacity, now, run.id)
        if busy >= 0:
            return busy
        try:
            self.put(run)
        except BaseException:
            self.redis.zrem(self._key("active"), run.id)  # not stored: the place goes back
            self.mem.drop(run.id)
            raise
        return None

    def _beat_age(self, run_id: str) -> float:
        raw = self.redis.get(self._key("beat", run_id))
        if raw is None:
            return float("inf")
        try:
            return time.time() - float(raw)
        except ValueError:
            return float("inf")

    def request_cancel(self, run_id: str) -> None:
        if valid_id(run_id):
            self.redis.set(self._key("cancel", run_id), b"1", ex=86400)

    def cancel_requested(self, run_id: str) -> bool:
        return bool(self.redis.exists(self._key("cancel", run_id)))

    def trim(self) -> int:
        """Forget expired ids and delete the oldest finished runs beyond ``max_store_bytes``."""
        index, sizes = self._key("index"), self._key("sizes")
        ids = [i.decode() for i in self.redis.zrange(index, 0, -1)]  # oldest first
        if not ids:
            return 0
        p = self.redis.pipeline()
        for run_id in ids:
            p.exists(self._key("run", run_id))
            p.exists(self._key("beat", run_id))
        flags = p.execute()
        raw_sizes = self.redis.hmget(sizes, ids)
        gone, live = [], []
        for n, run_id in enumerate(ids):
            exists, running = flags[2 * n], flags[2 * n + 1]
            if not exists:
                gone.append(run_id)
            else:
                live.append((run_id, int(raw_sizes[n] or 0), bool(running)))
        total = sum(size for _, size, _ in live)
        for run_id, size, running in live:
            if total <= self.max_store_bytes:
                break
            if running:
                continue
            gone.append(run_id)
            self.redis.delete(self._key("run", run_id))
            self.mem.drop(run_id)
            total -= size
        if gone:
            p = self.redis.pipeline()
            p.zrem(index, *gone)
            p.hdel(sizes, *gone)
            p.execute()
        return len(gone)

    def stored_bytes(self) -> int:
        return sum(int(v) for v in self.redis.hvals(self._key("sizes")))


def connect_redis(url: str):
    """A Redis client for ``url`` with the timeouts every Redis store uses (the package is imported here, on first
    use: the directory stores do without it)."""
    import redis

    return redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5, health_check_interval=30)


def redis_url(settings) -> str | None:
    """``REDIS_URL`` from the settings (``TOKENPLAY_REDIS_URL``) or the plain environment variable."""
    return getattr(settings, "redis_url", None) or os.environ.get("REDIS_URL") or None


def make_store(settings):
    """The run store the settings ask for: :class:`RedisStore` when ``REDIS_URL`` is set, else a directory."""
    common = {
        "max_runs": settings.lab_max_runs,
        "max_bytes": getattr(settings, "lab_memory_bytes", 256 << 20),
        "ttl": getattr(settings, "lab_run_ttl_seconds", 7 * 86400),
        "stale_after": getattr(settings, "lab_stale_after_seconds", STALE_AFTER),
    }
    url = redis_url(settings)
    if url:
        return RedisStore(url, max_store_bytes=getattr(settings, "lab_store_bytes", 512 << 20), **common)
    return DirectoryStore(
        settings.lab_runs_dir, max_store_bytes=getattr(settings, "lab_store_bytes", 2 << 30), **common
    )
