"""The BPE lab: ``/lab`` pages (htmx) and the ``/api/train`` JSON API, over :mod:`app.lab`.

Training runs in the lab's worker pool, never on the event loop; every handler here is a plain ``def`` (run in
FastAPI's thread pool) and only reads stored step records, so stepping never trains again. Sizes are checked
here, at the HTTP boundary: corpus characters (413), merges / vocab size (422), a full queue (429 with
``Retry-After``).
"""

from __future__ import annotations

import threading
from typing import Annotated, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from markupsafe import escape
from pydantic import BaseModel, Field, model_validator

from app.engines.errors import TokenplayError
from app.lab import export as lab_export
from app.lab.algorithms import (
    ALGORITHM_LABELS,
    PATTERN_LABELS,
    LabOptionsError,
    Options,
)
from app.lab.examples import EXAMPLES
from app.lab.jobs import QueueFull
from app.lab.runs import Run
from app.lab.service import Lab
from app.lab.tokenizers import COOKIE, PREFIX, cookie_with, register_run
from app.lab.views import MAX_ENCODE_CHARS, view_for

from .errors import TooLargeError
from .render import is_htmx, page_or_block

router = APIRouter(tags=["lab"])
api = APIRouter(prefix="/api/train", tags=["lab"])

#: How long POST /api/train and the form wait for a small run to finish before answering "running".
QUICK_WAIT = 0.5
#: Merges listed on the step view (the latest ones; the export has them all).
MERGE_LIST = 100
_LAB_LOCK = threading.Lock()


def get_lab(request: Request) -> Lab:
    lab = getattr(request.app.state, "lab", None)
    if lab is None:
        with _LAB_LOCK:
            lab = getattr(request.app.state, "lab", None)
            if lab is None:
                lab = request.app.state.lab = Lab.from_settings(request.app.state.settings)
    return lab


def _run_or_404(lab: Lab, run_id: str) -> Run:
    run = lab.get(run_id)
    if run is None:
        raise _Http(404, f"no lab run with id {run_id!r}; train one at /lab")
    return run


class _Http(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        self.status, self.message, self.headers = status, message, headers or {}


def _error(request: Request, status: int, message: str, headers: dict | None = None) -> Response:
    if is_htmx(request):
        html = f'<div class="error" role="alert">{escape(message)}</div>'
        return HTMLResponse(html, status_code=status, headers={"Vary": "HX-Request"} | (headers or {}))
    return JSONResponse({"detail": message}, status_code=status, headers=headers)


def _guard(request: Request, fn):
    """Run ``fn()`` and turn lab errors into answers: 404, 413, 422, 429 (with ``Retry-After``)."""
    try:
        return fn()
    except _Http as exc:
        return _error(request, exc.status, exc.message, exc.headers)
    except QueueFull as exc:
        return _error(request, 429, str(exc), {"Retry-After": str(exc.retry_after)})
    except TooLargeError as exc:
        return _error(request, 413, str(exc))
    except TokenplayError as exc:
        return _error(request, 422, str(exc))


def _check_corpus_size(lab: Lab, corpus: str) -> None:
    if len(corpus) > lab.max_corpus_chars:
        raise TooLargeError(
            f"the corpus is {len(corpus):,} characters; the lab trains on at most {lab.max_corpus_chars:,} "
            "(set TOKENPLAY_LAB_MAX_CORPUS_CHARS to change it)"
        )


def _check_step(run: Run, k: int) -> int:
    if run.status != "done":
        raise _Http(409, f"run {run.id} is {run.status}; steps are available when it is done")
    if not 0 <= k <= run.n_steps:
        raise _Http(404, f"step {k} is out of range: run {run.id} has steps 0..{run.n_steps}")
    return k


# -- JSON API -------------------------------------------------------------------------------------------------


class TrainRequest(BaseModel):
    corpus: str = Field(description="the text to train on")
    algorithm: Literal["byte", "char", "sentencepiece"] = "byte"
    pattern: Literal["none", "whitespace", "gpt2", "gpt4"] = "gpt2"
    vocab_size: int | None = Field(None, ge=1, description="target vocabulary size (base vocabulary + merges)")
    merges: int | None = Field(None, ge=0, description="number of merges (give this or vocab_size)")
    tie_break: Literal["first", "lexical"] = "first"
    end_of_word: bool = Field(False, description="append </w> to every word (character-level BPE only)")

    @model_validator(mode="after")
    def _one_size(self):
        if self.vocab_size is None and self.merges is None:
            self.merges = 10
        return self


class EncodeRequest(BaseModel):
    text: str = Field(max_length=MAX_ENCODE_CHARS, description=f"at most {MAX_ENCODE_CHARS} characters")
    step: int | None = Field(None, ge=0, description="use the merges up to this step (default: all)")


class MergeRequest(BaseModel):
    pair: list[int | str] = Field(min_length=2, max_length=2, description="two token ids, or two token texts")


def _options(body: TrainRequest) -> Options:
    return Options(body.algorithm, body.pattern, body.merges, body.vocab_size, body.tie_break, body.end_of_word)


def _summary(run: Run) -> dict:
    return run.summary() | {"url": f"/lab/runs/{run.id}"}


@api.post("", summary="Start training a lab run (answers at once: status running or done)")
def api_train(request: Request, body: TrainRequest):
    def go():
        lab = get_lab(request)
        _check_corpus_size(lab, body.corpus)
        run = lab.start(body.corpus, _options(body), wait=QUICK_WAIT)
        if run.status == "error":
            raise _Http(422, run.error or "training failed")
        return JSONResponse(_summary(run), status_code=200 if run.finished else 202)

    return _guard(request, go)


@api.get("/{run_id}", summary="A run's summary and its merge records")
def api_run(request: Request, run_id: str):
    def go():
        run = _run_or_404(get_lab(request), run_id)
        out = _summary(run)
        if run.status == "done":
            v = view_for(run)
            out["steps"] = [s.to_dict() | {"pair_text": v.pair_text(s.pair)} for s in run.steps]
        return out

    return _guard(request, go)


@api.get("/{run_id}/steps/{k}", summary="The state after merge k")
def api_step(request: Request, run_id: str, k: int):
    def go():
        run = _run_or_404(get_lab(request), run_id)
        _check_step(run, k)
        return view_for(run).state(k) | {"id": run.id}

    return _guard(request, go)


def _pair_ids(run: Run, k: int, pair: list) -> tuple[int, int]:
    v = view_for(run)
    known = set(run.base) | {s.new_id for s in run.steps[:k]}
    out = []
    for item in pair:
        if isinstance(item, int):
            if item not in known:
                raise LabOptionsError(f"token id {item} does not exist after {k} merges")
            out.append(item)
        else:
            ids = [i for i in known if v.text[i] == item]
            if not ids:
                raise LabOptionsError(f"no token with text {item!r} exists after {k} merges")
            out.append(min(ids))
    return out[0], out[1]


@api.post("/{run_id}/steps/{k}/merge", summary="Manual mode: keep merges 1..k, force a pair as merge k+1, go on")
def api_merge(request: Request, run_id: str, k: int, body: MergeRequest):
    def go():
        lab = get_lab(request)
        run = _run_or_404(lab, run_id)
        _check_step(run, k)
        new = lab.continue_with(run, k, _pair_ids(run, k, body.pair), wait=QUICK_WAIT)
        if new.status == "error":
            raise _Http(422, new.error or "training failed")
        return JSONResponse(_summary(new) | {"step": k + 1}, status_code=200 if new.finished else 202)

    return _guard(request, go)


@api.post("/{run_id}/encode", summary="Apply the merges up to a step to a new text, merge by merge")
def api_encode(request: Request, run_id: str, body: EncodeRequest):
    def go():
        run = _run_or_404(get_lab(request), run_id)
        k = run.n_steps if body.step is None else body.step
        _check_step(run, k)
        return view_for(run).encode_trace(body.text, k)

    return _guard(request, go)


@api.post("/{run_id}/cancel", summary="Cancel a queued or running training")
def api_cancel(request: Request, run_id: str):
    def go():
        lab = get_lab(request)
        run = _run_or_404(lab, run_id)
        cancelled = lab.cancel(run_id)
        if cancelled:
            lab.pool.wait(run_id, 2.0)
        return _summary(run) | {"cancel_requested": cancelled}

    return _guard(request, go)


@api.get("/{run_id}/export", summary="Download merges and vocabulary: json, tiktoken (byte-level) or model")
def api_export(request: Request, run_id: str, format: Literal["json", "tiktoken", "model"] = "json"):
    return _guard(request, lambda: _export(request, run_id, format))


@api.post("/{run_id}/use", summary="Use the trained tokenizer in the playground (for this browser)")
def api_use(request: Request, run_id: str):
    def go():
        run = _run_or_404(get_lab(request), run_id)
        _check_step(run, 0)
        spec = register_run(run, request.app.state.settings.lab_max_runs)
        resp = JSONResponse({"tokenizer": spec.name, "label": spec.label, "playground": f"/?tokenizer={spec.name}"})
        _set_cookie(request, resp, run.id)
        return resp

    return _guard(request, go)


def _set_cookie(request: Request, resp: Response, run_id: str) -> None:
    resp.set_cookie(COOKIE, cookie_with(request.cookies.get(COOKIE), run_id), max_age=30 * 86400, samesite="lax", httponly=True)


def _export(request: Request, run_id: str, fmt: str) -> Response:
    run = _run_or_404(get_lab(request), run_id)
    _check_step(run, 0)
    body, media, ext = lab_export.export(run, fmt)
    headers = {"Content-Disposition": f'attachment; filename="lab-{run.id}.{ext}"'}
    return Response(body, media_type=media, headers=headers)


# -- pages ------------------------------------------------------------------------------------------------------


def _ctx(request: Request, **kw) -> dict:
    lab = get_lab(request)
    return {
        "algorithms": ALGORITHM_LABELS,
        "patterns": PATTERN_LABELS,
        "examples": EXAMPLES,
        "max_corpus_chars": lab.max_corpus_chars,
        "max_merges": lab.max_merges,
        "present": request.query_params.get("present") == "1",
    } | kw


@router.get("/lab", include_in_schema=False)
def lab_page(request: Request, example: str | None = None):
    form = {"corpus": "", "algorithm": "byte", "pattern": "none", "size_kind": "merges", "size": 3, "tie_break": "first", "end_of_word": False}
    if example in EXAMPLES:
        form |= EXAMPLES[example]["form"] | {"example": example}
    return page_or_block(request, "lab.html", "setup", _ctx(request, form=form, error=None))


@router.post("/lab/train", include_in_schema=False)
async def lab_train(request: Request):
    """The setup form (pasted corpus or uploaded file). The form is parsed here with the lab's own size limit
    (Starlette's default stops form fields at 1 MB); training starts in the worker pool, off the event loop."""
    lab = get_lab(request)
    limit = lab.max_corpus_chars * 4 + 1024  # UTF-8 bytes of the largest accepted corpus
    try:
        data = await request.form(max_files=1, max_fields=20, max_part_size=limit)
    except Exception as exc:  # noqa: BLE001 - Starlette's MultiPartException and friends
        empty = {"corpus": "", "algorithm": "byte", "pattern": "gpt2", "size_kind": "merges", "size": 10,
                 "tie_break": "first", "end_of_word": False}
        message = f"the form could not be read ({exc}); the lab takes a corpus of at most {lab.max_corpus_chars:,} characters"
        return page_or_block(request, "lab.html", "setup", _ctx(request, form=empty, error=message), status_code=413)
    file = data.get("file")
    raw = None
    filename = None
    if file is not None and not isinstance(file, str) and file.filename:
        filename = file.filename
        raw = await file.read(limit + 1)
    fields = {k: data.get(k) for k in ("corpus", "algorithm", "pattern", "size_kind", "size", "tie_break", "end_of_word")}
    return await run_in_threadpool(_start_from_form, request, lab, fields, raw, filename, limit)


def _start_from_form(request: Request, lab: Lab, fields: dict, raw: bytes | None, filename: str | None, limit: int):
    def get(key: str, default: str) -> str:
        v = fields.get(key)
        return v if isinstance(v, str) else default

    corpus, algorithm, pattern = get("corpus", ""), get("algorithm", "byte"), get("pattern", "gpt2")
    size_kind, size, tie_break = get("size_kind", "merges"), get("size", "10"), get("tie_break", "first")
    end_of_word = bool(fields.get("end_of_word"))
    form = {"corpus": corpus, "algorithm": algorithm, "pattern": pattern, "size_kind": size_kind, "size": size,
            "tie_break": tie_break, "end_of_word": end_of_word}

    def fail(status: int, message: str, headers: dict | None = None):
        return page_or_block(request, "lab.html", "setup", _ctx(request, form=form, error=message), status_code=status, headers=headers)

    text = corpus
    if raw is not None:
        if len(raw) > limit:
            return fail(413, f"the file is larger than the lab's limit of {lab.max_corpus_chars:,} characters")
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            return fail(422, f"{filename} is not UTF-8 text; save it as UTF-8 and upload it again")
        form["corpus"] = text[:20_000]
    if len(text) > lab.max_corpus_chars:
        return fail(413, f"the corpus is {len(text):,} characters; the lab trains on at most {lab.max_corpus_chars:,}")
    try:
        n = int(size)
    except ValueError:
        return fail(422, f"the number of {'merges' if size_kind == 'merges' else 'tokens'} must be a whole number")
    opts = Options(
        algorithm,
        pattern,
        n if size_kind != "vocab_size" else None,
        n if size_kind == "vocab_size" else None,
        tie_break,
        end_of_word and algorithm == "char",
    )
    try:
        run = lab.start(text, opts, wait=QUICK_WAIT)
    except QueueFull as exc:
        return fail(429, str(exc), {"Retry-After": str(exc.retry_after)})
    except TokenplayError as exc:
        return fail(422, str(exc))
    if run.status == "error":
        return fail(422, run.error or "training failed")
    return _to_run(request, run)


def _run_url(run: Run, step: int | None = None, present: bool = False) -> str:
    q = {}
    if step is not None:
        q["step"] = step
    if present:
        q["present"] = 1
    return f"/lab/runs/{run.id}" + (f"?{urlencode(q)}" if q else "")


def _to_run(request: Request, run: Run, step: int | None = None) -> Response:
    url = _run_url(run, step, request.query_params.get("present") == "1")
    if is_htmx(request):
        if run.finished:
            return HTMLResponse("", headers={"HX-Redirect": url})
        return page_or_block(request, "lab_run.html", "progress", _ctx(request, run=run, next_step=step), headers={"HX-Push-Url": _run_url(run)})
    return RedirectResponse(url, status_code=303)


@router.get("/lab/runs/{run_id}", include_in_schema=False)
def lab_run(request: Request, run_id: str, step: Annotated[int | None, Query()] = None):
    lab = get_lab(request)
    run = lab.get(run_id)
    if run is None:
        return page_or_block(request, "lab.html", "setup", _ctx(request, form={"corpus": "", "algorithm": "byte", "pattern": "none", "size_kind": "merges", "size": 3, "tie_break": "first", "end_of_word": False}, error=f"no lab run with id {run_id!r}; train a new one"), status_code=404)
    if run.status != "done":
        return page_or_block(request, "lab_run.html", "progress", _ctx(request, run=run, next_step=step, progress_only=True))
    k = run.n_steps if step is None else max(0, min(step, run.n_steps))
    return page_or_block(request, "lab_run.html", "step", _step_ctx(request, run, k))


def _step_ctx(request: Request, run: Run, k: int) -> dict:
    v = view_for(run)
    state = v.state(k)
    rec = run.steps[k - 1] if k > 0 else None
    table = v.table(k)
    pieces = v.corpus_at(k)
    return _ctx(
        request,
        run=run,
        k=k,
        n=run.n_steps,
        state=state,
        rec=rec,
        table=table,
        pieces=pieces,
        chart=lab_export.chart(run, k),
        merges=[(i + 1, v.pair_text(s.pair), v.token_text(s.new_id), s.forced) for i, s in enumerate(run.steps[max(0, k - MERGE_LIST):k], start=max(0, k - MERGE_LIST))],
        merges_hidden=max(0, k - MERGE_LIST),
        url=lambda step: _run_url(run, step),
        manual_after=max(k - 1, 0),
        is_playground=f"{PREFIX}{run.id}",
    )


@router.get("/lab/runs/{run_id}/progress", include_in_schema=False)
def lab_progress(request: Request, run_id: str, step: int | None = None):
    lab = get_lab(request)
    run = lab.get(run_id)
    if run is None:
        return _error(request, 404, f"no lab run with id {run_id!r}")
    if run.status == "done":
        return HTMLResponse("", headers={"HX-Redirect": _run_url(run, step)})
    return page_or_block(request, "lab_run.html", "progress", _ctx(request, run=run, next_step=step))


@router.post("/lab/runs/{run_id}/cancel", include_in_schema=False)
def lab_cancel(request: Request, run_id: str):
    lab = get_lab(request)
    run = lab.get(run_id)
    if run is None:
        return _error(request, 404, f"no lab run with id {run_id!r}")
    if lab.cancel(run_id):
        lab.pool.wait(run_id, 2.0)
    return page_or_block(request, "lab_run.html", "progress", _ctx(request, run=run, next_step=None))


@router.post("/lab/runs/{run_id}/merge", include_in_schema=False)
def lab_merge(
    request: Request,
    run_id: str,
    after: Annotated[int, Form()],
    left: Annotated[int, Form()],
    right: Annotated[int, Form()],
):
    def go():
        lab = get_lab(request)
        run = _run_or_404(lab, run_id)
        _check_step(run, after)
        pair = _pair_ids(run, after, [left, right])
        new = lab.continue_with(run, after, pair, wait=QUICK_WAIT)
        if new.status == "error":
            raise _Http(422, new.error or "training failed")
        return _to_run(request, new, after + 1)

    return _guard(request, go)


@router.post("/lab/runs/{run_id}/encode", include_in_schema=False)
def lab_encode(request: Request, run_id: str, text: Annotated[str, Form()] = "", step: Annotated[int | None, Form()] = None):
    def go():
        run = _run_or_404(get_lab(request), run_id)
        k = run.n_steps if step is None else step
        _check_step(run, k)
        if len(text) > MAX_ENCODE_CHARS:
            raise TooLargeError(f"the text is {len(text):,} characters; encode traces take at most {MAX_ENCODE_CHARS:,}")
        trace = view_for(run).encode_trace(text, k)
        return page_or_block(request, "lab_parts.html", "trace", _ctx(request, part="trace", run=run, trace=trace, k=k))

    return _guard(request, go)


@router.get("/lab/runs/{run_id}/vocab", include_in_schema=False)
def lab_vocab(request: Request, run_id: str, q: str = "", step: int | None = None):
    def go():
        run = _run_or_404(get_lab(request), run_id)
        k = run.n_steps if step is None else step
        _check_step(run, k)
        entries, total = view_for(run).vocab_entries(k, q[:100])
        return page_or_block(request, "lab_parts.html", "vocab", _ctx(request, part="vocab", run=run, entries=entries, total=total, q=q, k=k))

    return _guard(request, go)


@router.get("/lab/runs/{run_id}/tree/{token_id}", include_in_schema=False)
def lab_tree(request: Request, run_id: str, token_id: int, step: int | None = None):
    def go():
        run = _run_or_404(get_lab(request), run_id)
        v = view_for(run)
        if token_id not in v.text:
            raise _Http(404, f"run {run.id} has no token with id {token_id}")
        return page_or_block(request, "lab_parts.html", "tree", _ctx(request, part="tree", run=run, tree=v.merge_tree(token_id), k=step))

    return _guard(request, go)


@router.get("/lab/runs/{run_id}/export.{fmt}", include_in_schema=False)
def lab_export_file(request: Request, run_id: str, fmt: str):
    if fmt not in ("json", "tiktoken", "model"):
        return _error(request, 404, f"unknown export format {fmt!r}; choose json, tiktoken or model")
    return _guard(request, lambda: _export(request, run_id, fmt))


@router.post("/lab/runs/{run_id}/use", include_in_schema=False)
def lab_use(request: Request, run_id: str):
    def go():
        run = _run_or_404(get_lab(request), run_id)
        _check_step(run, 0)
        spec = register_run(run, request.app.state.settings.lab_max_runs)
        resp = page_or_block(request, "lab_parts.html", "used", _ctx(request, part="used", run=run, spec=spec))
        _set_cookie(request, resp, run.id)
        return resp

    return _guard(request, go)


router.include_router(api)
