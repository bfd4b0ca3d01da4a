"""Add a tokenizer…: the form that ends every picker, and what it shares with ``POST /api/tokenizers``.

With JavaScript, ``static/picker.js`` posts the form's file and fields to ``POST /api/tokenizers`` (the JSON API,
:mod:`app.web.api.tokenize`) and selects the new tokenizer in its picker. Without JavaScript the form posts here:

- ``POST /tokenizers`` (multipart: ``file``; optional ``config``, the model's ``tokenizer_config.json`` with its
  chat template; optional ``name``; for a ``.tiktoken`` file ``pattern``, a pattern
  name or ``custom`` with the regex in ``regex``, and ``special``, one a line; ``back``: ``playground``,
  ``compare``, ``chat`` or ``languages``) keeps the file exactly as the API does and redirects (303) to that page with the new
  tokenizer chosen. A refused file answers the form again, with the message, the fields as typed and the error's
  status.

Checking and keeping files is :mod:`app.web.uploads`' and the loaders' business, not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from app.engines.errors import TokenplayError
from app.engines.registry.loaders import MAX_FILE_BYTES, check_size, detect_format
from app.lab.tokenizers import cookie_with

from .compare import default_selection
from .deps import TokenizersDep, UploadsDep
from .errors import TooLargeError, status_for
from .languages import default_selection as languages_selection
from .pickers import Tokenizers
from .render import page_or_block
from .uploads import COOKIE, MAX_CONFIG_BYTES, Upload, UploadError, Uploads

router = APIRouter(include_in_schema=False)

CUSTOM_PATTERN = "custom"  # the form's pattern choice for a regex typed in its ``regex`` field


@dataclass
class UploadForm:
    """A posted upload: the file and the form's text fields (as typed, for showing the form again)."""

    data: bytes
    filename: str
    fields: dict[str, str] = field(default_factory=dict)
    config: bytes | None = None  # the tokenizer_config.json sent with the file, if any

    @property
    def name(self) -> str | None:
        return self.fields.get("name", "").strip() or None

    @property
    def special(self) -> list[str]:
        return [line.strip() for line in self.fields.get("special", "").splitlines() if line.strip()]


async def read_upload(request: Request) -> UploadForm:
    """The multipart form of an upload (the tokenizer file, perhaps its tokenizer_config.json, a few small fields);
    no tokenizer file raises :class:`UploadError`, a config over :data:`MAX_CONFIG_BYTES` a ``TooLargeError``."""
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


async def keep_upload(form: UploadForm, pattern: str | None, tokenizers: Tokenizers, uploads: Uploads) -> Upload:
    """Check the file by building it and keep it for this browser (see :meth:`Uploads.add`); raises when refused."""
    check_size(form.data)
    taken = {s.name for s in tokenizers.listed()}
    return await run_in_threadpool(
        uploads.add, form.data, name=form.name, filename=form.filename, taken=taken, pattern=pattern,
        special_tokens=form.special, config=form.config,
    )


def remember(response: Response, request: Request, upload: Upload) -> Response:
    """Add the upload to the browser's ``tp_tok`` cookie, which lists the tokenizers it brought."""
    response.set_cookie(
        COOKIE, cookie_with(request.cookies.get(COOKIE), upload.id), max_age=30 * 86400, samesite="lax",
        httponly=True,
    )
    return response


def form_pattern(form: UploadForm) -> str | None:
    """The split pattern the form chose, for a ``.tiktoken`` file only (the loaders refuse one for any other)."""
    if detect_format(form.data) != "tiktoken":
        return None
    choice = form.fields.get("pattern") or None
    if choice != CUSTOM_PATTERN:
        return choice
    regex = form.fields.get("regex", "")
    if not regex:
        raise UploadError("type the split regex, or choose one of the named split patterns")
    return regex


def back_url(back: str, name: str, tokenizers: Tokenizers) -> str:
    """The page the form came from, with the new tokenizer chosen (compare: beside the default choice)."""
    if back == "compare":
        return "/compare?" + urlencode([("t", n) for n in (*default_selection(tokenizers), name)])
    if back == "chat":
        return "/chat?" + urlencode({"tokenizer": name})
    if back == "languages":
        return "/languages?" + urlencode([("t", n) for n in (*languages_selection(tokenizers), name)])
    return "/?" + urlencode({"tokenizer": name})


@router.post("/tokenizers")
async def add_tokenizer_form(request: Request, tokenizers: TokenizersDep, uploads: UploadsDep):
    """The add form without JavaScript: keep the file, then back to the page it came from."""
    form = UploadForm(b"", "")
    try:
        form = await read_upload(request)
        upload = await keep_upload(form, form_pattern(form), tokenizers, uploads)
    except TokenplayError as exc:
        context = {"add": form.fields | {"error": str(exc)}, "back": form.fields.get("back", "playground")}
        return page_or_block(request, "add_tokenizer.html", "content", context, status_code=status_for(exc))
    target = back_url(form.fields.get("back", ""), upload.name, tokenizers)
    if upload.warnings:  # added, with something to read first: the page says it, with the way on
        context = {"add": {}, "back": form.fields.get("back", "playground"),
                   "added": {"name": upload.name, "warnings": upload.warnings, "next": target}}
        return remember(page_or_block(request, "add_tokenizer.html", "content", context, status_code=201), request, upload)
    return remember(RedirectResponse(target, 303), request, upload)
