"""The measure page (``/measure``): tokenizers measured on a corpus the user uploads or picks from the server's corpus
folder, as a job that survives a reload.

- ``GET /measure`` the form (files, the corpus folder's files, tokenizers, options) and this browser's measurements;
- ``POST /measure`` starts one (:class:`app.services.measure.Measurements`) and answers 303 to its page (a mistake:
  the form again with the message, and its status);
- ``GET /measure/jobs/{id}`` its page: progress (block ``job``, which htmx asks for again every second while the
  measurement runs), then the results' tables and charts; ``POST /measure/jobs/{id}/cancel`` stops it;
- ``GET /measure/jobs/{id}/report.{csv,json}`` the report as a file.
"""

from __future__ import annotations

import copy

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from app.engines.errors import TokenplayError
from app.services.measure import Measurements, size_text
from app.services.catalog import Tokenizers

from ..cookies import measurement_ids, remember_measurement
from ..deps import MeasurementsDep, TokenizersDep, read_measure_form
from ..errors import status_for
from ..render import download, page_or_block
from ..rendering.pickers import picker_groups

router = APIRouter(include_in_schema=False)

#: What the form picks when a browser first comes.
DEFAULT_TOKENIZERS = ("cl100k_base", "o200k_base", "llama-3")
#: A browser's measurements listed under the form.
LISTED = 10


def _form_context(request: Request, tokenizers: Tokenizers, measurements: Measurements, *, chosen: list[str],
                  fields: dict[str, str] | None = None, corpus: list[str] | None = None,
                  error: str | None = None, status: int = 200) -> dict:
    settings = measurements.settings
    return {
        "active_nav": "measure",
        "picker_groups": picker_groups(tokenizers.listed(), missing=chosen),
        "picked": set(tokenizers.known(chosen)),
        "fields": fields or {},
        "corpus_files": measurements.corpus_files(),
        "corpus_dir": settings.corpus_dir is not None,
        "corpus_picked": set(corpus or ()),
        "max_upload": size_text(settings.measure_max_upload_bytes),
        "max_tokenizers": settings.measure_max_tokenizers,
        "mine": measurements.mine(reversed(measurement_ids(request)))[:LISTED],
        "error": error,
        "status": status,
    }


@router.get("/measure")
def measure_page(request: Request, tokenizers: TokenizersDep, measurements: MeasurementsDep):
    context = _form_context(request, tokenizers, measurements, chosen=list(DEFAULT_TOKENIZERS))
    return page_or_block(request, "measure.html", "content", context)


@router.post("/measure")
async def start(request: Request, tokenizers: TokenizersDep, measurements: MeasurementsDep):
    from anyio import to_thread

    form = await read_measure_form(request)
    f = form.fields
    try:
        measurement = await to_thread.run_sync(lambda: measurements.start(
            tokenizers, form.tokenizers, files=form.files, corpus=form.corpus, field_name=f.get("field", "text"),
            group_by=_group_by(f), reference_group=f.get("reference_group"),
            reference_tokenizer=f.get("reference_tokenizer") or f.get("ref")))
    except TokenplayError as exc:
        context = _form_context(request, tokenizers, measurements, chosen=form.tokenizers, fields=f,
                                corpus=form.corpus, error=str(exc), status=status_for(exc))
        return page_or_block(request, "measure.html", "content", context, status_code=context["status"])
    finally:
        await form.close()
    response = RedirectResponse(f"/measure/jobs/{measurement.id}", status_code=303)
    return remember_measurement(request, response, measurement.id)


def _group_by(fields: dict[str, str]) -> str | None:
    """The form's grouping: ``group`` is none, file or field; a field's name is in ``group_field``."""
    group = fields.get("group", "")
    if group == "file":
        return "file"
    if group == "field":
        return f"field:{fields.get('group_field', '').strip()}"
    return fields.get("group_by") or None


@router.get("/measure/jobs/{measurement_id}")
def job_page(request: Request, measurement_id: str, measurements: MeasurementsDep):
    # a snapshot: a worker thread of this process may be finishing the very record the store hands out (its report
    # set, then its status), and a page that read the report before the status would show "done" without it
    measurement = copy.copy(measurements.get(measurement_id))
    context = {"active_nav": "measure", "m": measurement, "report": measurement.report}
    return page_or_block(request, "measure_job.html", "job", context)


@router.post("/measure/jobs/{measurement_id}/cancel")
def cancel(request: Request, measurement_id: str, measurements: MeasurementsDep):
    try:
        measurements.cancel(measurement_id)
    except TokenplayError as exc:
        if status_for(exc) != 409:  # already ended: show it as it ended
            raise
    if request.headers.get("HX-Request"):
        return job_page(request, measurement_id, measurements)
    return RedirectResponse(f"/measure/jobs/{measurement_id}", status_code=303)


@router.get("/measure/jobs/{measurement_id}/report.{fmt}")
def report_file(measurement_id: str, fmt: str, measurements: MeasurementsDep) -> Response:
    body, media = measurements.export(measurement_id, fmt)
    return download(body, media, f"tokenplay-measure-{measurement_id}.{fmt}")
