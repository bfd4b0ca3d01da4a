"""Measuring a corpus through the API (:mod:`app.services.measure`, as the measure page does):

- ``POST /api/measure`` — start one: multipart (``file`` repeated, ``corpus`` repeated, ``t`` repeated or names
  separated by commas, ``field``, ``group_by``, ``reference_group``, ``reference_tokenizer``) or JSON (the corpus
  folder's files only); 202 with its id and where to follow it;
- ``GET /api/measure/corpus`` — the files of the corpus folder the server was started with (``--corpus-dir``);
- ``GET /api/measure/{id}`` — its status, progress and, once done, the report (``tokenplay measure``'s JSON);
- ``POST /api/measure/{id}/cancel`` — stop it (409 once it has ended);
- ``GET /api/measure/{id}/export?format=csv|json`` — the report as a file (409 until it is done).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, Field, ValidationError

from ..cookies import remember_measurement
from ..deps import MeasurementsDep, TokenizersDep, read_measure_form
from ..render import FastJSON, download

router = APIRouter()


class MeasureRequest(BaseModel):
    tokenizers: list[str] = Field(min_length=1, description="names from GET /api/tokenizers (or model aliases)")
    corpus: list[str] = Field(min_length=1, description="files (or folders) of GET /api/measure/corpus")
    field: str = Field("text", description="the .jsonl field or Parquet column that holds the text")
    group_by: str | None = Field(None, description="file, or field:NAME (a field of each record)")
    reference_group: str | None = Field(None, description="premium: each group's tokens over this group's")
    reference_tokenizer: str | None = Field(None, description="tokenizer_premium: each tokenizer's over this one's")


def _started(request: Request, measurement) -> Response:
    body = measurement.to_dict() | {"url": f"/api/measure/{measurement.id}", "page": f"/measure/jobs/{measurement.id}"}
    response = FastJSON(body, status_code=202, headers={"Location": f"/api/measure/{measurement.id}"})
    return remember_measurement(request, response, measurement.id)


@router.post("/measure", tags=["measure"], status_code=202, summary="Start measuring tokenizers on a corpus",
             openapi_extra={"requestBody": {"content": {
                 "application/json": {"schema": MeasureRequest.model_json_schema()},
                 "multipart/form-data": {"schema": {"type": "object", "properties": {
                     "file": {"type": "array", "items": {"type": "string", "format": "binary"}},
                     "t": {"type": "array", "items": {"type": "string"}},
                     "corpus": {"type": "array", "items": {"type": "string"}},
                     "field": {"type": "string"}, "group_by": {"type": "string"},
                     "reference_group": {"type": "string"}, "reference_tokenizer": {"type": "string"}}}}}}})
async def start_measurement(request: Request, tokenizers: TokenizersDep, measurements: MeasurementsDep) -> Response:
    """Queue a measurement of uploaded files (multipart ``file``, up to the server's upload limit: 413 beyond) or of
    the corpus folder's files, with each tokenizer named; 202 with its id, then follow ``GET /api/measure/{id}``.
    The queue is full: 429 with ``Retry-After``."""
    from anyio import to_thread

    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = MeasureRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from None
        measurement = await to_thread.run_sync(lambda: measurements.start(
            tokenizers, body.tokenizers, corpus=body.corpus, field_name=body.field, group_by=body.group_by,
            reference_group=body.reference_group, reference_tokenizer=body.reference_tokenizer))
        return _started(request, measurement)
    form = await read_measure_form(request)
    try:
        f = form.fields
        measurement = await to_thread.run_sync(lambda: measurements.start(
            tokenizers, form.tokenizers, files=form.files, corpus=form.corpus, field_name=f.get("field", "text"),
            group_by=f.get("group_by"), reference_group=f.get("reference_group"),
            reference_tokenizer=f.get("reference_tokenizer")))
    finally:
        await form.close()
    return _started(request, measurement)


@router.get("/measure/corpus", tags=["measure"], summary="List the corpus folder's files")
def corpus_files(measurements: MeasurementsDep) -> Response:
    """The files of the folder the server was started with (``tokenplay serve --corpus-dir``) that a measurement
    can read: ``{"path", "bytes"}`` each (``corpus_dir`` false and no files when there is none)."""
    return FastJSON({"corpus_dir": measurements.settings.corpus_dir is not None, "files": measurements.corpus_files()})


@router.get("/measure/{measurement_id}", tags=["measure"], summary="A measurement's progress and report")
def measurement(measurement_id: str, measurements: MeasurementsDep) -> Response:
    """``status`` (queued, running, done, error, cancelled), ``progress`` (input bytes), ``error``, and once done
    ``report``: ``{"tokenizers": {NAME: {figure: value, ..., "groups": {...}}}, "corpus", "problems", "options"}``."""
    return FastJSON(measurements.get(measurement_id).to_dict())


@router.post("/measure/{measurement_id}/cancel", tags=["measure"], status_code=202, summary="Cancel a measurement")
def cancel_measurement(measurement_id: str, measurements: MeasurementsDep) -> Response:
    """Ask a queued or running measurement to stop (it ends ``cancelled`` within a part); 409 once it has ended."""
    return FastJSON(measurements.cancel(measurement_id).to_dict(), status_code=202)


@router.get("/measure/{measurement_id}/export", tags=["measure"], summary="A finished measurement as CSV or JSON")
def export_measurement(measurement_id: str, measurements: MeasurementsDep, format: str = "json") -> Response:
    """The report as a file: CSV (a row per tokenizer and group) or JSON; 409 until the measurement is done."""
    body, media = measurements.export(measurement_id, format)
    return download(body, media, f"tokenplay-measure-{measurement_id}.{format}")
