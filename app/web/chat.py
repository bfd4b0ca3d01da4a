"""The chat markup page (``/chat``): messages rendered in the ChatML format of cl100k/o200k chat models, counted.

- ``GET /chat`` the page with a default conversation;
- ``POST /chat`` add or remove a message row (or, without JavaScript, re-render): block ``editor``;
- ``POST /chat/result`` the live part while typing: block ``result`` (rendered markup, tokens per tokenizer).

:func:`chat_tokenizers` is shared with ``POST /api/chat`` (:mod:`app.web.api.chat`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request

from app.engines import chat, registry
from app.engines.errors import TokenplayError
from app.lab.tokenizers import is_lab_name
from app.settings import Settings

from .deps import SettingsDep, check_text_size
from .render import page_or_block
from .tokenview import token_window

router = APIRouter(include_in_schema=False)


def chat_tokenizers() -> list[str]:
    """Registered tokenizers that have the chat markup tokens (building each one the first time)."""
    names = []
    for spec in registry.specs():
        if is_lab_name(spec.name):  # trained in the lab: no chat markup tokens, and not worth building to find out
            continue
        try:
            if chat.supports_chat(registry.get(spec.name)):
                names.append(spec.name)
        except TokenplayError:
            continue
    return names


def chat_context(messages: list[chat.Message], settings: Settings) -> dict:
    rendered = chat.render_chat(messages)
    check_text_size(rendered, settings)
    panes = []
    for name in chat_tokenizers():
        result = chat.tokenize_chat(registry.get(name), messages)
        window = token_window(result, 0, settings.render_tokens)
        panes.append(
            {
                "name": name,
                "label": registry.spec(name).label,
                "result": result,
                "window": window,
                "hidden_tokens": result.count - window.token_stop,
                "special": sum(1 for t in result.tokens if t.special),
            }
        )
    return {"messages": messages, "rendered": rendered, "panes": panes, "roles": chat.ROLES, "active_nav": "chat"}


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


@router.get("/chat")
def chat_page(request: Request, settings: SettingsDep):
    context = chat_context(list(chat.DEFAULT_MESSAGES), settings)
    return page_or_block(request, "chat.html", "editor", context)


@router.post("/chat")
def chat_edit(
    request: Request,
    settings: SettingsDep,
    role: Annotated[list[str] | None, Form()] = None,
    content: Annotated[list[str] | None, Form()] = None,
    op: Annotated[str | None, Form()] = None,
):
    """Add or remove a message row (or, without JavaScript, re-render the page): answers the whole editor."""
    messages = _apply_op(chat.parse_messages(role or [], content or []), op)
    context = chat_context(messages, settings) | {"focus_last": op == "add"}
    return page_or_block(request, "chat.html", "editor", context)


@router.post("/chat/result")
def chat_result(
    request: Request,
    settings: SettingsDep,
    role: Annotated[list[str] | None, Form()] = None,
    content: Annotated[list[str] | None, Form()] = None,
):
    """The live part: rendered markup and the tokens, for the messages as typed."""
    messages = chat.parse_messages(role or [], content or [])
    return page_or_block(request, "chat.html", "result", chat_context(messages, settings))
