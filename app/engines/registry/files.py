"""Tokenizer files on disk, used by name: ``tokenplay serve --tokenizer PATH`` and ``tokenplay encode --file PATH``.

A file is read and built by :mod:`.loaders` (any format it knows). ``tokenplay serve --tokenizer PATH`` checks each
file once, then passes the list to the server's worker processes in the ``TOKENPLAY_TOKENIZER_FILES``
environment variable (a JSON list of paths); every process registers them with the shipped tokenizers
(:func:`register_from_environment`, called by :mod:`.builtin`), lazily like the shipped ones; those our engines run
are stored as tables keyed by the file's bytes (:mod:`.table_files`), built once for all the processes. A file's entry is
named after the file (``my-bpe.json`` -> ``my-bpe``; a ``tokenizer.json`` after its directory), with maker
"yours"; a ``tokenizer.json`` gets a second entry, ``native-<name>``, run by our own engine. A name that shadows
a registered tokenizer or alias (an OpenAI model name included: ``gpt-4o-mine``) is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from ..base import Tokenizer
from ..errors import TokenplayError
from .loaders import MAX_FILE_BYTES, FileTooLargeError, detect_format, load_tokenizer
from .specs import TokenizerSpec, alias_target, register

ENV = "TOKENPLAY_TOKENIZER_FILES"
_GENERIC_STEMS = {"tokenizer", "model", "vocab", "tokenizer.model"}


def read_file(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of a tokenizer file (the first ``limit`` only, when given), refusing a missing or too large one
    before reading it."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise FileTooLargeError(
                f"{path} has {size:,} bytes; tokenizer files up to {MAX_FILE_BYTES >> 20} MB are accepted"
            )
        with path.open("rb") as f:
            return f.read(limit if limit is not None else -1)
    except OSError as exc:
        raise TokenplayError(f"cannot read tokenizer file {str(path)!r}: {exc.strerror}") from None


def load_file(
    path: str | Path,
    *,
    engine: str = "tokenplay",
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | list[str] = (),
    name: str = "",
) -> Tokenizer:
    """A tokenizer built from a file (see :func:`.loaders.load_tokenizer`)."""
    return load_tokenizer(read_file(path), name=name or entry_name(path), pattern=pattern,
                          special_tokens=special_tokens, engine=engine, filename=Path(path).name)


def load_file_stored(path: str | Path, *, engine: str = "tokenplay") -> Tokenizer:
    """:func:`load_file` through a table keyed by the file's bytes (:mod:`.table_files`): built once, mapped by every
    worker process; a changed file is a new key, so its table is built again."""
    from .table_files import load_bytes

    return load_bytes(read_file(path), name=entry_name(path), engine=engine, filename=Path(path).name)


def entry_name(path: str | Path) -> str:
    """The registry name for a file: its name without extension, or its directory's for a generic file name.

    >>> entry_name("models/my-bpe.json"), entry_name("/srv/llama-3.2/tokenizer.json")
    ('my-bpe', 'llama-3.2')
    """
    path = Path(path)
    stem = path.name.split(".", 1)[0] if path.suffix else path.name
    if stem in _GENERIC_STEMS and path.resolve().parent.name:
        return path.resolve().parent.name
    return stem


def register_file(path: str | Path) -> list[str]:
    """Register a file's tokenizer(s) for everyone in this process; returns the names. Nothing is read yet."""
    path = Path(path).resolve()
    name = entry_name(path)
    is_json = detect_format(read_file(path, limit=4096)) == "tokenizer.json"
    entries = [(name, "huggingface" if is_json else "tokenplay", "")]
    if is_json:
        entries.append((f"native-{name}", "tokenplay", name))
    for entry, engine, model in entries:
        if alias_target(entry) is not None:
            raise TokenplayError(f"tokenizer file {path} would be named {entry!r}, the name of a shipped model; rename it")
        spec = TokenizerSpec(
            name=entry,
            label=f"{name} ({path.name}, {engine} engine)" if engine == "tokenplay" else f"{name} ({path.name})",
            family="file",
            factory=lambda engine=engine: load_file_stored(path, engine=engine),
            description=f"tokenizer file {path}",
            maker="yours",
            model=model,
            engine=engine,
            title=name,
        )
        try:
            register(spec)
        except ValueError:
            raise TokenplayError(
                f"tokenizer file {path} would be named {entry!r}, which is already taken; rename the file"
            ) from None
    return [entry for entry, _, _ in entries]


def register_from_environment() -> None:
    """Register the files listed in ``TOKENPLAY_TOKENIZER_FILES`` (set by ``tokenplay serve --tokenizer``)."""
    raw = os.environ.get(ENV)
    if not raw:
        return
    try:
        paths = json.loads(raw)
    except json.JSONDecodeError:
        raise TokenplayError(f"{ENV} must be a JSON list of paths, not {raw!r}") from None
    for path in paths:
        register_file(path)
