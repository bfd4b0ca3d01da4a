"""The BPE lab's API: ``/api/train`` (start), ``/api/train/{id}`` (a run), its steps, manual merges, encode
traces, cancel, exports and "use in playground"; the side by side of three algorithms. The lab's pages
(:mod:`app.web.pages.lab`) call the same service, :mod:`app.services.lab`."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, model_validator

from app.lab.display import MAX_ENCODE_CHARS
from app.lab.options import Options
from app.lab.replay import replay_for
from app.lab.run_tokenizers import register_run
from app.lab.runs import Run
from app.services import lab as service

from ..cookies import remember_run
from ..deps import DoneRunDep, LabDep, RunDep, SettingsDep
from ..render import download

router = APIRouter(prefix="/train", tags=["lab"])


class TrainRequest(BaseModel):
    corpus: str = Field(description="the text to train on")
    algorithm: Literal["byte", "char", "sentencepiece", "wordpiece", "unigram"] = "byte"
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

    def options(self) -> Options:
        return Options(self.algorithm, self.pattern, self.merges, self.vocab_size, self.tie_break, self.end_of_word)


class SideBySideRequest(BaseModel):
    corpus: str = Field(description="the text to train the three on")
    vocab_size: int = Field(ge=1, description="the vocabulary size of all three")


class EncodeRequest(BaseModel):
    text: str = Field(max_length=MAX_ENCODE_CHARS, description=f"at most {MAX_ENCODE_CHARS} characters")
    step: int | None = Field(None, ge=0, description="use the merges up to this step (default: all)")


class MergeRequest(BaseModel):
    pair: list[int | str] = Field(min_length=2, max_length=2, description="two token ids, or two token texts")


def _started(run: Run, **extra) -> JSONResponse:
    """A run just queued: 200 when it already finished, 202 while it trains; a failed one is a 422."""
    run = service.started(run)
    return JSONResponse(service.summary(run) | extra, status_code=200 if run.finished else 202)


@router.post(
    "",
    summary="Start training a lab run",
    description="Answers 200 with the run when it finished at once, else 202 while it trains (follow it with "
    "GET /api/train/{run_id}); 429 with Retry-After when the lab is busy, 422 for options it cannot train.",
)
def api_train(body: TrainRequest, lab: LabDep):
    return _started(lab.start(body.corpus, body.options(), wait=lab.quick_wait))


@router.post(
    "/side-by-side",
    summary="Train BPE, WordPiece and Unigram on one corpus at one vocabulary size",
    description="Starts three runs (SentencePiece-style BPE, WordPiece, Unigram) and answers 202 with them.",
)
def api_side_by_side(body: SideBySideRequest, lab: LabDep):
    runs = service.start_three(lab, body.corpus, body.vocab_size)
    return JSONResponse({"runs": {side: service.summary(run) for side, run in runs.items()}}, status_code=202)


@router.get(
    "/side-by-side/cuts",
    summary="How the three runs of a side-by-side cut a text",
    description="Each finished run's tokens and ids for `text`, the cuts only some of them make, and those all make.",
)
def api_side_cuts(
    lab: LabDep, bpe: str, wordpiece: str, unigram: str, text: str = Query(max_length=service.MAX_SIDE_TEXT)
):
    runs = service.find_three(lab, {"bpe": bpe, "wordpiece": wordpiece, "unigram": unigram})
    found, agreed = service.cuts(runs, text)
    return {
        "text": text,
        "status": {side: run.status for side, run in runs.items()},
        "cuts": {side: {"tokens": c["tokens"], "ids": c["ids"], "differ": c["differ"]} for side, c in found.items()},
        "agreed": sorted(agreed),
    }


@router.get(
    "/{run_id}",
    summary="A run's summary and its merge records",
    description="Status, progress and numbers; once done, every step too (a merge, or a unigram round).",
)
def api_run(run: RunDep):
    out = service.summary(run)
    if run.status == "done":
        out["steps"] = service.steps_of(run)
    return out


@router.get(
    "/{run_id}/steps/{k}",
    summary="The state after merge k",
    description="The merge made at step k, the pair table it was chosen from with its ties, and the corpus's "
    "numbers then (409 while the run trains).",
)
def api_step(run: DoneRunDep, k: int):
    return replay_for(run).state(service.check_step(run, k)) | {"id": run.id}


@router.post(
    "/{run_id}/steps/{k}/merge",
    summary="Manual mode: keep merges 1..k, force a pair as merge k+1, go on",
    description="A new run that keeps the first k merges, merges `pair` next and then trains on by itself.",
)
def api_merge(run: DoneRunDep, lab: LabDep, k: int, body: MergeRequest):
    return _started(service.force_merge(lab, run, k, body.pair, wait=lab.quick_wait), step=k + 1)


@router.post(
    "/{run_id}/encode",
    summary="Apply the merges up to a step to a new text, merge by merge",
    description="The text's words after each merge up to `step` (default: all), then its ids and tokens.",
)
def api_encode(run: DoneRunDep, body: EncodeRequest):
    return service.encode_trace(run, body.text, body.step)[1]


@router.post(
    "/{run_id}/cancel",
    summary="Cancel a queued or running training",
    description="Stops it within one step, whichever worker trains it; answers the run and whether a stop was asked.",
)
def api_cancel(run: RunDep, lab: LabDep):
    cancelled = lab.cancel(run.id)
    if cancelled:
        lab.pool.wait(run.id, 2.0)
    return service.summary(run) | {"cancel_requested": cancelled}


@router.get(
    "/{run_id}/export",
    summary="Download a run",
    description="`json`: the whole run; `tiktoken`: a byte-level run's ranks; `model`: a SentencePiece-style or "
    "unigram run's .model; `tokenizer.json`: a WordPiece run's.",
)
def api_export(run: DoneRunDep, format: Literal["json", "tiktoken", "model", "tokenizer.json"] = "json"):
    return download(*service.export(run, format))


@router.post(
    "/{run_id}/use",
    summary="Use the trained tokenizer in the playground (for this browser)",
    description="Registers it as lab-<id> for this client (cookie tp_lab) and answers its name and playground link.",
)
def api_use(request: Request, run: DoneRunDep, settings: SettingsDep):
    spec = register_run(run, settings.lab_max_runs)
    response = JSONResponse({"tokenizer": spec.name, "label": spec.label, "playground": f"/?tokenizer={spec.name}"})
    return remember_run(request, response, run.id)
