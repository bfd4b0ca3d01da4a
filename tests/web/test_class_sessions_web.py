"""Class sessions over HTTP (issue 27): the JSON API's contract, the teacher token, quiz votes and the reveal,
the limit on wrong codes, expiry, the students' pages and the teacher's share panel (TestClient), and the event
stream on a real server (uvicorn in a thread): the current step on connect, then every step in order.

The app's clock is a :class:`class_helpers.Clock` the tests move (expiry, the window of failed joins).
"""

from __future__ import annotations

import re

import httpx
import pytest
from helpers.class_helpers import ENGLISH, Clock, EventStream, class_app, serving
from fastapi.testclient import TestClient
from helpers.lab_helpers import wait_done

from app.classroom.sessions import ALPHABET
from app.settings import Settings
from app.web.app import create_app

TRAIN = {"corpus": ENGLISH * 3, "algorithm": "byte", "pattern": "gpt2", "merges": 12}


@pytest.fixture(scope="module")
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def app(tmp_path_factory, clock):
    return class_app(tmp_path_factory.mktemp("class"), clock, session_join_failures=4, session_join_window_seconds=600,
                     session_ttl_seconds=3600)


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="module")
def run(client) -> dict:
    r = client.post("/api/train", json=TRAIN)
    assert r.status_code in (200, 202), r.text
    out = wait_done(client, r.json()["id"])
    return client.get(f"/api/train/{out['id']}").json()


def start(client, run) -> tuple[str, dict]:
    r = client.post(f"/api/train/{run['id']}/session")
    assert r.status_code == 201, r.text
    body = r.json()
    return body["code"], {"Authorization": f"Bearer {body['teacher_token']}"}


def student(app) -> TestClient:
    """Another browser: its own cookies (its own tp_follower)."""
    return TestClient(app)


# -- the API ----------------------------------------------------------------------------------------------------
def test_sharing_a_run_answers_the_contract(client, run):
    r = client.post(f"/api/train/{run['id']}/session")
    assert r.status_code == 201
    body = r.json()
    code = body["code"]
    assert len(code) == 6 and set(code) <= set(ALPHABET)
    assert body["follow_url"] == f"/follow/{code}"
    assert len(body["teacher_token"]) >= 32
    assert body["join_url"].endswith(f"/follow/{code}") and body["steps"] == 12 and body["step"] == 0
    again = client.post(f"/api/train/{run['id']}/session").json()
    assert again["code"] != code and again["teacher_token"] != body["teacher_token"]
    state = client.get(f"/api/sessions/{code}").json()
    assert {"step": 0, "followers": 0, "votes": []}.items() <= state.items()
    assert client.post("/api/train/0123456789/session").status_code == 404


def test_only_the_teacher_moves_the_class(client, run):
    code, teacher = start(client, run)
    r = client.post(f"/api/sessions/{code}/step", json={"step": 3})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "teacher token" in r.json()["detail"]
    _, other_teacher = start(client, run)
    assert client.post(f"/api/sessions/{code}/step", json={"step": 3}, headers=other_teacher).status_code == 403
    assert client.post(f"/api/sessions/{code}/step", json={"step": 3}, headers={"Authorization": "Bearer "}).status_code == 401
    r = client.post(f"/api/sessions/{code}/step", json={"step": 3}, headers=teacher)
    assert r.status_code == 200 and r.json()["step"] == 3
    assert client.get(f"/api/sessions/{code}").json()["step"] == 3
    for bad in ({"step": 13}, {"step": -1}, {"step": "three"}, {}):
        r = client.post(f"/api/sessions/{code}/step", json=bad, headers=teacher)
        assert r.status_code == 422, (bad, r.text)
        assert "Traceback" not in r.text
    assert client.get(f"/api/sessions/{code}").json()["step"] == 3
    assert client.post(f"/api/sessions/{code}/quiz", json={"on": True}).status_code == 401
    assert client.delete(f"/api/sessions/{code}", headers=other_teacher).status_code == 403


def test_predict_then_reveal(app, client, run):
    code, teacher = start(client, run)
    merge = [s["pair_text"] for s in run["steps"]]
    client.post(f"/api/sessions/{code}/step", json={"step": 1}, headers=teacher)
    alice, bob, carol = student(app), student(app), student(app)
    assert alice.get(f"/follow/{code}").status_code == 200  # joining gives the id its votes count by
    r = alice.post(f"/api/sessions/{code}/votes", json={"pair": merge[1]})
    assert r.status_code == 409 and "quiz mode is off" in r.json()["detail"]
    client.post(f"/api/sessions/{code}/quiz", json={"on": True}, headers=teacher)
    r = alice.post(f"/api/sessions/{code}/votes", json={"pair": merge[1], "step": 1})
    assert r.status_code == 201 and r.json() == {"step": 1, "pair": merge[1]}
    assert alice.cookies.get("tp_follower")
    again = alice.post(f"/api/sessions/{code}/votes", json={"pair": merge[1], "step": 1})
    assert again.status_code == 409 and "already voted" in again.json()["detail"]
    wrong = next(c for c in choices_on_page(bob, code) if c != merge[1])
    assert bob.post(f"/api/sessions/{code}/votes", json={"pair": wrong}).status_code == 201
    assert carol.post(f"/api/sessions/{code}/votes", json={"pair": ["no", "such"]}).status_code == 422
    assert carol.post(f"/api/sessions/{code}/votes", json={"pair": ["a"]}).status_code == 422
    state = client.get(f"/api/sessions/{code}").json()
    assert state["votes"] == sorted([{"pair": merge[1], "count": 1}, {"pair": wrong, "count": 1}], key=lambda v: v["pair"])
    assert state["voters"] == 2 and state["reveal"] is None
    client.post(f"/api/sessions/{code}/step", json={"step": 2}, headers=teacher)  # reveal
    r = carol.post(f"/api/sessions/{code}/votes", json={"pair": merge[1], "step": 1})
    assert r.status_code == 409 and "at step 2 now" in r.json()["detail"]
    state = client.get(f"/api/sessions/{code}").json()
    assert state["votes"] == []
    assert state["reveal"] == {
        "step": 2, "pair": merge[1], "right": 1, "voters": 2,
        "votes": sorted([{"pair": merge[1], "count": 1}, {"pair": wrong, "count": 1}], key=lambda v: v["pair"]),
    }
    for c in (alice, bob, carol):
        c.close()


def choices_on_page(browser: TestClient, code: str) -> list[list[str]]:
    page = browser.get(f"/follow/{code}").text
    return [[a, b] for a, b in re.findall(r'name="left" value="([^"]*)"><input type="hidden" name="right" value="([^"]*)"', page)]


def test_wrong_codes_are_limited_per_address(app, client, run, clock):
    code, teacher = start(client, run)
    prober = student(app)
    for wrong in ("ZZZZZZ", "AAAAAA", "not-a-code", "BBBBBB"):
        r = prober.get(f"/api/sessions/{wrong}")
        assert r.status_code == 404 and "no class session" in r.json()["detail"]
    r = prober.get(f"/api/sessions/{code}")
    assert r.status_code == 429 and r.headers["retry-after"] == "600"
    assert prober.get(f"/follow/{code}").status_code == 429
    assert prober.get(f"/api/sessions/{code}/events").status_code == 429
    # the teacher (same address, in this test) still moves the class
    assert prober.post(f"/api/sessions/{code}/step", json={"step": 1}, headers=teacher).status_code == 200
    clock.advance(600)
    assert prober.get(f"/api/sessions/{code}").status_code == 200
    prober.close()


def test_a_session_expires_after_the_teachers_last_action(client, run, clock):
    code, teacher = start(client, run)
    clock.advance(3000)
    client.post(f"/api/sessions/{code}/step", json={"step": 2}, headers=teacher)
    clock.advance(3000)
    assert client.get(f"/api/sessions/{code}").json()["expires_in"] == 600
    clock.advance(601)
    assert client.get(f"/api/sessions/{code}").status_code == 404


def test_a_session_needs_a_finished_run(client):
    assert client.post("/api/train/abcdef1234/session").status_code == 404


# -- the pages --------------------------------------------------------------------------------------------------
def test_the_follow_page_shows_the_class_step(app, client, run):
    code, teacher = start(client, run)
    client.post(f"/api/sessions/{code}/step", json={"step": 2}, headers=teacher)
    phone = student(app)
    r = phone.get(f"/follow/{code.lower()}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/follow/{code}"
    r = phone.get(f"/follow/{code}")
    assert r.status_code == 200
    assert "httponly" in r.headers["set-cookie"].lower() and phone.cookies.get("tp_follower")
    assert f'data-events="/api/sessions/{code}/events"' in r.text
    assert 'data-step="2"' in r.text and "Merge 2 of 12" in r.text
    pair = run["steps"][1]["pair_text"]
    assert f'<span class="chip">{pair[0]}</span> + <span class="chip">{pair[1]}</span>' in r.text.replace("<i class=w-sp> </i>", " ")
    block = phone.get(f"/follow/{code}/class", headers={"HX-Request": "true"})
    assert block.text.lstrip().startswith('<div id="view"') and "<html" not in block.text
    own = phone.get(f"/follow/{code}?step=5", headers={"HX-Request": "true"}).text
    assert 'data-step="5"' in own and "the class is at step <strong data-class-label>2</strong>" in own
    phone.close()


def test_in_quiz_mode_students_choose_and_cannot_peek(app, client, run):
    code, teacher = start(client, run)
    client.post(f"/api/sessions/{code}/quiz", json={"on": True}, headers=teacher)
    client.post(f"/api/sessions/{code}/step", json={"step": 3}, headers=teacher)
    phone = student(app)
    page = phone.get(f"/follow/{code}").text
    assert "Which pair merges next?" in page and "Pair counts" not in page  # the counts would give it away
    assert 'data-step="3"' in phone.get(f"/follow/{code}?step=9").text  # no browsing past the question
    choices = choices_on_page(phone, code)
    right = run["steps"][3]["pair_text"]
    assert right in choices and choices == sorted(choices)
    r = phone.post(f"/follow/{code}/vote", data={"left": right[0], "right": right[1], "step": "3"}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and "You predicted" in r.text and "Which pair" in r.text
    r = phone.post(f"/follow/{code}/vote", data={"left": right[0], "right": right[1], "step": "3"}, headers={"HX-Request": "true"})
    assert r.status_code == 409 and "already voted" in r.text
    client.post(f"/api/sessions/{code}/step", json={"step": 4}, headers=teacher)
    assert "✓ Right!" in phone.get(f"/follow/{code}").text
    other = student(app)
    wrong = next(c for c in choices_on_page(other, code) if c != run["steps"][4]["pair_text"])
    other.post(f"/follow/{code}/vote", data={"left": wrong[0], "right": wrong[1], "step": "4"})
    client.post(f"/api/sessions/{code}/step", json={"step": 5}, headers=teacher)
    assert "✗ Not this time." in other.get(f"/follow/{code}").text
    phone.close()
    other.close()


def test_the_quiz_asks_each_algorithms_own_question(app, client):
    """BPE: the most frequent pair; WordPiece: the best score, count(ab) / (count(a) · count(b)), written out in
    numbers when the merge is revealed (students and teacher); Unigram: no quiz, and the panel says why."""
    def trained(algorithm: str) -> dict:
        r = client.post("/api/train", json=TRAIN | {"algorithm": algorithm, "merges": 8})
        return client.get(f"/api/train/{wait_done(client, r.json()['id'])['id']}").json()

    wordpiece = trained("wordpiece")
    code, teacher = start(client, wordpiece)
    client.post(f"/api/sessions/{code}/quiz", json={"on": True}, headers=teacher)
    phone = student(app)
    page = phone.get(f"/follow/{code}").text
    assert "Which pair has the best score?" in page and "Which pair merges next?" not in page
    assert "WordPiece merges the pair with the best score, count(ab) / (count(a) · count(b))" in page
    first = wordpiece["steps"][0]
    assert first["pair_text"] in choices_on_page(phone, code)
    phone.post(f"/follow/{code}/vote", data={"left": first["pair_text"][0], "right": first["pair_text"][1], "step": "0"})
    client.post(f"/api/sessions/{code}/step", json={"step": 1}, headers=teacher)  # the reveal
    score = f"{first['count']:,} / ({first['left_count']:,} · {first['right_count']:,}) = <strong>{first['score']:.4g}</strong>"
    assert abs(first["score"] - first["count"] / (first["left_count"] * first["right_count"])) < 1e-12
    revealed = phone.get(f"/follow/{code}").text
    assert "✓ Right!" in revealed and "score = count(ab) / (count(a) · count(b)) = " + score in revealed
    teacher_page = TestClient(app)
    panel = teacher_page.post(f"/lab/runs/{wordpiece['id']}/share", data={"step": "0"}, headers={"HX-Request": "true"}).text
    bearer = {"Authorization": "Bearer " + re.search(r'data-token="([^"]+)"', panel).group(1)}
    own = re.search(r'data-code="([A-Z0-9]{6})"', panel).group(1)
    client.post(f"/api/sessions/{own}/quiz", json={"on": True}, headers=bearer)
    voter = student(app)
    voter.get(f"/follow/{own}")  # joins
    assert voter.post(f"/api/sessions/{own}/votes", json={"pair": first["pair_text"], "step": 0}).status_code == 201
    client.post(f"/api/sessions/{own}/step", json={"step": 1}, headers=bearer)
    live = teacher_page.get(f"/lab/runs/{wordpiece['id']}/share/live", headers={"HX-Request": "true"}).text
    assert "of 1 predicted it" in live and score in live

    unigram = trained("unigram")
    r = client.post(f"/lab/runs/{unigram['id']}/share", headers={"HX-Request": "true"})
    assert 'id="share-quiz"' not in r.text
    assert "Quiz mode is off for a Unigram run: it merges no pair" in r.text
    code, teacher = start(client, unigram)
    refused = client.post(f"/api/sessions/{code}/quiz", json={"on": True}, headers=teacher)
    assert refused.status_code == 422 and "quiz mode is off for a Unigram run" in refused.json()["detail"]
    phone.close()
    teacher_page.close()


def test_a_nickname_counts_only_from_a_student_who_joined(app, client, run):
    """As votes: a browser the class never gave an id (no cookie, or one it made up) cannot fill the session's list
    of names (403, in words); after opening the class's page it can."""
    hx = {"HX-Request": "true"}
    panel = TestClient(app).post(f"/lab/runs/{run['id']}/share", data={"step": "0"}, headers=hx).text
    code = re.search(r'data-code="([A-Z0-9]{6})"', panel).group(1)
    stranger = student(app)
    refused = stranger.post(f"/api/sessions/{code}/nickname", json={"nickname": "Mallory"})
    assert refused.status_code == 403 and f"open the class's page (/follow/{code}) first" in refused.json()["detail"]
    assert "a nickname is kept only from a student who follows the class" in refused.json()["detail"]
    stranger.cookies.set("tp_follower", "A" * 22)  # well formed, never given out
    assert stranger.post(f"/api/sessions/{code}/nickname", json={"nickname": "Mallory"}).status_code == 403
    form = stranger.post(f"/follow/{code}/name", data={"nickname": "Mallory"}, headers=hx)
    assert form.status_code == 403 and "has not joined class" in form.text
    assert app.state.classroom.store.names(code) == {}
    stranger.cookies.clear()
    assert stranger.get(f"/follow/{code}").status_code == 200  # joining
    assert stranger.post(f"/api/sessions/{code}/nickname", json={"nickname": "Mallory"}).json() == {"nickname": "Mallory"}
    stranger.close()


def test_nicknames_and_the_scoreboard_over_the_session(app, client, run):
    """Students may give a nickname (optional, 1-24 characters, shown as text); the teacher's screen keeps the
    quiz's scoreboard over the session: merges predicted of those revealed, students without a nickname together."""
    teacher_page = TestClient(app)
    hx = {"HX-Request": "true"}
    panel = teacher_page.post(f"/lab/runs/{run['id']}/share", data={"step": "0"}, headers=hx).text
    code = re.search(r'data-code="([A-Z0-9]{6})"', panel).group(1)
    teacher = {"Authorization": "Bearer " + re.search(r'data-token="([^"]+)"', panel).group(1)}
    alice, bob, carol = student(app), student(app), student(app)
    for who in (alice, bob, carol):  # joining gives the id its votes count by
        assert who.get(f"/follow/{code}").status_code == 200
    assert alice.post(f"/api/sessions/{code}/nickname", json={"nickname": "  Ada   L.  "}).json() == {"nickname": "Ada L."}
    named = bob.post(f"/follow/{code}/name", data={"nickname": "<b>Bob</b>"}, headers=hx)
    assert named.status_code == 200 and "the scoreboard shows you as &lt;b&gt;Bob&lt;/b&gt;" in named.text
    assert 'value="&lt;b&gt;Bob&lt;/b&gt;"' in bob.get(f"/follow/{code}").text  # the page keeps it, as text
    too_long = carol.post(f"/follow/{code}/name", data={"nickname": "x" * 25}, headers=hx)
    assert too_long.status_code == 422 and "at most 24 characters" in too_long.text
    hidden = carol.post(f"/api/sessions/{code}/nickname", json={"nickname": "a\u0000b"})
    assert hidden.status_code == 422 and "control" in hidden.json()["detail"]
    carol.post(f"/api/sessions/{code}/nickname", json={"nickname": "Carol"})
    assert carol.post(f"/api/sessions/{code}/nickname", json={"nickname": ""}).json() == {"nickname": None}  # forgotten
    client.post(f"/api/sessions/{code}/quiz", json={"on": True}, headers=teacher)
    merge = [s["pair_text"] for s in run["steps"]]
    for k, votes in enumerate([[(alice, True), (bob, False), (carol, True)], [(alice, True), (bob, True)]]):
        for who, right in votes:
            pair = merge[k] if right else next(c for c in choices_on_page(who, code) if c != merge[k])
            assert who.post(f"/api/sessions/{code}/votes", json={"pair": pair, "step": k}).status_code == 201
        if k == 0:  # nothing revealed yet: no scoreboard
            assert client.get(f"/api/sessions/{code}").json()["scoreboard"]["revealed"] == 0
        client.post(f"/api/sessions/{code}/step", json={"step": k + 1}, headers=teacher)
    board = client.get(f"/api/sessions/{code}").json()["scoreboard"]
    assert board == {"rows": [{"name": "Ada L.", "right": 2, "answered": 2}, {"name": "<b>Bob</b>", "right": 1, "answered": 2}],
                     "unnamed": {"students": 1, "right": 1, "answered": 1}, "revealed": 2}
    live = teacher_page.get(f"/lab/runs/{run['id']}/share/live", headers=hx).text
    names = re.findall(r'<span class="scoreboard-name">([^<]*)</span> <strong>(\d+)</strong>', live)
    assert names == [("Ada L.", "2"), ("&lt;b&gt;Bob&lt;/b&gt;", "1")] and "<b>Bob" not in live
    assert "1 student without a nickname: 1 right of 1 between them." in live
    for c in (alice, bob, carol, teacher_page):
        c.close()


def test_user_text_in_the_corpus_is_never_live_html(app, client):
    r = client.post("/api/train", json=TRAIN | {"corpus": 'x <script>alert(1)</script> <img src=x onerror=alert(2)> ' * 4})
    run = client.get(f"/api/train/{wait_done(client, r.json()['id'])['id']}").json()
    code, teacher = start(client, run)
    client.post(f"/api/sessions/{code}/quiz", json={"on": True}, headers=teacher)
    page = client.get(f"/follow/{code}").text
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;" in page


def test_the_join_page_takes_a_typed_code(app, client, clock):
    assert 'name="code"' in client.get("/follow").text
    r = client.get("/follow", params={"code": " k7p-x2m "}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/follow/K7PX2M"
    clock.advance(600)  # a fresh window of failed joins for this test's address
    r = client.get("/follow/K7PX2M")  # a wrong code: the join page again, with the message, not a JSON error
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "no class session with code &#39;K7PX2M&#39;" in r.text and 'value="K7PX2M"' in r.text
    for _ in range(4):
        r = client.get("/follow/Q9Q9Q9")
    assert r.status_code == 429 and r.headers["retry-after"] and "too many wrong session codes" in r.text
    assert client.get("/follow/Q9Q9Q9", headers={"HX-Request": "true"}).status_code == 429
    clock.advance(600)


def test_the_teachers_share_panel(app, client, run):
    teacher = TestClient(app)
    hx = {"HX-Request": "true"}
    assert "Share with the class" in teacher.get(f"/lab/runs/{run['id']}/share", headers=hx).text
    r = teacher.post(f"/lab/runs/{run['id']}/share", data={"step": "4"}, headers=hx)
    assert r.status_code == 200
    code = re.search(r'data-code="([A-Z0-9]{6})"', r.text).group(1)
    token = re.search(r'data-token="([^"]+)"', r.text).group(1)
    cookie = r.headers["set-cookie"]
    assert f"path=/lab/runs/{run['id']}" in cookie.lower() and "httponly" in cookie.lower()
    assert f"http://testserver/follow/{code}" in r.text
    assert '<svg viewBox="0 0' in r.text and f"<title>QR code of http://testserver/follow/{code}</title>" in r.text
    assert client.get(f"/api/sessions/{code}").json()["step"] == 4  # started at the page's step
    assert "Quiz mode: off" in r.text
    # a reload finds the panel again (the cookie); the live part counts and tallies
    assert f'data-code="{code}"' in teacher.get(f"/lab/runs/{run['id']}/share", headers=hx).text
    assert "0</strong> students following" in teacher.get(f"/lab/runs/{run['id']}/share/live", headers=hx).text
    # actions need the bearer token, not just the cookie
    assert teacher.post(f"/lab/runs/{run['id']}/share/{code}/quiz", data={"on": "1"}, headers=hx).status_code == 401
    r = teacher.post(f"/lab/runs/{run['id']}/share/{code}/quiz", data={"on": "1"}, headers=hx | {"Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and "Quiz mode: on" in r.text and "Reveal the next merge" in r.text
    phone = student(app)
    right = run["steps"][4]["pair_text"]
    phone.get(f"/follow/{code}")  # joins the class
    assert phone.post(f"/api/sessions/{code}/votes", json={"pair": right}).status_code == 201
    live = teacher.get(f"/lab/runs/{run['id']}/share/live", headers=hx).text
    assert "Predictions for merge 5" in live and '<meter min="0" max="1" value="1">' in live
    client.post(f"/api/sessions/{code}/step", json={"step": 5}, headers={"Authorization": f"Bearer {token}"})
    live = teacher.get(f"/lab/runs/{run['id']}/share/live", headers=hx).text
    assert re.search(r'<strong id="share-right">1</strong> of 1 predicted it', live)
    r = teacher.post(f"/lab/runs/{run['id']}/share/{code}/end", headers=hx | {"Authorization": f"Bearer {token}"})
    assert "Share with the class" in r.text and client.get(f"/api/sessions/{code}").json()["ended"]
    assert "Share with the class" in teacher.get(f"/lab/runs/{run['id']}/share", headers=hx).text
    phone.close()
    teacher.close()


def test_a_teachers_step_moves_the_class_in_its_own_request(app, client, run):
    """The run's page asks for each step with the teacher token (static/share.js adds it); that request moves the
    class, so a step goes from the teacher's request to the followers' streams without the page posting it back.
    Without the token, with another session's, or from a browser without the teacher cookie, the page answers and
    the class stays where it is."""
    teacher = TestClient(app)
    hx = {"HX-Request": "true"}
    r = teacher.post(f"/lab/runs/{run['id']}/share", data={"step": "2"}, headers=hx)
    code = re.search(r'data-code="([A-Z0-9]{6})"', r.text).group(1)
    bearer = {"Authorization": "Bearer " + re.search(r'data-token="([^"]+)"', r.text).group(1)}

    def state() -> dict:
        return client.get(f"/api/sessions/{code}").json()

    page = teacher.get(f"/lab/runs/{run['id']}?step=5", headers=hx | bearer)
    assert page.status_code == 200 and 'data-step="5"' in page.text
    moved = state()
    assert moved["step"] == 5
    teacher.get(f"/lab/runs/{run['id']}?step=5", headers=hx | bearer)  # the same step: nothing new to tell
    assert state()["seq"] == moved["seq"]
    _, other = start(client, run)
    for who, headers in ((teacher, hx), (teacher, hx | other), (client, hx | bearer)):
        r = who.get(f"/lab/runs/{run['id']}?step=7", headers=headers)
        assert r.status_code == 200 and 'data-step="7"' in r.text
    assert state()["step"] == 5
    teacher.get(f"/lab/runs/{run['id']}?step=99", headers=hx | bearer)  # the page shows the last step: so does the class
    assert state()["step"] == 12
    teacher.post(f"/lab/runs/{run['id']}/share/{code}/end", headers=hx | bearer)
    assert teacher.get(f"/lab/runs/{run['id']}?step=3", headers=hx | bearer).status_code == 200
    assert state()["step"] == 12 and state()["ended"]
    teacher.close()


def test_the_join_link_uses_the_public_address(tmp_path):
    settings = Settings(lab_runs_dir=tmp_path / "runs", lab_pool="thread", public_url="http://192.168.1.20:8000/")
    with TestClient(create_app(settings)) as c:
        run_id = wait_done(c, c.post("/api/train", json=TRAIN | {"merges": 2}).json()["id"])["id"]
        body = c.post(f"/api/train/{run_id}/session").json()
        assert body["join_url"] == f"http://192.168.1.20:8000/follow/{body['code']}"
    with pytest.raises(ValueError, match="http"):
        Settings(public_url="192.168.1.20")


# -- the event stream, on a real server -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(app):
    with serving(app) as url:
        yield url


def stream(url: str, code: str, cookie: str | None = None, last_id: int | None = None):
    headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
    client = httpx.Client(base_url=url, timeout=20, cookies={"tp_follower": cookie} if cookie else None)
    return client, client.stream("GET", f"/api/sessions/{code}/events", headers=headers)


def test_the_stream_starts_at_the_current_step_then_brings_every_step_in_order(server, client, run):
    code, teacher = start(client, run)
    client.post(f"/api/sessions/{code}/step", json={"step": 2}, headers=teacher)
    http, request = stream(server, code)
    with http, request as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["cache-control"] == "no-store"
        events = EventStream(r)
        first = events.next()
        assert first["data"] == {"seq": 2, "step": 2, "steps": 12, "quiz": False, "ended": False}
        assert first["id"] == "2" and first["retry"] == "2000"
        for k in (3, 4, 7, 5, 12):
            httpx.post(f"{server}/api/sessions/{code}/step", json={"step": k}, headers=teacher)
        httpx.post(f"{server}/api/sessions/{code}/quiz", json={"on": True}, headers=teacher)
        got = [events.next() for _ in range(6)]
        assert [e["data"]["step"] for e in got] == [3, 4, 7, 5, 12, 12]
        assert [e["id"] for e in got] == ["3", "4", "5", "6", "7", "8"] and got[-1]["data"]["quiz"] is True
        httpx.delete(f"{server}/api/sessions/{code}", headers=teacher)
        assert events.next()["data"]["ended"] is True
        with pytest.raises(EOFError):
            events.next()  # the session ended: so does the stream


def test_a_reconnecting_stream_gets_what_it_missed(server, client, run):
    code, teacher = start(client, run)
    for k in (1, 2, 3):
        client.post(f"/api/sessions/{code}/step", json={"step": k}, headers=teacher)
    http, request = stream(server, code, last_id=2)
    with http, request as r:
        events = EventStream(r)
        assert [events.next()["id"] for _ in range(2)] == ["3", "4"]


def test_followers_are_counted_while_their_stream_is_open(server, client, run):
    code, teacher = start(client, run)
    opened = []
    for cookie in ("browser-a-aaaaaaaaaa", "browser-a-aaaaaaaaaa", "browser-b-bbbbbbbbbb"):
        http, request = stream(server, code, cookie)
        events = EventStream(request.__enter__())
        events.next()  # the heartbeat is written before the first event
        opened.append((http, request, events))  # kept: a reader dropped would close its stream
    assert client.get(f"/api/sessions/{code}").json()["followers"] == 2  # two tabs of one browser count once
    http, request, _ = opened.pop()
    request.__exit__(None, None, None)
    http.close()
    assert wait_for_followers(client, code, 1)
    for http, request, _ in opened:
        request.__exit__(None, None, None)
        http.close()
    assert wait_for_followers(client, code, 0)


def wait_for_followers(client, code: str, n: int) -> bool:
    """The server notices a closed stream when its connection closes; wait for that (bounded, not timed)."""
    import time

    deadline = time.monotonic() + 20
    while client.get(f"/api/sessions/{code}").json()["followers"] != n:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_an_unknown_code_has_no_stream(server):
    r = httpx.get(f"{server}/api/sessions/QQQQQQ/events", timeout=20)
    assert r.status_code == 404 and r.headers["content-type"] == "application/json"


def test_open_streams_hold_no_thread(server, client, run, app):
    """More open streams than the default thread pool has threads (40) and the CPU lane (2): if a stream held a
    thread while it waits, the page and the tokenizer below would never answer."""
    code, teacher = start(client, run)
    with httpx.Client(base_url=server, timeout=20, limits=httpx.Limits(max_connections=100)) as http:
        streams = []
        try:
            for n in range(45):
                request = http.stream("GET", f"/api/sessions/{code}/events", cookies={"tp_follower": f"browser-{n:012d}"})
                events = EventStream(request.__enter__())
                events.next()
                streams.append((request, events))
            assert http.get(f"/api/sessions/{code}").json()["followers"] == 45
            assert http.post("/api/tokenize", json={"text": "still answering"}).status_code == 200
            assert http.get(f"/follow/{code}").status_code == 200  # rendered in the CPU lane
            http.post(f"/api/sessions/{code}/step", json={"step": 1}, headers=teacher)
            assert all(events.next()["data"]["step"] == 1 for _, events in streams)
        finally:
            for request, _ in streams:
                request.__exit__(None, None, None)
