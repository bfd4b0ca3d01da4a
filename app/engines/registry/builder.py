"""The shipped tokenizers stored as tables: which they are, building their tables ahead (``tokenplay tables build``),
and the builder child process that :mod:`.table_files` runs (``python -m app.engines.registry.builder``).

It looks tokenizers up in the registry, which stores them through :mod:`.table_files`: so this is a module of its own,
above both (``tables`` imports no registry).
"""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .. import datafiles
from ..datafiles import expected_sha256
from ..errors import StorageFull, TokenplayError
from . import get, names as registered_names, spec
from .table_files import TableError, build_bytes, enabled, load_registered, write_table


def build_registered(name: str, out: str) -> dict:
    """Build the table of the registered tokenizer ``name`` in this process (the builder child's work)."""
    datafiles.reads = []
    try:
        tok = get(name)
        read = list(dict.fromkeys(datafiles.reads))
    finally:
        datafiles.reads = None
    key = {"tokenizer": name, "sources": {rel: expected_sha256(rel) for rel in read}}
    return {"path": out, "bytes": write_table(Path(out), tok, key)}


def stored_names() -> list[str]:
    """The shipped tokenizers stored as tables (those run by our own engines)."""
    return [n for n in registered_names() if spec(n).stored]


def build_all(names: list[str] | None = None, jobs: int = 1, echo: Callable[[str], None] = print) -> int:
    """Build (or check) the tables of ``names`` (default: every stored shipped tokenizer), ``jobs`` builders at a
    time; prints one line per table. 0, or 1 if a table could not be built."""
    if not enabled():
        echo("tables are off here (TOKENPLAY_TABLES=off, or the compiled twins are not built)")
        return 1
    names = names or stored_names()
    failed = 0
    lock = threading.Lock()

    def one(name: str) -> None:
        nonlocal failed
        start = time.perf_counter()
        try:
            tok = load_registered(name, spec(name).factory)
            table = getattr(tok, "table_file", None)
            if table is None:
                raise TableError("its table was built but cannot be read (the log says why)")
            line = f"{name}: {Path(table).name}, {os.path.getsize(table) / 2**20:.1f} MB"
        except TokenplayError as exc:
            with lock:
                failed += 1
            line = f"{name}: FAILED: {exc}"
        with lock:
            echo(f"{line} ({time.perf_counter() - start:.1f} s)")

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        list(pool.map(one, names))
    return 1 if failed else 0


def _main(argv: list[str]) -> int:
    """The builder: ``--tokenizer NAME`` (a registered tokenizer) or ``--options JSON --out PATH`` (a file's bytes on
    stdin). Prints its result, or the error as JSON on the last line (exit status 3)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m app.engines.registry.builder")
    parser.add_argument("--tokenizer")
    parser.add_argument("--options")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    try:
        if args.tokenizer:
            done = build_registered(args.tokenizer, args.out)
        else:  # a file a user brought, built while the server serves: the server's requests come first
            try:
                os.nice(10)
            except OSError:
                pass
            done = build_bytes(sys.stdin.buffer.read(), json.loads(args.options), args.out)
    except (TokenplayError, OSError) as exc:
        if isinstance(exc, OSError):
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            exc = StorageFull.about("the tokenizer's table file")  # the table's temporary file is gone already
        print(json.dumps({"module": type(exc).__module__, "name": type(exc).__qualname__, "message": str(exc)}))
        return 3
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
