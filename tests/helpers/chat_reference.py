"""Independent renderings of chat prompts, the referees of the chat tests (tests/test_chat_*.py).

- a model's chat template rendered with Jinja2 itself, as ``transformers``' ``apply_chat_template`` does
  (``ImmutableSandboxedEnvironment``, ``trim_blocks``, ``lstrip_blocks``, ``raise_exception``), and encoded by
  Hugging Face ``tokenizers`` with the special tokens parsed (:func:`reference_render`, :func:`reference_ids`);
- the harmony format of gpt-oss rendered by OpenAI's ``openai-harmony`` package, reading the shipped o200k file
  (:func:`harmony_ids`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from datetime import date

import openai_harmony as oh
from jinja2 import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer as HFTokenizer

from app.engines import datafiles
from app.features.chat.prompt import Message
from app.engines.huggingface.npm_models import NPM_MODELS


def model_config(name: str) -> dict:
    return json.loads(datafiles.verified_bytes(NPM_MODELS[name].config_file))


def reference_render(name: str, messages: list[Message], primer: bool = True) -> str:
    config = model_config(name)

    def fail(message):
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.globals["raise_exception"] = fail
    tokens = {k: v["content"] if isinstance(v, dict) else v for k, v in config.items() if k.endswith("_token")}
    template = env.from_string(config["chat_template"])
    return template.render(messages=[m.to_dict() for m in messages], add_generation_prompt=primer, **tokens)


@cache
def reference_tokenizer(name: str) -> HFTokenizer:
    return HFTokenizer.from_file(str(datafiles.data_path(NPM_MODELS[name].tokenizer_file)))


def reference_ids(ref: HFTokenizer, rendered: str, plain: tuple[int, int] | None = None) -> list[int]:
    """The rendered prompt encoded with its special tokens parsed, except those inside the ``plain`` span of
    characters (a message's own text): the text between the remaining special tokens is encoded as text."""
    ref.encode_special_tokens = False
    whole = ref.encode(rendered, add_special_tokens=False)
    if plain is None:
        return whole.ids
    special_ids = {i for i, t in ref.get_added_tokens_decoder().items() if t.special}
    markup = [
        (start, end, tid)
        for tid, (start, end) in zip(whole.ids, whole.offsets)
        if tid in special_ids and not (plain[0] <= start < plain[1])
    ]
    ref.encode_special_tokens = True
    ids, pos = [], 0
    for start, end, tid in markup:
        ids += ref.encode(rendered[pos:start], add_special_tokens=False).ids + [tid]
        pos = end
    ids += ref.encode(rendered[pos:], add_special_tokens=False).ids
    ref.encode_special_tokens = False
    return ids


@contextmanager
def _shipped_o200k() -> Iterator[None]:
    """openai-harmony reads o200k_base.tiktoken from TIKTOKEN_ENCODINGS_BASE (checking its sha256 itself)."""
    before = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(datafiles.data_dir() / "openai")
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TIKTOKEN_ENCODINGS_BASE")
        else:
            os.environ["TIKTOKEN_ENCODINGS_BASE"] = before


def harmony_encoding() -> oh.HarmonyEncoding:
    with _shipped_o200k():
        return oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)


def harmony_ids(encoding: oh.HarmonyEncoding, messages: list[Message], today: date) -> list[int]:
    """The prompt openai-harmony renders for ``messages``: its default system message dated ``today``, the system
    prompts as the developer's instructions, earlier answers on the final channel, the assistant's turn opened."""
    out = [oh.Message.from_role_and_content(
        oh.Role.SYSTEM, oh.SystemContent.new().with_conversation_start_date(today.isoformat()))]
    instructions = "\n\n".join(m.content for m in messages if m.role == "system")
    if instructions:
        out.append(oh.Message.from_role_and_content(
            oh.Role.DEVELOPER, oh.DeveloperContent.new().with_instructions(instructions)))
    for m in messages:
        if m.role == "user":
            out.append(oh.Message.from_role_and_content(oh.Role.USER, m.content))
        elif m.role == "assistant":
            out.append(oh.Message.from_role_and_content(oh.Role.ASSISTANT, m.content).with_channel("final"))
    conversation = oh.Conversation.from_messages(out)
    return list(encoding.render_conversation_for_completion(conversation, oh.Role.ASSISTANT))
