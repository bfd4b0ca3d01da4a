"""A class following the teacher: the students' ``/follow`` pages (the teacher's share panel is :mod:`.share`).

- ``GET /follow`` a box to type the code in (``?code=`` goes to the session);
- ``GET /follow/{code}[?step=k]`` the run at the class's step (or at step k, browsing on one's own): the merge,
  the corpus as coloured tokens, the pair table and, in quiz mode, the pairs to predict the next merge from;
  block ``view`` for htmx. It sets the browser's ``tp_follower`` cookie (who voted, who follows);
  ``static/follow.js`` listens to ``/api/sessions/{code}/events`` and asks for the view again when the teacher
  moves (``GET /follow/{code}/class``: the class's step, whatever it is by then);
- ``POST /follow/{code}/vote`` a prediction (form ``left``, ``right``, ``step``), answered with the view; it counts
  only from a browser these pages gave its id to, and only so many per address (:mod:`app.classroom.sessions`).

Every page and the session API (:mod:`app.web.api.sessions`) call the same
:class:`~app.classroom.service.Classroom`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from markupsafe import Markup

from app.classroom.quiz import question, quiz_choices, score_reveal
from app.classroom.service import Classroom
from app.classroom.sessions import Session, SessionError, SessionNotFound, TooManyJoins, normalize_code
from app.lab.replay import replay_for
from app.lab.runs import Run
from app.lab.service import Lab

from ..cookies import follower_of, set_follower
from ..deps import ClassroomDep, LabDep, client_of, find_session, run_cpu
from ..errors import headers_for, status_for
from ..render import is_htmx, page_or_block
from ..rendering.lab_step import corpus_window
from ..rendering.links import follow_path

router = APIRouter(include_in_schema=False)


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
        "corpus": corpus_window(replay, k),
        "compression": run.bytes_per_token(replay.text_tokens(k)),  # the lab's basis: bytes per token of the count
        "corpus_tokens": replay.text_tokens(k),  # the whole corpus as the run's tokenizer cuts it, as the lab shows
        "score": score_reveal(replay, k),  # WordPiece: the merge's score in numbers
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
    run = classroom.run_of(lab, session)
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
        "question": question(run),
        "nickname": classroom.nickname_of(session, follower),
        "mine": mine,
        "mine_ids": next((c["ids"] for c in choices if c["pair"] == mine), None),
        "predicted": before,
        "predicted_ids": ids_then.get(tuple(before)) if before else None,
        "right": before is not None and rec is not None and before == replay.pair_text(rec.pair),
        "actual": replay.pair_text(rec.pair) if rec is not None and not run.unigram else None,
        "chip_of": replay.chip,
        "step_html": _step_html(request, session, run, replay, k, quiz=quiz, show_table=not choices, max_browse=max_browse),
    }


def _joined_view(request: Request, lab: Lab, classroom: Classroom, session: Session, step: int | None,
                 follower: str) -> dict:
    """:func:`_view`, once ``follower`` is one of the class (the id this page gives the browser: its votes count)."""
    classroom.join(session, follower)
    return _view(request, lab, classroom, session, step, follower)


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
    context = await run_cpu(request, _joined_view, request, lab, classroom, session, step, follower)
    return _follow_answer(request, context, follower, new)


@router.get("/follow/{code}/class")
async def follow_class(request: Request, code: str, lab: LabDep, classroom: ClassroomDep):
    """The view at the class's step as it is now (what follow.js asks for when the teacher moves)."""
    session = await run_cpu(request, find_session, request, classroom, code)
    follower, new = follower_of(request)
    context = await run_cpu(request, _joined_view, request, lab, classroom, session, None, follower)
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
        error, status, headers = None, 200, {}
        try:
            classroom.predict(lab, session, follower, [left, right], step, client_of(request))
        except SessionError as exc:
            error, status, headers = str(exc), status_for(exc), headers_for(exc)
        return _view(request, lab, classroom, session, None, follower) | {"vote_error": error}, status, headers

    context, status, headers = await run_cpu(request, vote_and_view)
    response = _follow_answer(request, context, follower, new, status)
    response.headers.update(headers)
    return response


@router.post("/follow/{code}/name")
async def follow_name(
    request: Request, code: str, lab: LabDep, classroom: ClassroomDep,
    nickname: Annotated[str, Form(max_length=200)] = "",
):
    """A student's nickname (optional) for the teacher's scoreboard: block ``name`` again (a form sent without htmx:
    the whole page), saying what was kept, or why not (422)."""
    session = await run_cpu(request, find_session, request, classroom, code)
    follower, new = follower_of(request)
    error, status = None, 200
    try:
        await run_cpu(request, classroom.set_nickname, session, follower, nickname)
    except SessionError as exc:
        error, status = str(exc), status_for(exc)
    said = {"nickname": classroom.nickname_of(session, follower) if error is None else nickname,
            "name_error": error, "name_saved": error is None}
    if is_htmx(request):
        response = page_or_block(request, "follow.html", "name", {"session": session} | said, status_code=status)
        if new:
            set_follower(response, follower)
        return response
    context = await run_cpu(request, _view, request, lab, classroom, session, None, follower)
    return _follow_answer(request, context | said, follower, new, status)

