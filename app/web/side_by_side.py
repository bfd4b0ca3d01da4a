"""The lab's "side by side": BPE, WordPiece and Unigram trained on one corpus at one vocabulary size, and how each
cuts a text the user types (``/lab/side-by-side``; its JSON twin is in :mod:`app.web.api.train`).

``POST /lab/side-by-side`` starts the three runs (sentencepiece's BPE and unigram trainers with its default options,
so that BPE and Unigram read the corpus alike; WordPiece with BERT's words) and answers the comparison page, which
follows their training and then cuts the text with each trained tokenizer. A cut that not all three make is marked on every
token that has it or misses it (the compare page's boundary marks). Each side says what its vocabulary is made of
(the three count different bases) and, when it ended away from the size asked for, why (:mod:`app.lab.outcome`;
sentencepiece refuses a size the corpus cannot fill, and the side says so). Nothing here trains on the event loop.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse

from app.features.compare import boundaries, mark_segments
from app.lab.options import Options
from app.lab.replay import replay_for
from app.lab.runs import Run
from app.lab.service import Lab
from app.lab.tokenizers import spec_for

from .deps import LabDep, read_form, text_area_value
from .errors import NotFoundError
from .render import page_or_block
from .tokenview import token_window, with_marks

router = APIRouter(include_in_schema=False)

#: The three algorithms, as the page names them, and the lab algorithm that trains each.
SIDES = {"bpe": "sentencepiece", "wordpiece": "wordpiece", "unigram": "unigram"}
SIDE_LABELS = {"bpe": "BPE", "wordpiece": "WordPiece", "unigram": "Unigram"}
MAX_TEXT = 2_000


def start_three(lab: Lab, corpus: str, vocab_size: int) -> dict[str, Run]:
    """Queue the three runs of one comparison (each checked before any is queued)."""
    options = {side: Options(algorithm, "none", None, vocab_size, "first").check(lab.max_merges) for side, algorithm in SIDES.items()}
    lab.check_corpus(corpus)
    return {side: lab.start(corpus, opts, wait=0.3) for side, opts in options.items()}


def cuts(runs: dict[str, Run], text: str) -> tuple[dict[str, dict], set[int]]:
    """How each finished run cuts ``text`` (its result, tokens, ids, and its cuts that not all make), and the cuts
    all of them make."""
    results = {side: spec_for(run).factory().tokenize(text) for side, run in runs.items() if run.status == "done"}
    agreed = set.intersection(*map(boundaries, results.values())) if results else set()
    out = {}
    for side, result in results.items():
        own = boundaries(result)
        out[side] = {
            "result": result,
            "differ": sorted(own - agreed),
            "tokens": [t.text for t in result.tokens],
            "ids": result.ids,
        }
    return out, agreed


def find_runs(lab: Lab, ids: dict[str, str | None]) -> dict[str, Run]:
    found = {}
    for side, run_id in ids.items():
        run = lab.get(run_id) if run_id else None
        if run is None or run.options.algorithm != SIDES[side]:
            raise NotFoundError(f"no {SIDE_LABELS[side]} run with id {run_id!r}; train the three again at /lab")
        found[side] = run
    return found


@router.post("/lab/side-by-side")
async def side_by_side_train(request: Request, lab: LabDep):
    form = await read_form(request, lab.max_corpus_chars)
    corpus = str(form.get("corpus", ""))  # read_form: as the text area holds it
    try:
        size = int(str(form.get("vocab_size", "")))
    except ValueError:
        size = 0
    runs = start_three(lab, corpus, size)
    url = "/lab/side-by-side?" + urlencode({side: run.id for side, run in runs.items()})
    return RedirectResponse(url, status_code=303)


@router.get("/lab/side-by-side")
def side_by_side_page(
    request: Request,
    lab: LabDep,
    bpe: str | None = None,
    wordpiece: str | None = None,
    unigram: str | None = None,
    text: Annotated[str, Query(max_length=MAX_TEXT)] = "lowest newer",
):
    runs = find_runs(lab, {"bpe": bpe, "wordpiece": wordpiece, "unigram": unigram})
    text = text_area_value(text)  # a form sent by GET writes line breaks as CRLF too
    views = {}
    found, agreed = cuts(runs, text)
    for side, cut in found.items():
        window = token_window(cut["result"])
        marks = mark_segments(window.spans, agreed)
        views[side] = with_marks(window, [("cut-diff" if m.extra_cut or m.missing_cuts else "", ()) for m in marks])
    outcomes = {side: replay_for(run).outcome for side, run in runs.items() if run.status == "done"}
    context = {
        "runs": runs,
        "outcomes": outcomes,
        "asked": next(iter(runs.values())).options.vocab_size,
        "labels": SIDE_LABELS,
        "views": views,
        "text": text,
        "all_done": all(r.finished for r in runs.values()),
        "query": urlencode({side: run.id for side, run in runs.items()}),
    }
    return page_or_block(request, "lab_side.html", "cuts", context)
