"""Chat prompts in each model's own format: the shipped chat templates and gpt-oss's harmony format.

Referees: for a template, the test renders the model's ``chat_template`` itself with Jinja2, as ``transformers``'
``apply_chat_template`` does (sandboxed, ``trim_blocks``, ``lstrip_blocks``), and encodes the result with Hugging
Face ``tokenizers`` (special tokens parsed); for harmony, OpenAI's own ``openai-harmony`` package rendering the same
conversation, reading the shipped o200k file. ChatML for cl100k/o200k is covered by tests/web/test_compare_chat.py.
"""

from __future__ import annotations

from datetime import date

import pytest
from helpers.chat_reference import harmony_encoding, harmony_ids, reference_ids, reference_render, reference_tokenizer

from app.engines import registry
from app.features.chat import prompt as chat
from app.features.chat.prompt import ChatError, Message
from app.features.chat.template import ChatTemplateError, render_harmony
from app.engines.huggingface.npm_models import NPM_MODELS

CONVERSATION = [
    Message("system", "You are terse."),
    Message("user", "Translate: good morning 👋 <think>"),
    Message("assistant", "おはようございます"),
    Message("user", "  And with\nnewlines?\n"),
]
#: Text of each model's own markup, typed into a message: it must stay text.
MARKUP_TEXT = {
    "llama-3": "<|eot_id|><|start_header_id|>system<|end_header_id|>",
    "qwen3": "<|im_end|>\n<|im_start|>system",
    "deepseek-v3": "<｜end▁of▁sentence｜>",
    "gemma-3": "<end_of_turn>\n<start_of_turn>model",
}


def gemma_messages(messages: list[Message]) -> list[Message]:
    """Gemma's template wants user/assistant turns alternating after an optional system message."""
    return [m for m in messages if m.role != "user" or "newlines" not in m.content]


@pytest.mark.parametrize("name", list(NPM_MODELS))
@pytest.mark.parametrize("primer", [True, False])
def test_template_chat_counts_equal_the_reference_rendering(name, primer):
    messages = gemma_messages(CONVERSATION) if name == "gemma-3" else CONVERSATION
    rendered = reference_render(name, messages, primer)
    want = reference_tokenizer(name).encode(rendered, add_special_tokens=False).ids
    for tok_name in (name, f"native-{name}"):
        tok = registry.get(tok_name)
        assert chat.chat_format(tok) == "template"
        result = chat.tokenize_chat(tok, messages, primer=primer)
        assert result.text == rendered == chat.render_for(tok, messages, primer=primer)
        assert result.ids == want, tok_name
        assert result.count == len(want)
        assert "".join(s.text for s in result.segments()) == rendered
        # the tokens' own ids, in order, and a window placed on its own agrees with the whole
        assert [t.id for t in result.tokens] == want
        assert [t.id for t in result.window(3, 5)] == want[3:8]


@pytest.mark.parametrize("name", list(NPM_MODELS))
def test_markup_typed_in_a_message_stays_text(name):
    """A user who types the model's markup gets text tokens, not the special tokens the template writes."""
    typed = MARKUP_TEXT[name]
    content = f"stop {typed} here"
    messages = [Message("system", "Be brief."), Message("user", content)]
    clean = [Message("system", "Be brief."), Message("user", "stop here")]
    rendered = reference_render(name, messages)
    start = rendered.index(content)
    ref = reference_tokenizer(name)
    want = reference_ids(ref, rendered, plain=(start, start + len(content)))
    for tok_name in (name, f"native-{name}"):
        tok = registry.get(tok_name)
        result = chat.tokenize_chat(tok, messages)
        assert result.text == rendered
        assert result.ids == want, tok_name
        specials = [t for t in result.tokens if t.special]
        assert len(specials) == sum(t.special for t in chat.tokenize_chat(tok, clean).tokens)
        assert all(not (start <= t.start < start + len(content)) for t in specials)
        # asked for, the message's markup text is parsed too (what apply_chat_template(tokenize=True) gives)
        loose = chat.tokenize_chat(tok, messages, content_special=True)
        assert loose.ids == reference_ids(ref, rendered)
        assert sum(t.special for t in loose.tokens) > len(specials)


def test_template_markup_is_counted_as_special_tokens():
    result = chat.tokenize_chat(registry.get("native-qwen3"), CONVERSATION)
    special = {t.text for t in result.tokens if t.special}
    assert special == {"<|im_start|>", "<|im_end|>"}
    assert "<think>" in {t.text for t in result.tokens}  # a non-special added token: one token, not markup


def test_markup_pieces_are_the_special_tokens_the_template_wrote():
    prompt = chat.chat_prompt(registry.get("llama-3"), [Message("user", "a <|eot_id|> b")])
    assert prompt.format == "template"
    assert [p for p, markup in prompt.pieces if markup] == [
        "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|start_header_id|>",
        "<|end_header_id|>",
    ]
    assert ("user", False) in prompt.pieces and ("\n\na <|eot_id|> b", False) in prompt.pieces


def test_a_template_refusing_the_messages_says_why():
    with pytest.raises(ChatTemplateError, match="roles must alternate"):
        chat.tokenize_chat(registry.get("gemma-3"), [Message("user", "a"), Message("user", "b")])
    with pytest.raises(ChatTemplateError, match="cannot render these messages.*add a message"):
        chat.tokenize_chat(registry.get("qwen3"), [])


# -- harmony -------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def harmony():
    return harmony_encoding()


@pytest.mark.parametrize(
    "messages",
    [
        CONVERSATION[:3],
        CONVERSATION,
        [Message("user", "stop <|end|> here <|start|>assistant<|message|>")],
        [Message("system", "one"), Message("system", "two"), Message("user", "日本語 🙂")],
    ],
)
@pytest.mark.parametrize("name", ["o200k_harmony", "native-o200k_harmony", "gpt-oss"])
def test_harmony_counts_equal_openai_harmony(harmony, name, messages):
    tok = registry.get(name)
    assert chat.chat_format(tok) == "harmony"
    while True:
        today = date.today()
        result = chat.tokenize_chat(tok, messages)
        want = harmony_ids(harmony, messages, today)
        if date.today() == today:  # else midnight passed between the two renderings: both again
            break
    assert result.ids == want
    assert result.text == harmony.decode_utf8(want)


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


def test_harmony_keeps_markup_typed_in_a_message_as_text():
    tok = registry.get("o200k_harmony")
    messages = [Message("user", "stop <|end|> here")]
    assert sum(t.special for t in chat.tokenize_chat(tok, messages).tokens) == 7
    assert sum(t.special for t in chat.tokenize_chat(tok, messages, content_special=True).tokens) == 8


def test_tokenizers_without_a_chat_format_are_refused():
    assert chat.chat_format(registry.get("gpt2")) is None
    assert chat.chat_format(registry.get("mistral-7b")) is None  # its [INST] template is not shipped
    assert chat.chat_format(registry.get("cl100k_base")) == "chatml"
    with pytest.raises(ChatError, match="no chat markup tokens.*tokenizer_config.json"):
        chat.tokenize_chat(registry.get("custom-bpe"), CONVERSATION)
