"""Writing the directory stores' files (runs, uploads, class sessions) whole or not at all.

- :func:`write_whole` replaces a file atomically (a temporary file beside it, then ``os.replace``): a reader sees
  the old content or the new, and a write that fails (the disk is full) leaves neither a half-written file nor the
  temporary one behind;
- :func:`append_line` appends one line to a log in one ``write``; a write that fails part-way is cut back, so the
  log never holds half a line;
- both raise :class:`~app.engines.errors.StorageFull` (a 507 in words) when the disk is full, and any other
  ``OSError`` as it was.

Callers that do several writes for one action order them so that the one that makes the action visible comes
last (:mod:`app.classroom.stores`): a failure before it leaves the action undone.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

from app.engines.errors import StorageFull

#: The errors that mean "no space": the disk is full, or the user's quota is.
FULL = (errno.ENOSPC, errno.EDQUOT)


def full(exc: OSError, what: str) -> Exception:
    """``exc`` as :class:`StorageFull` when it says the disk is full, else ``exc`` itself (to be raised)."""
    return StorageFull.about(what) if exc.errno in FULL else exc


def write_whole(path: Path, data: bytes, what: str) -> None:
    """Replace ``path``'s content with ``data`` atomically; a failure leaves ``path`` as it was and no temporary
    file (``what`` names the content in the message of a full disk)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written <= 0:  # nothing more fits
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[written:]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise full(exc, what) from None


def append_line(path: Path, line: bytes, what: str) -> None:
    """Append ``line`` (one line, without its newline) to ``path`` in one write (never interleaved with another
    process's line); a write that fails part-way is cut back to where the file ended."""
    data = line + b"\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise full(exc, what) from None
    try:
        end = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
            if written != len(data):  # a short write: the disk filled up in the middle of the line
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError as exc:
            try:
                os.ftruncate(fd, end)
            except OSError:
                pass
            raise full(exc, what) from None
    finally:
        os.close(fd)


def touch(path: Path, what: str) -> None:
    """Create ``path`` empty if it is missing, or set its modification time to now (a heartbeat)."""
    try:
        path.touch()
    except OSError as exc:
        raise full(exc, what) from None
