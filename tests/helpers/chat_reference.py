"""Independent renderings of chat prompts, the referees of the chat tests (tests/features/test_chat_templates.py,
tests/web/test_chat_web.py).

- a model's chat template rendered by Hugging Face ``transformers`` itself: ``AutoTokenizer`` loaded from the model's
  two hash-checked files (``tokenizer.json``, ``tokenizer_config.json``), then ``apply_chat_template(...,
  tokenize=False)`` (:func:`reference_render`; no torch needed); the prompt's ids from Hugging Face ``tokenizers``
  with the special tokens parsed (:func:`reference_ids`);
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
from pathlib import Path

import openai_harmony as oh
from tokenizers import Tokenizer as HFTokenizer

from app.engines import datafiles
from app.features.chat.prompt import Message
from app.engines.huggingface.npm_models import NPM_MODELS

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # not the notice that PyTorch is missing (not needed here)
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only
from transformers import AutoTokenizer  # noqa: E402  (after the environment it reads at import)


def model_config(name: str) -> dict:
    return json.loads(datafiles.verified_bytes(NPM_MODELS[name].config_file))


#: The shipped models whose tokenizer_config.json has a chat template.
TEMPLATE_MODELS = [name for name in NPM_MODELS if "chat_template" in model_config(name)]


@cache
def transformers_tokenizer(name: str):
    """The shipped model as ``transformers`` loads it from its directory (its two files, their sha256 checked)."""
    model = NPM_MODELS[name]
    datafiles.verified_bytes(model.tokenizer_file)
    datafiles.verified_bytes(model.config_file)
    return AutoTokenizer.from_pretrained(str(datafiles.data_path(model.tokenizer_file).parent))


def transformers_from_files(directory: Path, tokenizer_json: bytes, config: bytes):
    """A tokenizer as ``transformers`` loads it from a directory holding these two files (an upload's)."""
    (directory / "tokenizer.json").write_bytes(tokenizer_json)
    (directory / "tokenizer_config.json").write_bytes(config)
    return AutoTokenizer.from_pretrained(str(directory))


def reference_render(name, messages: list[Message], primer: bool = True) -> str:
    """The prompt ``apply_chat_template`` renders for ``messages``: ``name`` is a shipped model's name, or a
    ``transformers`` tokenizer."""
    tok = transformers_tokenizer(name) if isinstance(name, str) else name
    return tok.apply_chat_template([m.to_dict() for m in messages], tokenize=False, add_generation_prompt=primer)


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
