"""Tokenizers stored as tables: built once, in a process of their own, and memory-mapped by every process after.

A tokenizer run by our own engines is mostly read-only data: ranks, vocabulary, merges, pieces. Built from its file
in every worker process, each process parses the file again and keeps a private copy (Gemma 3's took 2 s and 200 MB
per process). Here it is built once into a *table file*, and every process maps that file: nothing is parsed at load,
and the operating system keeps one copy of its pages for all of them.

- **What a table holds.** The built tokenizer object itself, pickled, with its big containers taken out into sections
  of the file: a dict of bytes or str keys (ranks, vocabulary, merge pairs) becomes a :class:`FrozenMap`, a list of
  bytes or str (pieces, a decoder) a :class:`FrozenList`, a dict of ids a :class:`FrozenIdMap`, a long list of ints or
  a large array or bytes a ``memoryview`` of the section; a compiled ``PairTable`` keeps its hash slots in sections.
  All of them are read in place from the mapped file (``app/engines/compiled/_frozen.c``; the merge loop reads a FrozenMap
  without building an object per lookup). The engines do not know about tables: any tokenizer whose state pickles is
  stored, so every family is covered without a list of them.
- **The key.** A table is never trusted without its key: the format, a fingerprint of the engines' code (a change to
  any engine module rebuilds every table), and the sha256 of what it was built from: a shipped tokenizer's files as
  the manifest pins them (recorded while it was built: whatever files the build read), or the bytes of an uploaded or
  named file with its options. The key is in the file's header; on open the header, the file's size and a CRC-32 of
  everything after the header are checked, and a file that fails (cut short, damaged, built from another source or by
  other code) is built again.
- **Building.** In a child process (``python -m app.engines.registry.builder``): the parse's garbage and its long C
  calls (``json.loads`` of a 33 MB file holds the GIL for a second) stay out of the server's workers, whose health
  checks keep answering. The table is written to a temporary file and renamed into place, under a lock file, so
  concurrent builders make one good file and the others wait for it. Files go to ``TOKENPLAY_TABLES_DIR`` (default
  ``var/tables``); ``tokenplay tables build`` builds the shipped ones ahead (:mod:`.builder`).
- **When not.** Without the compiled twins (``TOKENPLAY_PURE_PYTHON=1``, no C compiler) or with
  ``TOKENPLAY_TABLES=off``, tokenizers are built in the process, from their files, as before.

Unpickling runs only classes of ``app.engines`` and a few containers of the standard library, so a stray file in the
directory cannot make a table build arbitrary objects. This module knows nothing of the web layer.
"""

from __future__ import annotations

import array
import fcntl
import hashlib
import io
import json
import logging
import mmap
import os
import pickle
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..base import Tokenizer
from ..compiled import twin
from ..datafiles import REPO_ROOT, expected_sha256
from ..errors import DataFileError, TokenplayError

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .loaders import LoadOptions

#: The layout of a table file; part of every key.
FORMAT = 1
MAGIC = b"TPTABLE1"
ALIGN = 64
#: Containers at least this big go to sections of their own (smaller ones stay in the pickle).
MIN_ITEMS = 1024
MIN_INTS = 4096
MIN_BYTES = 1 << 20
#: How long a build may take before it is given up.
BUILD_TIMEOUT = 600.0
#: Unused tables of uploaded files are removed after this long (their uploads expire after a week by default).
BYTES_TABLE_TTL = 8 * 86400

FrozenMap = twin("_frozen", "FrozenMap")
FrozenList = twin("_frozen", "FrozenList")
FrozenIdMap = twin("_frozen", "FrozenIdMap")
PairTable = twin("_merge", "PairTable")
if FrozenMap is not None:
    Mapping.register(FrozenMap)
    Mapping.register(FrozenIdMap)
    Sequence.register(FrozenList)

_BUILDER_ENV = "TOKENPLAY_TABLES_BUILDER"
#: The builder child's module (``python -m``): it looks tokenizers up in the registry, which this module is below.
BUILDER = "app.engines.registry.builder"
#: Tables this process had built (a child process each): the tests count them.
BUILDS = 0
logger = logging.getLogger(__name__)


class TableError(TokenplayError):
    """A table that could not be built; the message says why."""


def tables_dir() -> Path:
    return Path(os.environ.get("TOKENPLAY_TABLES_DIR") or REPO_ROOT / "var" / "tables")


def enabled() -> bool:
    """Whether tokenizers are stored as tables here: the compiled twins are built, tables are not turned off
    (``TOKENPLAY_TABLES=off``), and this is not a builder process."""
    return (
        FrozenMap is not None
        and os.environ.get("TOKENPLAY_TABLES", "on").lower() not in ("off", "0", "no")
        and os.environ.get(_BUILDER_ENV) != "1"
    )


_CODE: str | None = None


def code_fingerprint() -> str:
    """The sha256 of the engines' code (every ``.py``, ``.c`` and ``.h`` under app/engines/), the Python version and
    the byte order: a table holds pickled objects of these classes and C layouts of these files."""
    global _CODE
    if _CODE is None:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256(f"{FORMAT} {sys.version_info[:2]} {sys.byteorder}".encode())
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".c", ".h")):
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE = h.hexdigest()
    return _CODE


# -- pickling with sections ---------------------------------------------------------------------------------------


class _Pickler(pickle.Pickler):
    """Pickles a tokenizer with its big containers taken out as sections (the ids say how to read each back)."""

    def __init__(self, file):
        super().__init__(file, protocol=5)
        self.sections: list[bytes] = []
        self._seen: dict[int, tuple] = {}
        self._keep: list = []  # the objects behind _seen's ids stay alive while pickling

    def persistent_id(self, obj):
        key = id(obj)
        found = self._seen.get(key)
        if found is not None:
            return found
        pid = self._section(obj)
        if pid is not None:
            self._seen[key] = pid
            self._keep.append(obj)
        return pid

    def _add(self, kind: str, data: bytes, *extra) -> tuple:
        self.sections.append(data)
        return (kind, len(self.sections) - 1, *extra)

    def _section(self, obj) -> tuple | None:
        kind = type(obj)
        if kind is dict and len(obj) >= MIN_ITEMS:
            for frozen, name in ((FrozenMap, "map"), (FrozenIdMap, "idmap")):
                try:
                    return self._add(name, frozen.build(obj))
                except TypeError:
                    pass
        elif kind is list and len(obj) >= MIN_ITEMS:
            try:
                return self._add("list", FrozenList.build(obj))
            except TypeError:
                pass
            if len(obj) >= MIN_INTS and all(type(x) is int for x in obj):
                for code in "bhiq":
                    try:
                        return self._add("ints", array.array(code, obj).tobytes(), code)
                    except OverflowError:
                        pass
        elif kind in (bytes, bytearray) and len(obj) >= MIN_BYTES:
            return self._add("bytes", bytes(obj))
        elif kind is array.array and len(obj) * obj.itemsize >= MIN_BYTES:
            return self._add("ints", obj.tobytes(), obj.typecode)
        return None


#: What a table's pickle may name outside app.engines: containers and the compiled patterns of the standard library.
_ALLOWED = {
    "builtins": {"set", "frozenset", "slice", "bytearray", "range", "complex", "object"},
    "collections": {"OrderedDict", "ChainMap", "defaultdict", "deque"},
    "copyreg": {"_reconstructor"},
    "array": {"array", "_array_reconstructor"},
    "re": {"_compile"},
    "regex.regex": {"_compile"},
    "regex": {"_compile"},
    "_operator": {"add"},
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, buffer: memoryview, offsets: list[tuple[int, int]]):
        super().__init__(file)
        self.buffer = buffer
        self.offsets = offsets
        self._made: dict[int, object] = {}

    def persistent_load(self, pid):
        kind, index, *extra = pid
        made = self._made.get(index)
        if made is None:
            start, length = self.offsets[index]
            view = self.buffer[start : start + length]
            if kind == "map":
                made = FrozenMap(view)
            elif kind == "idmap":
                made = FrozenIdMap(view)
            elif kind == "list":
                made = FrozenList(view)
            elif kind == "ints":
                made = view.cast(extra[0])
            elif kind == "bytes":
                made = view
            else:
                raise pickle.UnpicklingError(f"unknown section kind {kind!r}")
            self._made[index] = made
        return made

    def find_class(self, module: str, name: str):
        """Only classes and functions defined in app.engines, and the few names of :data:`_ALLOWED`."""
        if "." not in name and name in _ALLOWED.get(module, ()):
            return super().find_class(module, name)
        if "." not in name and module.startswith("app.engines."):
            found = super().find_class(module, name)
            if callable(found) and (getattr(found, "__module__", None) or "").startswith("app.engines."):
                return found
        raise pickle.UnpicklingError(f"a table may not name {module}.{name}")


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def write_table(path: Path, tokenizer: Tokenizer, key: dict) -> int:
    """Write ``tokenizer`` as the table file ``path`` (atomically: a temporary file renamed into place); its size."""
    pickled = io.BytesIO()
    pickler = _Pickler(pickled)
    pickler.dump(tokenizer)
    parts = [*pickler.sections, pickled.getvalue()]
    offsets, at = [], 0
    for part in parts:
        offsets.append((at, len(part)))
        at = _align(at + len(part))
    payload_len = offsets[-1][0] + offsets[-1][1]
    crc = 0  # of the payload, summed as it is written
    header_fields = {"format": FORMAT, "code": code_fingerprint(), "key": key, "sections": offsets[:-1],
                     "pickle": offsets[-1], "payload": payload_len}
    longest = json.dumps(header_fields | {"crc32": 2**32 - 1, "start": 2**40}, sort_keys=True).encode()
    start = _align(len(MAGIC) + 8 + len(longest))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.seek(start)
            for (offset, _), part in zip(offsets, parts):
                pad = start + offset - f.tell()
                if pad:
                    f.write(b"\0" * pad)
                    crc = zlib.crc32(b"\0" * pad, crc)
                f.write(part)
                crc = zlib.crc32(part, crc)
            head = json.dumps(header_fields | {"crc32": crc, "start": start}, sort_keys=True).encode()
            f.seek(0)
            f.write(MAGIC + len(head).to_bytes(8, "little") + head)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return start + payload_len


class _Refused(Exception):
    """A table file that may not be used (missing, damaged, or of another key); it is built again."""


def _read_header(f) -> dict:
    lead = f.read(len(MAGIC) + 8)
    if len(lead) < len(MAGIC) + 8 or lead[: len(MAGIC)] != MAGIC:
        raise _Refused("not a table file")
    size = int.from_bytes(lead[len(MAGIC) :], "little")
    if size > 1 << 20:
        raise _Refused("header too long")
    try:
        header = json.loads(f.read(size))
    except (ValueError, UnicodeDecodeError):
        raise _Refused("damaged header") from None
    if not isinstance(header, dict):
        raise _Refused("damaged header")
    return header


def _crc(f, start: int, length: int) -> int:
    """The CRC-32 of ``length`` bytes from ``start``, read (not mapped: the pages are not charged to this process
    until it uses them), a megabyte at a time; zlib releases the GIL while it sums."""
    f.seek(start)
    crc, left, chunk = 0, length, bytearray(1 << 20)
    view = memoryview(chunk)
    while left:
        got = f.readinto(view[: min(left, len(chunk))])
        if not got:
            raise _Refused("cut short")
        crc = zlib.crc32(view[:got], crc)
        left -= got
    return crc


def open_table(path: Path, check_key: Callable[[dict], bool]) -> Tokenizer:
    """The tokenizer stored in ``path``, its sections mapped; raises :class:`_Refused` for a file that is missing,
    damaged, cut short, of another format or code, or whose key ``check_key`` refuses."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise _Refused("missing") from None
    with f:
        header = _read_header(f)
        try:
            start, payload = int(header["start"]), int(header["payload"])
            sections = [(int(a), int(b)) for a, b in header["sections"]]
            pickled = tuple(int(x) for x in header["pickle"])
            crc = int(header["crc32"])
        except (KeyError, TypeError, ValueError):
            raise _Refused("damaged header") from None
        if header.get("format") != FORMAT or header.get("code") != code_fingerprint():
            raise _Refused("built by other code")
        if not isinstance(header.get("key"), dict) or not check_key(header["key"]):
            raise _Refused("built from another source")
        size = os.fstat(f.fileno()).st_size
        if size != start + payload:
            raise _Refused("cut short" if size < start + payload else "too long")
        if _crc(f, start, payload) != crc:
            raise _Refused("damaged")
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mapped)[start:]
    a, n = pickled
    if any(x < 0 or x + y > payload for x, y in [*sections, pickled]):
        raise _Refused("damaged sections")
    try:
        tok = _Unpickler(io.BytesIO(view[a : a + n]), view, sections).load()
    except Exception as exc:  # a pickle that does not load is a damaged file, whatever the unpickler raised
        raise _Refused(f"cannot be read: {exc}") from None
    if not isinstance(tok, Tokenizer):
        raise _Refused("not a tokenizer")
    tok.table_file = str(path)
    return tok


# -- building in a child process, once ----------------------------------------------------------------------------


class _Lock:
    """An exclusive lock on ``path`` + ``.lock`` across processes (flock; waiting releases the GIL)."""

    def __init__(self, path: Path):
        self.path = path.with_name(path.name + ".lock")

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _build_in_child(args: list[str], data: bytes | None = None) -> None:
    """Run the builder (:data:`BUILDER` as a script) and raise the error it reports, as the class it was."""
    env = dict(os.environ, **{_BUILDER_ENV: "1"})
    try:
        proc = subprocess.run([sys.executable, "-m", BUILDER, *args], input=data, capture_output=True, env=env,
                              timeout=BUILD_TIMEOUT, cwd=str(REPO_ROOT))
    except subprocess.TimeoutExpired:
        raise TableError(f"building the table took more than {BUILD_TIMEOUT:.0f} s and was stopped") from None
    if proc.returncode == 0:
        return
    report = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        error = json.loads(report[-1])
    except (IndexError, ValueError):
        raise RuntimeError(f"the table builder failed:\n{proc.stderr.decode('utf-8', 'replace')[-4000:]}") from None
    raise _error_class(error.get("module", ""), error.get("name", ""))(error.get("message", "")) from None


def _error_class(module: str, name: str) -> type[Exception]:
    """The engines' error class the builder named (a TokenplayError of app.engines), else TokenplayError."""
    import importlib

    if module.startswith("app.engines"):
        try:
            found = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            found = None
        if isinstance(found, type) and issubclass(found, TokenplayError):
            return found
    return TokenplayError


def _load(path: Path, check_key: Callable[[dict], bool], build: Callable[[], None],
          here: Callable[[], Tokenizer]) -> Tokenizer:
    """The table at ``path``; built first (once, under its lock) when it is missing or refused. A table that is still
    refused once built (the engines' code changed while this process runs) gives way to ``here``: the tokenizer built
    in this process, as without tables."""
    try:
        return open_table(path, check_key)
    except _Refused:
        pass
    global BUILDS
    with _Lock(path):
        try:
            tok = open_table(path, check_key)  # built by another process while this one waited
        except _Refused:
            BUILDS += 1
            build()
            try:
                tok = open_table(path, check_key)
            except _Refused as exc:
                logger.warning("the table %s was built but cannot be used (%s); building the tokenizer here",
                               path.name, exc)
                return here()
    _prune(path)
    return tok


def _prune(path: Path) -> None:
    """Remove what this table replaces: tables of the same name built by other code, left-over temporary files, the
    lock files of tables that are gone, and tables of uploaded files not used for :data:`BYTES_TABLE_TTL`."""
    stem = path.name.rsplit("-", 1)[0]
    now = time.time()
    try:
        entries = list(os.scandir(path.parent))
    except FileNotFoundError:
        return
    for entry in entries:
        name = entry.name
        try:
            old = now - entry.stat().st_mtime
            if name.endswith(".tmp") and old > 3600:
                os.unlink(entry.path)
            elif name.endswith(".table.lock") and old > 3600 and not os.path.exists(entry.path[: -len(".lock")]):
                os.unlink(entry.path)  # the lock of a table that is gone (replaced or expired); at worst two build one
            elif name.endswith(".table") and name != path.name:
                if name.rsplit("-", 1)[0] == stem and not stem.startswith("bytes"):
                    os.unlink(entry.path)
                elif name.startswith("bytes-") and old > BYTES_TABLE_TTL:
                    os.unlink(entry.path)
        except FileNotFoundError:
            pass


# -- shipped tokenizers ---------------------------------------------------------------------------------------------


def registered_path(name: str) -> Path:
    return tables_dir() / f"{name}-{code_fingerprint()[:16]}.table"


def _sources_match(name: str) -> Callable[[dict], bool]:
    def check(key: dict) -> bool:
        sources = key.get("sources")
        if key.get("tokenizer") != name or not isinstance(sources, dict):
            return False
        try:
            return all(expected_sha256(rel) == sha for rel, sha in sources.items())
        except DataFileError:
            return False

    return check


def load_registered(name: str, factory: Callable[[], Tokenizer]) -> Tokenizer:
    """The shipped tokenizer ``name`` from its table (built in a child process when needed); ``factory`` builds it
    here instead when tables are off."""
    if not enabled():
        return factory()
    path = registered_path(name)
    return _load(path, _sources_match(name), lambda: _build_in_child(["--tokenizer", name, "--out", str(path)]),
                 factory)


# -- tokenizer files: uploads and files named on the command line ---------------------------------------------------


def file_options(pattern: str | None, special_tokens, engine: str) -> dict:
    """What a tokenizer file is built with, besides its bytes (part of its table's key)."""
    specials = dict(special_tokens) if isinstance(special_tokens, Mapping) else list(special_tokens)
    return {"pattern": pattern, "special_tokens": specials, "engine": engine}


def bytes_key(data: bytes, options: dict) -> dict:
    return {"data": hashlib.sha256(data).hexdigest(), **options}


def bytes_path(key: dict) -> Path:
    """The table file of a tokenizer file's key (the sha256 of its bytes and options)."""
    return tables_dir() / f"bytes-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]}.table"


def load_bytes(data: bytes, *, name: str = "", **options: Unpack[LoadOptions]) -> Tokenizer:
    """:func:`.loaders.load_tokenizer` through a table keyed by the file's sha256 and these options: the same
    tokenizer and the same errors, built once in a child process and then mapped by every process that uses it."""
    from .loaders import load_options, load_tokenizer, precheck

    o = load_options(options)
    pattern, special_tokens, engine, filename = o["pattern"], o["special_tokens"], o["engine"], o["filename"]
    if not enabled() or engine != "tokenplay":
        return load_tokenizer(data, name=name, **options)
    precheck(data, pattern, filename)  # the errors that need no build, answered without a child process
    options = file_options(pattern, special_tokens, engine)
    key = bytes_key(data, options)
    path = bytes_path(key)
    args = ["--options", json.dumps(options | {"filename": filename}), "--out", str(path)]

    def here() -> Tokenizer:
        return load_tokenizer(data, **options)

    tok = _load(path, lambda k: k == key, lambda: _build_in_child(args, data), here)
    try:
        os.utime(path)  # in use: not pruned
    except OSError:
        pass
    tok.name = name
    return tok


def build_bytes(data: bytes, options: dict, out: str) -> dict:
    from .loaders import load_tokenizer

    filename = options.pop("filename", "")
    tok = load_tokenizer(data, pattern=options["pattern"], special_tokens=options["special_tokens"],
                         engine=options["engine"], filename=filename)
    return {"path": out, "bytes": write_table(Path(out), tok, bytes_key(data, options))}
