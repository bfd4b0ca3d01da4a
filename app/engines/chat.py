"""Chat markup: render messages the way each model sees them, and tokenize that.

Three formats, chosen per tokenizer (:func:`chat_format`):

- ``template``: a model shipped with its ``tokenizer_config.json`` (Llama 3, Qwen3, DeepSeek V3, Gemma 3, in either
  engine) is rendered with its own chat template (:func:`.chat_template.render_template`) and the whole prompt is
  encoded with special tokens parsed, as ``apply_chat_template`` does, so markup text inside a message counts as
  markup there too;
- ``harmony``: ``o200k_harmony`` (gpt-oss) gets the harmony format (:func:`.chat_template.render_harmony`);
- ``chatml``: cl100k- and o200k-based chat models, described below.

The ChatML format (with the separator token)::

    <|im_start|>system<|im_sep|>You are helpful.<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|>
    <|im_start|>assistant<|im_sep|>

with no newlines between messages (shown broken here for width), ending with the assistant primer: the model
writes its answer after it. A tokenizer supports the format when it has all three markup special tokens
(``<|im_start|>``, ``<|im_sep|>``, ``<|im_end|>``): cl100k_base, o200k_base and any engine running the same
vocabularies.

:func:`tokenize_chat` encodes the markup as special tokens and the roles and contents as plain text, so a message
that happens to contain ``<|im_end|>`` cannot close itself early (what a chat API does). For contents free of
special-token text this is exactly ``encode(render_chat(messages), allowed_special="all")``; pass
``content_special=True`` to get that encoding in every case.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from . import registry
from .chat_template import render_harmony, render_template
from .errors import TokenplayError, UnknownTokenizerError
from .npm_models import NPM_MODELS
from .openai import IM_END, IM_SEP, IM_START
from .result import Token, TokenizeResult

ROLES = ("system", "user", "assistant")
MARKUP_TOKENS = (IM_START, IM_SEP, IM_END)
MAX_MESSAGES = 200


class ChatError(TokenplayError):
    """Messages that cannot be rendered, or a tokenizer without the chat markup tokens."""


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str

    def to_dict(self) -> dict:
        return {"role": self.role, "content": self.content}


def check_messages(messages: Iterable[Message]) -> list[Message]:
    messages = list(messages)
    if len(messages) > MAX_MESSAGES:
        raise ChatError(f"{len(messages)} messages; at most {MAX_MESSAGES} can be rendered, remove some")
    for index, m in enumerate(messages):
        if m.role not in ROLES:
            raise ChatError(f"message {index + 1} has role {m.role!r}; use one of: {', '.join(ROLES)}")
    return messages


def _pieces(messages: Sequence[Message], *, primer: bool) -> list[tuple[str, bool]]:
    """The rendered text as (piece, is_markup) pairs."""
    pieces: list[tuple[str, bool]] = []
    for m in messages:
        pieces += [(IM_START, True), (m.role, False), (IM_SEP, True), (m.content, False), (IM_END, True)]
    if primer:
        pieces += [(IM_START, True), ("assistant", False), (IM_SEP, True)]
    return pieces


def render_chat(messages: Iterable[Message], *, primer: bool = True) -> str:
    """``<|im_start|>role<|im_sep|>content<|im_end|>`` per message, then ``<|im_start|>assistant<|im_sep|>``."""
    return "".join(piece for piece, _ in _pieces(check_messages(messages), primer=primer))


def _entry(tokenizer) -> str:
    """The picker entry of a registered tokenizer (``native-llama-3`` -> ``llama-3``), or "" for another one."""
    try:
        return registry.spec(tokenizer.name).entry if tokenizer.name else ""
    except UnknownTokenizerError:
        return ""


@cache
def model_chat_config(entry: str) -> dict:
    """The hash-checked ``tokenizer_config.json`` of a shipped model (its ``chat_template`` and special tokens)."""
    from .datafiles import verified_bytes

    return json.loads(verified_bytes(NPM_MODELS[entry].config_file))


def chat_format(tokenizer) -> str | None:
    """``template``, ``harmony``, ``chatml``, or ``None`` when ``tokenizer`` has no chat format."""
    entry = _entry(tokenizer)
    if entry in NPM_MODELS:
        return "template"
    if entry == "o200k_harmony":
        return "harmony"
    specials = tokenizer.special_tokens
    if all(t in specials for t in MARKUP_TOKENS):
        return "chatml"
    return None


def supports_chat(tokenizer) -> bool:
    """Whether ``tokenizer`` has a chat format: a model's own template, harmony, or the ChatML markup tokens."""
    return chat_format(tokenizer) is not None


def _dicts(messages: Sequence[Message]) -> list[dict]:
    return [m.to_dict() for m in messages]


def render_for(tokenizer, messages: Iterable[Message], *, primer: bool = True) -> str:
    """The prompt text ``tokenizer``'s model sees for ``messages`` (in its own chat format)."""
    messages = check_messages(messages)
    kind = _require_format(tokenizer)
    if kind == "template":
        config = model_chat_config(_entry(tokenizer))
        return render_template(config["chat_template"], _dicts(messages), config=config, add_generation_prompt=primer)
    pieces = render_harmony(_dicts(messages), add_generation_prompt=primer) if kind == "harmony" else _pieces(
        messages, primer=primer
    )
    return "".join(p for p, _ in pieces)


def _require_format(tokenizer) -> str:
    kind = chat_format(tokenizer)
    if kind is None:
        raise ChatError(
            f"{tokenizer.name} has no chat markup tokens ({', '.join(MARKUP_TOKENS)}) and no chat template; "
            "use a cl100k_base- or o200k_base-based tokenizer, o200k_harmony, or a model with a chat template"
        )
    return kind


def tokenize_chat(
    tokenizer, messages: Iterable[Message], *, primer: bool = True, content_special: bool = False
) -> TokenizeResult:
    """Tokenize the rendered chat: markup as special tokens, roles and contents as text.

    With ``content_special`` special-token text inside a message is a special token too (the whole rendered string
    encoded with all special tokens allowed). A model's own template is always encoded that way (see the module
    docstring).
    """
    kind = _require_format(tokenizer)
    messages = check_messages(messages)
    if kind == "template":
        return tokenizer.tokenize(render_for(tokenizer, messages, primer=primer), allow_special=True)
    if kind == "harmony":
        pieces = render_harmony(_dicts(messages), add_generation_prompt=primer)
    else:
        pieces = _pieces(messages, primer=primer)
    text = "".join(p for p, _ in pieces)
    if content_special:
        return tokenizer.tokenize(text, allow_special=True)
    ids: list[int] = []
    tokens: list[Token] = []
    offset = 0
    for piece, markup in pieces:
        if piece:
            part = tokenizer.tokenize(piece, allow_special=markup)
            ids += part.ids
            for t in part.tokens:
                tokens.append(
                    Token(
                        t.id,
                        t.bytes,
                        t.start + offset,
                        t.end + offset,
                        t.text,
                        t.special,
                        t.valid_utf8,
                        t.byte_fallback,
                    )
                )
        offset += len(piece)
    return TokenizeResult(tokenizer.name, text, ids, tokens)


def parse_messages(roles: Sequence[str], contents: Sequence[str]) -> list[Message]:
    """Messages from parallel role/content lists (form fields), checked."""
    if len(roles) != len(contents):
        raise ChatError(f"{len(roles)} roles but {len(contents)} contents; send one role per message content")
    return check_messages(Message(r, c) for r, c in zip(roles, contents))


DEFAULT_MESSAGES: tuple[Message, ...] = (
    Message("system", "You are a helpful assistant."),
    Message("user", "How many tokens is this conversation?"),
)
