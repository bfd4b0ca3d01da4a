"""The BPE lab's pages (``/lab``, htmx) over :mod:`app.lab`; its JSON API is :mod:`app.web.api.train`.

- ``GET /lab[?example=|?from=run id]`` the setup form: the sample corpus and settings that train word pieces,
  an example's, or those of a run ("New run" keeps its corpus and settings); ``POST /lab/train`` starts a
  training from it (a pasted corpus or an uploaded file) and answers the run's page, or the form again with the
  message and the corpus kept;
- ``GET /lab/runs/{id}[?step=k]`` a run: its progress while it trains, then step k (block ``step``);
  ``/progress`` and ``/cancel`` while it trains;
- ``POST /lab/runs/{id}/merge`` manual mode (a new run with the chosen pair as the next merge),
  ``/encode`` (a new text merge by merge; WordPiece's walk, a unigram lattice), ``GET /vocab``, ``/tree/{token id}``,
  ``/export.{json,tiktoken,model,tokenizer.json}``, ``POST /use`` ("use in playground");
- ``POST /lab/side-by-side`` trains BPE, WordPiece and Unigram on one corpus at one vocabulary size;
  ``GET /lab/side-by-side?bpe=&wordpiece=&unigram=&text=`` shows how each cuts a text.

Training runs in the lab's worker pool, never on the event loop; every handler here only reads stored step
records, so stepping never trains again. Sizes are checked at the HTTP boundary: corpus characters (413),
merges / vocab size (422), a full queue (429 with ``Retry-After``): the error table of :mod:`app.web.errors`.
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.engines.errors import TokenplayError
from app.lab import export as lab_export
from app.lab.options import ALGORITHM_LABELS, MAX_BASE_TOKENS, PATTERN_LABELS, LabOptionsError, Options
from app.lab.examples import DEFAULT_FORM, EXAMPLES, SAMPLE_CORPUS, SIDE_VOCAB_SIZE
from app.lab.display import MAX_ENCODE_CHARS
from app.lab.replay import replay_for
from app.lab.runs import Run
from app.lab.curves import chart as curves_chart
from app.lab.curves import csv_text, curves
from app.lab.service import Lab, RunNotReady
from app.lab.splits import preview
from app.lab.text_counts import how_training_counts
from app.lab.tokenizers import COOKIE, PREFIX, cookie_with, register_run

from .deps import DoneRunDep, LabDep, RunDep, SettingsDep, export_format, read_form, run_cpu, text_area_value, typed_fields
from .errors import NotFoundError, TooLargeError, headers_for, status_for
from .render import is_htmx, page_or_block
from .tokenview import TokenWindow, token_window, with_marks

router = APIRouter(include_in_schema=False)

#: Merges listed on the step view (the latest ones; the export has them all).
MERGE_LIST = 100
#: A posted form's fields that are missing take these (as /api/train's defaults); the page's form starts from
#: :data:`app.lab.examples.DEFAULT_FORM`.
POSTED_DEFAULTS = DEFAULT_FORM | {"corpus": "", "pattern": "gpt2", "size": "10"}
#: The form's fields for byte- and character-level BPE's options (issues 33-34), as a posted form that lacks them
#: means them: the run's pattern's regex, min_count, superwords (a checkbox, the transition, stage two's pattern
#: and regex), a typed merge list, and which button was pressed (``mode``: train, or replay the typed merges).
LABBPE_FIELDS = {"pattern_regex": "", "min_count": "2", "superwords": "", "transition": "", "stage_two": "lines-digits-r2l",
                 "stage_two_regex": "", "merge_list": "", "mode": "train"}
POSTED_DEFAULTS = POSTED_DEFAULTS | LABBPE_FIELDS
EXPORT_FORMATS = ("json", "tiktoken", "tiktoken.json", "model", "tokenizer.json")
#: Characters of the corpus the pattern box's preview cuts (the step views show the first 2,000).
PREVIEW_CHARS = 3_000


def pair_ids(run: Run, k: int, pair: list) -> tuple[int, int]:
    """Two token ids, or two token texts, as ids that exist after ``k`` merges (manual mode's choice)."""
    replay = replay_for(run)
    known = set(run.base) | {s.new_id for s in run.steps[:k]}
    out = []
    for item in pair:
        if isinstance(item, int):
            if item not in known:
                raise LabOptionsError(f"token id {item} does not exist after {k} merges")
            out.append(item)
        else:
            ids = [i for i in known if replay.text[i] == item]
            if not ids:
                raise LabOptionsError(f"no token with text {item!r} exists after {k} merges")
            out.append(min(ids))
    return out[0], out[1]


def check_step(run: Run, k: int) -> int:
    if not 0 <= k <= run.n_steps:
        raise NotFoundError(f"step {k} is out of range: run {run.id} has steps 0..{run.n_steps}")
    return k


def remember_in_cookie(request: Request, response: Response, run: Run) -> None:
    """Add ``run``'s tokenizer to this browser's pickers ("use in playground"; the cookie lists its runs)."""
    value = cookie_with(request.cookies.get(COOKIE), run.id)
    response.set_cookie(COOKIE, value, max_age=30 * 86400, samesite="lax", httponly=True)


def run_url(run: Run, step: int | None = None, present: bool = False) -> str:
    q = {}
    if step is not None:
        q["step"] = step
    if present:
        q["present"] = 1
    return f"/lab/runs/{run.id}" + (f"?{urlencode(q)}" if q else "")


def _context(request: Request, lab: Lab, **kw) -> dict:
    return {
        "algorithms": ALGORITHM_LABELS,
        "patterns": PATTERN_LABELS,
        "examples": EXAMPLES,
        "max_corpus_chars": lab.max_corpus_chars,
        "max_merges": lab.max_merges,
        "max_vocab": MAX_BASE_TOKENS + lab.max_merges,
        "preview_chars": PREVIEW_CHARS,
        "present": request.query_params.get("present") == "1",
    } | kw


def _setup(request: Request, lab: Lab, form: dict, error: str | None = None, status: int = 200, headers=None):
    form = DEFAULT_FORM | form
    # the side-by-side form: the sample at a size all three reach on it, or a run's own corpus ("New run")
    side_corpus = form["corpus"] if form.get("from") else SAMPLE_CORPUS
    form = {"side_corpus": side_corpus, "side_vocab": SIDE_VOCAB_SIZE} | form
    context = _context(request, lab, form=form, error=error)
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
        "from": run.id,
        # labbpe
        "pattern_regex": o.pattern_regex or "",
        "min_count": o.min_count,
        "superwords": o.superwords is not None,
        "transition": o.superwords["transition"] if o.superwords else "",
        "stage_two": (o.superwords or {}).get("pattern") or "lines-digits-r2l",
        "stage_two_regex": (o.superwords or {}).get("pattern_regex") or "",
        "merge_list": o.merge_list or "",
    }
    if o.merge_list is not None:
        form["size"] = len([line for line in o.merge_list.splitlines() if line.strip() and not line.startswith("#")])
    if by_vocab:
        form["side_vocab"] = o.vocab_size
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
        data = await request.form(max_files=1, max_fields=30, max_part_size=limit)
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
    fields = {k: v for k in POSTED_DEFAULTS if isinstance(v := typed.get(k), str)}
    await data.close()  # the uploaded file's spooled temporary file
    return await run_in_threadpool(_start_from_form, request, lab, fields, raw, filename, limit)


def _start_from_form(request: Request, lab: Lab, fields: dict, raw: bytes | None, filename: str | None, limit: int):
    form = POSTED_DEFAULTS | fields | {"end_of_word": bool(fields.get("end_of_word"))}
    text = form["corpus"]
    try:
        if raw is not None:
            if len(raw) > limit:
                raise TooLargeError(f"the file is larger than the lab's limit of {lab.max_corpus_chars:,} characters")
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError:
                raise LabOptionsError(f"{filename} is not UTF-8 text; save it as UTF-8 and upload it again") from None
            form["corpus"] = text[:20_000]
        try:
            n = int(form["size"])
        except ValueError:
            what = "tokens" if form["size_kind"] != "merges" else "learned pieces" if form["algorithm"] == "unigram" else "merges"
            raise LabOptionsError(f"the number of {what} must be a whole number") from None
        by_vocab = form["size_kind"] == "vocab_size"
        opts = Options(
            form["algorithm"],
            form["pattern"],
            None if by_vocab else n,
            n if by_vocab else None,
            "first" if form["algorithm"] == "unigram" else form["tie_break"],  # the form hides ties for Unigram
            form["end_of_word"] and form["algorithm"] == "char",
        )
        run = lab.start(text, labbpe_options(form, opts), wait=lab.quick_wait)
        if run.status == "error":
            raise LabOptionsError(run.error or "training failed")
    except TokenplayError as exc:
        return _setup(request, lab, form, str(exc), status_for(exc), headers_for(exc))
    return _to_run(request, lab, run)


def _whole(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise LabOptionsError(f"{what} must be a whole number; got {value!r}") from None


def labbpe_options(form: dict, options: Options) -> Options:
    """``options`` with what the form says of byte- and character-level BPE's own options (:data:`LABBPE_FIELDS`):
    the regex of pattern ``custom``, ``min_count``, superwords, and the typed merges when their button was pressed
    (they replace the size)."""
    if options.algorithm not in ("byte", "char"):
        return options
    options.min_count = _whole(form["min_count"], "min_count")
    if options.pattern == "custom":
        options.pattern_regex = form["pattern_regex"]
    if form["superwords"]:
        superwords = {"transition": _whole(form["transition"], "the superword transition (after merge ...)"),
                      "pattern": form["stage_two"]}
        if form["stage_two"] == "custom":
            superwords["pattern_regex"] = form["stage_two_regex"]
        options.superwords = superwords
    if form["mode"] == "merges":
        options.merge_list, options.merges, options.vocab_size = form["merge_list"], None, None
    return options


def _to_run(request: Request, lab: Lab, run: Run, step: int | None = None) -> Response:
    url = run_url(run, step, request.query_params.get("present") == "1")
    if not is_htmx(request):
        return RedirectResponse(url, status_code=303)
    if run.finished:
        return HTMLResponse("", headers={"HX-Redirect": url})
    context = _context(request, lab, run=run, next_step=step)
    return page_or_block(request, "lab_run.html", "progress", context, headers={"HX-Push-Url": run_url(run)})


@router.get("/lab/runs/{run_id}")
def lab_run(request: Request, lab: LabDep, run_id: str, step: Annotated[int | None, Query()] = None):
    run = lab.get(run_id)
    if run is None:
        return _setup(request, lab, {}, f"no lab run with id {run_id!r}; train a new one", 404)
    if run.status != "done":
        context = _context(request, lab, run=run, next_step=step, progress_only=True)
        return page_or_block(request, "lab_run.html", "progress", context)
    k = 0 if step is None else max(0, min(step, run.n_steps))  # a run opens before its first merge: a class starts there
    return page_or_block(request, "lab_run.html", "step", _step_context(request, lab, run, k))


def _corpus_window(replay, k: int) -> TokenWindow:
    """The corpus at step ``k`` as coloured tokens; those made by merge ``k`` marked ``new``, a superword run's
    superwords ``superword``."""
    window = token_window(replay.corpus_at(k))
    new_id = replay.run.steps[k - 1].new_id if k > 0 and not replay.run.unigram else None
    superwords = getattr(replay, "superwords", {})

    def mark(span) -> str:
        classes = "new" if new_id in span.ids else "unk" if -1 in span.ids else ""
        if superwords and any(superwords.get(i, k + 1) <= k for i in span.ids):
            classes = f"{classes} superword".strip()
        return classes

    return with_marks(window, [(mark(s), ()) for s in window.spans])


def _step_context(request: Request, lab: Lab, run: Run, k: int) -> dict:
    replay = replay_for(run)
    first = max(0, k - MERGE_LIST)
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
        corpus=_corpus_window(replay, k),
        chart=lab_export.chart(run, k),
        merges=[] if run.unigram else list(enumerate(run.steps[first:k], start=first + 1)),
        outcome=replay.outcome,
        byte_note=None if run.unigram else replay.merge_note(run.steps[k - 1] if k > 0 else None),
        merges_hidden=first,
        superwords=replay.superword_list(k) if not run.unigram else ([], 0),
        url=lambda step: run_url(run, step),
        chip_of=replay.chip,
        manual_after=max(k - 1, 0),
        is_playground=f"{PREFIX}{run.id}",
    )


@router.get("/lab/runs/{run_id}/progress")
def lab_progress(request: Request, lab: LabDep, run: RunDep, step: int | None = None):
    if run.status == "done":
        return HTMLResponse("", headers={"HX-Redirect": run_url(run, step)})
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
    check_step(run, after)
    new = lab.continue_with(run, after, pair_ids(run, after, [left, right]), wait=lab.quick_wait)
    if new.status == "error":
        raise LabOptionsError(new.error or "training failed")
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
    k = check_step(run, run.n_steps if step is None else step)
    text = text_area_value(text)  # as the box holds it, like every page's form text (app.web.deps.typed_fields)
    if len(text) > MAX_ENCODE_CHARS:
        raise TooLargeError(f"the text is {len(text):,} characters; encode traces take at most {MAX_ENCODE_CHARS:,}")
    return _part(request, lab, run, "trace", trace=replay_for(run).encode_trace(text, k), k=k)


@router.post("/lab/pretokenize")
async def lab_pretokenize(request: Request, lab: LabDep, settings: SettingsDep):
    """The pattern box's preview: the start of the corpus cut by the chosen pre-tokenizer (a user's regex under
    the request's budget; its errors in words, as the error fragment)."""
    form = await read_form(request, settings.max_chars)
    text = text_area_value(str(form.get("corpus") or ""))[:PREVIEW_CHARS]
    pattern = str(form.get("pattern") or "gpt2")
    regex_text = str(form.get("pattern_regex") or "") if pattern == "custom" else None
    if pattern == "custom" and not regex_text:
        raise LabOptionsError("type your regex in the box (the regex module's syntax), e.g. \\p{L}+|\\p{N}|[^\\p{L}\\p{N}]+")
    cut = await run_cpu(request, preview, text, pattern, regex_text)
    found = cut | {"pattern": pattern, "chars": len(text), "truncated": len(text) == PREVIEW_CHARS}
    return _part(request, lab, None, "preview", preview=found)


@router.get("/lab/runs/{run_id}/pairs")
async def lab_pairs(request: Request, lab: LabDep, run: DoneRunDep, at: int = 0, offset: int = Query(0, ge=0),
                    q: str = Query("", max_length=100)):
    """Every pair after ``at`` merges (the table merge ``at + 1`` was chosen from), a page of them, filtered."""
    check_step(run, at)
    table = await run_cpu(request, replay_for(run).pairs, at, offset, 100, q)
    return _part(request, lab, run, "pairs", table=table, at=at, q=q)


_RUN_ID = re.compile(r"(?:^|/)([0-9a-f]{4,32})(?:[/?#]|$)")


def _curve_runs(lab: Lab, runs: list[str]) -> list[Run]:
    """The finished runs a curves form names: ids or links, separated by spaces."""
    out: list[Run] = []
    for item in " ".join(runs).split():
        m = _RUN_ID.search(item)
        if m is None:
            raise LabOptionsError(f"{item[:40]!r} is no run id or link; paste ids like 3f2a9c01d4 or /lab/runs/<id>")
        run = lab.run(m.group(1))
        if run.status != "done":
            raise RunNotReady(run)
        if run not in out:
            out.append(run)
    return out


async def _curves(request: Request, lab: Lab, settings) -> tuple[dict, str, int]:
    form = await read_form(request, settings.max_chars)
    text = text_area_value(str(form.get("text") or ""))
    points = _whole(str(form.get("points") or "20"), "points")
    runs = _curve_runs(lab, [str(v) for v in form.getlist("runs")])
    return await run_cpu(request, curves, runs, text, points), text, points


@router.post("/lab/curves")
async def lab_curves(request: Request, lab: LabDep, settings: SettingsDep):
    result, text, points = await _curves(request, lab, settings)
    return _part(request, lab, None, "curves", result=result, chart=curves_chart(result), text=text, points=points)


@router.post("/lab/curves.csv")
async def lab_curves_csv(request: Request, lab: LabDep, settings: SettingsDep):
    result, _, _ = await _curves(request, lab, settings)
    return Response(csv_text(result), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": 'attachment; filename="lab-curves.csv"'})


@router.get("/lab/runs/{run_id}/vocab")
def lab_vocab(request: Request, lab: LabDep, run: DoneRunDep, q: str = "", step: int | None = None):
    k = check_step(run, run.n_steps if step is None else step)
    entries, total = replay_for(run).vocab_entries(k, q[:100])
    return _part(request, lab, run, "vocab", entries=entries, total=total, q=q, k=k)


@router.get("/lab/runs/{run_id}/tree/{token_id}")
def lab_tree(request: Request, lab: LabDep, run: DoneRunDep, token_id: int, step: int | None = None):
    replay = replay_for(run)
    if token_id not in replay.text:
        raise NotFoundError(f"run {run.id} has no token with id {token_id}")
    return _part(request, lab, run, "tree", tree=replay.merge_tree(token_id), k=step)


def export_response(run: Run, fmt: str) -> Response:
    """A run's download: ``json``, ``tiktoken`` (byte-level runs) or ``model`` (SentencePiece-style runs)."""
    body, media, ext = lab_export.export(run, export_format(fmt, EXPORT_FORMATS))
    return Response(body, media_type=media, headers={"Content-Disposition": f'attachment; filename="lab-{run.id}.{ext}"'})


@router.get("/lab/runs/{run_id}/export.{fmt}")
def lab_export_file(run: DoneRunDep, fmt: str):
    return export_response(run, fmt)


@router.post("/lab/runs/{run_id}/use")
def lab_use(request: Request, lab: LabDep, run: DoneRunDep, settings: SettingsDep):
    response = _part(request, lab, run, "used", spec=register_run(run, settings.lab_max_runs))
    remember_in_cookie(request, response, run)
    return response
