"""Request-scoped dependencies as ``Annotated`` aliases: they resolve what a route needs and raise when they
cannot (the error table of :mod:`app.web.errors` answers), so routes hold no look-up or error plumbing.

- ``SettingsDep``: the app's :class:`~app.settings.Settings`;
- ``TokenizersDep``: the tokenizers this request may use and list (:class:`~app.services.catalog.Tokenizers`,
  from the browser's cookies); ``UploadsDep``: the uploaded tokenizers' store
  (:class:`~app.services.uploads.Uploads`);
- ``LabDep``: the lab (created and shut down in the app's lifespan); ``RunDep``: the run named by ``{run_id}``
  (404 when there is none); ``DoneRunDep``: the same, finished (409 while it trains);
- ``MeasurementsDep``: the app's measurements of corpora (:class:`~app.services.measure.Measurements`, made and
  shut down with the lab);
- ``ClassroomDep``: the class sessions (:class:`~app.classroom.service.Classroom`);
- ``FormDep``: a posted form read with the app's text limit (a text over it is a 413, not Starlette's 400),
  its text fields as the page's text areas hold them (:func:`text_area_value`); :func:`read_upload`, the form
  that brings a tokenizer file.

Also :func:`run_cpu`, the lane that CPU-heavy work runs in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from fastapi import Depends, Request
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException

from app.classroom.reach import Reach, reach
from app.classroom.service import Classroom
from app.classroom.sessions import Session
from app.engines import budget as budgets
from app.engines.errors import TokenplayError
from app.engines.registry.loaders import MAX_FILE_BYTES
from app.lab.runs import Run
from app.lab.service import Lab, RunNotReady
from app.services.catalog import Tokenizers
from app.services.errors import TooLargeError
from app.services.uploads import MAX_CONFIG_BYTES, UploadError, Uploads
from app.services.measure import Measurements
from app.settings import Settings

from .cookies import lab_run_ids, upload_ids
from .lanes import Lanes


def _settings(request: Request) -> Settings:
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(_settings)]


def _lab(request: Request) -> Lab:
    return request.app.state.lab


LabDep = Annotated[Lab, Depends(_lab)]


def _uploads(request: Request) -> Uploads:
    return request.app.state.uploads


UploadsDep = Annotated[Uploads, Depends(_uploads)]


def _tokenizers(request: Request, lab: LabDep, uploads: UploadsDep, settings: SettingsDep) -> Tokenizers:
    return Tokenizers(lab, lab_run_ids(request), settings.lab_max_runs, uploads, upload_ids(request))


TokenizersDep = Annotated[Tokenizers, Depends(_tokenizers)]


def _measurements(request: Request) -> Measurements:
    return request.app.state.measurements


MeasurementsDep = Annotated[Measurements, Depends(_measurements)]


def _run(run_id: str, lab: LabDep) -> Run:
    return lab.run(run_id)


RunDep = Annotated[Run, Depends(_run)]


def _done_run(run: RunDep) -> Run:
    if run.status != "done":
        raise RunNotReady(run)
    return run


DoneRunDep = Annotated[Run, Depends(_done_run)]


def _classroom(request: Request) -> Classroom:
    return request.app.state.classroom


ClassroomDep = Annotated[Classroom, Depends(_classroom)]


def client_of(request: Request) -> str:
    """The address a failed join of a class session counts against."""
    return request.client.host if request.client else "unknown"


def find_session(request: Request, classroom: Classroom, code: str) -> Session:
    """The class session named in the URL (404, or 429 for a client that tried too many codes; never for the
    session's teacher, who sends the teacher token)."""
    return classroom.find(code, client_of(request), request.headers.get("authorization"))


def class_reach(request: Request, settings: Settings) -> Reach:
    """Where students reach this server (:func:`app.classroom.reach.reach`): ``TOKENPLAY_PUBLIC_URL`` when set, else
    the address the teacher used (or, when that is this machine's loopback, its network address); every link a
    phone may open; and a warning in words when none can (the server listens on loopback only)."""
    return reach(settings.listen_host, settings.listen_port, settings.public_url, str(request.base_url))


def text_area_value(text: str) -> str:
    r"""The text as a text area holds it: browsers turn CRLF and lone CR into LF (and send CRLF in forms).

    Normalising where a text area's text arrives keeps the view, the counts and the URL equal to what the user
    sees and edits (the playground), and a pasted corpus equal to the same text uploaded as a file (the lab).

    >>> text_area_value("a\r\nb\rc")
    'a\nb\nc'
    """
    return text.replace("\r\n", "\n").replace("\r", "\n")


def typed_fields(form: FormData) -> FormData:
    r"""``form`` with every text field as the page's text area holds it (:func:`text_area_value`); files as sent.

    Submitting a form, a browser writes each line break of every field as CRLF (the HTML standard's form
    encoding), while the text area the user reads holds LF: every page reads its form through here (by
    :func:`read_form`), so the playground, compare, chat and the lab count the text the user sees, as
    ``/api/tokenize`` does for that text. Nothing else in a field changes.

    >>> typed_fields(FormData([("text", "a\r\nb\rc"), ("t", "gpt2")])).multi_items()
    [('text', 'a\nb\nc'), ('t', 'gpt2')]
    """
    return FormData([(k, text_area_value(v) if isinstance(v, str) else v) for k, v in form.multi_items()])


def checked(value: object) -> bool:
    """A checkbox or flag field as sent by a form or a URL: ``1``, ``true``, ``on`` or ``yes`` is on."""
    return isinstance(value, str) and value.lower() in ("1", "true", "on", "yes")


# The messages of Starlette's form parsers when a limit is passed (any other parse error is a malformed form).
_OVER_LIMIT = ("Part exceeded maximum size", "Field exceeded maximum size", "Too many fields")


class FormError(TokenplayError):
    """A form that is not what the page takes (a file part where none belongs): 422."""


async def read_form(request: Request, max_chars: int, *, max_files: int = 0) -> FormData:
    """The posted form (multipart or url-encoded), allowing one field as long as ``max_chars`` characters, its
    text fields as the text areas hold them (:func:`typed_fields`: line breaks sent as CRLF read as LF).

    Starlette caps a form field at 1 MB by default; a text of ``max_chars`` characters can be several times
    that once UTF-8- and percent-encoded (up to 12 bytes a character), so the cap follows the limit and the
    size check proper comes after. A form over a limit is a 413, never Starlette's own 400 (which it answers
    for every parse error inside an app); a malformed form stays a 400.
    """
    try:
        form = await request.form(max_part_size=max_chars * 12 + 1024, max_fields=50, max_files=max_files)
    except (MultiPartException, HTTPException) as exc:
        message = exc.message if isinstance(exc, MultiPartException) else str(exc.detail)
        if message.startswith("Too many files"):  # a file where none (or fewer) belong: not a size, a wrong form
            if max_files == 0:
                raise FormError("this form takes no file, and a file part was sent; send the text as a field") from None
            raise FormError(f"this form takes at most {max_files} file{'s' if max_files > 1 else ''}; more were sent") from None
        if not message.startswith(_OVER_LIMIT):
            raise
        limit = f"a text may have up to {max_chars:,} characters"
        raise TooLargeError(f"the form is over this page's limits ({message}); {limit}") from None
    return typed_fields(form)


async def _form(request: Request, settings: SettingsDep) -> FormData:
    return await read_form(request, settings.max_chars)


#: A posted form whose text fields may be as long as the longest accepted text (see :func:`read_form`).
FormDep = Annotated[FormData, Depends(_form)]

@dataclass
class UploadForm:
    """A posted tokenizer file: its bytes and name, the form's text fields (as typed, for showing the form again),
    and the tokenizer_config.json sent with it, if any."""

    data: bytes
    filename: str
    fields: dict[str, str] = field(default_factory=dict)
    config: bytes | None = None

    @property
    def name(self) -> str | None:
        return self.fields.get("name", "").strip() or None

    @property
    def special(self) -> list[str]:
        return [line.strip() for line in self.fields.get("special", "").splitlines() if line.strip()]


async def read_upload(request: Request) -> UploadForm:
    """The multipart form of an upload (the tokenizer file, perhaps its tokenizer_config.json, a few small fields);
    no tokenizer file raises :class:`~app.services.uploads.UploadError`, a config over
    :data:`~app.services.uploads.MAX_CONFIG_BYTES` a :class:`~app.services.errors.TooLargeError`."""
    form = await request.form(max_files=2, max_fields=10, max_part_size=1 << 20)
    try:
        file = form.get("file")
        if file is None or isinstance(file, str):
            raise UploadError('send the tokenizer file as the multipart field "file"')
        data = await file.read(MAX_FILE_BYTES + 1)
        config = form.get("config") or None  # a file field left empty: an empty text field, or a nameless empty file
        if isinstance(config, str):
            raise UploadError('send the tokenizer_config.json as a file in the multipart field "config"')
        config_data = await config.read(MAX_CONFIG_BYTES + 1) if config is not None else None
        if config_data == b"" and not config.filename:
            config_data = None
        elif config_data is not None and len(config_data) > MAX_CONFIG_BYTES:
            raise TooLargeError(
                f"the tokenizer_config.json has more than {MAX_CONFIG_BYTES >> 20} MB; up to that is accepted"
            )
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        return UploadForm(data, file.filename or "", fields, config_data)
    finally:
        await form.close()


@dataclass
class MeasureForm:
    """A posted measurement (the measure page's form, or ``POST /api/measure`` as multipart): the uploaded files, the
    corpus folder's files picked, the tokenizers, and the options as typed. ``close()`` lets the files go."""

    files: list[tuple[str, Any]]
    corpus: list[str]
    tokenizers: list[str]
    fields: dict[str, str]
    form: Any = None

    async def close(self) -> None:
        if self.form is not None:
            await self.form.close()


#: Files one measurement may upload at once.
MAX_MEASURE_FILES = 200


async def read_measure_form(request: Request) -> MeasureForm:
    """The multipart (or url-encoded) form of a measurement: ``file`` (repeated), ``corpus`` (repeated), ``t``
    (repeated, or names separated by commas) and the options' fields. Starlette keeps uploaded files on disk past
    1 MB; the app's body limit bounds them all."""
    try:
        form = await request.form(max_files=MAX_MEASURE_FILES, max_fields=MAX_MEASURE_FILES + 50,
                                  max_part_size=1 << 20)
    except (MultiPartException, HTTPException) as exc:
        message = exc.message if isinstance(exc, MultiPartException) else str(exc.detail)
        if not message.startswith(_OVER_LIMIT):
            raise
        raise TooLargeError(f"the form is over the measure page's limits ({message}); send up to "
                            f"{MAX_MEASURE_FILES} files") from None
    files = [(f.filename or "", f.file) for f in form.getlist("file") if not isinstance(f, str) and (f.filename or f.size)]
    names = [n.strip() for v in form.getlist("t") if isinstance(v, str) for n in v.split(",") if n.strip()]
    corpus = [v for v in form.getlist("corpus") if isinstance(v, str) and v.strip()]
    fields = {k: v for k, v in form.items() if isinstance(v, str) and k not in ("file", "t", "corpus")}
    return MeasureForm(files, corpus, names, fields, form)


T = TypeVar("T")


#: Threads per process that requests may hold while they wait for a lane or work in it (more wait without one).
LANE_THREADS = 64


def lanes_of(app) -> Lanes:
    """The app's lanes (:mod:`.lanes`), made on first use from its settings."""
    lanes = getattr(app.state, "lanes", None)
    if lanes is None:
        settings = app.state.settings
        lanes = app.state.lanes = Lanes(settings.cpu_threads, settings.untrusted_threads, settings.user_code_seconds,
                                        heavy_threads=settings.heavy_threads)
    return lanes


async def run_cpu(request: Request, fn: Callable[..., T], *args: Any, heavy: bool = False, **kwargs: Any) -> T:
    """Run CPU-bound work (tokenizing, rendering) in the app's CPU lane (:mod:`.lanes`): at most
    ``settings.cpu_threads`` at a time per process, first come first served, and work on what a user brought in
    a lane of its own, under the request's time budget; ``heavy`` work (a big paste to parse, a big upload, a
    finished run's document built the first time) in the heavy lane, so that it never holds up the common one.
    Lab requests that only wait (for a training to start) keep using the default pool, so they never hold up a
    lane."""
    lanes = lanes_of(request.app)
    limiter = getattr(request.app.state, "lane_threads", None)
    if limiter is None:  # created on first use: a limiter belongs to the running event loop
        limiter = request.app.state.lane_threads = anyio.CapacityLimiter(LANE_THREADS)
    work = partial(lanes.run, budgets.current(), partial(fn, *args, **kwargs), heavy=heavy)
    return await anyio.to_thread.run_sync(work, limiter=limiter)
