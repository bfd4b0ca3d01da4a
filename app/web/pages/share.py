"""The teacher's "Share with the class" panel on a lab run's page (``templates/_share.html``, ``static/share.js``).

- ``POST /lab/runs/{id}/share`` starts a session at the page's step and answers the share panel: code, link, QR
  code (SVG drawn here by ``segno``), followers, quiz toggle, tally, reveal. The teacher token goes to the panel
  (``hx-headers``: htmx sends it as ``Authorization: Bearer`` with the panel's actions; ``static/share.js`` adds
  it to each step the run's page asks for, which moves the class: :func:`app.web.pages.lab.lab_run`) and to a
  cookie scoped to the run's pages, so a reload finds the panel again (``GET /lab/runs/{id}/share``);
- ``GET .../share/live`` the part of the panel that changes (polled every second); ``POST .../share/quiz``,
  ``POST .../share/end`` need the bearer token, never the cookie alone.

The students' pages are :mod:`.follow`; both call :class:`~app.classroom.service.Classroom`, as the session API
(:mod:`app.web.api.sessions`) does.
"""

from __future__ import annotations

from typing import Annotated

import segno
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from markupsafe import Markup

from app.classroom.quiz import UNIGRAM_OFF, question, score_reveal, with_ids
from app.classroom.service import Classroom
from app.classroom.sessions import Session, SessionNotFound, bearer_token
from app.lab.replay import replay_for
from app.lab.runs import Run
from app.settings import Settings

from ..cookies import forget_teacher, set_teacher, teacher_of
from ..deps import ClassroomDep, DoneRunDep, SettingsDep, class_reach, find_session
from ..render import is_htmx, page_or_block
from ..rendering.links import follow_url, run_url

router = APIRouter(include_in_schema=False)


def qr_svg(url: str) -> Markup:
    """The link as a QR code, an inline SVG (dark modules on white in both themes: scanners need that)."""
    svg = segno.make(url, error="m").svg_inline(
        scale=1, border=2, dark="#000", light="#fff", omitsize=True, svgclass="qr-code", lineclass=None,
        title=f"QR code of {url}",
    )
    return Markup(svg)


def _panel_context(
    request: Request, settings: Settings, classroom: Classroom, run: Run, session: Session | None, token: str | None
) -> dict:
    where = class_reach(request, settings)
    if session is None:
        return {"run": run, "session": None, "warning": where.warning}
    url = follow_url(where.base, session.code)
    return {
        "run": run,
        "session": session,
        "token": token,
        "url": url,
        "join_url": url.rsplit("/", 1)[0],
        "other_urls": [follow_url(base, session.code) for base in where.bases[1:]],
        "warning": where.warning,
        "question": question(run),
        "quiz_off": None if session.quiz_possible else UNIGRAM_OFF[0].upper() + UNIGRAM_OFF[1:] + ".",
        "qr": qr_svg(url),
    } | _live_context(classroom, run, session)


def _live_context(classroom: Classroom, run: Run, session: Session) -> dict:
    replay = replay_for(run)
    state = classroom.state(session)
    k = state["step"]
    shown = classroom.reveal(session, replay, k)
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
        "scoreboard": classroom.scoreboard(run, session),
        "score": score_reveal(replay, k) if shown is not None else None,
        "chip_of": replay.chip,
    }


def _own_session(request: Request, classroom: Classroom, run: Run) -> tuple[Session, str] | None:
    """The live session of this run whose code and token this browser's teacher cookie holds."""
    found = teacher_of(request)
    if found is None:
        return None
    code, token = found
    session = classroom.own_session(run, code, token)
    return (session, token) if session is not None else None


def _panel(request: Request, context: dict) -> HTMLResponse:
    response = page_or_block(request, "_share.html", "share", context)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.post("/lab/runs/{run_id}/share")
def share_start(
    request: Request, run: DoneRunDep, classroom: ClassroomDep, settings: SettingsDep, step: Annotated[int, Form()] = 0
):
    session, token = classroom.start(run)
    if 0 < step <= run.n_steps:
        classroom.set_step(session, step)
    if is_htmx(request):
        response = _panel(request, _panel_context(request, settings, classroom, run, session, token))
    else:  # a plain form post: back to the run's page, which finds the panel through the cookie
        response = RedirectResponse(run_url(run.id, step), status_code=303)
    set_teacher(response, run.id, session.code, token, int(classroom.ttl))
    return response


@router.get("/lab/runs/{run_id}/share")
def share_panel(request: Request, run: DoneRunDep, classroom: ClassroomDep, settings: SettingsDep):
    if not is_htmx(request):  # the panel alone is no page: the run's page, which loads it
        return RedirectResponse(run_url(run.id), status_code=303)
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
def share_quiz(
    request: Request, run: DoneRunDep, classroom: ClassroomDep, settings: SettingsDep, code: str,
    on: Annotated[str, Form()] = "",
):
    session = _teacher_session(request, classroom, run, code)
    classroom.set_quiz(session, on in ("1", "true", "on"))
    token = bearer_token(request.headers.get("authorization"))
    return _panel(request, _panel_context(request, settings, classroom, run, session, token))


@router.post("/lab/runs/{run_id}/share/{code}/end")
def share_end(request: Request, run: DoneRunDep, classroom: ClassroomDep, settings: SettingsDep, code: str):
    session = _teacher_session(request, classroom, run, code)
    classroom.end(session)
    response = _panel(request, _panel_context(request, settings, classroom, run, None, None))
    forget_teacher(response, run.id)
    return response
