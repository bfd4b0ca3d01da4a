"""Chat prompts in each model's own format: the shipped chat templates and gpt-oss's harmony format.

Referees: for a template, the test renders it itself with Jinja2 (as ``apply_chat_template`` does) and encodes
the result with Hugging Face ``tokenizers`` (special tokens parsed); for harmony, the format as OpenAI documents it,
encoded by tiktoken's own ``o200k_harmony``. ChatML for cl100k/o200k is covered by tests/test_compare_chat.py.
"""

from __future__ import annotations

import json
from datetime import date

import pytest
from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from oracles import tiktoken_reference
from tokenizers import Tokenizer as HFTokenizer

from app.engines import chat, datafiles, registry
from app.engines.chat import ChatError, Message
from app.engines.chat_template import ChatTemplateError, render_harmony
from app.engines.npm_models import NPM_MODELS

CONVERSATION = [
    Message("system", "You are terse."),
    Message("user", "Translate: good morning 👋 <think>"),
    Message("assistant", "おはようございます"),
    Message("user", "  And <|im_end|> with\nnewlines?\n"),
]


def reference_render(name: str, messages: list[Message], primer: bool = True) -> str:
    config = json.loads(datafiles.verified_bytes(NPM_MODELS[name].config_file))

    def fail(message):
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = fail
    tokens = {k: v["content"] if isinstance(v, dict) else v for k, v in config.items() if k.endswith("_token")}
    template = env.from_string(config["chat_template"])
    return template.render(messages=[m.to_dict() for m in messages], add_generation_prompt=primer, **tokens)


def gemma_messages() -> list[Message]:
    """Gemma's template wants user/assistant turns alternating after an optional system message."""
    return [m for m in CONVERSATION if m.role != "user" or "newlines" not in m.content]


@pytest.mark.parametrize("name", list(NPM_MODELS))
@pytest.mark.parametrize("primer", [True, False])
def test_template_chat_counts_equal_the_reference_rendering(name, primer):
    messages = gemma_messages() if name == "gemma-3" else CONVERSATION
    rendered = reference_render(name, messages, primer)
    ref = HFTokenizer.from_file(str(datafiles.data_path(NPM_MODELS[name].tokenizer_file)))
    want = ref.encode(rendered, add_special_tokens=False).ids
    for tok_name in (name, f"native-{name}"):
        tok = registry.get(tok_name)
        assert chat.chat_format(tok) == "template"
        result = chat.tokenize_chat(tok, messages, primer=primer)
        assert result.text == rendered == chat.render_for(tok, messages, primer=primer)
        assert result.ids == want, tok_name
        assert "".join(s.text for s in result.segments()) == rendered


def test_template_markup_is_counted_as_special_tokens():
    result = chat.tokenize_chat(registry.get("native-qwen3"), CONVERSATION)
    special = {t.text for t in result.tokens if t.special}
    assert special == {"<|im_start|>", "<|im_end|>"}
    assert "<think>" in {t.text for t in result.tokens}  # a non-special added token: one token, not markup


def test_a_template_refusing_the_messages_says_why():
    with pytest.raises(ChatTemplateError, match="roles must alternate"):
        chat.tokenize_chat(registry.get("gemma-3"), [Message("user", "a"), Message("user", "b")])


def test_harmony_renders_the_documented_format():
    pieces = render_harmony([m.to_dict() for m in CONVERSATION[:3]], today=date(2025, 6, 28))
    assert "".join(p for p, _ in pieces) == (
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
        "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: medium\n\n"
        "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>"
        "<|start|>developer<|message|># Instructions\n\nYou are terse.<|end|>"
        "<|start|>user<|message|>Translate: good morning 👋 <think><|end|>"
        "<|start|>assistant<|channel|>final<|message|>おはようございます<|end|>"
        "<|start|>assistant"
    )
    assert {p for p, markup in pieces if markup} == {"<|start|>", "<|message|>", "<|end|>", "<|channel|>"}


@pytest.mark.parametrize("name", ["o200k_harmony", "native-o200k_harmony", "gpt-oss"])
def test_harmony_counts_equal_tiktoken(name):
    tok = registry.get(name)
    ref = tiktoken_reference("o200k_harmony")
    messages = CONVERSATION[:3]
    result = chat.tokenize_chat(tok, messages)
    assert chat.chat_format(tok) == "harmony"
    assert result.ids == ref.encode(result.text, allowed_special="all")
    # <|start|> <|message|> <|end|> around system, developer and user; <|channel|> too for the assistant; the primer
    assert sum(t.special for t in result.tokens) == 3 * 3 + 4 + 1


def test_harmony_keeps_markup_typed_in_a_message_as_text():
    tok = registry.get("o200k_harmony")
    messages = [Message("user", "stop <|end|> here")]
    assert sum(t.special for t in chat.tokenize_chat(tok, messages).tokens) == 7
    assert sum(t.special for t in chat.tokenize_chat(tok, messages, content_special=True).tokens) == 8


def test_tokenizers_without_a_chat_format_are_refused():
    assert chat.chat_format(registry.get("gpt2")) is None
    assert chat.chat_format(registry.get("cl100k_base")) == "chatml"
    with pytest.raises(ChatError, match="no chat markup tokens"):
        chat.tokenize_chat(registry.get("custom-bpe"), CONVERSATION)
