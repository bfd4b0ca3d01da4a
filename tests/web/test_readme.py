"""Every example of README.md runs and answers as the README shows.

The README's ``sh`` blocks are read as they are: each ``curl`` example runs with the real ``curl`` against a
server (``uvicorn app.main:app`` on a free loopback port standing in for ``localhost:8000``), each ``tokenplay``
example with the installed console script, in one directory holding the files the examples name. ``RUN_ID`` is
the id of the latest training the examples started; ``SESSION_CODE`` and ``TEACHER_TOKEN`` are those of the latest
class session they shared.

What an example shows is checked:

- ``# {...}`` on the lines after a command, or after it on its own line (``# 201 {...}``), is its answer: the
  HTTP status when given (else 200), and the JSON, where ``...`` stands for what is left out (more members of an
  object, more items of a list, any text inside a string, any value: ``{...as /api/tokenize...}``);
- ``# the same JSON as POST /api/tokenize`` (or ``/api/explain``) after a CLI example: equal to the server's
  answer for the same input;
- ``# prints TEXT``: the command's output;
- an example without an answer must succeed (a 2xx status, exit code 0), and a training must end ``done``.

Blocks that are not examples of the app (``make run``, ``make test``, ``docker``) are listed in ``NOT_RUN``, so a
new block is either run here or added there on purpose.
"""

from __future__ import annotations

import json
import os
import re
import queue
import shlex
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import sentencepiece as spm
from helpers.serving import UvicornProcess, free_port, stop_group


ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
#: README blocks that are about the project, not examples of the app: not run here.
NOT_RUN = {"make run", "make test", "docker build -t tokenplay . && docker run -p 8000:8000 tokenplay"}


# -- reading the README ----------------------------------------------------------------------------------------------


@dataclass
class Example:
    line: int  # 1-based line of README.md where the command starts
    command: str
    comment: str = ""  # the comment after the command on its line
    answer: str = ""  # the answer shown in comments (a status and JSON)

    def __str__(self) -> str:
        return f"README.md:{self.line}: {self.command[:100]}"


@dataclass
class Block:
    line: int
    examples: list[Example] = field(default_factory=list)


ANSWER_START = re.compile(r"^(\d{3} )?[{\[]")


def split_comment(line: str) -> tuple[str, str]:
    """``command  # comment`` -> (command, comment); a ``#`` inside quotes is part of the command."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def blocks(text: str) -> list[Block]:
    """The ``sh`` blocks of the README, each with its examples."""
    out: list[Block] = []
    block: Block | None = None
    pending = ""  # a command continued with a backslash
    start = 0
    answering = False
    for n, raw in enumerate(text.splitlines(), 1):
        if block is None:
            if raw.strip() == "```sh":
                block = Block(n)
            continue
        if raw.strip() == "```":
            out.append(block)
            block = None
            continue
        stripped = raw.strip()
        if not stripped:
            answering = False
            continue
        if stripped.startswith("#") and not pending:
            note = stripped[1:].strip()
            if block.examples and (answering or ANSWER_START.match(note)):
                example = block.examples[-1]
                example.answer = f"{example.answer} {note}".strip()
                answering = True
            continue
        answering = False
        if not pending:
            start = n
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1].strip() + " "
            continue
        command, comment = split_comment(pending + stripped)
        pending = ""
        example = Example(start, command, comment)
        if ANSWER_START.match(comment):
            example.answer, example.comment = comment, ""
        block.examples.append(example)
    return out


# -- the answers' notation --------------------------------------------------------------------------------------------

ELLIPSIS = object()  # in a list: any number of items here; in an object: more members


@dataclass
class Obj:
    members: dict
    open: bool


@dataclass
class Glob:
    parts: list[str]


class AnyValue:
    pass


class Notation:
    """A JSON answer as the README writes it, with ``...`` for what is left out."""

    NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null")

    def __init__(self, text: str):
        self.s, self.i = text, 0
        self.value = self.parse()
        self.ws()
        assert self.i == len(self.s), f"trailing text in the README's answer: {self.s[self.i:]!r}"

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def peek(self, token: str) -> bool:
        self.ws()
        return self.s.startswith(token, self.i)

    def take(self, token: str) -> None:
        assert self.peek(token), f"expected {token!r} at {self.s[self.i:self.i + 40]!r}"
        self.i += len(token)

    def parse(self):
        self.ws()
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"':
            return self.string()
        m = self.NUMBER.match(self.s, self.i)
        assert m, f"not JSON at {self.s[self.i:self.i + 40]!r}"
        self.i = m.end()
        return json.loads(m.group())

    def obj(self):
        self.take("{")
        if self.peek("..."):  # {...} or {...words...}: any value; {..., "key": ...}: more members
            self.take("...")
            if not (self.peek(",") or self.peek("}")):
                self.i = self.s.index("...}", self.i) + 4
                return AnyValue()
            self.i -= 3
        members, is_open = {}, False
        while not self.peek("}"):
            if self.peek("..."):
                self.take("...")
                is_open = True
            else:
                key = json.loads(self.raw_string())
                self.take(":")
                members[key] = self.parse()
            if not self.peek("}"):
                self.take(",")
        self.take("}")
        return Obj(members, is_open)

    def arr(self):
        self.take("[")
        items = []
        while not self.peek("]"):
            if self.peek("..."):
                self.take("...")
                items.append(ELLIPSIS)
            else:
                items.append(self.parse())
            if not self.peek("]"):
                self.take(",")
        self.take("]")
        return items

    def raw_string(self) -> str:
        self.ws()
        m = re.compile(r'"(?:[^"\\]|\\.)*"').match(self.s, self.i)
        assert m, f"expected a string at {self.s[self.i:self.i + 40]!r}"
        self.i = m.end()
        return m.group()

    def string(self):
        value = json.loads(self.raw_string())
        return Glob(value.split("...")) if "..." in value else value


def mismatch(pattern, value, path: str = "$") -> str | None:
    """Where ``value`` differs from the README's ``pattern``, or ``None``."""
    if isinstance(pattern, AnyValue):
        return None
    if isinstance(pattern, Obj):
        if not isinstance(value, dict):
            return f"{path}: expected an object, got {value!r:.80}"
        for key, want in pattern.members.items():
            if key not in value:
                return f"{path}: no member {key!r}"
            found = mismatch(want, value[key], f"{path}.{key}")
            if found:
                return found
        extra = set(value) - set(pattern.members)
        return None if pattern.open or not extra else f"{path}: members the README does not show: {sorted(extra)}"
    if isinstance(pattern, list):
        if not isinstance(value, list):
            return f"{path}: expected a list, got {value!r:.80}"
        return None if seq_matches(pattern, value, path) else f"{path}: {value!r:.200} is not {pattern!r:.200}"
    if isinstance(pattern, Glob):
        ok = isinstance(value, str) and glob_matches(pattern.parts, value)
        return None if ok else f"{path}: {value!r:.300} is not {'...'.join(pattern.parts)!r}"
    same_kind = isinstance(value, bool) == isinstance(pattern, bool)
    return None if same_kind and value == pattern else f"{path}: {value!r:.120} where the README shows {pattern!r}"


def glob_matches(parts: list[str], value: str) -> bool:
    """``value`` is ``parts`` joined by any text."""
    first, last = parts[0], parts[-1]
    if not value.startswith(first):
        return False
    pos = len(first)
    for part in parts[1:-1]:
        found = value.find(part, pos)
        if found < 0:
            return False
        pos = found + len(part)
    return len(value) - len(last) >= pos and value.endswith(last)


def seq_matches(items: list, values: list, path: str) -> bool:
    if not items:
        return not values
    if items[0] is ELLIPSIS:
        return any(seq_matches(items[1:], values[k:], path) for k in range(len(values) + 1))
    return bool(values) and mismatch(items[0], values[0], path) is None and seq_matches(items[1:], values[1:], path)


def check_answer(example: Example, status: int, body: str) -> None:
    m = re.match(r"(\d{3}) (.*)", example.answer)
    want_status, shown = (int(m.group(1)), m.group(2)) if m else (200, example.answer)
    assert status == want_status, f"{example}\nanswered {status}: {body[:300]}"
    found = mismatch(Notation(shown).value, json.loads(body))
    assert found is None, f"{example}\n{found}"


# -- the notation itself ----------------------------------------------------------------------------------------------


def test_the_answer_notation_matches_what_it_shows_and_nothing_else():
    shown = Notation('{"a":1,...,"b":[1,2,...],"c":{...as above...},"d":"x...z","e":false}').value
    assert mismatch(shown, {"a": 1, "b": [1, 2, 3], "c": {"q": 1}, "d": "xyz", "e": False, "f": None}) is None
    assert mismatch(shown, {"a": 1, "b": [1, 2], "c": {}, "d": "xz", "e": False}) is None
    assert "$.a" in mismatch(shown, {"a": 2, "b": [1, 2], "c": {}, "d": "xz", "e": False})
    assert "$.b" in mismatch(shown, {"a": 1, "b": [2, 1], "c": {}, "d": "xz", "e": False})
    assert "$.d" in mismatch(shown, {"a": 1, "b": [1, 2], "c": {}, "d": "yz", "e": False})
    assert "$.e" in mismatch(shown, {"a": 1, "b": [1, 2], "c": {}, "d": "xz", "e": 0})
    closed = Notation('{"a":[1,...,4]}').value
    assert mismatch(closed, {"a": [1, 2, 3, 4]}) is None and mismatch(closed, {"a": [1, 4]}) is None
    assert "does not show" in mismatch(closed, {"a": [1, 4], "b": 1})
    assert mismatch(closed, {"a": [1, 2]}) is not None


def is_cli(command: str) -> bool:
    return bool(re.match(r"(tokenplay |echo .*\| tokenplay |< \S+ tokenplay )", command))


def test_every_readme_block_is_run_or_listed_as_not_run():
    examples = [e for b in blocks(README.read_text()) for e in b.examples]
    runnable = [e.command for e in examples if e.command.startswith("curl ") or is_cli(e.command)]
    assert {e.command for e in examples} - set(runnable) == NOT_RUN
    assert len(runnable) >= 25 and sum(bool(e.answer) for e in examples) >= 8  # the API, chat and CLI examples


# -- running them ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """The directory the examples run in: a copy of the repository's ``examples/``, where the files they name are
    (the README's examples name them as ``examples/...``, run from the repository's root)."""
    d = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "examples", d / "examples")
    return d


def test_the_examples_files_are_the_ones_the_readme_names():
    named = set(re.findall(r"examples/([\w.-]+\.\w+)", README.read_text()))
    assert named == {"corpus.txt", "my-tokenizer.json", "my-config.json", "other.model", "README.md"}
    assert all((ROOT / "examples" / name).is_file() for name in named)


def server_env(tmp: Path) -> dict[str, str]:
    return {
        "TOKENPLAY_LAB_RUNS_DIR": str(tmp / "runs"),
        "TOKENPLAY_UPLOADS_DIR": str(tmp / "uploads"),
        "TOKENPLAY_LAB_POOL": "thread",
        # a small training answers when done (200, or its 422) on any machine, as the README shows
        "TOKENPLAY_LAB_QUICK_WAIT_SECONDS": "60",
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = UvicornProcess(server_env(tmp_path_factory.mktemp("server")), timeout=60)
    try:
        yield proc.url
    finally:
        proc.stop()


def wait_for_run(url: str, run_id: str, timeout: float = 120) -> dict:
    """The run once it is no longer queued or running (``timeout``: a deadline against hanging)."""
    deadline = time.monotonic() + timeout
    while True:
        out = httpx.get(f"{url}/api/train/{run_id}", timeout=30).json()
        if out["status"] not in ("queued", "running"):
            return out
        assert time.monotonic() < deadline, out
        time.sleep(0.05)


def api_examples() -> list[Example]:
    return [e for b in blocks(README.read_text()) for e in b.examples if e.command.startswith("curl ")]


def test_readme_api_examples_answer_as_shown(server, workdir):
    host = server.removeprefix("http://")
    run_id, run, session = None, None, None
    examples = api_examples()
    for example in examples:
        command = example.command.replace("localhost:8000", host)
        if "RUN_ID" in command:
            assert run_id, f"{example}: no training before it"
            command = command.replace("RUN_ID", run_id)
        if "SESSION_CODE" in command or "TEACHER_TOKEN" in command:
            assert session, f"{example}: no class session shared before it"
            command = command.replace("SESSION_CODE", session["code"]).replace("TEACHER_TOKEN", session["teacher_token"])
        command = "curl -w '\\n%{http_code} %{content_type}' " + command.removeprefix("curl ")
        done = subprocess.run(["bash", "-c", command], cwd=workdir, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{example}\n{done.stderr}"
        body, _, trailer = done.stdout.rpartition("\n")
        status_text, _, content_type = trailer.partition(" ")
        status = int(status_text)
        if example.answer:
            check_answer(example, status, body)
        else:
            assert 200 <= status < 300, f"{example}\nanswered {status}: {body[:300]}"
        # A JSON answer must parse; a text one (a language's counted text) must not be empty.
        if content_type.startswith("application/json"):
            out = json.loads(body)
        else:
            out = None
            assert " -o " in command or status == 204 or body.strip(), f"{example}\nanswered {content_type} with nothing"
        if "/api/train -H" in command and status in (200, 202):  # a new run: the next RUN_ID
            run_id = out["id"]
            run = wait_for_run(server, run_id)
            assert run["status"] == "done", example
        if re.search(r"/api/train/\w+/session$", command) and status == 201:  # the next SESSION_CODE
            session = out
        if "/api/train/side-by-side -H" in command:
            for side, started in out["runs"].items():
                assert wait_for_run(server, started["id"])["status"] == "done", (example, side)
        if " -o " in command:
            written = workdir / shlex.split(command)[shlex.split(command).index("-o") + 1]
            assert written.stat().st_size > 0, example
            if written.suffix == ".model":  # the unigram run's export loads in sentencepiece, at the run's size
                lab_model = spm.SentencePieceProcessor(model_file=str(written))
                assert lab_model.get_piece_size() == run["vocab_size"], example
    assert run_id and any("/api/chat" in e.command for e in examples)


# -- the CLI ---------------------------------------------------------------------------------------------------------


def cli_examples() -> list[Example]:
    return [e for b in blocks(README.read_text()) for e in b.examples if is_cli(e.command)]


def cli_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    return env | server_env(tmp) | {"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"}


def api_body(command: str) -> tuple[str, dict]:
    """The API call a ``tokenplay encode``/``explain`` example says it equals: its path and JSON body."""
    args = shlex.split(command)
    kind, rest = args[1], args[2:]
    body: dict = {}
    text = []
    i = 0
    while i < len(rest):
        if rest[i] in ("-t", "--tokenizer"):
            body["tokenizer"] = rest[i + 1]
            i += 2
        elif rest[i] == "--index":
            body["index"] = int(rest[i + 1])
            i += 2
        elif rest[i] == "--allow-special":
            body["allow_special"] = True
            i += 1
        else:
            text.append(rest[i])
            i += 1
    body["text"] = " ".join(text)
    return {"encode": "/api/tokenize", "explain": "/api/explain"}[kind], body


#: How long a ``tokenplay serve`` example may take to say it has started: a deadline against hanging, not a speed
#: requirement (loading every tokenizer on a busy machine has taken minutes).
SERVE_BOUND = 900


def wait_for_line(proc: subprocess.Popen, lines: queue.Queue, wanted: str, example: Example, seen: list[str]) -> str:
    """The server's first output line holding ``wanted`` (the event), or a failure naming what it printed."""
    deadline = time.monotonic() + SERVE_BOUND
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"{example}: no {wanted!r} in {SERVE_BOUND} s:\n" + "\n".join(seen[-40:])) from None
        if line is None:
            raise AssertionError(f"{example}: the server ended (status {proc.wait()}):\n" + "\n".join(seen[-40:]))
        seen.append(line)
        if wanted in line:
            return line


def serve(example: Example, workdir: Path, env: dict[str, str]) -> None:
    """Start a ``tokenplay serve`` example on a free port (it names 8000, or no port), wait until it says its
    application has started (a line of its log), check it answers, stop it."""
    port = free_port()
    command = example.command.replace("--port 8000", f"--port {port}")
    if f"--port {port}" not in command:
        command += f" --port {port}"
    proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=workdir, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()

    def read() -> None:  # until the end, so that the server never blocks on a full pipe
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    try:
        if "--class" in command:  # the students' join link, with this machine's address and the port
            link = wait_for_line(proc, lines, "/follow", example, seen).split()[-1]
            assert link.endswith(f":{port}/follow") and "127.0.0.1" not in link, (example, link)
        wait_for_line(proc, lines, "Application startup complete", example, seen)
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=60).status_code == 200, example
        names = [t["name"] for t in httpx.get(f"http://127.0.0.1:{port}/api/tokenizers", timeout=30).json()["tokenizers"]]
        for path in re.findall(r"--tokenizer (\S+)", command):  # each file can be picked, named after it
            name = Path(path).stem
            assert name in names, (example, name, names)
            r = httpx.post(f"http://127.0.0.1:{port}/api/tokenize", json={"text": "Hello", "tokenizer": name}, timeout=30)
            assert r.status_code == 200, (example, r.text)
    finally:
        stop_group(proc)


def test_readme_cli_examples_answer_as_shown(server, workdir, tmp_path):
    env = cli_env(tmp_path)
    examples = cli_examples()
    for example in examples:
        if example.command.startswith("tokenplay serve"):
            serve(example, workdir, env)
            continue
        done = subprocess.run(
            ["bash", "-c", example.command], cwd=workdir, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"{example}\n{done.stderr[-1000:]}"
        same = re.search(r"the same JSON as POST (/api/\w+)", example.comment)
        if same:
            path, body = api_body(example.command)
            assert path == same.group(1), example
            want = httpx.post(server + path, json=body, timeout=60).json()
            assert json.loads(done.stdout) == want, example
        if example.comment.startswith("prints "):
            assert done.stdout.strip() == example.comment.removeprefix("prints "), f"{example}\n{done.stdout}"
        if example.answer:
            check_answer(example, 200, done.stdout)
    assert sum(e.command.startswith("tokenplay serve") for e in examples) == 3
    assert (workdir / "my-bpe.json").is_file() and (workdir / "trace.json").is_file()
