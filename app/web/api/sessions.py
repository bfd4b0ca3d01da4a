"""A class following the teacher (JSON API and the event stream), over :class:`~app.classroom.service.Classroom`,
which the pages (:mod:`app.web.pages.follow`, :mod:`app.web.pages.share`) call too.

- ``POST /api/train/{id}/session`` starts a session on a finished run: 201 ``{"code", "follow_url",
  "teacher_token", "join_url", "follow_urls", ...}``, and ``"warning"`` when no phone can join (the server listens
  on loopback only: :mod:`app.classroom.reach`);
- ``GET /api/sessions/{code}`` its state: ``{"step", "followers", "votes": [{"pair", "count"}], ...}``;
- ``GET /api/sessions/{code}/events`` Server-Sent Events (sse-starlette): on connect the current state, then
  ``data: {"step": k, ...}`` for every action of the teacher, in order, each with ``id: <seq>`` (a reconnecting
  EventSource sends ``Last-Event-ID`` and gets what it missed). A comment line every heartbeat keeps proxies
  from closing the stream; the stream ends when the session ends or the server shuts down;
- the teacher, with ``Authorization: Bearer <teacher_token>`` (401 without, 403 with another token):
  ``POST /api/sessions/{code}/step`` ``{"step": k}``, ``POST /api/sessions/{code}/quiz`` ``{"on": true}``,
  ``DELETE /api/sessions/{code}`` (ends it);
- a student: ``POST /api/sessions/{code}/nickname`` ``{"nickname": "Ada"}`` (optional, 1-24 characters: the
  teacher's scoreboard, ``"scoreboard"`` in the session's state, lists it with how many merges it predicted);
- a student: ``POST /api/sessions/{code}/votes`` ``{"pair": ["t", "h"], "step": k}``, one vote per follower
  (cookie ``tp_follower``, which the event stream or the follow page gave it when it joined) per step; 403 without
  such an id, 409 when quiz mode is off, the class has moved on from ``step``, or the follower voted already, 429
  (``Retry-After``) when one address voted too often lately.

A code that does not exist is a 404 and counts as a failed join of the client's address; too many of them and
every code is a 429 with ``Retry-After`` for a while.
"""

from __future__ import annotations

import secrets
from typing import Annotated

import anyio
import orjson
from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from ..cookies import follower_of, set_follower
from ..deps import ClassroomDep, DoneRunDep, LabDep, SettingsDep, class_reach, client_of, find_session
from ..rendering.links import follow_path, follow_url

router = APIRouter(tags=["class"])

#: What a follower's stream tells of an event (the log also keeps when it happened).
PUBLIC = ("seq", "step", "steps", "quiz", "ended")
#: On shutdown a stream ends by itself within this many seconds, or is cancelled.
SHUTDOWN_GRACE = 3.0
#: How long a browser waits before reconnecting a dropped stream (milliseconds; sent with the first event).
RETRY_MS = 2000


class StepRequest(BaseModel):
    step: int = Field(ge=0, description="the step the class moves to (0 .. the run's merges)")


class QuizRequest(BaseModel):
    on: bool = Field(description="quiz mode: students predict the next merge before the teacher reveals it")


class NicknameRequest(BaseModel):
    nickname: str | None = Field(None, max_length=200, description="1-24 characters, shown as text on the teacher's "
                                 "scoreboard; empty or null: no nickname")


class VoteRequest(BaseModel):
    pair: list[str] = Field(min_length=2, max_length=2, description="the two tokens (their texts) the student thinks merge next")
    step: int | None = Field(None, ge=0, description="the step the student saw; the vote is refused if the class has moved on")


Authorization = Annotated[str | None, Header(description="Bearer <teacher_token>")]


@router.post(
    "/train/{run_id}/session",
    status_code=201,
    summary="Share a finished run with the class: a session and its join code",
    description="Answers 201 with the join code, the follow link and the teacher token (keep it: the teacher's "
    "actions need it as Authorization: Bearer); the class starts at step 0 with quiz mode off. `join_url` is the "
    "link the QR code holds; `follow_urls` every link a phone on the room's network can open (this machine's "
    "network addresses when the server listens on every interface; empty when it listens on loopback only), and "
    "then `warning` says in words that no phone can join, with the command that fixes it. 409 while the run trains.",
)
def api_start_session(request: Request, run: DoneRunDep, classroom: ClassroomDep, settings: SettingsDep):
    session, token = classroom.start(run)
    where = class_reach(request, settings)
    body = {
        "code": session.code,
        "follow_url": follow_path(session.code),
        "teacher_token": token,
        "join_url": follow_url(where.base, session.code),
        "follow_urls": [follow_url(base, session.code) for base in where.bases],
        "run": run.id,
        "step": 0,
        "steps": session.steps,
        "expires_in": round(session.expires - classroom.clock()),
    }
    if where.warning:
        body["warning"] = where.warning
    return JSONResponse(body, status_code=201)


@router.get(
    "/sessions/{code}",
    summary="A class session: step, followers and the votes of this step",
    description="The class's step, quiz mode, how many students follow (an open event stream each), the votes "
    "for the next merge and, after a reveal, how many predicted it; the scoreboard of the session's quiz. 404 for a "
    "code that does not exist, 429 after too many wrong codes from one address.",
)
def api_session(request: Request, code: str, classroom: ClassroomDep, lab: LabDep):
    return classroom.state_with_reveal(lab, find_session(request, classroom, code))


@router.post(
    "/sessions/{code}/step",
    summary="Move the class to a step (teacher token)",
    description="Every follower's stream gets the step, in order. Needs Authorization: Bearer <teacher_token> "
    "(401 without, 403 with another token); 422 for a step the run does not have.",
)
def api_step(request: Request, code: str, body: StepRequest, classroom: ClassroomDep, lab: LabDep, authorization: Authorization = None):
    session = classroom.teacher_session(code, client_of(request), authorization)
    classroom.set_step(session, body.step)
    return classroom.state_with_reveal(lab, session)


@router.post(
    "/sessions/{code}/quiz",
    summary="Turn quiz mode on or off (teacher token)",
    description="In quiz mode each student predicts the next merge before the teacher steps on; 422 for a unigram "
    "run, whose rounds remove pieces instead.",
)
def api_quiz(request: Request, code: str, body: QuizRequest, classroom: ClassroomDep, lab: LabDep, authorization: Authorization = None):
    session = classroom.teacher_session(code, client_of(request), authorization)
    classroom.set_quiz(session, body.on)
    return classroom.state_with_reveal(lab, session)


@router.delete(
    "/sessions/{code}",
    summary="End the session (teacher token)",
    description="Every follower's stream gets a last event with ended: true and closes; the code stops working "
    "for new actions.",
)
def api_end(request: Request, code: str, classroom: ClassroomDep, lab: LabDep, authorization: Authorization = None):
    session = classroom.teacher_session(code, client_of(request), authorization)
    classroom.end(session)
    return classroom.state_with_reveal(lab, session)


@router.post(
    "/sessions/{code}/votes",
    status_code=201,
    summary="Predict the next merge (one vote per student per step)",
    description="A student's vote (cookie tp_follower, as the follow page or the event stream gave it) for one of "
    "the pairs that can merge next; 403 from a browser that never joined (no such id, or one this session did not "
    "give out), 409 when quiz mode is off, the class has moved on from `step`, or this student voted already; 422 "
    "for a pair that is not a choice; 429 when one address voted too often lately.",
)
def api_vote(request: Request, code: str, body: VoteRequest, classroom: ClassroomDep, lab: LabDep):
    session = find_session(request, classroom, code)
    follower, _ = follower_of(request)  # a new id was never given out: the vote is refused (403)
    return JSONResponse(classroom.predict(lab, session, follower, body.pair, body.step, client_of(request)),
                        status_code=201)


@router.post(
    "/sessions/{code}/nickname",
    summary="A student's nickname for the quiz scoreboard (optional)",
    description="Kept for this student (cookie tp_follower, as the follow page or the event stream gave it): 1-24 "
    "characters, shown as text on the teacher's scoreboard; empty or null forgets it; 422 for a longer one or one "
    "with control characters; 403 from a browser that never joined (as for votes).",
)
def api_nickname(request: Request, code: str, body: NicknameRequest, classroom: ClassroomDep):
    session = find_session(request, classroom, code)
    follower, _ = follower_of(request)  # a new id was never given out: the nickname is refused (403)
    return JSONResponse({"nickname": classroom.set_nickname(session, follower, body.nickname)})


def _last_event_id(request: Request) -> int | None:
    raw = request.headers.get("last-event-id", "").strip()
    return int(raw) if raw.isdigit() and len(raw) < 12 else None


@router.get(
    "/sessions/{code}/events",
    summary="The class's steps as Server-Sent Events (text/event-stream)",
    description="On connect the current state, then `data: {\"step\": k, ...}` for every action of the teacher, in "
    "order, with `id: <seq>` (send Last-Event-ID to resume); a comment line every heartbeat. It ends when the "
    "session ends or the server stops.",
    response_class=EventSourceResponse,
)
async def api_events(request: Request, code: str, classroom: ClassroomDep):
    session = await anyio.to_thread.run_sync(find_session, request, classroom, code)
    follower, new = follower_of(request)
    await anyio.to_thread.run_sync(classroom.join, session, follower)  # its votes count from now on
    after = _last_event_id(request)
    stream = secrets.token_hex(6)
    hub = classroom.hub()
    heartbeat = classroom.heartbeat
    stopping = anyio.Event()  # set by sse-starlette when the server shuts down: end cleanly, then it closes

    async def events():
        try:
            await anyio.to_thread.run_sync(classroom.beat, session, stream, follower)
            beaten = anyio.current_time()
            first = True
            last: dict = {}
            async with hub.follow(session.code, after) as subscription:
                while True:
                    got = await subscription.next(heartbeat, stopping)
                    if got is None:  # the server is stopping
                        return
                    for event in got:
                        last = event
                        data = orjson.dumps({k: event[k] for k in PUBLIC if k in event}).decode()
                        yield ServerSentEvent(data=data, id=str(event["seq"]), retry=RETRY_MS if first else None)
                        first = False
                        if event.get("ended"):
                            return
                    if anyio.current_time() - beaten >= heartbeat or not got:
                        if await anyio.to_thread.run_sync(classroom.store.get, session.code) is None:
                            gone = {k: last[k] for k in PUBLIC if k in last} | {"ended": True, "expired": True}
                            yield ServerSentEvent(data=orjson.dumps(gone).decode())
                            return
                        await anyio.to_thread.run_sync(classroom.beat, session, stream, follower)
                        beaten = anyio.current_time()
                        if not got:
                            yield ServerSentEvent(comment="heartbeat")
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(classroom.leave, session, stream)

    response = EventSourceResponse(
        events(), ping=0, send_timeout=30, headers={"Cache-Control": "no-store"},
        shutdown_event=stopping, shutdown_grace_period=SHUTDOWN_GRACE,
    )
    if new:
        set_follower(response, follower)
    return response
