"""One vote per follower (issue 38): the probe's 30 votes from one client without cookies counted as 30 voters. A
vote now counts only from a follower id the class gave out when the student joined (the follow page, or its event
stream), once per step, and one address casts only so many (429 with ``Retry-After``). Time is the classroom's
clock, moved by the test."""

from __future__ import annotations

import httpx
import pytest
from fastapi.testclient import TestClient
from helpers.class_helpers import ENGLISH, Clock, EventStream, class_app, serving
from helpers.lab_helpers import wait_done



@pytest.fixture(scope="module")
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def app(tmp_path_factory, clock):
    return class_app(tmp_path_factory.mktemp("ballot"), clock, session_votes_per_address=5,
                     session_vote_window_seconds=60)


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="module")
def run(client) -> dict:
    r = client.post("/api/train", json={"corpus": ENGLISH * 3, "merges": 12})
    return client.get(f"/api/train/{wait_done(client, r.json()['id'])['id']}").json()


@pytest.fixture()
def quiz(client, run):
    """A new session at step 1 in quiz mode: its code, and the right pair (merge 2)."""
    body = client.post(f"/api/train/{run['id']}/session").json()
    teacher = {"Authorization": f"Bearer {body['teacher_token']}"}
    client.post(f"/api/sessions/{body['code']}/step", json={"step": 1}, headers=teacher)
    client.post(f"/api/sessions/{body['code']}/quiz", json={"on": True}, headers=teacher)
    return body["code"], run["steps"][1]["pair_text"]


def test_thirty_votes_without_cookies_count_as_none(app, client, quiz):
    code, pair = quiz
    for _ in range(30):
        with TestClient(app) as stranger:  # no cookie, never opened the class's page
            r = stranger.post(f"/api/sessions/{code}/votes", json={"pair": pair, "step": 1})
            assert r.status_code == 403, r.text
            assert f"has not joined class {code}" in r.json()["detail"] and "set-cookie" not in r.headers
    assert client.get(f"/api/sessions/{code}").json()["voters"] == 0


def test_a_follower_id_the_class_never_gave_out_does_not_vote(app, client, run, quiz):
    code, pair = quiz
    other_code = client.post(f"/api/train/{run['id']}/session").json()["code"]
    with TestClient(app, cookies={"tp_follower": "made-up-id-0123456789"}) as forger:
        assert forger.post(f"/api/sessions/{code}/votes", json={"pair": pair}).status_code == 403
    with TestClient(app) as student:
        student.get(f"/follow/{other_code}")  # joined another class: not this one
        assert student.post(f"/api/sessions/{code}/votes", json={"pair": pair}).status_code == 403
        r = student.post(f"/follow/{code}/vote", data={"left": pair[0], "right": pair[1], "step": "1"},
                         headers={"HX-Request": "true"})
        assert r.status_code == 403 and "has not joined" in r.text
    assert client.get(f"/api/sessions/{code}").json()["voters"] == 0


def test_a_student_who_opened_the_page_votes_once_per_step(app, client, quiz):
    code, pair = quiz
    with TestClient(app) as student:
        page = student.get(f"/follow/{code}")
        assert page.status_code == 200 and student.cookies.get("tp_follower")
        r = student.post(f"/follow/{code}/vote", data={"left": pair[0], "right": pair[1], "step": "1"},
                         headers={"HX-Request": "true"})
        assert r.status_code == 200, r.text
        again = student.post(f"/api/sessions/{code}/votes", json={"pair": pair, "step": 1})
        assert again.status_code == 409 and "already voted" in again.json()["detail"]
    assert client.get(f"/api/sessions/{code}").json()["voters"] == 1


def test_votes_from_one_address_are_limited(app, client, clock, quiz):
    """Five per minute here (the default is 100: a class behind one router still votes): the sixth joined browser of
    the same address is told when to try again, and is counted once the window has passed."""
    code, pair = quiz
    clock.advance(3600)  # the other tests' votes are out of the window
    students = [TestClient(app) for _ in range(6)]
    try:
        for s in students:
            s.get(f"/follow/{code}")
        for s in students[:5]:
            assert s.post(f"/api/sessions/{code}/votes", json={"pair": pair}).status_code == 201
        r = students[5].post(f"/api/sessions/{code}/votes", json={"pair": pair})
        assert r.status_code == 429 and r.headers["retry-after"] == "60", r.text
        assert "too many votes from this address" in r.json()["detail"]
        assert client.get(f"/api/sessions/{code}").json()["voters"] == 5
        clock.advance(60)
        assert students[5].post(f"/api/sessions/{code}/votes", json={"pair": pair}).status_code == 201
    finally:
        for s in students:
            s.close()


def test_a_program_joins_through_the_event_stream(app, client, quiz):
    code, pair = quiz
    with serving(app) as url, httpx.Client(base_url=url, timeout=20) as program:
        with program.stream("GET", f"/api/sessions/{code}/events") as r:
            assert EventStream(r).next()["data"]["step"] == 1
            follower = r.cookies.get("tp_follower")
        assert follower
        program.cookies.set("tp_follower", follower)
        assert program.post(f"/api/sessions/{code}/votes", json={"pair": pair, "step": 1}).status_code == 201
    assert client.get(f"/api/sessions/{code}").json()["voters"] == 1
