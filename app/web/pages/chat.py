"""The chat markup page (``/chat``): messages rendered in one tokenizer's chat format, and that prompt's tokens.

- ``GET /chat?tokenizer=NAME&compare=OTHER`` the page with a default conversation, rendered for ``NAME`` (default
  cl100k_base) and, when asked, side by side for ``OTHER``;
- ``POST /chat`` add or remove a message row (or, without JavaScript, re-render): block ``editor`` (the picker
  and the message rows, then the result);
- ``POST /chat/result`` the live part while typing or when a picker changes: block ``result``, one pane per
  chosen tokenizer, with an ``HX-Replace-Url`` header carrying the choice (the messages stay out of the URL).
- ``POST /chat/explain`` a clicked token of a pane (``pane``: its tokenizer, ``explain``: its index): block
  ``explain``, why that token of the prompt is what it is (:func:`app.features.explain.explain_pieces`, the prompt
  explained piece by piece as it was tokenized).

Each tokenizer renders its own prompt (:mod:`app.services.chat` over :mod:`app.features.chat.prompt`: the model's
chat template, harmony or ChatML).
What stops a pane (a tokenizer without a chat format, a template refusing the messages, a prompt over the size
limit, an unknown name) shows its message in that pane; the messages stay as typed. The page's status is that of
the first pane's error, if any. Only the chosen tokenizers are built.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.engines.errors import TokenplayError
from app.features.chat import prompt as chat
from app.services.catalog import Tokenizers
from app.services.chat import DEFAULT_TOKENIZER, check_messages_size, explain_prompt_token, prompt_tokens
from app.settings import Settings

from ..deps import FormDep, SettingsDep, TokenizersDep, run_cpu
from ..errors import status_for
from ..render import is_htmx, page_or_block
from ..rendering.links import chat_url
from ..rendering.pickers import picker_groups
from ..rendering.tokenview import token_window

router = APIRouter(include_in_schema=False)


def _pane(tokenizers: Tokenizers, name: str, messages: list[chat.Message], settings: Settings) -> dict:
    """One tokenizer's pane: its rendered prompt's tokens, or the message saying why there are none."""
    pane: dict = {"name": name, "label": name, "result": None, "error": None, "status": 200}
    try:
        tok = tokenizers.get(name)
        pane["name"] = tok.name
        pane["label"] = tokenizers.label(tok.name)
        cut = prompt_tokens(tokenizers, name, messages, settings)
    except TokenplayError as exc:
        return pane | {"error": str(exc), "status": status_for(exc)}
    prompt, result = cut.prompt, cut.result
    window = token_window(result, 0, settings.render_tokens)
    # the prompt's text as far as the coloured tokens go: a 1 MB prompt is not sent again on every keystroke
    shown = result.text[: window.spans[-1].end] if window.has_more and window.spans else result.text
    return pane | {
        "prompt_text": shown,
        "hidden_chars": len(result.text) - len(shown),
        "format": prompt.format,
        "format_note": chat.FORMATS[prompt.format],
        "dated": prompt.dated.strftime("%d %B %Y") if prompt.dated else "",
        "result": result,
        "window": window,
        "hidden_tokens": result.count - window.token_stop,
        "special": cut.special,
    }


def chat_context(
    tokenizers: Tokenizers, messages: list[chat.Message], names: list[str], settings: Settings, *, picker: bool
) -> dict:
    """The panes of the chosen tokenizers (``names``: the tokenizer, then the one to compare with, if any)."""
    try:
        check_messages_size(messages, settings)  # before any template runs on them
        panes = [_pane(tokenizers, name, messages, settings) for name in names]
    except TokenplayError as exc:
        panes = [{"name": names[0], "label": names[0], "result": None, "error": str(exc), "status": status_for(exc)}]
    chosen = [pane["name"] for pane in panes] + names[len(panes) :]
    context = {
        "messages": messages,
        "roles": chat.ROLES,
        "panes": panes,
        "tokenizer": chosen[0],
        "compare": chosen[1] if len(chosen) > 1 else "",
        "status": panes[0]["status"],
        "active_nav": "chat",
    }
    if picker:
        context["groups"] = picker_groups(tokenizers.listed(), chosen)
    return context


def _names(fields) -> list[str]:
    """The chosen tokenizers from a form or a query: ``tokenizer`` (default cl100k_base), then ``compare``."""
    first = str(fields.get("tokenizer") or DEFAULT_TOKENIZER)
    other = str(fields.get("compare") or "")
    return [first, other] if other and other != first else [first]


def _messages(form) -> list[chat.Message]:
    """The message rows of a form (read by ``read_form``: contents as their text areas hold them, LF not CRLF)."""
    return chat.parse_messages(form.getlist("role"), [str(c) for c in form.getlist("content")])


def _apply_op(messages: list[chat.Message], op: str | None) -> list[chat.Message]:
    if not op:
        return messages
    if op == "add":
        last = messages[-1].role if messages else "assistant"
        role = "assistant" if last == "user" else "user"
        return messages + [chat.Message(role, "")]
    if op.startswith("remove:"):
        try:
            index = int(op.split(":", 1)[1])
        except ValueError:
            return messages
        return [m for i, m in enumerate(messages) if i != index]
    return messages


def _answer(request: Request, block: str, context: dict, headers: dict | None = None):
    return page_or_block(request, "chat.html", block, context, status_code=context["status"], headers=headers)


@router.get("/chat")
async def chat_page(request: Request, settings: SettingsDep, tokenizers: TokenizersDep):
    names = _names(request.query_params)

    def work():
        context = chat_context(tokenizers, list(chat.DEFAULT_MESSAGES), names, settings, picker=True)
        return _answer(request, "editor", context)

    return await run_cpu(request, work)


@router.post("/chat")
async def chat_edit(request: Request, settings: SettingsDep, tokenizers: TokenizersDep, form: FormDep):
    """Add or remove a message row (or, without JavaScript, re-render the page): answers the whole editor."""
    op = str(form.get("op") or "") or None
    messages = _apply_op(_messages(form), op)
    names = _names(form)

    def work():
        context = chat_context(tokenizers, messages, names, settings, picker=True) | {"focus_last": op == "add"}
        return _answer(request, "editor", context)

    return await run_cpu(request, work)


@router.post("/chat/result")
async def chat_result(request: Request, settings: SettingsDep, tokenizers: TokenizersDep, form: FormDep):
    """The live part: each chosen tokenizer's prompt and tokens, for the messages as typed."""
    messages = _messages(form)
    names = _names(form)

    def work():
        context = chat_context(tokenizers, messages, names, settings, picker=not is_htmx(request))
        chosen = [context["tokenizer"], context["compare"]] if context["compare"] else [context["tokenizer"]]
        return _answer(request, "result", context, {"HX-Replace-Url": chat_url(chosen)})

    return await run_cpu(request, work)


@router.post("/chat/explain")
async def chat_explain(request: Request, settings: SettingsDep, tokenizers: TokenizersDep, form: FormDep):
    """Fields: the chat form's, ``pane`` (the clicked pane's tokenizer) and ``explain`` (the token's index)."""
    messages = _messages(form)
    name = str(form.get("pane") or form.get("tokenizer") or DEFAULT_TOKENIZER)
    raw = str(form.get("explain") or "")

    def work():
        context = {"explained": None, "explain_error": None, "explained_name": name}
        if raw.strip().isdigit():
            try:
                found = explain_prompt_token(tokenizers, name, messages, int(raw), settings)
                context["explained_name"], context["explained"] = found
            except TokenplayError as exc:
                context["explain_error"] = str(exc)
        return page_or_block(request, "chat.html", "explain", context)

    return await run_cpu(request, work)
