"""The BPE lab's pages (``/lab``, htmx) over :mod:`app.services.lab`, which its JSON API (:mod:`app.web.api.train`)
calls too.

- ``GET /lab[?example=|?from=run id]`` the setup form: the sample corpus and settings that train word pieces,
  an example's, or those of a run ("New run" keeps its corpus and settings); ``POST /lab/train`` starts a
  training from it (a pasted corpus or an uploaded file) and answers the run's page, or the form again with the
  message and the corpus kept;
- ``GET /lab/runs/{id}[?step=k]`` a run: its progress while it trains, then step k (block ``step``);
  ``/progress`` and ``/cancel`` while it trains;
- ``POST /lab/runs/{id}/merge`` manual mode (a new run with the chosen pair as the next merge),
  ``/encode`` (a new text merge by merge; WordPiece's walk, a unigram lattice), ``GET /vocab``, ``/tree/{token id}``,
  ``/export.{json,tiktoken,tiktoken.json,model,tokenizer.json}``, ``POST /use`` ("use in playground"),
  ``GET /pairs?at=k&q=&offset=`` every pair after k merges, a page of them;
- ``POST /lab/pretokenize`` the pattern box's preview (the corpus cut by a pre-tokenizer, a user's regex under the
  request's budget); ``POST /lab/curves`` and ``/lab/curves.csv`` a new text's tokens as runs' vocabularies grow;
- ``POST /lab/side-by-side`` trains BPE, WordPiece and Unigram on one corpus at one vocabulary size;
  ``GET /lab/side-by-side?bpe=&wordpiece=&unigram=&text=`` shows how each cuts a text (:mod:`.side_by_side`).

A teacher who shares the run with a class (:mod:`.share`) moves the class with every step this page shows: the
step's own request carries the teacher token (``static/share.js``), and :func:`lab_run` hands the step to
:meth:`~app.classroom.service.Classroom.teach` before it answers.

Training runs in the lab's worker pool, never on the event loop; every handler here only reads stored step
records, so stepping never trains again. Sizes are checked at the HTTP boundary: corpus characters (413),
merges / vocab size (422), a full queue (429 with ``Retry-After``): the error table of :mod:`app.web.errors`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.engines.errors import TokenplayError
from app.lab import export as lab_export
from app.engines.sentencepiece.trainer_options import NORMALIZATION_RULES, TrainerOptions
from app.lab.examples import DEFAULT_FORM, EXAMPLES, PRESETS, SAMPLE_CORPUS, SIDE_VOCAB_SIZE
from app.lab.options import ALGORITHM_LABELS, MAX_BASE_TOKENS, PATTERN_LABELS
from app.lab.replay import replay_for
from app.lab.run_tokenizers import PREFIX, register_run
from app.lab.runs import Run
from app.lab.service import Lab
from app.lab.text_counts import how_training_counts
from app.lab.unigram_replay import WHY, WHY_SHORT
from app.classroom.sessions import bearer_token
from app.services import lab as service

from ..cookies import remember_run, teacher_of
from ..deps import (
    ClassroomDep,
    DoneRunDep,
    LabDep,
    RunDep,
    SettingsDep,
    read_form,
    run_cpu,
    text_area_value,
    typed_fields,
)
from ..errors import headers_for, status_for
from ..render import download, is_htmx, page_or_block
from ..rendering.lab_step import corpus_window
from ..rendering.links import playground_url, run_url

router = APIRouter(include_in_schema=False)

#: Merges listed on the step view (the latest ones; the export has them all).
MERGE_LIST = 100
#: Tokens the vocabulary lists (those matching a search, first in its order); a SentencePiece run's more.
VOCAB_LIST = 200
VOCAB_LIST_SPM = 600


def _context(request: Request, lab: Lab, **kw) -> dict:
    return {
        "algorithms": ALGORITHM_LABELS,
        "patterns": PATTERN_LABELS,
        "examples": EXAMPLES,
        "max_corpus_chars": lab.max_corpus_chars,
        "max_merges": lab.max_merges,
        "max_vocab": MAX_BASE_TOKENS + lab.max_merges,
        "preview_chars": service.PREVIEW_CHARS,
        "present": request.query_params.get("present") == "1",
    } | kw


def _setup(request: Request, lab: Lab, form: dict, error: str | None = None, status: int = 200, headers=None):
    form = DEFAULT_FORM | form
    # the side-by-side form: the sample at a size all three reach on it, or a run's own corpus ("New run")
    side_corpus = form["corpus"] if form.get("from") else SAMPLE_CORPUS
    form = {"side_corpus": side_corpus, "side_vocab": SIDE_VOCAB_SIZE, "side_match": "vocab_size"} | form
    context = _context(request, lab, form=form, error=error, spm=service.spm_form_values(form), presets=PRESETS,
                       spm_defaults=TrainerOptions().to_dict(), rules=NORMALIZATION_RULES)
    return page_or_block(request, "lab.html", "setup", context, status_code=status, headers=headers)


def form_of(run: Run) -> dict:
    """The setup form that trains ``run`` again: its corpus and its options ("New run" starts from them)."""
    o = run.options
    by_vocab = o.vocab_size is not None
    form = {
        "corpus": run.corpus,
        "algorithm": o.algorithm,
        "pattern": o.pattern,
        "size_kind": "vocab_size" if by_vocab else "merges",
        "size": o.vocab_size if by_vocab else o.merges,
        "tie_break": o.tie_break,
        "end_of_word": o.end_of_word,
        "sentencepiece": o.sentencepiece,
        "from": run.id,
    } | service.labbpe_form(o)
    form["side_vocab"], form["side_match"] = (o.vocab_size, "vocab_size") if by_vocab else (o.merges, "merges")
    return form


@router.get("/lab")
def lab_page(
    request: Request, lab: LabDep, example: str | None = None, from_: Annotated[str | None, Query(alias="from")] = None
):
    if from_:
        run = lab.get(from_)
        if run is None:
            return _setup(request, lab, {}, f"no lab run with id {from_!r}; here is the sample corpus", 404)
        return _setup(request, lab, form_of(run))
    form = EXAMPLES[example]["form"] | {"example": example} if example in EXAMPLES else {}
    return _setup(request, lab, form)


@router.post("/lab/train")
async def lab_train(request: Request, lab: LabDep):
    """The setup form (pasted corpus or uploaded file). The form is parsed here with the lab's own size limit
    (Starlette's default stops form fields at 1 MB); training starts in the worker pool, off the event loop."""
    limit = lab.max_corpus_chars * 4 + 1024  # UTF-8 bytes of the largest accepted corpus
    try:
        data = await request.form(max_files=1, max_fields=80, max_part_size=limit)
    except Exception as exc:  # noqa: BLE001 - Starlette's MultiPartException and friends
        message = f"the form could not be read ({exc}); the lab takes a corpus of at most {lab.max_corpus_chars:,} characters"
        return _setup(request, lab, {}, message, 413)
    file = data.get("file")
    raw = filename = None
    if file is not None and not isinstance(file, str) and file.filename:
        filename = file.filename
        raw = await file.read(limit + 1)
    # A pasted corpus is what the text area holds (browsers send its lines as CRLF); an uploaded file stays exact.
    typed = typed_fields(data)
    fields = {k: v for k in service.POSTED_DEFAULTS if isinstance(v := typed.get(k), str)}
    await data.close()  # the uploaded file's spooled temporary file
    return await run_in_threadpool(_start_from_form, request, lab, fields, raw, filename, limit)


def _start_from_form(request: Request, lab: Lab, fields: dict, raw: bytes | None, filename: str | None, limit: int):
    form = service.POSTED_DEFAULTS | fields | {"end_of_word": bool(fields.get("end_of_word"))}
    lesson = service.lesson_form(form["lesson"]) if raw is None else None
    if lesson is not None:  # a lesson's one click: its example's corpus and settings, whatever else was posted
        form = lesson
    text = form["corpus"]
    try:
        if raw is not None:
            text = service.corpus_of_file(raw, filename, limit, lab)
            form["corpus"] = text[:20_000]
        run = service.started(lab.start(text, service.options_of(form), wait=lab.quick_wait))
    except TokenplayError as exc:
        return _setup(request, lab, form, str(exc), status_for(exc), headers_for(exc))
    if lesson is not None:  # the lesson opens at the run's last step
        return _to_run(request, lab, run, run.n_steps if run.status == "done" else None, form["lesson"])
    return _to_run(request, lab, run)


def _to_run(request: Request, lab: Lab, run: Run, step: int | None = None, lesson: str | None = None) -> Response:
    url = run_url(run.id, step, request.query_params.get("present") == "1", lesson)
    if not is_htmx(request):
        return RedirectResponse(url, status_code=303)
    if run.finished:
        return HTMLResponse("", headers={"HX-Redirect": url})
    context = _context(request, lab, run=run, next_step=step)
    return page_or_block(request, "lab_run.html", "progress", context, headers={"HX-Push-Url": run_url(run.id)})


@router.get("/lab/runs/{run_id}")
def lab_run(
    request: Request, lab: LabDep, classroom: ClassroomDep, run_id: str, step: Annotated[int | None, Query()] = None,
    lesson: Annotated[str | None, Query(max_length=40)] = None,
):
    run = lab.get(run_id)
    if run is None:
        return _setup(request, lab, {}, f"no lab run with id {run_id!r}; train a new one", 404)
    if run.status != "done":
        context = _context(request, lab, run=run, next_step=step, progress_only=True)
        return page_or_block(request, "lab_run.html", "progress", context)
    k = 0 if step is None else max(0, min(step, run.n_steps))  # a run opens before its first merge: a class starts there
    teacher = teacher_of(request)
    if teacher is not None and step is not None:  # a teacher's step: the class follows it (the token rides along)
        classroom.teach(run, teacher[0], bearer_token(request.headers.get("authorization")), k)
    return page_or_block(request, "lab_run.html", "step", _step_context(request, lab, run, k, lesson))


def _step_context(request: Request, lab: Lab, run: Run, k: int, lesson: str | None = None) -> dict:
    replay = replay_for(run)
    first = max(0, k - MERGE_LIST)
    lesson_key = lesson if lesson in EXAMPLES and "lesson" in EXAMPLES[lesson] else None
    return _context(
        request,
        lab,
        run=run,
        k=k,
        n=run.n_steps,
        state=replay.state(k),
        counting=how_training_counts(run),
        rec=run.steps[k - 1] if k > 0 else None,
        table=None if run.unigram else replay.table(k),
        removed=replay.removed(k) if run.unigram else [],
        corpus=corpus_window(replay, k),
        chart=lab_export.chart(run, k, replay.text_tokens),
        refused=lab_export.refusals(run),
        merges=[] if run.unigram else list(enumerate(run.steps[first:k], start=first + 1)),
        outcome=replay.outcome,
        byte_note=None if run.unigram else replay.merge_note(run.steps[k - 1] if k > 0 else None),
        merges_hidden=first,
        superwords=replay.superword_list(k) if not run.unigram else ([], 0),
        url=lambda step: run_url(run.id, step, lesson=lesson_key),
        lesson=EXAMPLES[lesson_key]["lesson"] if lesson_key else None,
        chip_of=replay.chip,
        manual_after=max(k - 1, 0),
        is_playground=f"{PREFIX}{run.id}",
        spm=run.options.spm_options() if run.options.algorithm in ("sentencepiece", "unigram") else None,
        why=WHY,
        why_short=WHY_SHORT,
    )


@router.get("/lab/runs/{run_id}/progress")
def lab_progress(request: Request, lab: LabDep, run: RunDep, step: int | None = None):
    if run.status == "done":
        return HTMLResponse("", headers={"HX-Redirect": run_url(run.id, step)})
    return page_or_block(request, "lab_run.html", "progress", _context(request, lab, run=run, next_step=step))


@router.post("/lab/runs/{run_id}/cancel")
def lab_cancel(request: Request, lab: LabDep, run: RunDep):
    if lab.cancel(run.id):
        lab.pool.wait(run.id, 2.0)
    return page_or_block(request, "lab_run.html", "progress", _context(request, lab, run=run, next_step=None))


@router.post("/lab/runs/{run_id}/merge")
def lab_merge(
    request: Request,
    lab: LabDep,
    run: DoneRunDep,
    after: Annotated[int, Form()],
    left: Annotated[int, Form()],
    right: Annotated[int, Form()],
):
    new = service.force_merge(lab, run, after, [left, right], wait=lab.quick_wait)
    return _to_run(request, lab, new, after + 1)


def _part(request: Request, lab: Lab, run: Run | None, part: str, **context):
    chip_of = replay_for(run).chip if run is not None else None
    context = _context(request, lab, part=part, run=run, chip_of=chip_of, **context)
    return page_or_block(request, "lab_parts.html", part, context)


@router.post("/lab/runs/{run_id}/encode")
def lab_encode(
    request: Request,
    lab: LabDep,
    run: DoneRunDep,
    text: Annotated[str, Form()] = "",
    step: Annotated[int | None, Form()] = None,
):
    text = text_area_value(text)  # as the box holds it, like every page's form text (app.web.deps.typed_fields)
    k, trace = service.encode_trace(run, text, step)
    return _part(request, lab, run, "trace", trace=trace, k=k)


@router.post("/lab/pretokenize")
async def lab_pretokenize(request: Request, lab: LabDep, settings: SettingsDep):
    """The pattern box's preview: the start of the corpus cut by the chosen pre-tokenizer (a user's regex under
    the request's budget; its errors in words, as the error fragment)."""
    form = await read_form(request, settings.max_chars)
    pattern = str(form.get("pattern") or "gpt2")
    regex_text = str(form.get("pattern_regex") or "") if pattern == "custom" else None
    cut = await run_cpu(request, service.preview, str(form.get("corpus") or ""), pattern, regex_text)
    return _part(request, lab, None, "preview", preview=cut)


@router.get("/lab/runs/{run_id}/pairs")
async def lab_pairs(request: Request, lab: LabDep, run: DoneRunDep, at: int = 0, offset: int = Query(0, ge=0),
                    q: str = Query("", max_length=100)):
    """Every pair after ``at`` merges (the table merge ``at + 1`` was chosen from), a page of them, filtered."""
    table = await run_cpu(request, service.pairs, run, at, offset, 100, q)
    return _part(request, lab, run, "pairs", table=table, at=at, q=q)


async def _curves(request: Request, lab: Lab, settings, answer):
    form = await read_form(request, settings.max_chars)
    text = text_area_value(str(form.get("text") or ""))
    points = service.whole(str(form.get("points") or "20"), "points")
    runs = service.finished_runs(lab, [str(v) for v in form.getlist("runs")])
    return await run_cpu(request, answer, runs, text, points)


@router.post("/lab/curves")
async def lab_curves(request: Request, lab: LabDep, settings: SettingsDep):
    return _part(request, lab, None, "curves", **await _curves(request, lab, settings, service.curves_page))


@router.post("/lab/curves.csv")
async def lab_curves_csv(request: Request, lab: LabDep, settings: SettingsDep):
    body = await _curves(request, lab, settings, service.curves_csv)
    return download(body.encode(), "text/csv; charset=utf-8", "lab-curves.csv")


@router.get("/lab/runs/{run_id}/vocab")
def lab_vocab(request: Request, lab: LabDep, run: DoneRunDep, q: str = "", step: int | None = None):
    k = service.check_step(run, run.n_steps if step is None else step)
    # a SentencePiece run lists its .model's order: enough to reach past the 256 byte pieces to the merged ones
    limit = VOCAB_LIST_SPM if run.options.algorithm == "sentencepiece" else VOCAB_LIST
    entries, total = replay_for(run).vocab_entries(k, q[:100], limit)
    return _part(request, lab, run, "vocab", entries=entries, total=total, q=q, k=k)


@router.get("/lab/runs/{run_id}/handout")
def lab_handout(request: Request, lab: LabDep, run: DoneRunDep, step: int | None = None,
                word: Annotated[str, Query(max_length=200)] = ""):
    """A run at a step as a printed handout (its own print style): the merges so far, the vocabulary, one word
    encoded (``word``; default: the corpus's most frequent long word)."""
    out = service.handout(run, step, word)
    return page_or_block(request, "lab_handout.html", "handout", _context(request, lab, run=run, chip_of=replay_for(run).chip, **out))


@router.get("/lab/runs/{run_id}/tree/{token_id}")
def lab_tree(request: Request, lab: LabDep, run: DoneRunDep, token_id: int, step: int | None = None):
    return _part(request, lab, run, "tree", tree=service.merge_tree(run, token_id), k=step)


@router.get("/lab/runs/{run_id}/export.{fmt}")
def lab_export_file(run: DoneRunDep, fmt: str):
    return download(*service.export(run, fmt))


@router.post("/lab/runs/{run_id}/use")
def lab_use(request: Request, lab: LabDep, run: DoneRunDep, settings: SettingsDep):
    spec = register_run(run, settings.lab_max_runs)
    href = playground_url(spec.name, service.playground_sample(run), url_text_limit=settings.url_text_limit)
    response = _part(request, lab, run, "used", spec=spec, href=href)
    return remember_run(request, response, run.id)
