"""Where class sessions are kept (:mod:`.sessions`): a directory shared by the worker processes of one machine,
or Redis shared by every machine. The same choice as the run store (:func:`app.lab.stores.make_store`).

Both keep, per session: its record (:class:`~app.classroom.sessions.Session`), its **event log** (every teacher action
in order, numbered ``seq`` from 1; the last event is the state), the votes of each step (one per follower, the
first one counts), the followers who joined (the ids the follow page or the event stream gave them: only they may
vote), and the heartbeats of followers' open streams. Per client address they keep the times of its failed joins
and of its counted votes. Time is ``clock()``, never the files' or Redis' own, so a test can move it.

How followers' streams learn of a new event (:mod:`.hub`): the directory store appends a line to
``log/<code>.log``, which the kernel reports to every process watching that folder (inotify); the Redis store
appends to a list and publishes the event on ``<prefix>events:<code>`` in one transaction, so the order on the
channel is the order of the log.

Neither store decides anything: limits, expiry and who may act are :class:`~app.classroom.service.Classroom`'s.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import shutil
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import orjson

from app.engines.errors import StorageFull
from app.lab.files import append_line, full, touch, write_whole
from app.lab.stores import connect_redis, redis_url
from app.lab.sweeps import Sweeps, entries

from .sessions import Session, valid_code


#: What the stores count per address, and where (a folder of the directory store, a key of Redis').
RECENT = {"joins": "joins", "votes": "votes-from"}
RECENT_WORDS = {"joins": "wrong codes", "votes": "votes"}


def _client_key(client: str) -> str:
    return hashlib.sha256(client.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _wait_for(times: list[float], now: float, limit: int, window: float) -> float:
    """Seconds until fewer than ``limit`` of ``times`` are younger than ``window`` (0: not blocked now)."""
    recent = sorted(t for t in times if now - t < window)
    if len(recent) < limit:
        return 0.0
    return recent[len(recent) - limit] + window - now


class DirectorySessionStore:
    """Sessions in a directory, for the worker processes of one machine::

        <code>.json            the session record (replaced atomically)
        <code>.lock            created exclusively when the code is taken; flock'd while an event or vote is added
        log/<code>.log         the events, one JSON line each, appended (what followers' streams watch)
        votes/<code>.<k>.jsonl the votes of step k, one line each
        names/<code>.jsonl     followers' nicknames, one line each (the last line of a follower counts)
        followers/<code>/<follower>.<stream>   one empty file per open stream; its mtime is the heartbeat
        members/<code>/<follower>              one empty file per follower who joined (only they may vote)
        joins/<client hash>.json               a client's recent failed joins
        votes-from/<client hash>.json          a client's recent counted votes

    Expired sessions are swept (at most once a minute, when a session is created).
    """

    kind = "directory"

    def __init__(self, directory: Path, *, clock: Callable[[], float] = time.time):
        self.directory = Path(directory)
        self.log_dir = self.directory / "log"
        self.clock = clock
        self._sweeps = Sweeps()

    # -- files -------------------------------------------------------------------------------------------------
    def _path(self, code: str, ext: str) -> Path:
        return self.directory / f"{code}.{ext}"

    def _log(self, code: str) -> Path:
        return self.log_dir / f"{code}.log"

    def _votes(self, code: str, step: int) -> Path:
        return self.directory / "votes" / f"{code}.{step}.jsonl"

    def _followers(self, code: str) -> Path:
        return self.directory / "followers" / code

    @contextmanager
    def _locked(self, code: str):
        with open(self._path(code, "lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            yield

    def _write_session(self, session: Session, what: str = "the class session") -> None:
        write_whole(self._path(session.code, "json"), orjson.dumps(session.to_json()), what)

    def _read_session(self, code: str) -> Session | None:
        try:
            return Session.from_json(orjson.loads(self._path(code, "json").read_bytes()))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @staticmethod
    def _append_line(path: Path, record: dict, what: str) -> None:
        append_line(path, orjson.dumps(record), what)  # one write of one short line (under the session's lock)

    # -- sessions and events -----------------------------------------------------------------------------------
    def create(self, session: Session, first_event: dict) -> bool:
        """Store a new session with its first event; False when its code is taken."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.sweep()
        try:
            os.close(os.open(self._path(session.code, "lock"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            return False
        except OSError as exc:
            raise full(exc, "the class session") from None
        try:
            with self._locked(session.code):
                self._log(session.code).unlink(missing_ok=True)
                self._append_line(self._log(session.code), first_event | {"seq": 1, "at": self.clock()},
                                  "the class session")
                self._write_session(session)  # last: the session exists once its record does
        except StorageFull:
            self._remove(session.code)  # a full disk: no half-made session (and its code is free again)
            raise
        return True

    def get(self, code: str) -> Session | None:
        """The session, or None when there is none or it has expired."""
        if not valid_code(code):
            return None
        session = self._read_session(code)
        if session is None or session.expires < self.clock():
            return None
        return session

    def last(self, code: str) -> dict | None:
        """The session's last event (its state)."""
        try:
            with open(self._log(code), "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - 8192))
                tail = f.read()
        except OSError:
            return None
        lines = tail.rstrip(b"\n").rsplit(b"\n", 1)
        try:
            return orjson.loads(lines[-1])
        except ValueError:
            return None

    def append(self, code: str, changes: dict, expires: float) -> dict:
        """Add the next event (the last one with ``changes``) and move the session's end to ``expires``."""
        with self._locked(code):
            last = self.last(code) or {"seq": 0}
            event = last | changes | {"seq": last["seq"] + 1, "at": self.clock()}
            # The session's new end first, the event last: on a full disk the action raises before the event is
            # in the log, so an action that answered an error did not happen (a later end alone changes nothing).
            session = self._read_session(code)
            if session is not None:
                session.expires = expires
                self._write_session(session, "the teacher's action")
            self._append_line(self._log(code), event, "the teacher's action")
        return event

    def events(self, code: str, after: int, cursor: int | None = None) -> tuple[list[dict], int | None]:
        """The events numbered above ``after``. ``cursor`` (returned by the previous call for the same reader) is
        where that call stopped reading the log, so a follower's process reads only what is new."""
        try:
            with open(self._log(code), "rb") as f:
                if cursor:
                    f.seek(cursor)
                data = f.read()
        except OSError:
            return [], cursor
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        out = []
        for line in data[:end].splitlines():
            try:
                event = orjson.loads(line)
            except ValueError:
                continue
            if event.get("seq", 0) > after:
                out.append(event)
        return out, (cursor or 0) + end

    # -- votes -------------------------------------------------------------------------------------------------
    def vote(self, code: str, step: int, follower: str, pair: list[str]) -> bool:
        """Record ``follower``'s vote at ``step``; False (nothing recorded) if it voted there already."""
        path = self._votes(code, step)
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked(code):
            if follower in self.votes(code, step):
                return False
            self._append_line(path, {"f": follower, "pair": pair}, "the vote")
        return True

    def votes(self, code: str, step: int) -> dict[str, list[str]]:
        try:
            data = self._votes(code, step).read_bytes()
        except OSError:
            return {}
        out: dict[str, list[str]] = {}
        for line in data.splitlines():
            try:
                vote = orjson.loads(line)
            except ValueError:
                continue
            out.setdefault(vote["f"], vote["pair"])
        return out

    # -- followers ---------------------------------------------------------------------------------------------
    def beat(self, code: str, stream: str, follower: str) -> None:
        folder = self._followers(code)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{follower}.{stream}"
        now = self.clock()
        touch(path, "the follower's heartbeat")
        os.utime(path, (now, now))

    def leave(self, code: str, stream: str) -> None:
        try:
            for entry in os.scandir(self._followers(code)):
                if entry.name.endswith(f".{stream}"):
                    Path(entry.path).unlink(missing_ok=True)
        except OSError:
            pass

    def followers(self, code: str, ttl: float) -> int:
        """Distinct followers with an open stream whose heartbeat is younger than ``ttl``."""
        now = self.clock()
        alive = set()
        for entry in entries(self._followers(code)) or []:
            try:
                age = now - entry.stat().st_mtime
            except OSError:
                continue
            if age <= ttl:
                alive.add(entry.name.rsplit(".", 1)[0])
            elif age > 10 * ttl:  # a stream of a process that died long ago
                Path(entry.path).unlink(missing_ok=True)
        return len(alive)

    # -- nicknames and every step's votes (the scoreboard) --------------------------------------------------------
    def _names(self, code: str) -> Path:
        return self.directory / "names" / f"{code}.jsonl"

    def set_name(self, code: str, follower: str, name: str | None) -> None:
        """Keep ``follower``'s nickname (None: forget it)."""
        path = self._names(code)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._append_line(path, {"f": follower, "name": name}, "the student's nickname")

    def names(self, code: str) -> dict[str, str]:
        try:
            data = self._names(code).read_bytes()
        except OSError:
            return {}
        out: dict[str, str] = {}
        for line in data.splitlines():
            try:
                record = orjson.loads(line)
            except ValueError:
                continue
            if record.get("name"):
                out[record["f"]] = record["name"]
            else:
                out.pop(record.get("f"), None)
        return out

    def all_votes(self, code: str) -> dict[int, dict[str, list[str]]]:
        """The votes of every step that has some: ``{step: {follower: pair}}``."""
        out = {}
        for path in (self.directory / "votes").glob(f"{code}.*.jsonl"):
            step = path.name[len(code) + 1 : -len(".jsonl")]
            if step.isdigit():
                out[int(step)] = self.votes(code, int(step))
        return out

    # -- members ---------------------------------------------------------------------------------------------
    def _member(self, code: str, follower: str) -> Path:
        return self.directory / "members" / code / follower

    def is_member(self, code: str, follower: str) -> bool:
        return self._member(code, follower).exists()

    def add_member(self, code: str, follower: str, expires: float) -> None:
        path = self._member(code, follower)
        path.parent.mkdir(parents=True, exist_ok=True)
        touch(path, "the student's place in the class")

    # -- what one address did lately (failed joins, votes) -------------------------------------------------------
    def _recent_path(self, kind: str, client: str) -> Path:
        return self.directory / RECENT[kind] / f"{_client_key(client)}.json"

    def _recent_times(self, path: Path) -> list[float]:
        try:
            return orjson.loads(path.read_bytes())
        except (OSError, ValueError):
            return []

    def recent_wait(self, kind: str, client: str, limit: int, window: float) -> float:
        """Seconds until ``client`` has done ``kind`` fewer than ``limit`` times within ``window`` (0: not now)."""
        # No lock: the file is replaced whole (every request of every follower asks this)
        return _wait_for(self._recent_times(self._recent_path(kind, client)), self.clock(), limit, window)

    def recent_add(self, kind: str, client: str, window: float) -> None:
        """Count one more ``kind`` (``"joins"``: a wrong code; ``"votes"``: a counted vote) of ``client``."""
        now = self.clock()
        path = self._recent_path(kind, client)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.parent / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # read, add, write back: one process at a time
            times = [t for t in self._recent_times(path) if now - t < window] + [now]
            write_whole(path, orjson.dumps(times), f"the count of {RECENT_WORDS[kind]}")

    def join_wait(self, client: str, limit: int, window: float) -> float:
        return self.recent_wait("joins", client, limit, window)

    def join_failed(self, client: str, window: float) -> None:
        self.recent_add("joins", client, window)

    # -- expiry ------------------------------------------------------------------------------------------------
    def sweep(self, *, force: bool = False) -> int:
        """Remove expired sessions (record, log, votes, followers) and old failed-join records; returns how many
        sessions went."""
        return self._sweeps.run(self.clock(), force, self._sweep)

    def _sweep(self, now: float) -> int:
        found = entries(self.directory)
        if found is None:
            return 0
        removed = 0
        for entry in found:
            if entry.name.endswith(".json") and not entry.name.startswith("."):
                code = entry.name[:-5]
                session = self._read_session(code)
                if session is None or session.expires < now:
                    self._remove(code)
                    removed += 1
        for folder in RECENT.values():
            for entry in entries(self.directory / folder) or []:
                if entry.name.endswith(".json") and not entry.name.startswith("."):
                    try:
                        times = orjson.loads(Path(entry.path).read_bytes())
                    except (OSError, ValueError):
                        times = []
                    if not times or now - max(times) > 86400:
                        Path(entry.path).unlink(missing_ok=True)
        return removed

    def _remove(self, code: str) -> None:
        for path in (self._path(code, "json"), self._log(code), self._path(code, "lock")):
            path.unlink(missing_ok=True)
        shutil.rmtree(self._followers(code), ignore_errors=True)
        shutil.rmtree(self.directory / "members" / code, ignore_errors=True)
        for path in (self.directory / "votes").glob(f"{code}.*.jsonl"):
            path.unlink(missing_ok=True)
        self._names(code).unlink(missing_ok=True)


class RedisSessionStore:
    """Sessions in Redis, for several machines. Keys (``prefix`` ``tokenplay:class:``)::

        session:<code>      the session record (JSON), SET NX when the code is taken
        log:<code>          list of the events (JSON); event seq n is element n - 1
        events:<code>       pub/sub channel: each event as it is appended (same transaction as the append)
        votes:<code>:<k>    hash follower -> pair (HSETNX: the first vote counts)
        followers:<code>    sorted set "<follower>.<stream>" -> heartbeat time
        names:<code>        hash follower -> nickname
        members:<code>      set of the followers who joined (only they may vote)
        joins:<client hash> sorted set of failed-join times
        votes-from:<client hash>  sorted set of counted votes' times

    Keys carry a TTL an hour past the session's end, so Redis forgets what nobody swept.
    """

    kind = "redis"

    def __init__(self, url: str, *, prefix: str = "tokenplay:class:", clock: Callable[[], float] = time.time, client=None):
        self.redis = client if client is not None else connect_redis(url)
        self.url = url
        self.prefix = prefix
        self.clock = clock

    def key(self, kind: str, code: str) -> str:
        return f"{self.prefix}{kind}:{code}"

    def channel(self, code: str) -> str:
        return self.key("events", code)

    def _keep(self, expires: float) -> int:
        return max(60, int(expires - self.clock()) + 3600)

    def create(self, session: Session, first_event: dict) -> bool:
        keep = self._keep(session.expires)
        if not self.redis.set(self.key("session", session.code), orjson.dumps(session.to_json()), nx=True, ex=keep):
            return False
        p = self.redis.pipeline()
        p.delete(self.key("log", session.code))
        p.rpush(self.key("log", session.code), orjson.dumps(first_event | {"seq": 1, "at": self.clock()}))
        p.expire(self.key("log", session.code), keep)
        p.execute()
        return True

    def get(self, code: str) -> Session | None:
        if not valid_code(code):
            return None
        raw = self.redis.get(self.key("session", code))
        if raw is None:
            return None
        try:
            session = Session.from_json(orjson.loads(raw))
        except (ValueError, KeyError, TypeError):
            return None
        return None if session.expires < self.clock() else session

    def last(self, code: str) -> dict | None:
        raw = self.redis.lindex(self.key("log", code), -1)
        return None if raw is None else orjson.loads(raw)

    def append(self, code: str, changes: dict, expires: float) -> dict:
        """Add the next event and publish it, in one transaction (optimistic: retried if another worker appended
        at the same moment), so the channel's order is the log's."""
        from redis.exceptions import WatchError

        log, skey = self.key("log", code), self.key("session", code)
        keep = self._keep(expires)
        with self.redis.pipeline() as p:
            while True:
                try:
                    p.watch(log, skey)
                    raw_last, raw_session = p.lindex(log, -1), p.get(skey)
                    last = orjson.loads(raw_last) if raw_last is not None else {"seq": 0}
                    event = last | changes | {"seq": last["seq"] + 1, "at": self.clock()}
                    data = orjson.dumps(event)
                    p.multi()
                    p.rpush(log, data)
                    p.expire(log, keep)
                    p.publish(self.channel(code), data)
                    if raw_session is not None:
                        session = orjson.loads(raw_session) | {"expires": expires}
                        p.set(skey, orjson.dumps(session), ex=keep)
                    p.execute()
                    return event
                except WatchError:
                    continue

    def events(self, code: str, after: int, cursor: int | None = None) -> tuple[list[dict], int | None]:
        raw = self.redis.lrange(self.key("log", code), after, -1)
        return [orjson.loads(r) for r in raw], None

    def vote(self, code: str, step: int, follower: str, pair: list[str]) -> bool:
        key = self.key("votes", f"{code}:{step}")
        p = self.redis.pipeline()
        p.hsetnx(key, follower, orjson.dumps(pair))
        p.expire(key, 86400)
        added, _ = p.execute()
        return bool(added)

    def votes(self, code: str, step: int) -> dict[str, list[str]]:
        raw = self.redis.hgetall(self.key("votes", f"{code}:{step}"))
        return {f.decode(): orjson.loads(v) for f, v in raw.items()}

    def beat(self, code: str, stream: str, follower: str) -> None:
        key = self.key("followers", code)
        p = self.redis.pipeline()
        p.zadd(key, {f"{follower}.{stream}": self.clock()})
        p.expire(key, 86400)
        p.execute()

    def leave(self, code: str, stream: str) -> None:
        key = self.key("followers", code)
        members = [m for m in self.redis.zrange(key, 0, -1) if m.decode().endswith(f".{stream}")]
        if members:
            self.redis.zrem(key, *members)

    def followers(self, code: str, ttl: float) -> int:
        key = self.key("followers", code)
        now = self.clock()
        p = self.redis.pipeline()
        p.zremrangebyscore(key, "-inf", now - 10 * ttl)  # streams of a process that died long ago
        p.zrangebyscore(key, now - ttl, "+inf")
        _, members = p.execute()
        return len({m.decode().rsplit(".", 1)[0] for m in members})

    def set_name(self, code: str, follower: str, name: str | None) -> None:
        key = self.key("names", code)
        p = self.redis.pipeline()
        if name:
            p.hset(key, follower, name)
        else:
            p.hdel(key, follower)
        p.expire(key, 86400)
        p.execute()

    def names(self, code: str) -> dict[str, str]:
        return {f.decode(): v.decode() for f, v in self.redis.hgetall(self.key("names", code)).items()}

    def all_votes(self, code: str) -> dict[int, dict[str, list[str]]]:
        prefix = self.key("votes", f"{code}:")
        steps = [key.decode()[len(prefix):] for key in self.redis.scan_iter(match=prefix + "*", count=500)]
        return {int(step): self.votes(code, int(step)) for step in steps if step.isdigit()}

    def is_member(self, code: str, follower: str) -> bool:
        return bool(self.redis.sismember(self.key("members", code), follower))

    def add_member(self, code: str, follower: str, expires: float) -> None:
        key = self.key("members", code)
        p = self.redis.pipeline()
        p.sadd(key, follower)
        p.expire(key, self._keep(expires))
        p.execute()

    def recent_wait(self, kind: str, client: str, limit: int, window: float) -> float:
        key = self.key(RECENT[kind], _client_key(client))
        times = [score for _, score in self.redis.zrange(key, 0, -1, withscores=True)]
        return _wait_for(times, self.clock(), limit, window)

    def recent_add(self, kind: str, client: str, window: float) -> None:
        key = self.key(RECENT[kind], _client_key(client))
        now = self.clock()
        p = self.redis.pipeline()
        p.zremrangebyscore(key, "-inf", now - window)
        p.zadd(key, {f"{now!r}:{secrets.token_hex(4)}": now})
        p.expire(key, max(60, int(window) + 60))
        p.execute()

    def join_wait(self, client: str, limit: int, window: float) -> float:
        return self.recent_wait("joins", client, limit, window)

    def join_failed(self, client: str, window: float) -> None:
        self.recent_add("joins", client, window)

    def sweep(self, *, force: bool = False) -> int:
        return 0  # Redis forgets by TTL


def sessions_dir(settings) -> Path:
    """``TOKENPLAY_SESSIONS_DIR``; by default ``sessions/`` inside the lab's runs directory, so wherever the runs
    go (a test's temporary directory too) the sessions go with them. The run store only looks at files there."""
    return getattr(settings, "sessions_dir", None) or Path(settings.lab_runs_dir) / "sessions"


def make_session_store(settings, clock: Callable[[], float] = time.time):
    """The store the settings ask for: Redis when ``REDIS_URL`` is set (as the run store), else a directory."""
    url = redis_url(settings)
    if url:
        return RedisSessionStore(url, clock=clock)
    return DirectorySessionStore(sessions_dir(settings), clock=clock)
