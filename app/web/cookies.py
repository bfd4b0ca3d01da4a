"""Every cookie the app keeps in a browser, read and written in one place (the services get the ids they list):

- ``tp_lab``: the lab runs this browser put in the playground ("use in playground"), their ids;
- ``tp_tok``: the tokenizer files this browser brought ("Add a tokenizer…"), their ids;
- ``tp_follower``: who this browser is in a class (who voted, who follows);
- ``tp_teacher``: the code and teacher token of the class a teacher shares, scoped to that run's pages;
- ``tp_measure``: the measurements this browser started on the measure page, their ids.

A list cookie holds up to :data:`MAX_IDS` hex ids joined by ``.``, the most recent last.
"""

from __future__ import annotations

from fastapi import Request
from starlette.responses import Response

from app.classroom.sessions import new_follower, valid_follower

LAB_COOKIE = "tp_lab"
UPLOAD_COOKIE = "tp_tok"
FOLLOWER_COOKIE = "tp_follower"
TEACHER_COOKIE = "tp_teacher"
MEASURE_COOKIE = "tp_measure"
MAX_IDS = 20
#: How long a list cookie is kept (seconds).
LIST_AGE = 30 * 86400


def cookie_ids(cookie_value: str | None) -> list[str]:
    """The ids a list cookie holds, in order, without duplicates or anything that is not a short hex id.

    >>> cookie_ids("ab12.zz.ab12.c3"), cookie_ids(None)
    (['ab12', 'c3'], [])
    """
    if not cookie_value:
        return []
    out = []
    for part in cookie_value.split("."):
        if part and all(c in "0123456789abcdef" for c in part) and len(part) <= 32 and part not in out:
            out.append(part)
    return out[-MAX_IDS:]


def cookie_with(cookie_value: str | None, new_id: str) -> str:
    """The list cookie's value with ``new_id`` added last (moved there when it was listed already).

    >>> cookie_with("ab.cd", "ab")
    'cd.ab'
    """
    ids = [i for i in cookie_ids(cookie_value) if i != new_id] + [new_id]
    return ".".join(ids[-MAX_IDS:])


def lab_run_ids(request: Request) -> list[str]:
    return cookie_ids(request.cookies.get(LAB_COOKIE))


def upload_ids(request: Request) -> list[str]:
    return cookie_ids(request.cookies.get(UPLOAD_COOKIE))


def _add_to_list(request: Request, response: Response, name: str, new_id: str) -> Response:
    value = cookie_with(request.cookies.get(name), new_id)
    response.set_cookie(name, value, max_age=LIST_AGE, samesite="lax", httponly=True)
    return response


def remember_run(request: Request, response: Response, run_id: str) -> Response:
    """Add a lab run's tokenizer to this browser's pickers ("use in playground")."""
    return _add_to_list(request, response, LAB_COOKIE, run_id)


def remember_upload(request: Request, response: Response, upload_id: str) -> Response:
    """Add an uploaded tokenizer to the ones this browser brought."""
    return _add_to_list(request, response, UPLOAD_COOKIE, upload_id)


def measurement_ids(request: Request) -> list[str]:
    return cookie_ids(request.cookies.get(MEASURE_COOKIE))


def remember_measurement(request: Request, response: Response, measurement_id: str) -> Response:
    """Add a measurement to the ones this browser started (the measure page lists them)."""
    return _add_to_list(request, response, MEASURE_COOKIE, measurement_id)


def follower_of(request: Request) -> tuple[str, bool]:
    """This browser's follower id, and whether it is new (then the answer sets it: :func:`set_follower`)."""
    follower = request.cookies.get(FOLLOWER_COOKIE)
    return (follower, False) if valid_follower(follower) else (new_follower(), True)


def set_follower(response: Response, follower: str) -> None:
    response.set_cookie(FOLLOWER_COOKIE, follower, max_age=86400, samesite="lax", httponly=True)


def teacher_of(request: Request) -> tuple[str, str] | None:
    """The code and teacher token this browser's teacher cookie holds (it is scoped to one run's pages)."""
    raw = request.cookies.get(TEACHER_COOKIE, "")
    code, _, token = raw.partition(".")
    return (code, token) if code and token else None


def set_teacher(response: Response, run_id: str, code: str, token: str, max_age: int) -> None:
    response.set_cookie(
        TEACHER_COOKIE, f"{code}.{token}", max_age=max_age, path=f"/lab/runs/{run_id}", samesite="strict",
        httponly=True,
    )


def forget_teacher(response: Response, run_id: str) -> None:
    response.delete_cookie(TEACHER_COOKIE, path=f"/lab/runs/{run_id}")
