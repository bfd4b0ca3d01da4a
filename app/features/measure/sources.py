"""The corpus as documents: which files to read, how to cut them into parts, and each part read as a stream.

- :func:`find_files` turns the paths a user gives (files and folders) into :class:`SourceFile` records: ``.txt``
  (one document per file), ``.jsonl`` / ``.ndjson`` (one document per line, a JSON object's ``text`` field or
  another), ``.parquet`` (a text column), each optionally gzip- (``.gz``) or zstd-compressed (``.zst``,
  ``.zstd``). A folder is walked in name order for those; a file named on its own with another extension is read
  as text. What cannot be read is a :class:`Problem`, not an exception: the rest of the corpus goes on.
- :func:`plan` cuts the files into :class:`Part` records, the unit of work a worker measures: an uncompressed
  ``.jsonl`` file in byte ranges (a part owns the lines that *start* in its range), a Parquet file by row group,
  anything else whole. The plan depends on the files and the part size only, never on how many workers there
  are, and documents keep the corpus order inside and across parts, so every figure comes out the same however
  the parts are spread.
- :func:`read_part` yields a part's :class:`Document` records without ever holding more than one document (or one
  Parquet batch) in memory. Bytes that are not UTF-8 are replaced by U+FFFD as Python's ``errors="replace"`` does
  (one per maximal invalid sequence, as tiktoken and Hugging Face ``tokenizers`` receive text from Python) and
  counted; a document larger than the limit is skipped and reported, never read whole.

Nothing here knows which tokenizers measure the documents.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import stat
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import regex

from app.engines.errors import TokenplayError

#: File name endings read in a folder, and what each holds.
KINDS = {".txt": "txt", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
#: The byte size of a part of a large uncompressed .jsonl file (the unit one worker measures at a time).
PART_BYTES = 4 << 20
#: Documents larger than this (UTF-8 bytes) are skipped and reported: a document is measured whole, in memory.
MAX_DOCUMENT_BYTES = 8 << 20
#: Bytes read at a time from a stream.
CHUNK = 1 << 20
#: A text file whose first bytes hold a NUL byte is binary (as git and grep decide).
SNIFF = 8000
#: Rows per batch read from a Parquet file.
PARQUET_BATCH = 1024


class CorpusError(TokenplayError):
    """Nothing to measure: no path given exists, or none holds a file Tokenplay reads."""


@dataclass(frozen=True)
class SourceFile:
    """One input file: ``path`` (absolute, what workers open), ``label`` (as the user named it), what it holds."""

    path: str
    label: str
    kind: str  # txt, jsonl or parquet
    compression: str | None  # gzip, zstd or None
    size: int


@dataclass(frozen=True)
class Part:
    """The unit of work: a whole file, the lines of a .jsonl file that start in ``[start, end)``, or one row group."""

    index: int
    file: SourceFile
    start: int = 0
    end: int | None = None
    row_group: int | None = None

    @property
    def weight(self) -> int:
        """Input bytes this part stands for (what progress counts)."""
        if self.end is not None:
            return self.end - self.start
        return self.file.size

    def describe(self) -> str:
        if self.row_group is not None:
            return f"{self.file.label} (row group {self.row_group})"
        if self.end is not None:
            return f"{self.file.label} (bytes {self.start:,}..{self.end:,})"
        return self.file.label


@dataclass(frozen=True)
class Document:
    """One document: its group, its text, and how many invalid UTF-8 sequences were replaced in it."""

    group: str
    text: str
    replaced: int = 0
    where: str = ""  # "line 12", "row 3", "" for a whole file


@dataclass(frozen=True)
class ReadOptions:
    """How documents are read: ``field`` holds the text of a .jsonl record or the Parquet column; ``group_by`` is
    None, ``"file"`` or ``"field:NAME"``."""

    field: str = "text"
    group_by: str | None = None
    max_document_bytes: int = MAX_DOCUMENT_BYTES

    @property
    def group_field(self) -> str | None:
        if self.group_by and self.group_by.startswith("field:"):
            return self.group_by[len("field:") :]
        return None


def check_group_by(value: str | None) -> str | None:
    """``--group-by``: ``file`` or ``field:NAME``, else :class:`CorpusError` saying so.

    >>> check_group_by("field:lang"), check_group_by("file"), check_group_by(None)
    ('field:lang', 'file', None)
    """
    if value is None or value == "file" or (value.startswith("field:") and len(value) > len("field:")):
        return value
    raise CorpusError(f"--group-by takes 'file' or 'field:NAME' (a field of each .jsonl record or Parquet column), not {value!r}")


# -- problems ---------------------------------------------------------------------------------------------------


#: Each kind of problem, and what to say about it (``{n}`` occurrences, ``{first}`` where the first was, ``{x}`` a
#: detail). Problems of one kind in one file are counted together, in any order of parts: the report is the same.
PROBLEM_MESSAGES = {
    "unreadable": "cannot be read ({x}); skipped",
    "binary": "is a binary file (it has NUL bytes), not text; skipped",
    "empty": "is empty; nothing to measure",
    "no_documents": "holds no documents",
    "too_large": "{n} document(s) larger than {x} skipped (first: {first}); split them or raise --max-document-mb",
    "not_json": "{n} line(s) are not JSON objects (first: {first}); skipped",
    "missing_field": "{n} record(s) without the field {x} (first: {first}); skipped; choose the field with --field",
    "not_text": "{n} record(s) whose field {x} is not a string (first: {first}); skipped",
    "invalid_utf8": "{n} document(s) with invalid UTF-8 (first: {first}): each invalid sequence read as U+FFFD, "
    "as the reference libraries receive it",
    "no_column": "has no column {x}; skipped; choose the column with --field",
    "no_group": "{n} document(s) without the group field {x} (first: {first}); grouped as '(none)'",
    "corrupt": "is damaged after {first} ({x}); the documents before were measured",
    "not_found": "does not exist",
    "not_a_file": "is not a regular file (a pipe or a device); skipped",
    "encode_failed": "{n} document(s) a tokenizer cannot encode (first: {first}: {x}); left out for every tokenizer",
    "part_failed": "could not be measured ({x}); left out",
    "skipped_files": "{n} file(s) in this folder are not .txt, .jsonl, .ndjson or .parquet (optionally .gz or "
    ".zst); not read",
}


@dataclass
class Problem:
    """Problems of one kind in one file: how many, where the first was (by its order in the file), a detail."""

    label: str
    kind: str
    count: int = 1
    first: tuple[int, str] = (0, "")  # (position in the file, as said to the user)
    detail: str = ""

    def merge(self, other: Problem) -> None:
        self.count += other.count
        self.first = min(self.first, other.first)

    @property
    def message(self) -> str:
        text = PROBLEM_MESSAGES[self.kind].format(n=f"{self.count:,}", first=self.first[1], x=self.detail)
        return f"{self.label}: {text}"

    def to_dict(self) -> dict:
        return {"file": self.label, "kind": self.kind, "count": self.count, "first": self.first[1],
                "message": self.message}


class Problems:
    """The problems met while reading, keyed by (file, kind)."""

    def __init__(self):
        self.items: dict[tuple[str, str], Problem] = {}

    def add(self, label: str, kind: str, position: int = 0, where: str = "", detail: str = "", count: int = 1):
        problem = Problem(label, kind, count, (position, where), detail)
        known = self.items.get((label, kind))
        if known is None:
            self.items[(label, kind)] = problem
        else:
            known.merge(problem)

    def merge(self, other: Problems) -> None:
        for key, problem in other.items.items():
            known = self.items.get(key)
            if known is None:
                self.items[key] = Problem(problem.label, problem.kind, problem.count, problem.first, problem.detail)
            else:
                known.merge(problem)

    def sorted(self) -> list[Problem]:
        return sorted(self.items.values(), key=lambda p: (p.label, p.kind))

    def __len__(self) -> int:
        return len(self.items)


# -- finding the files -------------------------------------------------------------------------------------------


def kind_of(name: str) -> tuple[str | None, str | None]:
    """What a file name says a file holds, and its compression.

    >>> kind_of("a.jsonl.zst"), kind_of("b.txt"), kind_of("c.parquet.gz"), kind_of("d.md")
    (('jsonl', 'zstd'), ('txt', None), ('parquet', 'gzip'), (None, None))
    """
    lower = name.lower()
    compression = None
    for ending, what in COMPRESSIONS.items():
        if lower.endswith(ending):
            compression, lower = what, lower[: -len(ending)]
            break
    for ending, what in KINDS.items():
        if lower.endswith(ending):
            return what, compression
    return None, compression


def find_files(paths: Iterable[str | os.PathLike | tuple[str, str]], problems: Problems) -> list[SourceFile]:
    """The files to read under ``paths`` (files, and folders walked in name order; hidden entries skipped), each
    once; a path may come as ``(path, name)``, the name the report calls it by. A path that does not exist, and a
    folder's files of other kinds, are noted in ``problems``."""
    out: list[SourceFile] = []
    seen: set[str] = set()

    def add(path: Path, label: str, kind: str | None, compression: str | None) -> None:
        label = shown(label)
        real = str(path.resolve())
        if real in seen:
            return
        seen.add(real)
        try:
            info = path.stat()
        except OSError as exc:
            problems.add(label, "unreadable", detail=exc.strerror or str(exc))
            return
        if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would never end
            problems.add(label, "not_a_file")
            return
        out.append(SourceFile(real, label, kind or "txt", compression, info.st_size))

    paths = list(paths)
    for given in paths:
        named = None
        if isinstance(given, tuple):  # (path, the name to call it by)
            given, named = given
        root = Path(given)
        label = shown(named if named is not None else str(given))
        if root.is_dir():
            # one folder: its files by their path inside it (the groups of --group-by file); several: as reached
            # (or, for a named folder, by its name and their path inside it)
            inside = len(paths) == 1 and named is None
            skipped = 0

            def unreadable(exc: OSError) -> None:
                problems.add(shown(str(exc.filename or label)), "unreadable", detail=exc.strerror or str(exc))

            for folder, dirs, files in os.walk(root, onerror=unreadable):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if name.startswith("."):
                        continue
                    kind, compression = kind_of(name)
                    path = Path(folder) / name
                    if kind is None:
                        skipped += 1
                        continue
                    inner = path.relative_to(root).as_posix()
                    add(path, inner if inside else f"{named}/{inner}" if named is not None else str(path), kind,
                        compression)
            if skipped:
                problems.add(label, "skipped_files", count=skipped)
        elif root.exists():
            kind, compression = kind_of(root.name)
            add(root, label, kind, compression)
        else:
            problems.add(label, "not_found")
    return out


def shown(text: str) -> str:
    """``text`` as valid UTF-8 can hold it: a file name's undecodable bytes, or half a character from a JSON escape,
    become U+FFFD (a report is JSON).

    >>> shown("caf\\udce9.txt") == "caf\\ufffd.txt"
    True
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


def plan(files: Iterable[SourceFile], part_bytes: int = PART_BYTES, problems: Problems | None = None) -> list[Part]:
    """The parts of ``files``, in corpus order: uncompressed .jsonl files in ranges of ``part_bytes``, Parquet
    files by row group, any other file whole."""
    parts: list[Part] = []
    for f in files:
        if f.kind == "jsonl" and f.compression is None and f.size > part_bytes:
            for start in range(0, f.size, part_bytes):
                parts.append(Part(len(parts), f, start, min(f.size, start + part_bytes)))
        elif f.kind == "parquet" and f.compression is None:
            groups = _row_groups(f, problems)
            if groups is None:
                continue
            for k in range(groups):
                parts.append(Part(len(parts), f, row_group=k))
        else:
            parts.append(Part(len(parts), f))
    return parts


def _row_groups(f: SourceFile, problems: Problems | None) -> int | None:
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(f.path).metadata.num_row_groups
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors (ArrowInvalid, OSError...) all mean "cannot read it"
        if problems is not None:
            problems.add(f.label, "unreadable", detail=_short(exc))
        return None


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


# -- reading a part ----------------------------------------------------------------------------------------------


def _open(f: SourceFile):
    """A binary stream of the file's decompressed bytes."""
    raw = open(f.path, "rb")  # noqa: SIM115 - closed by the returned stream
    if f.compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if f.compression == "zstd":
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)
        return io.BufferedReader(reader, CHUNK)
    return raw


_SURROGATE = regex.compile(r"[\ud800-\udfff]")
_REPLACEMENT = "\ufffd".encode()


def decode(data: bytes) -> tuple[str, int]:
    """``data`` as text, invalid sequences replaced as ``errors="replace"`` does, and how many were replaced (the
    U+FFFD of the text that were not U+FFFD in the bytes).

    >>> text, replaced = decode(b"ok \\xff\\xfe caf\\xc3\\xa9 \\xef\\xbf\\xbd")
    >>> text == "ok \\ufffd\\ufffd café \\ufffd", replaced
    (True, 2)
    """
    try:
        return data.decode("utf-8"), 0
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        return text, text.count("\ufffd") - data.count(_REPLACEMENT)


def read_part(part: Part, options: ReadOptions, problems: Problems) -> Iterator[Document]:
    """The documents of ``part`` in order. Problems are added to ``problems``; none is raised."""
    f = part.file
    try:
        if f.kind == "parquet":
            yield from _parquet_documents(part, options, problems)
        elif f.kind == "jsonl":
            yield from _jsonl_documents(part, options, problems)
        else:
            yield from _text_document(part, options, problems)
    except OSError as exc:
        problems.add(f.label, "unreadable", detail=exc.strerror or _short(exc))


def _group_of_file(part: Part, options: ReadOptions, problems: Problems) -> str:
    if options.group_by == "file":
        return part.file.label
    if options.group_field is not None:
        problems.add(part.file.label, "no_group", detail=repr(options.group_field))
        return NO_GROUP
    return ""


#: The group of a document without the group field.
NO_GROUP = "(none)"


def _text_document(part: Part, options: ReadOptions, problems: Problems) -> Iterator[Document]:
    """A text file: one document, read in chunks up to the limit (a larger one is skipped unread)."""
    f, limit = part.file, options.max_document_bytes
    chunks: list[bytes] = []
    size = 0
    try:
        with _open(f) as stream:
            while True:
                chunk = stream.read(CHUNK)
                if not chunk:
                    break
                if size == 0 and b"\0" in chunk[:SNIFF]:
                    problems.add(f.label, "binary")
                    return
                size += len(chunk)
                if size > limit:
                    problems.add(f.label, "too_large", detail=_mb(limit), where="the file")
                    return
                chunks.append(chunk)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        problems.add(f.label, "corrupt", where=f"byte {size:,}", detail=_short(exc))
        return
    except Exception as exc:  # noqa: BLE001 - zstandard.ZstdError and friends: a damaged compressed stream
        if type(exc).__module__.startswith("zstandard"):
            problems.add(f.label, "corrupt", where=f"byte {size:,}", detail=_short(exc))
            return
        raise
    if size == 0:
        problems.add(f.label, "empty")
        return
    text, replaced = decode(b"".join(chunks))
    del chunks
    if replaced:
        problems.add(f.label, "invalid_utf8", where="the file")
    yield Document(_group_of_file(part, options, problems), text, replaced)


def _mb(n: int) -> str:
    return f"{n / (1 << 20):g} MB"


def _lines(part: Part, stream, limit: int, problems: Problems) -> Iterator[tuple[int, str, bytes]]:
    """The lines of a part as (byte offset, where, bytes): from the first line that starts at or after
    ``part.start`` to the last that starts before ``part.end``. A line over ``limit`` bytes is skipped (read past in
    chunks, never whole) and reported."""
    f = part.file
    pos = 0
    line_no: int | None = 1
    if part.start > 0:
        stream.seek(part.start - 1)
        pos = part.start - 1
        skipped = stream.readline()  # the end of the line the byte before our range belongs to
        pos += len(skipped)
        line_no = None  # unknown without reading the ranges before
    end = part.end
    while end is None or pos < end:
        line = stream.readline(limit + 1)
        if not line:
            break
        where = f"line {line_no:,}" if line_no is not None else f"byte {pos:,}"
        start = pos
        pos += len(line)
        if len(line) > limit and not line.endswith(b"\n"):
            while True:  # the rest of an over-long line, in chunks
                rest = stream.readline(CHUNK)
                pos += len(rest)
                if not rest or rest.endswith(b"\n"):
                    break
            problems.add(f.label, "too_large", start, where, _mb(limit))
        else:
            yield start, where, line
        if line_no is not None:
            line_no += 1


def _jsonl_documents(part: Part, options: ReadOptions, problems: Problems) -> Iterator[Document]:
    f = part.file
    field_name, group_field = options.field, options.group_field
    by_file = part.file.label if options.group_by == "file" else ""
    documents = 0
    where = "the start"
    try:
        with _open(f) as stream:
            for position, where, line in _lines(part, stream, options.max_document_bytes, problems):
                if not line.strip():
                    continue
                record, replaced = _json_record(line)
                if not isinstance(record, dict):
                    problems.add(f.label, "not_json", position, where)
                    continue
                text = record.get(field_name)
                if text is None and field_name not in record:
                    problems.add(f.label, "missing_field", position, where, repr(field_name))
                    continue
                if not isinstance(text, str):
                    problems.add(f.label, "not_text", position, where, repr(field_name))
                    continue
                if replaced == 0 and _has_surrogate(text):  # a JSON escape of half a character ("\ud800")
                    text, replaced = _SURROGATE.subn("\ufffd", text)
                if replaced:
                    problems.add(f.label, "invalid_utf8", position, where)
                group = by_file
                if group_field is not None:
                    value = record.get(group_field)
                    if value is None:
                        problems.add(f.label, "no_group", position, where, repr(group_field))
                        group = NO_GROUP
                    else:
                        group = shown(value) if isinstance(value, str) else orjson.dumps(value).decode()
                documents += 1
                yield Document(group, text, replaced, where)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        problems.add(f.label, "corrupt", where=where, detail=_short(exc))
    except Exception as exc:  # noqa: BLE001 - zstandard's errors: a damaged compressed stream
        if not type(exc).__module__.startswith("zstandard"):
            raise
        problems.add(f.label, "corrupt", where=where, detail=_short(exc))
    if documents == 0 and part.start == 0 and (part.end is None or part.end >= f.size):
        if f.size == 0:
            problems.add(f.label, "empty")
        elif not any(key[0] == f.label and key[1] in ("not_json", "missing_field", "not_text", "too_large", "corrupt")
                     for key in problems.items):
            problems.add(f.label, "no_documents")


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _json_record(line: bytes):
    """A line's JSON value and how many invalid UTF-8 sequences were replaced to read it (None: not JSON)."""
    try:
        return orjson.loads(line), 0
    except orjson.JSONDecodeError:
        pass
    text, replaced = decode(line)
    try:
        import json

        return json.loads(text), replaced  # the standard library reads what orjson refuses: lone surrogate escapes
    except ValueError:
        return None, replaced


def _parquet_documents(part: Part, options: ReadOptions, problems: Problems) -> Iterator[Document]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = part.file
    temporary = None
    try:
        path = f.path
        if f.compression is not None:  # Parquet needs to seek: the decompressed file goes to disk, not memory
            temporary = tempfile.NamedTemporaryFile(prefix="tokenplay-measure-", suffix=".parquet", delete=False)
            with _open(f) as stream, temporary:
                shutil.copyfileobj(stream, temporary, CHUNK)
            path = temporary.name
        try:
            reader = pq.ParquetFile(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors: not a Parquet file, damaged
            problems.add(f.label, "unreadable", detail=_short(exc))
            return
        names = reader.schema_arrow.names
        if options.field not in names:
            problems.add(f.label, "no_column", detail=f"{options.field!r} (it has {', '.join(map(repr, names[:10]))})")
            return
        group_field = options.group_field
        columns = [options.field] + ([group_field] if group_field in names and group_field != options.field else [])
        if group_field is not None and group_field not in names:
            problems.add(f.label, "no_group", detail=repr(group_field), count=reader.metadata.num_rows)
        by_file = f.label if options.group_by == "file" else ""
        groups = [part.row_group] if part.row_group is not None else None
        row = sum(reader.metadata.row_group(k).num_rows for k in range(part.row_group or 0))
        limit = options.max_document_bytes
        for batch in reader.iter_batches(batch_size=PARQUET_BATCH, row_groups=groups, columns=columns):
            texts = batch.column(0)
            if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)
                    or pa.types.is_binary(texts.type) or pa.types.is_large_binary(texts.type)):
                problems.add(f.label, "not_text", row, f"row {row:,}", repr(options.field), count=len(texts))
                row += len(texts)
                continue
            if group_field is None:
                keys = [by_file] * len(texts)
            elif group_field == options.field:
                keys = texts.to_pylist()
            elif group_field in names:
                keys = batch.column(1).to_pylist()
            else:
                keys = [NO_GROUP] * len(texts)
            for value, key in zip(texts.to_pylist(), keys):
                where = f"row {row:,}"
                if value is None:
                    problems.add(f.label, "missing_field", row, where, repr(options.field))
                elif len(value) > limit and (isinstance(value, bytes) or len(value.encode("utf-8")) > limit):
                    problems.add(f.label, "too_large", row, where, _mb(limit))
                else:
                    replaced = 0
                    if isinstance(value, bytes):
                        value, replaced = decode(value)
                        if replaced:
                            problems.add(f.label, "invalid_utf8", row, where)
                    if key is None:
                        problems.add(f.label, "no_group", row, where, repr(group_field))
                        key = NO_GROUP
                    else:
                        key = shown(key) if isinstance(key, str) else str(key)
                    yield Document(key, value, replaced, where)
                row += 1
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary.name)
            except OSError:
                pass


@dataclass
class Corpus:
    """What :func:`open_corpus` found: the files, their parts, and the problems met on the way."""

    files: list[SourceFile]
    parts: list[Part]
    problems: Problems = field(default_factory=Problems)

    @property
    def total_bytes(self) -> int:
        return sum(p.weight for p in self.parts)


def open_corpus(paths: Iterable[str | os.PathLike], part_bytes: int = PART_BYTES) -> Corpus:
    """The files under ``paths`` and their parts; :class:`CorpusError` when there is nothing at all to read."""
    problems = Problems()
    paths = list(paths)
    if not paths:
        raise CorpusError("give at least one file or folder to measure")
    files = find_files(paths, problems)
    if not files:
        said = "; ".join(p.message for p in problems.sorted()) or "no .txt, .jsonl or .parquet file found"
        raise CorpusError(f"nothing to measure: {said}")
    return Corpus(files, plan(files, part_bytes, problems), problems)
