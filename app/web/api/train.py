"""The BPE lab's API: ``/api/train`` (start), ``/api/train/{id}`` (a run), its steps, manual merges, encode
traces, cancel, exports and "use in playground"; every pair of a step, curves of a new text; the side by side of
three algorithms. The lab's pages
(:mod:`app.web.pages.lab`) call the same service, :mod:`app.services.lab`."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, model_validator

from app.engines.bpe.pretokens import MAX_PATTERN_CHARS
from app.lab.curves import MAX_POINTS, MAX_RUNS, MAX_TEXT_CHARS
from app.lab.display import MAX_ENCODE_CHARS
from app.lab.pair_tables import MAX_LIMIT
from app.lab.options import Options
from app.lab.replay import replay_for
from app.lab.run_tokenizers import register_run
from app.lab.runs import Run
from app.services import lab as service

from ..cookies import remember_run
from ..deps import DoneRunDep, LabDep, RunDep, SettingsDep, run_cpu
from ..render import download
from ..rendering.links import playground_url
from .schemas import PatternName

router = APIRouter(prefix="/train", tags=["lab"])


class SuperwordsRequest(BaseModel):
    transition: int = Field(ge=0, description="merges learned with the run's pattern before merges may cross spaces")
    pattern: PatternName | None = Field(None, description="stage two's pre-tokenizer (default: lines-digits-r2l)")
    pattern_regex: str | None = Field(None, max_length=MAX_PATTERN_CHARS, description="stage two's regex (pattern 'custom')")


class TrainRequest(BaseModel):
    corpus: str = Field(description="the text to train on")
    algorithm: Literal["byte", "char", "sentencepiece", "wordpiece", "unigram"] = "byte"
    pattern: PatternName = Field("gpt2", description="the pre-tokenizer of byte- and character-level BPE")
    pattern_regex: str | None = Field(None, max_length=MAX_PATTERN_CHARS, description="a regex of the regex module (pattern 'custom')")
    vocab_size: int | None = Field(None, ge=1, description="target vocabulary size (base vocabulary + merges)")
    merges: int | None = Field(None, ge=0, description="number of merges (give this or vocab_size)")
    tie_break: Literal["first", "lexical"] = "first"
    end_of_word: bool = Field(False, description="append </w> to every word (character-level BPE only)")
    sentencepiece: dict[str, Any] | None = Field(
        None,
        description="algorithm sentencepiece or unigram: sentencepiece's trainer options, with its names and its "
        "defaults (character_coverage 0.9995, byte_fallback false, split_digits false, add_dummy_prefix true, "
        "remove_extra_whitespaces true, normalization_rule_name nmt_nfkc (or identity, nfkc, nmt_nfkc_cf, nfkc_cf), "
        "max_sentencepiece_length 16, split_by_unicode_script true, split_by_number true, split_by_whitespace true, "
        "treat_whitespace_as_suffix false, allow_whitespace_only_pieces false, user_defined_symbols [], unk_id 0, "
        "bos_id 1, eos_id 2, pad_id -1; also max_sentence_length 4192, shrinking_factor 0.75, num_sub_iterations 2); "
        "vocab_size stays at the top level",
    )
    min_count: int = Field(2, ge=1, description="merge a pair only when it occurs this often (1: pairs seen once too)")
    superwords: SuperwordsRequest | None = Field(None, description="superword BPE: stage two after a transition")
    merge_list: str | None = Field(None, description="merges to replay instead of training, as a merges.txt")

    @model_validator(mode="after")
    def _one_size(self):
        if self.vocab_size is None and self.merges is None and self.merge_list is None:
            self.merges = 10
        return self

    def options(self) -> Options:
        return Options(self.algorithm, self.pattern, self.merges, self.vocab_size, self.tie_break, self.end_of_word,
                       sentencepiece=self.sentencepiece, min_count=self.min_count, pattern_regex=self.pattern_regex,
                       superwords=None if self.superwords is None else self.superwords.model_dump(exclude_none=True),
                       merge_list=self.merge_list)


class CurvesRequest(BaseModel):
    runs: list[str] = Field(min_length=1, max_length=MAX_RUNS, description="finished runs, by id")
    text: str = Field(max_length=MAX_TEXT_CHARS, description="a text the runs never saw")
    points: int = Field(20, ge=2, le=MAX_POINTS, description="steps of each run to count the text at")


class SideBySideRequest(BaseModel):
    corpus: str = Field(description="the text to train the three on")
    vocab_size: int | None = Field(None, ge=1, description="the vocabulary size of all three (or give merges)")
    merges: int | None = Field(None, ge=1, description="instead of vocab_size: the same number of merges for all "
                               "three (BPE's and WordPiece's merges, Unigram's learned pieces beyond its characters)")

    @model_validator(mode="after")
    def _one_size(self):
        if (self.vocab_size is None) == (self.merges is None):
            raise ValueError("give vocab_size (the same vocabulary size) or merges (the same number of merges), not both")
        return self


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
    "GET /api/train/{run_id}); 429 with Retry-After when the lab is busy, 422 for options it cannot train "
    "(``field`` names the option: ``sentencepiece.character_coverage``, ``vocab_size``...). SentencePiece BPE and "
    "unigram runs train with sentencepiece's own trainers: a vocab_size the corpus cannot fill is refused with the "
    "most it can be.",
)
def api_train(body: TrainRequest, lab: LabDep):
    return _started(lab.start(body.corpus, body.options(), wait=lab.quick_wait))


@router.post(
    "/curves",
    summary="Tokens of a new text as each run's vocabulary grows",
    description="For each finished run, the tokens the text takes after `points` steps spread from 0 to its last "
    "(and its superword transition): each exactly what /api/train/{id}/encode gives at that step.",
)
async def api_curves(request: Request, body: CurvesRequest, lab: LabDep):
    runs = service.finished_runs(lab, body.runs)
    return await run_cpu(request, service.curves, runs, body.text, body.points)


@router.post(
    "/side-by-side",
    summary="Train BPE, WordPiece and Unigram on one corpus at one vocabulary size, or with one number of merges",
    description="Starts three runs (SentencePiece BPE, WordPiece, Unigram) and answers 202 with them.",
)
def api_side_by_side(body: SideBySideRequest, lab: LabDep):
    if body.merges is not None:
        runs = service.start_three(lab, body.corpus, body.merges, "merges")
    else:
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
async def api_run(request: Request, run: RunDep) -> Response:
    # a finished run's document is built once (in the heavy lane: most of a second for 4,096 merges), then kept
    data = service.kept_document(run)
    if data is None:
        data = await run_cpu(request, service.document, run, heavy=run.status == "done")
    return Response(data, media_type="application/json")


@router.get(
    "/{run_id}/steps/{k}",
    summary="The state after merge k",
    description="The merge made at step k, the pair table it was chosen from with its ties, and the corpus's "
    "numbers then (409 while the run trains).",
)
def api_step(run: DoneRunDep, k: int):
    return replay_for(run).state(service.check_step(run, k)) | {"id": run.id}


@router.get(
    "/{run_id}/steps/{k}/pairs",
    summary="Every pair before merge k+1",
    description="Every adjacent pair of tokens inside the pre-tokens after k merges with its count, in the order "
    "the trainer ranks them (count, then the run's tie rule); `q` filters by the pair's text; a page of `limit` "
    "from `offset`. Byte- and character-level runs.",
)
async def api_pairs(request: Request, run: DoneRunDep, k: int, offset: int = Query(0, ge=0),
                    limit: int = Query(100, ge=1, le=MAX_LIMIT), q: str = Query("", max_length=100)):
    return await run_cpu(request, service.pairs, run, k, offset, limit, q)


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
    description="`json`: the whole run; `tiktoken`: a byte-level run's ranks; `tiktoken.json`: a byte-level run as "
    "tiktoken.Encoding's arguments (name, pat_str, mergeable_ranks in base64, special_tokens); `model`: a "
    "SentencePiece BPE or unigram run's .model; `tokenizer.json`: a WordPiece, byte- or character-level run's.",
)
def api_export(run: DoneRunDep, format: Literal["json", "tiktoken", "tiktoken.json", "model", "tokenizer.json"] = "json"):
    return download(*service.export(run, format))


@router.post(
    "/{run_id}/use",
    summary="Use the trained tokenizer in the playground (for this browser)",
    description="Registers it as lab-<id> for this client (cookie tp_lab) and answers its name and playground link, "
    "which opens the playground with the start of the run's corpus cut by it.",
)
def api_use(request: Request, run: DoneRunDep, settings: SettingsDep):
    spec = register_run(run, settings.lab_max_runs)
    link = playground_url(spec.name, service.playground_sample(run), url_text_limit=settings.url_text_limit)
    response = JSONResponse({"tokenizer": spec.name, "label": spec.label, "playground": link})
    return remember_run(request, response, run.id)
