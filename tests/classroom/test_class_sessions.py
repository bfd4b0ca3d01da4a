"""Class sessions without the web (issue 27): join codes, both session stores (a directory and a real Redis),
the rules of :class:`~app.classroom.service.Classroom` (teacher token, steps, quiz votes, failed joins, expiry) and the
per-process hub that wakes followers' streams (inotify, the polling fallback, Redis pub/sub).

Time is a :class:`class_helpers.Clock` the test moves; streams are awaited, never raced against a sleep (the
``asyncio.wait_for`` around them only turns a hang into a failure).
"""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
from helpers.class_helpers import Clock, run_async, trained_run
from helpers.redis_server import running_redis

from app.classroom import hub
from app.classroom.service import Classroom
from app.lab.replay import replay_for
from app.classroom.hub import SessionHub
from app.classroom.stores import DirectorySessionStore, RedisSessionStore, make_session_store, sessions_dir
from app.classroom.sessions import (
    ALPHABET,
    CODE_LENGTH,
    NotAuthenticated,
    NotJoined,
    NotTeacher,
    Session,
    SessionEnded,
    SessionError,
    SessionNotFound,
    TooManyJoins,
    TooManyVotes,
    VoteRefused,
    new_code,
    token_hash,
)
from app.classroom.quiz import quiz_choices
from app.settings import Settings

HANG = 20  # seconds before a stream that never delivers fails the test


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    with running_redis(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["directory", "redis"])
def make_store(request, tmp_path, clock):
    """A factory of stores sharing one place (each call: another process, as far as the stores can tell)."""
    if request.param == "directory":
        return lambda: DirectorySessionStore(tmp_path / "sessions", clock=clock)
    url = request.getfixturevalue("redis_url")
    prefix = f"test:{uuid.uuid4().hex}:"
    return lambda: RedisSessionStore(url, prefix=prefix, clock=clock)


def a_session(clock: Clock, code: str | None = None, ttl: float = 100, steps: int = 12) -> Session:
    return Session(code or new_code(), "0123456789", token_hash("secret"), steps, True, clock(), clock() + ttl)


# -- codes ------------------------------------------------------------------------------------------------------
def test_codes_are_short_unambiguous_and_varied():
    codes = {new_code() for _ in range(2000)}
    assert len(codes) > 1990  # 31**6 = 887 million: repeats in 2,000 draws are rare
    for code in codes:
        assert len(code) == CODE_LENGTH == 6
        assert set(code) <= set(ALPHABET)
    assert not set("01OIL") & set(ALPHABET)
    assert len(ALPHABET) ** CODE_LENGTH > 800_000_000


# -- the stores -------------------------------------------------------------------------------------------------
def test_a_session_is_found_until_it_expires(make_store, clock):
    store, other = make_store(), make_store()
    session = a_session(clock)
    assert store.create(session, {"step": 0, "quiz": False})
    assert not other.create(a_session(clock, session.code), {"step": 0})  # the code is taken
    got = other.get(session.code)
    assert got == session
    assert other.last(session.code) == {"step": 0, "quiz": False, "seq": 1, "at": clock()}
    clock.advance(100)
    assert other.get(session.code) is not None
    clock.advance(1)
    assert other.get(session.code) is None
    assert other.get("NOPE22") is None and other.get("../etc") is None


def test_events_are_numbered_in_order_and_keep_the_state(make_store, clock):
    store, other = make_store(), make_store()
    session = a_session(clock)
    store.create(session, {"step": 0, "quiz": False, "ended": False})
    store.append(session.code, {"step": 3}, clock() + 100)
    other.append(session.code, {"quiz": True}, clock() + 100)
    store.append(session.code, {"step": 4}, clock() + 500)
    events, _ = other.events(session.code, 0)
    assert [(e["seq"], e["step"], e["quiz"]) for e in events] == [(1, 0, False), (2, 3, False), (3, 3, True), (4, 4, True)]
    assert [e["seq"] for e in other.events(session.code, 2)[0]] == [3, 4]
    assert other.last(session.code)["step"] == 4
    assert other.get(session.code).expires == clock() + 500  # each action moves the end


def test_a_directory_reader_resumes_where_it_stopped(tmp_path, clock):
    store = DirectorySessionStore(tmp_path, clock=clock)
    session = a_session(clock)
    store.create(session, {"step": 0})
    events, cursor = store.events(session.code, 0)
    assert [e["seq"] for e in events] == [1]
    store.append(session.code, {"step": 1}, clock() + 100)
    events, cursor2 = store.events(session.code, 1, cursor)
    assert [e["step"] for e in events] == [1] and cursor2 > cursor
    with open(tmp_path / "log" / f"{session.code}.log", "ab") as f:
        f.write(b'{"seq": 3, "st')  # a line still being written is left for the next read
    assert store.events(session.code, 2, cursor2) == ([], cursor2)


def test_appends_from_many_workers_keep_one_order(make_store, clock):
    session = a_session(clock)
    make_store().create(session, {"step": 0})
    stores = [make_store() for _ in range(4)]

    def worker(store, n):
        for i in range(25):
            store.append(session.code, {"step": i, "by": n}, clock() + 100)

    threads = [threading.Thread(target=worker, args=(s, n)) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events, _ = stores[0].events(session.code, 0)
    assert [e["seq"] for e in events] == list(range(1, 102))
    for n in range(4):  # each worker's own appends stay in its order
        assert [e["step"] for e in events if e.get("by") == n] == list(range(25))


def test_one_vote_per_follower_per_step(make_store, clock):
    store = make_store()
    session = a_session(clock)
    store.create(session, {"step": 0})
    assert store.vote(session.code, 0, "follower-aaaaaaaaaa", ["t", "h"])
    assert not make_store().vote(session.code, 0, "follower-aaaaaaaaaa", ["h", "e"])
    assert store.vote(session.code, 0, "follower-bbbbbbbbbb", ["h", "e"])
    assert store.vote(session.code, 1, "follower-aaaaaaaaaa", ["h", "e"])
    assert make_store().votes(session.code, 0) == {"follower-aaaaaaaaaa": ["t", "h"], "follower-bbbbbbbbbb": ["h", "e"]}
    assert store.votes(session.code, 5) == {}


def test_nicknames_and_every_steps_votes_are_shared_by_the_workers(make_store, clock):
    store, other = make_store(), make_store()
    session = a_session(clock)
    store.create(session, {"step": 0})
    store.set_name(session.code, "f" * 16, "Ada")
    other.set_name(session.code, "g" * 16, "Grace")
    store.set_name(session.code, "g" * 16, "Grace H.")  # the last one counts
    other.set_name(session.code, "h" * 16, "Hedy")
    store.set_name(session.code, "h" * 16, None)  # forgotten
    assert other.names(session.code) == {"f" * 16: "Ada", "g" * 16: "Grace H."}
    store.vote(session.code, 0, "f" * 16, ["t", "h"])
    other.vote(session.code, 2, "g" * 16, ["h", "e"])
    assert store.all_votes(session.code) == {0: {"f" * 16: ["t", "h"]}, 2: {"g" * 16: ["h", "e"]}}
    assert other.all_votes(a_session(clock).code) == {} and other.names("NOPE22") == {}


def test_followers_are_distinct_browsers_with_a_fresh_heartbeat(make_store, clock):
    store, other = make_store(), make_store()
    code = a_session(clock).code
    store.beat(code, "s1", "browser-a-aaaaaaaaa")
    store.beat(code, "s2", "browser-a-aaaaaaaaa")  # a second tab of the same browser
    other.beat(code, "s3", "browser-b-bbbbbbbbb")  # served by another worker
    assert store.followers(code, ttl=30) == 2
    other.leave(code, "s3")  # closed: no longer counted, at once
    assert store.followers(code, ttl=30) == 1
    store.leave(code, "s1")
    assert store.followers(code, ttl=30) == 1  # the other tab still follows
    clock.advance(30)
    assert other.followers(code, ttl=30) == 1
    clock.advance(1)  # its worker died: no heartbeat for longer than the ttl
    assert other.followers(code, ttl=30) == 0
    store.beat(code, "s2", "browser-a-aaaaaaaaa")
    assert other.followers(code, ttl=30) == 1


def test_failed_joins_are_counted_per_client_over_a_window(make_store, clock):
    store, other = make_store(), make_store()
    for _ in range(3):
        store.join_failed("10.0.0.1", window=600)
        clock.advance(10)
    assert other.join_wait("10.0.0.1", limit=3, window=600) == pytest.approx(600 - 30)
    assert other.join_wait("10.0.0.1", limit=4, window=600) == 0
    assert other.join_wait("10.0.0.2", limit=3, window=600) == 0
    clock.advance(570)  # the first failure leaves the window
    assert other.join_wait("10.0.0.1", limit=3, window=600) == 0


def test_the_directory_sweep_removes_expired_sessions(tmp_path, clock):
    store = DirectorySessionStore(tmp_path, clock=clock)
    old, new = a_session(clock, ttl=50), a_session(clock, ttl=500)
    for s in (old, new):
        store.create(s, {"step": 0})
        store.vote(s.code, 0, "browser-a-aaaaaaaaa", ["a", "b"])
        store.beat(s.code, "s1", "browser-a-aaaaaaaaa")
    clock.advance(100)
    assert store.sweep(force=True) == 1
    left = sorted(p.name for p in tmp_path.rglob("*") if p.is_file() and not p.name.startswith("."))
    assert not [name for name in left if old.code in name] and (tmp_path / "followers" / old.code).exists() is False
    assert store.get(new.code) is not None and store.votes(new.code, 0)


def test_the_store_follows_the_run_store(tmp_path, redis_url):
    settings = Settings(lab_runs_dir=tmp_path / "runs")
    assert isinstance(make_session_store(settings), DirectorySessionStore)
    assert sessions_dir(settings) == tmp_path / "runs" / "sessions"
    assert make_session_store(Settings(lab_runs_dir=tmp_path / "r", sessions_dir=tmp_path / "s")).directory == tmp_path / "s"
    assert isinstance(make_session_store(Settings(lab_runs_dir=tmp_path, redis_url=redis_url)), RedisSessionStore)


def test_members_are_kept_per_session_and_go_with_it(make_store, clock):
    store = make_store()
    session, other = a_session(clock), a_session(clock)
    for s in (session, other):
        store.create(s, {"step": 0})
    assert not store.is_member(session.code, "follower-aaaaaaaaaa")
    store.add_member(session.code, "follower-aaaaaaaaaa", session.expires)
    assert make_store().is_member(session.code, "follower-aaaaaaaaaa")  # every process sees it
    assert not make_store().is_member(other.code, "follower-aaaaaaaaaa")  # a member of one class only


def test_what_one_address_did_is_counted_in_its_window(make_store, clock):
    store = make_store()
    for _ in range(3):
        store.recent_add("votes", "10.0.0.7", 60)
    assert make_store().recent_wait("votes", "10.0.0.7", 3, 60) == 60
    assert make_store().recent_wait("votes", "10.0.0.7", 4, 60) == 0
    assert store.recent_wait("votes", "10.0.0.8", 1, 60) == 0 and store.recent_wait("joins", "10.0.0.7", 1, 60) == 0
    clock.advance(45)
    assert store.recent_wait("votes", "10.0.0.7", 3, 60) == 15
    clock.advance(15)
    assert store.recent_wait("votes", "10.0.0.7", 3, 60) == 0


# -- the classroom ----------------------------------------------------------------------------------------------
@pytest.fixture()
def classroom(tmp_path, clock) -> Classroom:
    return Classroom(DirectorySessionStore(tmp_path, clock=clock), ttl=1000, join_failures=3, join_window=600)


@pytest.fixture(scope="module")
def run():
    return trained_run()


def test_only_the_teacher_token_moves_the_class(classroom, run):
    session, token = classroom.start(run)
    assert len(token) >= 32 and token_hash(token) == session.token_hash and token not in str(session.to_json())
    with pytest.raises(NotAuthenticated):
        classroom.authorize(session, None)
    with pytest.raises(NotAuthenticated):
        classroom.authorize(session, f"Basic {token}")
    with pytest.raises(NotTeacher):
        classroom.authorize(session, "Bearer " + token[:-1] + ("x" if token[-1] != "x" else "y"))
    other, other_token = classroom.start(run)
    with pytest.raises(NotTeacher):
        classroom.authorize(session, f"Bearer {other_token}")
    classroom.authorize(session, f"Bearer {token}")
    assert classroom.set_step(session, 5)["step"] == 5
    for bad in (-1, run.n_steps + 1):
        with pytest.raises(SessionError, match="out of range"):
            classroom.set_step(session, bad)
    assert classroom.state(session)["step"] == 5


def test_a_session_ends_a_ttl_after_the_teachers_last_action(classroom, run):
    session, _ = classroom.start(run)
    clock = classroom.clock
    clock.advance(900)
    classroom.set_step(session, 1)
    clock.advance(900)  # 1,800 s after it started, 900 after the last step
    session = classroom.find(session.code, "1.2.3.4")
    assert classroom.state(session)["expires_in"] == 100
    clock.advance(101)
    with pytest.raises(SessionNotFound):
        classroom.find(session.code, "1.2.3.4")


def test_ended_sessions_take_no_more_actions(classroom, run):
    session, _ = classroom.start(run)
    assert classroom.end(session)["ended"]
    with pytest.raises(SessionEnded):
        classroom.set_step(session, 2)
    with pytest.raises(SessionEnded):
        classroom.vote(session, "browser-a-aaaaaaaaa", ["a", "b"], [["a", "b"]])


def test_wrong_codes_lock_a_client_out_but_never_the_teacher(classroom, run):
    session, token = classroom.start(run)
    assert classroom.find(session.code.lower(), "10.0.0.9").code == session.code  # typed in lower case
    for wrong in ("ZZZZZZ", "short", "K7PX2O"):
        with pytest.raises(SessionNotFound):
            classroom.find(wrong, "10.0.0.9")
    with pytest.raises(TooManyJoins) as exc:
        classroom.find(session.code, "10.0.0.9")  # even the right code: a guesser learns nothing
    assert exc.value.retry_after == 600
    with pytest.raises(TooManyJoins):
        classroom.find(session.code, "10.0.0.9", "Bearer not-the-token")
    assert classroom.find(session.code, "10.0.0.9", f"Bearer {token}") == session
    assert classroom.find(session.code, "10.0.0.10").code == session.code  # another address
    classroom.clock.advance(600)
    assert classroom.find(session.code, "10.0.0.9").code == session.code


def test_quiz_votes_follow_the_rules(classroom, run):
    session, _ = classroom.start(run)
    replay = replay_for(run)
    choices = [c["pair"] for c in quiz_choices(replay, 0)]
    merge_1 = replay.pair_text(run.steps[0].pair)
    assert merge_1 in choices and choices == sorted(choices)
    with pytest.raises(VoteRefused, match="quiz mode is off"):
        classroom.vote(session, "browser-a-aaaaaaaaa", merge_1, choices)
    classroom.set_quiz(session, True)
    for follower in ("browser-a-aaaaaaaaa", "browser-b-bbbbbbbbb", "browser-c-ccccccccc", "browser-d-ddddddddd"):
        classroom.join(session, follower)  # what the follow page does: only a follower who joined may vote
    assert classroom.vote(session, "browser-a-aaaaaaaaa", merge_1, choices, step=0) == {"step": 0, "pair": merge_1}
    with pytest.raises(VoteRefused, match="already voted"):
        classroom.vote(session, "browser-a-aaaaaaaaa", choices[0], choices)
    with pytest.raises(SessionError, match="not one of the pairs"):
        classroom.vote(session, "browser-b-bbbbbbbbb", ["zz", "q"], choices)
    other = next(c for c in choices if c != merge_1)
    classroom.vote(session, "browser-b-bbbbbbbbb", other, choices)
    classroom.vote(session, "browser-c-ccccccccc", other, choices)
    assert classroom.state(session)["votes"] == [{"pair": other, "count": 2}, {"pair": merge_1, "count": 1}]
    classroom.set_step(session, 1)  # the reveal: the class moved on
    with pytest.raises(VoteRefused, match="is at step 1 now"):
        classroom.vote(session, "browser-d-ddddddddd", merge_1, choices, step=0)
    assert classroom.state(session)["votes"] == []
    classroom.set_step(session, run.n_steps)
    with pytest.raises(VoteRefused, match="last step"):
        classroom.vote(session, "browser-a-aaaaaaaaa", merge_1, choices)


def test_a_vote_counts_only_from_a_follower_who_joined_and_so_many_per_address(tmp_path, clock, run):
    classroom = Classroom(DirectorySessionStore(tmp_path, clock=clock), votes_per_address=2, vote_window=60)
    session, _ = classroom.start(run)
    classroom.set_quiz(session, True)
    choices = [c["pair"] for c in quiz_choices(replay_for(run), 0)]
    with pytest.raises(NotJoined, match="has not joined"):
        classroom.vote(session, "never-joined-aaaaaaaa", choices[0], choices, client="10.0.0.7")
    with pytest.raises(NotJoined):
        classroom.vote(session, "", choices[0], choices, client="10.0.0.7")
    for follower in ("browser-a-aaaaaaaaa", "browser-b-bbbbbbbbb", "browser-c-ccccccccc"):
        classroom.join(session, follower)
    classroom.vote(session, "browser-a-aaaaaaaaa", choices[0], choices, client="10.0.0.7")
    with pytest.raises(VoteRefused, match="already voted"):  # refused: not counted against the address
        classroom.vote(session, "browser-a-aaaaaaaaa", choices[0], choices, client="10.0.0.7")
    classroom.vote(session, "browser-b-bbbbbbbbb", choices[0], choices, client="10.0.0.7")
    with pytest.raises(TooManyVotes) as exc:
        classroom.vote(session, "browser-c-ccccccccc", choices[0], choices, client="10.0.0.7")
    assert exc.value.retry_after == 60
    assert classroom.vote(session, "browser-c-ccccccccc", choices[1], choices, client="10.0.0.8")  # another address
    assert classroom.state(session)["voters"] == 3
    classroom.set_step(session, 1)
    clock.advance(60)
    classroom.vote(session, "browser-c-ccccccccc", quiz_choices(replay_for(run), 1)[0]["pair"],
                   [c["pair"] for c in quiz_choices(replay_for(run), 1)], client="10.0.0.7")


def test_quiz_choices_hold_the_next_merge_in_an_order_that_gives_nothing_away(run):
    replay = replay_for(run)
    for k in range(run.n_steps):
        choices = quiz_choices(replay, k)
        pairs = [c["pair"] for c in choices]
        assert replay.pair_text(run.steps[k].pair) in pairs
        assert pairs == sorted(pairs) and 1 < len(pairs) <= 10
        for c in choices:
            assert replay.pair_text(c["ids"]) == c["pair"]
    assert quiz_choices(replay, run.n_steps) == []


def test_unigram_runs_can_be_followed_but_not_quizzed(classroom):
    session, _ = classroom.start(trained_run(algorithm="unigram", pattern="whitespace"))
    classroom.set_step(session, 1)
    with pytest.raises(SessionError, match="quiz mode is off for a Unigram run: it merges no pair"):
        classroom.set_quiz(session, True)


# -- the hub: every follower gets every event in order -------------------------------------------------------------
async def collect(subscription, n: int) -> list[dict]:
    got: list[dict] = []
    while len(got) < n:
        more = await subscription.next(timeout=HANG)
        assert more is not None, "the hub closed"
        got += more
    return got


def follow_many(make_store, clock, *, n_events: int = 30, followers: int = 5, after: int | None = None):
    """Followers on one hub (one worker), a teacher appending through another store (another worker); returns
    the seqs each follower received."""
    writer, reader = make_store(), make_store()
    session = a_session(clock)
    writer.create(session, {"step": 0})

    async def main():
        hub = SessionHub(reader)
        try:
            async with hub.follow(session.code, after) as first:
                subs = [first]
                cms = [hub.follow(session.code, after) for _ in range(followers - 1)]
                for cm in cms:
                    subs.append(await cm.__aenter__())
                heads = [await s.next(timeout=HANG) for s in subs]  # the state on connect (or what was missed)

                def teacher():
                    for k in range(1, n_events + 1):
                        writer.append(session.code, {"step": k}, clock() + 100)

                thread = threading.Thread(target=teacher)
                thread.start()
                start = (after or 1)
                rest = await asyncio.wait_for(asyncio.gather(*(collect(s, n_events + 1 - start) for s in subs)), HANG)
                thread.join()
                for cm in cms:
                    await cm.__aexit__(None, None, None)
            assert not hub.channels  # the last follower gone, the channel goes too
            return [[e["seq"] for e in head + more] for head, more in zip(heads, rest)]
        finally:
            await hub.aclose()

    return run_async(main)


def test_every_follower_gets_every_event_in_order(make_store, clock):
    for seqs in follow_many(make_store, clock):
        assert seqs == list(range(1, 32))


def test_without_inotify_the_hub_checks_the_logs(tmp_path, clock, monkeypatch):
    def no_inotify(folder):
        raise OSError("not here")

    monkeypatch.setattr(hub, "Inotify", no_inotify)
    for seqs in follow_many(lambda: DirectorySessionStore(tmp_path, clock=clock), clock, n_events=10, followers=3):
        assert seqs == list(range(1, 12))


def test_a_reconnecting_follower_gets_what_it_missed(make_store, clock):
    writer = make_store()
    session = a_session(clock)
    writer.create(session, {"step": 0})
    for k in range(1, 6):
        writer.append(session.code, {"step": k}, clock() + 100)

    async def main():
        hub = SessionHub(make_store())
        try:
            async with hub.follow(session.code, after=3) as sub:
                resumed = await sub.next(timeout=HANG)
            async with hub.follow(session.code, after=None) as sub:
                fresh = await sub.next(timeout=HANG)
            async with hub.follow(session.code, after=99) as sub:  # an id from elsewhere: start afresh
                odd = await sub.next(timeout=HANG)
            return resumed, fresh, odd
        finally:
            await hub.aclose()

    resumed, fresh, odd = run_async(main)
    assert [e["seq"] for e in resumed] == [4, 5, 6]
    assert [e["step"] for e in fresh] == [5] and [e["step"] for e in odd] == [5]


def test_a_follower_behind_the_buffer_reads_the_log(tmp_path, clock, monkeypatch):
    monkeypatch.setattr(hub, "BUFFER", 3)
    store = DirectorySessionStore(tmp_path, clock=clock)
    session = a_session(clock)
    store.create(session, {"step": 0})

    async def main():
        hub = SessionHub(store)
        try:
            async with hub.follow(session.code) as slow, hub.follow(session.code) as fast:
                assert [e["seq"] for e in await slow.next(HANG)] == [1]
                await fast.next(HANG)
                for k in range(1, 11):
                    store.append(session.code, {"step": k}, clock() + 100)
                await asyncio.wait_for(collect(fast, 10), HANG)  # the channel has them all; it keeps the last 3
                assert len(hub.channels[session.code].events) == 3
                return [e["seq"] for e in await slow.next(HANG)]
        finally:
            await hub.aclose()

    assert run_async(main) == list(range(2, 12))


def test_closing_the_hub_ends_its_streams(tmp_path, clock):
    store = DirectorySessionStore(tmp_path, clock=clock)
    session = a_session(clock)
    store.create(session, {"step": 0})

    async def main():
        hub = SessionHub(store)
        async with hub.follow(session.code) as sub:
            await sub.next(HANG)
            waiting = asyncio.ensure_future(sub.next(HANG))
            await asyncio.sleep(0)  # let it start waiting
            await hub.aclose()
            return await asyncio.wait_for(waiting, HANG)

    assert run_async(main) is None
