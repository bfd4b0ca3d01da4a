"""The classroom: class sessions (:mod:`.sessions`) kept in a session store (:mod:`.stores`), streamed to
followers by the event hub (:mod:`.hub`), with quiz mode's choices and votes (:mod:`.quiz`). :class:`Classroom` is
the one object the follow page, the teacher's share panel and the session API all call; it is the only module that
knows the rules, the stores and the streams, so those never import each other.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import weakref
from collections.abc import Callable

from app.lab.replay import replay_for
from app.lab.runs import Run
from app.lab.service import Lab

from . import quiz
from .hub import SessionHub
from .quiz import pair_words, quiz_choices, tally
from .stores import make_session_store
from .sessions import (
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
    bearer_token,
    new_code,
    nickname,
    normalize_code,
    token_hash,
    valid_code,
    valid_follower,
)


class Classroom:
    """Class sessions over a session store (:mod:`.stores`): start one, check codes and teacher tokens, move the
    class, count votes and followers. The app holds one; :mod:`.hub` streams the events."""

    def __init__(
        self,
        store,
        *,
        ttl: float = 3 * 3600,
        follower_ttl: float = 30.0,
        heartbeat: float = 10.0,
        join_failures: int = 20,
        join_window: float = 600.0,
        votes_per_address: int = 100,
        vote_window: float = 60.0,
    ):
        self.store = store
        self.ttl = ttl
        self.follower_ttl = follower_ttl
        self.heartbeat = heartbeat
        self.join_failures = join_failures
        self.join_window = join_window
        self.votes_per_address = votes_per_address
        self.vote_window = vote_window
        self._hubs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @classmethod
    def from_settings(cls, settings, clock: Callable[[], float] = time.time) -> Classroom:
        return cls(
            make_session_store(settings, clock),
            ttl=settings.session_ttl_seconds,
            follower_ttl=settings.session_follower_ttl_seconds,
            heartbeat=settings.session_heartbeat_seconds,
            join_failures=settings.session_join_failures,
            join_window=settings.session_join_window_seconds,
            votes_per_address=settings.session_votes_per_address,
            vote_window=settings.session_vote_window_seconds,
        )

    @property
    def clock(self) -> Callable[[], float]:
        return self.store.clock

    def hub(self):
        """The running event loop's :class:`~app.classroom.hub.SessionHub` (made on first use): followers'
        streams wait there for the teacher's events."""
        loop = asyncio.get_running_loop()
        hub = self._hubs.get(loop)
        if hub is None:
            hub = self._hubs[loop] = SessionHub(self.store)
        return hub

    async def aclose(self) -> None:
        """End this event loop's streams and stop its watcher (the app's shutdown)."""
        hub = self._hubs.pop(asyncio.get_running_loop(), None)
        if hub is not None:
            await hub.aclose()

    # -- the teacher ------------------------------------------------------------------------------------------
    def start(self, run: Run) -> tuple[Session, str]:
        """A new session on a finished run, at step 0 with quiz mode off; returns it and its teacher token."""
        token = secrets.token_urlsafe(24)
        now = self.clock()
        for _ in range(20):
            session = Session(new_code(), run.id, token_hash(token), run.n_steps, not run.unigram, now, now + self.ttl)
            if self.store.create(session, {"step": 0, "steps": run.n_steps, "quiz": False, "ended": False}):
                return session, token
        raise SessionError("could not find a free session code; try again")  # pragma: no cover - 887M codes

    def authorize(self, session: Session, authorization: str | None) -> None:
        """Refuse a teacher's action without the teacher token (401) or with another one (403)."""
        token = bearer_token(authorization)
        if token is None:
            raise NotAuthenticated()
        if not session.is_teacher(token):
            raise NotTeacher()

    def set_step(self, session: Session, step: int) -> dict:
        if not 0 <= step <= session.steps:
            raise SessionError(f"step {step} is out of range: this run has steps 0..{session.steps}")
        return self._act(session, {"step": step})

    def teacher_session(self, code: str, client: str, authorization: str | None) -> Session:
        """The session of ``code``, for its teacher only (401 without a token, 403 with another one)."""
        session = self.find(code, client, authorization)
        self.authorize(session, authorization)
        return session

    def own_session(self, run: Run, code: str, token: str) -> Session | None:
        """The live session ``code`` of ``run`` when ``token`` is its teacher token (what a teacher's browser keeps,
        :mod:`app.web.cookies`), else None."""
        session = self.store.get(code) if valid_code(code) else None
        if session is None or session.run_id != run.id or not session.is_teacher(token):
            return None
        if self.last(session).get("ended"):
            return None
        return session

    def teach(self, run: Run, code: str, token: str | None, step: int) -> bool:
        """The teacher's page of ``run`` shows ``step``: move the class of session ``code`` there, when ``token`` is
        its teacher token and it is not there already. Whether the class moved."""
        session = self.own_session(run, code, token) if token else None
        if session is None or not 0 <= step <= session.steps or self.last(session).get("step", 0) == step:
            return False
        self.set_step(session, step)
        return True

    def set_quiz(self, session: Session, on: bool) -> dict:
        if on and not session.quiz_possible:
            raise SessionError(quiz.UNIGRAM_OFF)
        return self._act(session, {"quiz": bool(on)})

    def end(self, session: Session) -> dict:
        return self._act(session, {"ended": True})

    def _act(self, session: Session, changes: dict) -> dict:
        last = self.store.last(session.code)
        if last is not None and last.get("ended"):
            raise SessionEnded()
        return self.store.append(session.code, changes, self.clock() + self.ttl)

    # -- everyone ---------------------------------------------------------------------------------------------
    def find(self, code: str, client: str, authorization: str | None = None) -> Session:
        """The session with this code (as typed), counting a failed join for ``client``; refuses a client that
        failed too often (:class:`TooManyJoins`) unless it holds the session's teacher token."""
        code = normalize_code(code)
        session = self.store.get(code) if valid_code(code) else None
        wait = self.store.join_wait(client, self.join_failures, self.join_window)
        if wait > 0 and not (session is not None and session.is_teacher(bearer_token(authorization))):
            raise TooManyJoins(wait)
        if session is None:
            self.store.join_failed(client, self.join_window)
            raise SessionNotFound(code)
        return session

    def run_of(self, lab: Lab, session: Session) -> Run:
        """The finished run a session follows (the session is gone with it)."""
        run = lab.get(session.run_id)
        if run is None or run.status != "done":
            raise SessionNotFound(session.code)
        return run

    def reveal(self, session: Session, replay, k: int) -> dict | None:
        """At step ``k``: the votes of step ``k - 1`` against merge ``k`` (how many predicted it), or None when
        nobody voted there (:func:`.quiz.reveal`)."""
        if k < 1 or replay.run.unigram:
            return None
        return quiz.reveal(self.votes(session, k - 1), replay, k)

    def state_with_reveal(self, lab: Lab, session: Session) -> dict:
        """:meth:`state`, the reveal of its step and the quiz's :meth:`scoreboard` (``GET /api/sessions/{code}`` and
        every teacher's action)."""
        state = self.state(session)
        run = self.run_of(lab, session)
        return state | {"reveal": self.reveal(session, replay_for(run), state["step"]),
                        "scoreboard": self.scoreboard(run, session)}

    def state(self, session: Session) -> dict:
        """``{"step", "followers", "votes", ...}``: the class's step, how many follow, the votes of this step."""
        last = self.store.last(session.code) or {}
        step = last.get("step", 0)
        votes = self.store.votes(session.code, step)
        return {
            "code": session.code,
            "run": session.run_id,
            "step": step,
            "steps": session.steps,
            "quiz": bool(last.get("quiz")),
            "ended": bool(last.get("ended")),
            "seq": last.get("seq", 0),
            "followers": self.followers(session),
            "votes": tally(votes),
            "voters": len(votes),
            "expires_in": max(0, round(session.expires - self.clock())),
        }

    def last(self, session: Session) -> dict:
        return self.store.last(session.code) or {"step": 0, "quiz": False, "ended": False, "seq": 0}

    def followers(self, session: Session) -> int:
        return self.store.followers(session.code, self.follower_ttl)

    def beat(self, session: Session, stream: str, follower: str) -> None:
        self.store.beat(session.code, stream, follower)

    def leave(self, session: Session, stream: str) -> None:
        self.store.leave(session.code, stream)

    def join(self, session: Session, follower: str) -> None:
        """``follower`` (the id the follow page or the event stream gave this browser) is one of the class: from now
        on its votes count. Written once per follower (a view asks only)."""
        if valid_follower(follower) and not self.store.is_member(session.code, follower):
            self.store.add_member(session.code, follower, session.expires)

    def predict(self, lab: Lab, session: Session, follower: str, pair: list[str], step: int | None = None,
                client: str | None = None) -> dict:
        """A student's vote for the next merge, among the pairs that can merge next at the class's step
        (:meth:`vote`)."""
        replay = replay_for(self.run_of(lab, session))
        choices = quiz_choices(replay, self.last(session).get("step", 0))
        return self.vote(session, follower, pair, [c["pair"] for c in choices], step, client)

    def vote(self, session: Session, follower: str, pair: list[str], choices: list[list[str]], step: int | None = None,
             client: str | None = None) -> dict:
        """Count ``follower``'s prediction of the next merge at the class's step; ``choices`` are the pairs it may
        name (:func:`quiz_choices`). ``step``, when given, is the step the student saw: a vote sent as the
        teacher revealed is refused instead of counting for the next merge. Only a follower who joined
        (:meth:`join`) may vote (:class:`NotJoined`), and ``client``, the address it came from, at most
        ``votes_per_address`` times within ``vote_window`` (:class:`TooManyVotes`)."""
        last = self.last(session)
        if last.get("ended"):
            raise SessionEnded()
        if not last.get("quiz"):
            raise VoteRefused("quiz mode is off: the teacher turns it on to ask which pair merges next")
        k = last["step"]
        if step is not None and step != k:
            raise VoteRefused(f"the class is at step {k} now, not {step}: the vote for that merge is closed")
        if k >= session.steps:
            raise VoteRefused("this is the last step: no merge comes next")
        if list(pair) not in choices:
            raise SessionError(f"{pair_words(pair)} is not one of the pairs that can merge next; choose one of: "
                               + ", ".join(pair_words(c) for c in choices))
        self._check_joined(session, follower)
        if client is not None:
            wait = self.store.recent_wait("votes", client, self.votes_per_address, self.vote_window)
            if wait > 0:
                raise TooManyVotes(wait)
        if not self.store.vote(session.code, k, follower, list(pair)):
            mine = self.store.votes(session.code, k).get(follower)
            raise VoteRefused(f"you already voted for {pair_words(mine or pair)} at this step: one vote per step")
        if client is not None:
            self.store.recent_add("votes", client, self.vote_window)
        return {"step": k, "pair": list(pair)}

    def my_vote(self, session: Session, step: int, follower: str | None) -> list[str] | None:
        if not valid_follower(follower):
            return None
        return self.store.votes(session.code, step).get(follower)

    def votes(self, session: Session, step: int) -> dict[str, list[str]]:
        return self.store.votes(session.code, step)

    def _check_joined(self, session: Session, follower: str, what: str = "a vote counts") -> None:
        """Raise :class:`NotJoined` unless ``follower`` is an id this session gave out (:meth:`join`)."""
        if not valid_follower(follower) or not self.store.is_member(session.code, follower):
            raise NotJoined(session.code, what)

    # -- nicknames and the scoreboard ---------------------------------------------------------------------------
    def set_nickname(self, session: Session, follower: str, text: str | None) -> str | None:
        """Keep a student's nickname (:func:`.sessions.nickname`: optional, 1-24 characters; empty forgets it), for
        a follower who joined (:class:`NotJoined`: nobody else can fill the session's list of names)."""
        if self.last(session).get("ended"):
            raise SessionEnded()
        name = nickname(text)
        self._check_joined(session, follower, "a nickname is kept")
        self.store.set_name(session.code, follower, name)
        return name

    def nickname_of(self, session: Session, follower: str | None) -> str | None:
        return self.store.names(session.code).get(follower) if valid_follower(follower) else None

    def scoreboard(self, run: Run, session: Session) -> dict:
        """The quiz over the session so far: per student, how many of the revealed merges they predicted
        (``{"rows": [{"name", "right", "answered"}], "unnamed": {"students", "right", "answered"}, "revealed"}``;
        rows by most right, then name; students without a nickname counted together)."""
        k = self.last(session).get("step", 0)
        revealed = {step: votes for step, votes in self.store.all_votes(session.code).items() if step < k and votes}
        if not revealed:
            return {"rows": [], "unnamed": {"students": 0, "right": 0, "answered": 0}, "revealed": 0}
        return quiz.scoreboard(revealed, replay_for(run), self.store.names(session.code))

