"""The chat markup page's API: ``POST /api/chat``.

The messages are rendered in the chosen tokenizer's chat format (its model's own chat template, harmony, or ChatML:
:mod:`app.features.chat.prompt`) and tokenized, the markup as special tokens and the messages as text. A tokenizer
without a chat format (gpt2, p50k_base, mistral-7b, deepseek-v4, gemma-2, llama-2, claude-legacy, an uploaded file
without a tokenizer_config.json or ChatML markup tokens) answers 422 with the
reason, as does a template that refuses the messages (its own ``raise_exception`` message). An uploaded tokenizer
brought with its model's ``tokenizer_config.json`` renders that file's chat template.

The answer is the chosen tokenizer's result at the top level, written as ready JSON like ``POST /api/tokenize``'s
(column-wise, no dict per token), plus ``rendered`` and ``results`` kept from the earlier API, which answered
several tokenizers at once: ``results`` lists the chosen tokenizer and any others named in ``tokenizers``.
"""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.engines.result import result_json
from app.features.chat import prompt as chat
from app.services import model_counts
from app.services.catalog import Tokenizers
from app.services.chat import DEFAULT_TOKENIZER, check_messages_size, prompt_tokens
from app.settings import Settings

from ..deps import SettingsDep, TokenizersDep, run_cpu
from .schemas import TokenizeResponse

router = APIRouter()


class ChatMessageIn(BaseModel):
    role: str = Field(description="system, user or assistant")
    content: str


class ChatRequest(BaseModel):
    messages: list[ChatMessageIn]
    tokenizer: str | None = Field(
        None,
        description="whose chat format renders the prompt: a name from GET /api/tokenizers or a model alias "
        f"(default: the first of `tokenizers`, else {DEFAULT_TOKENIZER})",
    )
    tokenizers: list[str] | None = Field(
        None, description="more tokenizers to answer in `results`, each rendering its own prompt"
    )
    content_special: bool = Field(False, description="also parse special-token text inside messages as special")
    primer: bool = Field(True, description="end with the assistant's turn opened (add_generation_prompt)")


class ChatResult(TokenizeResponse):
    format: str = Field(description="template (the model's own chat template), harmony or chatml")
    text: str = Field(description="the rendered prompt, as the model reads it")
    special: int = Field(description="how many of the tokens are special tokens (the markup)")


class ChatResponse(ChatResult):
    rendered: str = Field(description="the same as text")
    results: list[ChatResult] = Field(description="the chosen tokenizer's result, then those of `tokenizers`")


def _result_json(
    tokenizers: Tokenizers, name: str, messages: list[chat.Message], body: ChatRequest, settings: Settings
) -> tuple[bytes, str]:
    """One tokenizer's result as JSON bytes (a :class:`ChatResult`), and its prompt text."""
    cut = prompt_tokens(
        tokenizers, name, messages, settings, primer=body.primer, content_special=body.content_special
    )
    extra = orjson.dumps({"format": cut.prompt.format, "text": cut.prompt.text, "special": cut.special})
    added = model_counts.prompt_added(cut.result.count)  # the template wrote the model's markup, BOS among it
    return result_json(cut.result, added)[:-1] + b"," + extra[1:], cut.prompt.text


@router.post(
    "/chat", response_model=ChatResponse, tags=["tokens"], summary="Render a chat prompt and cut it into tokens"
)
async def api_chat(body: ChatRequest, settings: SettingsDep, tokenizers: TokenizersDep, request: Request) -> Response:
    """The prompt the chosen tokenizer's model reads for the messages, and its tokens (markup tokens special)."""
    messages = chat.check_messages(chat.Message(m.role, m.content) for m in body.messages)
    check_messages_size(messages, settings)
    first = body.tokenizer or (body.tokenizers or [DEFAULT_TOKENIZER])[0]
    names = list(dict.fromkeys(tokenizers.resolve(n) for n in [first, *(body.tokenizers or [])]))

    def work() -> Response:
        results = [_result_json(tokenizers, name, messages, body, settings) for name in names]
        top, text = results[0]
        tail = orjson.dumps({"rendered": text})[1:-1] + b',"results":[' + b",".join(r for r, _ in results) + b"]}"
        return Response(top[:-1] + b"," + tail, media_type="application/json")

    return await run_cpu(request, work)
