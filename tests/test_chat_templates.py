"""Chat prompts in each model's own format: the shipped chat templates and gpt-oss's harmony format.

Referees: for a template, the test renders the model's ``chat_template`` itself with Jinja2, as ``transformers``'
``apply_chat_template`` does (sandboxed, ``trim_blocks``, ``lstrip_blocks``), and encodes the result with Hugging
Face ``tokenizers`` (special tokens parsed); for harmony, OpenAI's own ``openai-harmony`` package rendering the same
conversation, reading the shipped o200k file. ChatML for cl100k/o200k is covered by tests/test_compare_chat.py.
"""

from __future__ import annotations

import json
import os
from datetime import date

import openai_harmony
import pytest
from jinja2 import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer as HFTokenizer

from app.engines import chat, datafiles, registry
from app.engines.chat import ChatError, Message
from app.engines.chat_template import ChatTemplateError, render_harmony
from app.engines.npm_models import NPM_MODELS

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
    """OpenAI's harmony renderer, reading the shipped o200k_base.tiktoken (it checks the file's sha256 itself)."""
    before = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(datafiles.data_dir() / "openai")
    try:
        yield openai_harmony, openai_harmony.load_harmony_encoding(openai_harmony.HarmonyEncodingName.HARMONY_GPT_OSS)
    finally:
        if before is None:
            os.environ.pop("TIKTOKEN_ENCODINGS_BASE")
        else:
            os.environ["TIKTOKEN_ENCODINGS_BASE"] = before


def harmony_reference(harmony, messages: list[Message], today: date) -> list:
    """The conversation as openai-harmony builds it: its default system message dated ``today``, the system
    prompts as the developer's instructions, earlier answers on the final channel."""
    h = harmony
    out = [h.Message.from_role_and_content(h.Role.SYSTEM, h.SystemContent.new().with_conversation_start_date(
        today.isoformat()))]
    instructions = "\n\n".join(m.content for m in messages if m.role == "system")
    if instructions:
        out.append(h.Message.from_role_and_content(
            h.Role.DEVELOPER, h.DeveloperContent.new().with_instructions(instructions)))
    for m in messages:
        if m.role == "user":
            out.append(h.Message.from_role_and_content(h.Role.USER, m.content))
        elif m.role == "assistant":
            out.append(h.Message.from_role_and_content(h.Role.ASSISTANT, m.content).with_channel("final"))
    return out


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
    module, encoding = harmony
    tok = registry.get(name)
    assert chat.chat_format(tok) == "harmony"
    today = date.today()
    result = chat.tokenize_chat(tok, messages)
    conversation = module.Conversation.from_messages(harmony_reference(module, messages, today))
    want = encoding.render_conversation_for_completion(conversation, module.Role.ASSISTANT)
    if date.today() != today:  # midnight passed between the two renderings: both again, on the same day
        today = date.today()
        result = chat.tokenize_chat(tok, messages)
        want = encoding.render_conversation_for_completion(
            module.Conversation.from_messages(harmony_reference(module, messages, today)), module.Role.ASSISTANT
        )
    assert result.ids == list(want)
    assert result.text == encoding.decode_utf8(want)


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
