"""Class sessions' events, fanned out inside one worker process to every follower's stream it serves.

A process holds one :class:`SessionHub` per event loop. The hub keeps one *channel* per session that has
followers here: the session's recent events, read from the store's log once per process however many followers
wait, and an ``asyncio.Event`` they all wait on. What wakes a channel:

- directory store: one inotify watch (Linux) on the store's ``log/`` folder for the whole process; the kernel
  reports each append, the channel reads only the new lines (``cursor``). Where inotify is missing, the process
  checks the size of its sessions' logs every :data:`POLL_SECONDS` instead (one ``stat`` per session, not per
  follower);
- Redis store: one pub/sub connection per process, subscribed to ``<prefix>events:*``; an event that arrives in
  order is added as it is, one after a gap (a missed message) makes the channel read the log.

Either way a stream idle for a heartbeat also asks its channel to read the log, so no missed wake-up can leave a
follower behind for longer than that. Followers wait on the loop, never in a thread: a hundred of them cost a
hundred suspended coroutines. Reading the store runs in a worker thread for a moment, once per event and process.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import os
import struct
from collections import deque
from contextlib import asynccontextmanager

import anyio.to_thread
import orjson

log = logging.getLogger(__name__)

#: Events a channel keeps in memory; a stream further behind reads the log.
BUFFER = 512
#: Without inotify: how often a process checks its sessions' logs for new events.
POLL_SECONDS = 0.1

_IN_MODIFY, _IN_MOVED_TO, _IN_CREATE, _IN_Q_OVERFLOW = 0x2, 0x80, 0x100, 0x4000
_EVENT_HEAD = struct.Struct("iIII")


class Inotify:
    """A non-blocking inotify descriptor watching one folder for files written, created or moved in (Linux)."""

    def __init__(self, folder: os.PathLike):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if not hasattr(libc, "inotify_init1"):
            raise OSError("inotify is not available on this system")
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        if libc.inotify_add_watch(fd, os.fsencode(folder), _IN_MODIFY | _IN_MOVED_TO | _IN_CREATE) < 0:
            errno = ctypes.get_errno()
            os.close(fd)
            raise OSError(errno, f"cannot watch {folder}")
        self.fd = fd

    def names(self) -> set[str] | None:
        """The names of the files changed since the last call; None when the kernel's queue overflowed (then
        anything may have changed)."""
        names: set[str] = set()
        overflow = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            pos = 0
            while pos + _EVENT_HEAD.size <= len(data):
                _, mask, _, length = _EVENT_HEAD.unpack_from(data, pos)
                start = pos + _EVENT_HEAD.size
                names.add(data[start : start + length].rstrip(b"\0").decode("utf-8", "replace"))
                overflow |= bool(mask & _IN_Q_OVERFLOW)
                pos = start + length
        return None if overflow else names

    def close(self) -> None:
        os.close(self.fd)


class Channel:
    """One session's events in this process: the recent ones, and an event the waiting streams share."""

    def __init__(self, hub: SessionHub, code: str):
        self.hub = hub
        self.code = code
        self.events: deque[dict] = deque(maxlen=BUFFER)
        self.last_seq = 0
        self.cursor: int | None = None
        self.users = 0
        self.changed = asyncio.Event()
        self.loaded = asyncio.Event()
        self._dirty = False
        self._task: asyncio.Task | None = None

    def poke(self) -> None:
        """Read the store's log for new events (soon, in the background; several pokes make one read)."""
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self._dirty:
                self._dirty = False
                events, self.cursor = await anyio.to_thread.run_sync(
                    self.hub.store.events, self.code, self.last_seq, self.cursor
                )
                self.add(events)
        except Exception:  # noqa: BLE001 - the store may be down for a moment; the next heartbeat reads again
            log.exception("reading the events of class session %s failed", self.code)
        finally:
            self.loaded.set()

    def offer(self, event: dict) -> None:
        """An event published by another process: taken when it is the next one, else the log is read."""
        seq = event.get("seq", 0)
        if seq == self.last_seq + 1 and self.loaded.is_set():
            self.add([event])
        elif seq > self.last_seq:
            self.poke()

    def add(self, events: list[dict]) -> None:
        fresh = False
        for event in sorted(events, key=lambda e: e["seq"]):
            if event["seq"] != self.last_seq + 1:
                if event["seq"] > self.last_seq + 1:  # a gap: read the log rather than skip an event
                    self.poke()
                    break
                continue
            self.events.append(event)
            self.last_seq = event["seq"]
            fresh = True
        if fresh:
            self.wake()

    def wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def since(self, seq: int) -> list[dict] | None:
        """The buffered events after ``seq``; None when some of them are no longer buffered."""
        if seq >= self.last_seq:
            return []
        if not self.events or self.events[0]["seq"] > seq + 1:
            return None
        return [e for e in self.events if e["seq"] > seq]


class Subscription:
    """One stream's place in its session's events."""

    def __init__(self, channel: Channel, after: int | None):
        self.channel = channel
        self.pos = after if after is not None and 0 <= after <= channel.last_seq else None

    async def next(self, timeout: float, stop=None) -> list[dict] | None:
        """The events after those already returned, in order (the first call: the last event, which is the
        session's state, or the events after ``after``); ``[]`` after ``timeout`` seconds without one; None when
        the hub closes or ``stop`` (an event with ``is_set()`` and ``wait()``) is set: the server is stopping."""
        ch = self.channel
        while True:
            if ch.hub.closed or (stop is not None and stop.is_set()):
                return None
            if self.pos is None:
                if ch.events:
                    self.pos = ch.last_seq
                    return [ch.events[-1]]
                got: list[dict] | None = []
            else:
                got = ch.since(self.pos)
                if got is None:  # this stream fell behind the buffer: read the log
                    got, _ = await anyio.to_thread.run_sync(ch.hub.store.events, ch.code, self.pos, None)
            if got:
                self.pos = got[-1]["seq"]
                return got
            changed = asyncio.ensure_future(ch.changed.wait())
            waits = {changed} if stop is None else {changed, asyncio.ensure_future(stop.wait())}
            try:
                done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()
            if not done:
                ch.poke()  # in case a wake-up was missed
                return []


class SessionHub:
    """The channels of one process (one event loop) and the one watcher that wakes them."""

    def __init__(self, store):
        self.store = store
        self.channels: dict[str, Channel] = {}
        self.closed = False
        self._watcher = None
        self._starting: asyncio.Lock | None = None

    async def _start(self) -> None:
        if self._watcher is not None:
            return
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._watcher is None:
                watcher = RedisWatcher(self) if self.store.kind == "redis" else DirectoryWatcher(self)
                await watcher.start()
                self._watcher = watcher

    @asynccontextmanager
    async def follow(self, code: str, after: int | None = None):
        """A :class:`Subscription` to the session's events while the ``async with`` lasts."""
        await self._start()
        ch = self.channels.get(code)
        if ch is None:
            ch = self.channels[code] = Channel(self, code)
            ch.poke()
        ch.users += 1
        try:
            await ch.loaded.wait()
            yield Subscription(ch, after)
        finally:
            ch.users -= 1
            if ch.users == 0 and self.channels.get(code) is ch:
                del self.channels[code]

    def touched(self, code: str) -> None:
        ch = self.channels.get(code)
        if ch is not None:
            ch.poke()

    def touched_all(self) -> None:
        for ch in list(self.channels.values()):
            ch.poke()

    async def aclose(self) -> None:
        """End every stream of this process (each sees None) and stop watching."""
        self.closed = True
        for ch in list(self.channels.values()):
            ch.wake()
        if self._watcher is not None:
            await self._watcher.aclose()
            self._watcher = None


class DirectoryWatcher:
    """inotify on the directory store's ``log/`` folder, read on the event loop; else a size check per session."""

    def __init__(self, hub: SessionHub):
        self.hub = hub
        self.inotify: Inotify | None = None
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        folder = self.hub.store.log_dir
        folder.mkdir(parents=True, exist_ok=True)
        self._loop = asyncio.get_running_loop()
        try:
            self.inotify = Inotify(folder)
        except OSError as exc:
            log.info("class sessions: no inotify (%s); checking the logs every %.2f s", exc, POLL_SECONDS)
            self._task = self._loop.create_task(self._poll())
            return
        self._loop.add_reader(self.inotify.fd, self._readable)

    def _readable(self) -> None:
        names = self.inotify.names()
        if names is None:
            self.hub.touched_all()
            return
        for name in names:
            if name.endswith(".log"):
                self.hub.touched(name[:-4])

    async def _poll(self) -> None:
        sizes: dict[str, int] = {}
        while True:
            await asyncio.sleep(POLL_SECONDS)
            for code in list(self.hub.channels):
                try:
                    size = os.stat(self.hub.store.log_dir / f"{code}.log").st_size
                except OSError:
                    continue
                if sizes.get(code) != size:
                    sizes[code] = size
                    self.hub.touched(code)

    async def aclose(self) -> None:
        if self.inotify is not None:
            self._loop.remove_reader(self.inotify.fd)
            self.inotify.close()
            self.inotify = None
        if self._task is not None:
            self._task.cancel()


class RedisWatcher:
    """One pub/sub connection per process, subscribed to every session's channel (``<prefix>events:*``)."""

    def __init__(self, hub: SessionHub):
        self.hub = hub
        self._task: asyncio.Task | None = None
        self.client = None
        self.pubsub = None

    async def start(self) -> None:
        import redis.asyncio as aioredis

        store = self.hub.store
        self.client = aioredis.Redis.from_url(store.url, socket_connect_timeout=5, health_check_interval=30)
        self.pubsub = self.client.pubsub(ignore_subscribe_messages=False)
        await self.pubsub.psubscribe(store.prefix + "events:*")
        # Wait for Redis to confirm: only then is an event published after the channel reads the log sure to come.
        while True:
            message = await self.pubsub.get_message(timeout=5)
            if message is not None and message["type"] == "psubscribe":
                break
        self._task = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        prefix = (self.hub.store.prefix + "events:").encode()
        while True:
            try:
                message = await self.pubsub.get_message(ignore_subscribe_messages=True, timeout=30)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - Redis went away: try again, then read what was missed
                log.warning("class sessions: the Redis subscription failed; retrying", exc_info=True)
                await asyncio.sleep(1)
                self.hub.touched_all()
                continue
            if message is None or message.get("type") != "pmessage":
                continue
            channel = message["channel"]
            if not channel.startswith(prefix):
                continue
            ch = self.hub.channels.get(channel[len(prefix) :].decode())
            if ch is not None:
                try:
                    ch.offer(orjson.loads(message["data"]))
                except ValueError:
                    ch.poke()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self.pubsub is not None:
            await self.pubsub.aclose()
        if self.client is not None:
            await self.client.aclose()
