"""Add a tokenizer…: the form that ends every picker, and what it shares with ``POST /api/tokenizers``.

With JavaScript, ``static/picker.js`` posts the form's file and fields to ``POST /api/tokenizers`` (the JSON API,
:mod:`app.web.api.tokenize`) and selects the new tokenizer in its picker. Without JavaScript the form posts here,
and both keep the file through the same service (:meth:`app.services.catalog.Tokenizers.add_upload`):

- ``POST /tokenizers`` (multipart: ``file``; optional ``config``, the model's ``tokenizer_config.json`` with its
  chat template; optional ``name``; for a ``.tiktoken`` file ``pattern``, a pattern
  name or ``custom`` with the regex in ``regex``, and ``special``, one a line; ``back``: ``playground``,
  ``compare``, ``chat`` or ``languages``) keeps the file exactly as the API does and redirects (303) to that page with the new
  tokenizer chosen. A refused file answers the form again, with the message, the fields as typed and the error's
  status.

Checking and keeping files is :mod:`app.services.uploads`' and the loaders' business, not this module's.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse

from app.engines.errors import TokenplayError
from app.engines.registry.loaders import detect_format
from app.services import compare, languages
from app.services.catalog import Tokenizers
from app.services.uploads import UploadError

from ..cookies import remember_upload
from ..deps import TokenizersDep, UploadForm, read_upload
from ..errors import status_for
from ..render import page_or_block
from ..rendering.links import chat_url, compare_url, languages_url, playground_url, vocab_url

router = APIRouter(include_in_schema=False)

CUSTOM_PATTERN = "custom"  # the form's pattern choice for a regex typed in its ``regex`` field


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
        return compare_url([*compare.default_selection(tokenizers), name])
    if back == "chat":
        return chat_url([name])
    if back == "languages":
        return languages_url([*languages.default_selection(tokenizers), name])
    if back == "vocab":
        return vocab_url(name)
    return playground_url(name, "", url_text_limit=0)


@router.post("/tokenizers")
async def add_tokenizer_form(request: Request, tokenizers: TokenizersDep):
    """The add form without JavaScript: keep the file, then back to the page it came from."""
    form = UploadForm(b"", "")
    try:
        form = await read_upload(request)
        upload = await run_in_threadpool(
            tokenizers.add_upload, form.data, name=form.name, filename=form.filename, pattern=form_pattern(form),
            special_tokens=form.special, config=form.config,
        )
    except TokenplayError as exc:
        context = {"add": form.fields | {"error": str(exc)}, "back": form.fields.get("back", "playground")}
        return page_or_block(request, "add_tokenizer.html", "content", context, status_code=status_for(exc))
    target = back_url(form.fields.get("back", ""), upload.name, tokenizers)
    if upload.warnings:  # added, with something to read first: the page says it, with the way on
        context = {"add": {}, "back": form.fields.get("back", "playground"),
                   "added": {"name": upload.name, "warnings": upload.warnings, "next": target}}
        response = page_or_block(request, "add_tokenizer.html", "content", context, status_code=201)
    else:
        response = RedirectResponse(target, 303)
    return remember_upload(request, response, upload.id)
