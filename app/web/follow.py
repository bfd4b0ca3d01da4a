"""A class following the teacher (pages): the students' ``/follow`` pages and the teacher's share panel.

Students:

- ``GET /follow`` a box to type the code in (``?code=`` goes to the session);
- ``GET /follow/{code}[?step=k]`` the run at the class's step (or at step k, browsing on one's own): the merge,
  the corpus as coloured tokens, the pair table and, in quiz mode, the pairs to predict the next merge from;
  block ``view`` for htmx. It sets the browser's ``tp_follower`` cookie (who voted, who follows);
  ``static/follow.js`` listens to ``/api/sessions/{code}/events`` and asks for the view again when the teacher
  moves (``GET /follow/{code}/class``: the class's step, whatever it is by then);
- ``POST /follow/{code}/vote`` a prediction (form ``left``, ``right``, ``step``), answered with the view.

The teacher (the lab's run page; ``static/share.js``):

- ``POST /lab/runs/{id}/share`` starts a session at the page's step and answers the share panel: code, link, QR
  code (SVG drawn here by ``segno``), followers, quiz toggle, tally, reveal. The teacher token goes to the panel
  (``hx-headers``: htmx sends it as ``Authorization: Bearer`` with the panel's actions, share.js with each step)
  and to a cookie scoped to the run's pages, so a reload finds the panel again (``GET /lab/runs/{id}/share``);
- ``GET .../share/live`` the part of the panel that changes (polled every second); ``POST .../share/quiz``,
  ``POST .../share/end`` need the bearer token, never the cookie alone.

The JSON API of the same sessions is :mod:`app.web.api.sessions`; the model is :mod:`app.lab.sessions`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Annotated

import segno
from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup

from app.lab.classroom import Classroom
from app.lab.replay import replay_for
from app.lab.runs import Run
from app.lab.service import Lab
from app.lab.sessions import (
    Session,
    SessionError,
    SessionNotFound,
    TooManyJoins,
    bearer_token,
    new_follower,
    normalize_code,
    quiz_choices,
    tally,
    valid_follower,
)
from app.lab.text_counts import how_training_counts
from app.settings import Settings

from .deps import DoneRunDep, LabDep, SettingsDep, run_cpu
from .errors import headers_for, status_for
from .lab import _corpus_window
from .render import is_htmx, page_or_block

router = APIRouter(include_in_schema=False)

FOLLOWER_COOKIE = "tp_follower"
TEACHER_COOKIE = "tp_teacher"


def _classroom(request: Request) -> Classroom:
    return request.app.state.classroom


ClassroomDep = Annotated[Classroom, Depends(_classroom)]


def client_of(request: Request) -> str:
    """The address a failed join counts against."""
    return request.client.host if request.client else "unknown"


def find_session(request: Request, classroom: Classroom, code: str) -> Session:
    """The session named in the URL (404, or 429 for a client that tried too many codes)."""
    return classroom.find(code, client_of(request), request.headers.get("authorization"))


def follower_of(request: Request) -> tuple[str, bool]:
    """This browser's follower id, and whether it is new (then the answer sets the cookie)."""
    follower = request.cookies.get(FOLLOWER_COOKIE)
    return (follower, False) if valid_follower(follower) else (new_follower(), True)


def set_follower(response: Response, follower: str) -> None:
    response.set_cookie(FOLLOWER_COOKIE, follower, max_age=86400, samesite="lax", httponly=True)


def follow_path(code: str) -> str:
    return f"/follow/{code}"


def follow_url(request: Request, settings: Settings, code: str) -> str:
    """The join link students open: on ``TOKENPLAY_PUBLIC_URL`` when set, else the address the teacher used."""
    base = settings.public_url or str(request.base_url).rstrip("/")
    return base + follow_path(code)


def qr_svg(url: str) -> Markup:
    """The link as a QR code, an inline SVG (dark modules on white in both themes: scanners need that)."""
    svg = segno.make(url, error="m").svg_inline(
        scale=1, border=2, dark="#000", light="#fff", omitsize=True, svgclass="qr-code", lineclass=None,
        title=f"QR code of {url}",
    )
    return Markup(svg)


def session_run(lab: Lab, session: Session) -> Run:
    run = lab.get(session.run_id)
    if run is None or run.status != "done":
        raise SessionNotFound(session.code)
    return run


def with_ids(votes: list[dict], replay, k: int) -> list[dict]:
    """A tally of step ``k`` with each pair's token ids (for its chips), from the choices of that step."""
    ids = {tuple(c["pair"]): c["ids"] for c in quiz_choices(replay, k)}
    return [v | {"ids": ids.get(tuple(v["pair"]))} for v in votes]


def reveal(classroom: Classroom, session: Session, replay, k: int) -> dict | None:
    """At step ``k``: the votes of step ``k - 1`` against merge ``k`` (how many predicted it), or None when
    nobody voted there."""
    if k < 1 or replay.run.unigram:
        return None
    votes = classroom.votes(session, k - 1)
    if not votes:
        return None
    pair = replay.pair_text(replay.run.steps[k - 1].pair)
    return {
        "step": k,
        "pair": pair,
        "right": sum(1 for p in votes.values() if p == pair),
        "voters": len(votes),
        "votes": tally(votes),
    }


# -- students ----------------------------------------------------------------------------------------------------
@router.get("/follow")
def follow_join(request: Request, code: str | None = None):
    if code:
        return RedirectResponse(follow_path(normalize_code(code)) if normalize_code(code) else "/follow", status_code=303)
    return page_or_block(request, "follow.html", "join", {"join": True})


#: Rendered step parts kept per process (templates/_follow_step.html): a class asks for the same few steps.
STEP_CACHE_SIZE = 64
_STEP_HTML: OrderedDict[tuple, Markup] = OrderedDict()
_STEP_LOCK = threading.Lock()


def _step_html(request: Request, session: Session, run: Run, replay, k: int, *, quiz: bool, show_table: bool, max_browse: int) -> Markup:
    """The part of the view every student at step ``k`` sees alike, rendered once per process and kept."""
    key = (session.code, run.id, k, quiz, show_table, max_browse)
    with _STEP_LOCK:
        html = _STEP_HTML.get(key)
        if html is not None:
            _STEP_HTML.move_to_end(key)
            return html
    rec = run.steps[k - 1] if k > 0 else None
    context = {
        "session": session,
        "run": run,
        "k": k,
        "n": run.n_steps,
        "rec": rec,
        "quiz": quiz,
        "show_table": show_table,
        "max_browse": max_browse,
        "table": None if run.unigram else replay.table(k),
        "removed": replay.removed(k) if run.unigram else [],
        "corpus": _corpus_window(replay, k),
        "compression": run.compression_at(k),
        "corpus_tokens": replay.text_tokens(k),  # the whole corpus as the run's tokenizer cuts it, as the lab shows
        "counting": how_training_counts(run),
        "chip_of": replay.chip,
    }
    html = Markup(request.app.state.jinja.get_template("_follow_step.html").render(context))
    with _STEP_LOCK:
        _STEP_HTML[key] = html
        while len(_STEP_HTML) > STEP_CACHE_SIZE:
            _STEP_HTML.popitem(last=False)
    return html


def _view(request: Request, lab: Lab, classroom: Classroom, session: Session, step: int | None, follower: str) -> dict:
    """What a follower sees: the class's step (``step`` None), or ``step`` when browsing on their own (in quiz mode
    never past the class's step: the next merge is the question)."""
    run = session_run(lab, session)
    replay = replay_for(run)
    state = classroom.last(session)
    class_k = min(state.get("step", 0), run.n_steps)
    quiz = bool(state.get("quiz")) and not run.unigram and not state.get("ended")
    n = run.n_steps
    k = class_k if step is None else max(0, min(step, class_k if quiz else n))
    choices = quiz_choices(replay, k) if quiz and k == class_k else []
    mine = classroom.my_vote(session, k, follower) if choices else None
    before = classroom.my_vote(session, k - 1, follower) if k > 0 and not run.unigram else None
    ids_then = {tuple(c["pair"]): c["ids"] for c in quiz_choices(replay, k - 1)} if before else {}
    rec = run.steps[k - 1] if k > 0 else None
    max_browse = class_k if quiz else n
    return {
        "session": session,
        "run": run,
        "k": k,
        "n": n,
        "class_k": class_k,
        "own": k != class_k,
        "quiz": quiz,
        "ended": bool(state.get("ended")),
        "seq": state.get("seq", 0),
        "rec": rec,
        "choices": choices,
        "mine": mine,
        "mine_ids": next((c["ids"] for c in choices if c["pair"] == mine), None),
        "predicted": before,
        "predicted_ids": ids_then.get(tuple(before)) if before else None,
        "right": before is not None and rec is not None and before == replay.pair_text(rec.pair),
        "actual": replay.pair_text(rec.pair) if rec is not None and not run.unigram else None,
        "chip_of": replay.chip,
        "step_html": _step_html(request, session, run, replay, k, quiz=quiz, show_table=not choices, max_browse=max_browse),
    }


def _follow_answer(request: Request, context: dict, follower: str, new: bool, status_code: int = 200) -> HTMLResponse:
    response = page_or_block(request, "follow.html", "view", context, status_code=status_code)
    if new:
        set_follower(response, follower)
    response.headers["Cache-Control"] = "no-store"
    return response


def _join_again(request: Request, exc: SessionError) -> HTMLResponse:
    """A code typed wrong (or tried too often): the join page again with the message, never a JSON error page."""
    context = {"join": True, "error": str(exc), "typed": normalize_code(request.path_params.get("code", ""))[:12]}
    response = page_or_block(request, "follow.html", "join", context, status_code=status_for(exc), headers=headers_for(exc))
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/follow/{code}")
async def follow_page(request: Request, code: str, lab: LabDep, classroom: ClassroomDep, step: Annotated[int | None, Query()] = None):
    try:
        session = await run_cpu(request, find_session, request, classroom, code)
    except (SessionNotFound, TooManyJoins) as exc:
        if is_htmx(request):
            raise
        return _join_again(request, exc)
    if session.code != code:  # typed in lower case, or with a space: the address shows the code as it is
        return RedirectResponse(follow_path(session.code), status_code=303)
    follower, new = follower_of(request)
    context = await run_cpu(request, _view, request, lab, classroom, session, step, follower)
    return _follow_answer(request, context, follower, new)


@router.get("/follow/{code}/class")
async def follow_class(request: Request, code: str, lab: LabDep, classroom: ClassroomDep):
    """The view at the class's step as it is now (what follow.js asks for when the teacher moves)."""
    session = await run_cpu(request, find_session, request, classroom, code)
    follower, new = follower_of(request)
    context = await run_cpu(request, _view, request, lab, classroom, session, None, follower)
    return _follow_answer(request, context, follower, new)


@router.post("/follow/{code}/vote")
async def follow_vote(
    request: Request,
    code: str,
    lab: LabDep,
    classroom: ClassroomDep,
    left: Annotated[str, Form(max_length=200)],
    right: Annotated[str, Form(max_length=200)],
    step: Annotated[int | None, Form()] = None,
):
    session = await run_cpu(request, find_session, request, classroom, code)
    follower, new = follower_of(request)

    def vote_and_view():
        replay = replay_for(session_run(lab, session))
        error = None
        try:
            choices = quiz_choices(replay, classroom.last(session).get("step", 0))
            classroom.vote(session, follower, [left, right], [c["pair"] for c in choices], step)
        except SessionError as exc:
            error = str(exc)
        return _view(request, lab, classroom, session, None, follower) | {"vote_error": error}

    context = await run_cpu(request, vote_and_view)
    return _follow_answer(request, context, follower, new, 409 if context["vote_error"] else 200)


# -- the teacher -------------------------------------------------------------------------------------------------
def _teacher_cookie(request: Request) -> tuple[str, str] | None:
    """The code and teacher token this browser's teacher cookie holds (it is scoped to one run's pages)."""
    raw = request.cookies.get(TEACHER_COOKIE, "")
    code, _, token = raw.partition(".")
    return (code, token) if code and token else None


def _panel_context(request: Request, settings: Settings, classroom: Classroom, run: Run, session: Session | None, token: str | None) -> dict:
    if session is None:
        return {"run": run, "session": None}
    url = follow_url(request, settings, session.code)
    return {
        "run": run,
        "session": session,
        "token": token,
        "url": url,
        "join_url": url.rsplit("/", 1)[0],
        "qr": qr_svg(url),
    } | _live_context(classroom, run, session)


def _live_context(classroom: Classroom, run: Run, session: Session) -> dict:
    replay = replay_for(run)
    state = classroom.state(session)
    k = state["step"]
    shown = reveal(classroom, session, replay, k)
    if shown is not None:
        shown["votes"] = with_ids(shown["votes"], replay, k - 1)
        shown["ids"] = list(run.steps[k - 1].pair)
    return {
        "run": run,
        "session": session,
        "live": state,
        "k": k,
        "tally": with_ids(state["votes"], replay, k),
        "reveal": shown,
        "chip_of": replay.chip,
    }


def _own_session(request: Request, classroom: Classroom, run: Run) -> tuple[Session, str] | None:
    """The live session of this run whose code and token this browser's teacher cookie holds."""
    found = _teacher_cookie(request)
    if found is None:
        return None
    code, token = found
    session = classroom.store.get(code)
    if session is None or session.run_id != run.id or not session.is_teacher(token):
        return None
    if classroom.last(session).get("ended"):
        return None
    return session, token


def _panel(request: Request, context: dict) -> HTMLResponse:
    response = page_or_block(request, "_share.html", "share", context)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.post("/lab/runs/{run_id}/share")
def share_start(request: Request, run: DoneRunDep, classroom: ClassroomDep, settings: SettingsDep, step: Annotated[int, Form()] = 0):
    session, token = classroom.start(run)
    if 0 < step <= run.n_steps:
        classroom.set_step(session, step)
    if is_htmx(request):
        response = _panel(request, _panel_context(request, settings, classroom, run, session, token))
    else:  # a plain form post: back to the run's page, which finds the panel through the cookie
        response = RedirectResponse(f"/lab/runs/{run.id}?step={step}", status_code=303)
    response.set_cookie(
        TEACHER_COOKIE, f"{session.code}.{token}", max_age=int(classroom.ttl), path=f"/lab/runs/{run.id}",
        samesite="strict", httponly=True,
    )
    return response


@router.get("/lab/runs/{run_id}/share")
def share_panel(request: Request, run: DoneRunDep, classroom: ClassroomDep, settings: SettingsDep):
    own = _own_session(request, classroom, run)
    session, token = own if own else (None, None)
    return _panel(request, _panel_context(request, settings, classroom, run, session, token))


@router.get("/lab/runs/{run_id}/share/live")
def share_live(request: Request, run: DoneRunDep, classroom: ClassroomDep):
    own = _own_session(request, classroom, run)
    context = _live_context(classroom, run, own[0]) if own else {"run": run, "session": None, "gone": True}
    response = page_or_block(request, "_share.html", "live", context)
    response.headers["Cache-Control"] = "no-store"
    return response


def _teacher_session(request: Request, classroom: Classroom, run: Run, code: str) -> Session:
    session = find_session(request, classroom, code)
    if session.run_id != run.id:
        raise SessionNotFound(code)
    classroom.authorize(session, request.headers.get("authorization"))
    return session


@router.post("/lab/runs/{run_id}/share/{code}/quiz")
def share_quiz(request: Request, run: DoneRunDep, classroom: ClassroomDep, settings: SettingsDep, code: str, on: Annotated[str, Form()] = ""):
    session = _teacher_session(request, classroom, run, code)
    classroom.set_quiz(session, on in ("1", "true", "on"))
    token = bearer_token(request.headers.get("authorization"))
    return _panel(request, _panel_context(request, settings, classroom, run, session, token))


@router.post("/lab/runs/{run_id}/share/{code}/end")
def share_end(request: Request, run: DoneRunDep, classroom: ClassroomDep, settings: SettingsDep, code: str):
    session = _teacher_session(request, classroom, run, code)
    classroom.end(session)
    response = _panel(request, _panel_context(request, settings, classroom, run, None, None))
    response.delete_cookie(TEACHER_COOKIE, path=f"/lab/runs/{run.id}")
    return response
