"""A full disk (issue 38): every directory store (runs, uploaded tokenizers, class sessions) answers 507 with a
message in words, leaves no ``.tmp`` file and no half-written line behind, and an action that answered an error
did not happen: a training not queued, a tokenizer not kept, a teacher's step, a quiz change or a vote not applied.

The disk is :class:`FullDisk`: ``os`` as the stores' file layer (:mod:`app.lab.files`) sees it, with room for a
given number of bytes more; a write past it writes what fits, then fails with ENOSPC, as a real full disk does.
(``make chaos`` fills a real tmpfs.)"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers.class_helpers import ENGLISH
from helpers.lab_helpers import wait_done

from app.engines.errors import StorageFull
from app.lab import files
from app.lab.stores import DirectoryStore
from app.settings import Settings
from app.web.app import create_app

ROOT = Path(__file__).resolve().parents[2]
HX = {"HX-Request": "true"}


class FullDisk:
    """``os`` with room for ``room`` more bytes: a write past it writes what fits, then fails with ENOSPC."""

    def __init__(self, room: int = 0):
        self.room = room

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = min(len(data), self.room)
        self.room -= n
        return os.write(fd, bytes(data[:n]))


@pytest.fixture()
def disk(monkeypatch):
    """The disk as the stores see it; ``disk.fill(room)`` makes it full (``room`` bytes left)."""

    class Disk:
        def fill(self, room: int = 0) -> FullDisk:
            full = FullDisk(room)
            monkeypatch.setattr(files, "os", full)
            return full

        def free(self) -> None:
            monkeypatch.setattr(files, "os", os)

    return Disk()


def leftovers(*folders: Path) -> list[str]:
    """Temporary files anywhere under ``folders``."""
    return sorted(str(p) for folder in folders for p in folder.rglob("*") if p.name.endswith(".tmp"))


# -- the file layer -----------------------------------------------------------------------------------------------
def test_a_whole_write_that_fails_leaves_the_old_content_and_no_temporary_file(tmp_path, disk):
    path = tmp_path / "run.json"
    files.write_whole(path, b"old", "the lab run")
    disk.fill(room=5)  # part of the new content fits
    with pytest.raises(StorageFull, match="the server's storage is full: the lab run was not saved"):
        files.write_whole(path, b"new content, longer than the room", "the lab run")
    assert path.read_bytes() == b"old" and leftovers(tmp_path) == []


def test_a_line_that_does_not_fit_is_cut_back_whole(tmp_path, disk):
    log = tmp_path / "events.log"
    files.append_line(log, b'{"seq": 1}', "the teacher's action")
    disk.fill(room=4)
    with pytest.raises(StorageFull, match="the teacher's action was not saved"):
        files.append_line(log, b'{"seq": 2, "step": 7}', "the teacher's action")
    assert log.read_bytes() == b'{"seq": 1}\n'  # never half a line
    disk.free()
    files.append_line(log, b'{"seq": 2}', "the teacher's action")
    assert log.read_bytes().splitlines() == [b'{"seq": 1}', b'{"seq": 2}']


def test_other_os_errors_are_not_called_a_full_disk(tmp_path):
    with pytest.raises(FileNotFoundError):
        files.write_whole(tmp_path / "missing" / "x.json", b"x", "the lab run")


def test_a_run_store_that_cannot_write_keeps_nothing(tmp_path, disk):
    from helpers.class_helpers import trained_run

    store = DirectoryStore(tmp_path)
    run = trained_run()
    disk.fill()
    with pytest.raises(StorageFull):
        store.admit(run, capacity=4)
    assert store.get(run.id) is None and leftovers(tmp_path) == []  # neither stored nor kept in memory


# -- over HTTP ----------------------------------------------------------------------------------------------------
@pytest.fixture()
def app(tmp_path):
    return create_app(Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread"))


@pytest.fixture()
def client(app):
    with TestClient(app) as c:
        yield c


def dirs(app) -> tuple[Path, Path]:
    settings = app.state.settings
    return Path(settings.lab_runs_dir), Path(settings.uploads_dir)


def test_a_training_on_a_full_disk_is_a_507_and_is_not_queued(app, client, disk):
    disk.fill()
    r = client.post("/api/train", json={"corpus": ENGLISH, "merges": 5})
    assert r.status_code == 507, r.text
    assert r.json()["detail"].startswith("the server's storage is full: the lab run was not saved, and nothing changed")
    assert app.state.lab.pool.active() == 0 and leftovers(*dirs(app)) == []
    r = client.post("/lab/train", data={"corpus": ENGLISH, "size": "5"}, headers=HX)  # the lab's own form
    assert r.status_code == 507 and "storage is full" in r.text
    disk.free()
    r = client.post("/api/train", json={"corpus": ENGLISH, "merges": 5})
    assert r.status_code in (200, 202) and wait_done(client, r.json()["id"])["status"] == "done"


def test_an_upload_on_a_full_disk_is_a_507_and_is_not_kept(app, client, disk):
    tokenizer = (ROOT / "tokenizers" / "custom-bpe" / "model.json").read_bytes()
    disk.fill()
    r = client.post("/api/tokenizers", files={"file": ("model.json", tokenizer)}, data={"name": "mine"})
    assert r.status_code == 507 and "the tokenizer file was not saved" in r.json()["detail"], r.text
    assert "set-cookie" not in r.headers and leftovers(*dirs(app)) == []
    assert client.post("/api/tokenize", json={"text": "a", "tokenizer": "mine"}).status_code == 404
    r = client.post("/tokenizers", files={"file": ("model.json", tokenizer)}, headers={"Accept": "text/html"})
    assert r.status_code == 507 and "<!doctype html>" in r.text.lower() and "storage is full" in r.text


@pytest.fixture()
def quiz(app, client):
    """A session on a finished run, at step 1 in quiz mode, with one student who joined: (code, teacher headers,
    the student's browser, the run)."""
    r = client.post("/api/train", json={"corpus": ENGLISH * 3, "merges": 8})
    run = client.get(f"/api/train/{wait_done(client, r.json()['id'])['id']}").json()
    body = client.post(f"/api/train/{run['id']}/session").json()
    code, teacher = body["code"], {"Authorization": f"Bearer {body['teacher_token']}"}
    assert client.post(f"/api/sessions/{code}/step", json={"step": 1}, headers=teacher).status_code == 200
    assert client.post(f"/api/sessions/{code}/quiz", json={"on": True}, headers=teacher).status_code == 200
    student = TestClient(app)
    assert student.get(f"/follow/{code}").status_code == 200
    yield code, teacher, student, run
    student.close()


def test_a_teachers_step_and_quiz_change_on_a_full_disk_did_not_happen(app, client, disk, quiz):
    code, teacher, _, run = quiz
    before = client.get(f"/api/sessions/{code}").json()
    disk.fill()
    r = client.post(f"/api/sessions/{code}/step", json={"step": 5}, headers=teacher)
    assert r.status_code == 507 and "the teacher's action was not saved" in r.json()["detail"], r.text
    r = client.post(f"/api/sessions/{code}/quiz", json={"on": False}, headers=teacher)
    assert r.status_code == 507
    r = client.delete(f"/api/sessions/{code}", headers=teacher)
    assert r.status_code == 507
    disk.free()
    after = client.get(f"/api/sessions/{code}").json()
    assert (after["step"], after["quiz"], after["ended"], after["seq"]) == (1, True, False, before["seq"])
    assert leftovers(*dirs(app)) == []
    assert client.post(f"/api/sessions/{code}/step", json={"step": 5}, headers=teacher).json()["step"] == 5


def test_a_teachers_step_from_the_run_page_on_a_full_disk_did_not_happen(app, client, disk, quiz):
    code, teacher, _, run = quiz
    teacher_browser = TestClient(app)
    share = teacher_browser.post(f"/lab/runs/{run['id']}/share", data={"step": "1"}, headers=HX)
    token = share.text.split('"Authorization": "Bearer ')[1].split('"')[0]
    new_code = share.text.split('data-code="')[1].split('"')[0]
    disk.fill()
    r = teacher_browser.get(f"/lab/runs/{run['id']}?step=4", headers=HX | {"Authorization": f"Bearer {token}"})
    assert r.status_code == 507 and "storage is full" in r.text
    disk.free()
    assert client.get(f"/api/sessions/{new_code}").json()["step"] == 1
    teacher_browser.close()


def test_a_vote_on_a_full_disk_is_not_counted(app, client, disk, quiz):
    code, _, student, run = quiz
    pair = run["steps"][1]["pair_text"]
    disk.fill()
    r = student.post(f"/api/sessions/{code}/votes", json={"pair": pair, "step": 1})
    assert r.status_code == 507, r.text
    disk.free()
    state = client.get(f"/api/sessions/{code}").json()
    assert state["voters"] == 0 and leftovers(*dirs(app)) == []
    assert student.post(f"/api/sessions/{code}/votes", json={"pair": pair, "step": 1}).status_code == 201
    assert client.get(f"/api/sessions/{code}").json()["voters"] == 1


def test_a_session_started_on_a_full_disk_does_not_exist(app, client, disk, quiz):
    _, _, _, run = quiz
    disk.fill()
    r = client.post(f"/api/train/{run['id']}/session")
    assert r.status_code == 507, r.text
    sessions = Path(app.state.settings.lab_runs_dir) / "sessions"
    assert sorted(p.name for p in sessions.glob("*.lock")) == sorted(p.name.replace(".json", ".lock")
                                                                       for p in sessions.glob("*.json"))
    assert leftovers(*dirs(app)) == []
