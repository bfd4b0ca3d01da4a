"""The lab's "side by side": BPE, WordPiece and Unigram trained on one corpus at one vocabulary size, and how each
cuts a text the user types (``/lab/side-by-side``; the same in JSON is in :mod:`app.web.api.train`, both over
:mod:`app.services.lab`).

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

from app.features.compare import mark_segments
from app.lab.replay import replay_for
from app.services.lab import MAX_SIDE_TEXT, SIDE_LABELS, SIDE_MATCHES, cuts, find_three, side_match, start_three

from ..deps import LabDep, read_form, text_area_value
from ..render import page_or_block
from ..rendering.tokenview import token_window, with_marks

router = APIRouter(include_in_schema=False)


@router.post("/lab/side-by-side")
async def side_by_side_train(request: Request, lab: LabDep):
    form = await read_form(request, lab.max_corpus_chars)
    corpus = str(form.get("corpus", ""))  # read_form: as the text area holds it
    match = str(form.get("match", "vocab_size"))
    try:  # the number field is "side_size"; a form of before "same number of merges" sends "vocab_size"
        size = int(str(form.get("side_size") or form.get("vocab_size", "")))
    except ValueError:
        size = 0
    runs = start_three(lab, corpus, size, match)
    url = "/lab/side-by-side?" + urlencode({side: run.id for side, run in runs.items()})
    return RedirectResponse(url, status_code=303)


@router.get("/lab/side-by-side")
def side_by_side_page(
    request: Request,
    lab: LabDep,
    bpe: str | None = None,
    wordpiece: str | None = None,
    unigram: str | None = None,
    text: Annotated[str, Query(max_length=MAX_SIDE_TEXT)] = "lowest newer",
):
    runs = find_three(lab, {"bpe": bpe, "wordpiece": wordpiece, "unigram": unigram})
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
        "match": side_match(runs),
        "merges": next(iter(runs.values())).options.merges,
        "matches": SIDE_MATCHES,
        "labels": SIDE_LABELS,
        "views": views,
        "text": text,
        "all_done": all(r.finished for r in runs.values()),
        "query": urlencode({side: run.id for side, run in runs.items()}),
    }
    return page_or_block(request, "lab_side.html", "cuts", context)
