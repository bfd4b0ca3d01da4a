"""The chat markup page's API: ``POST /api/chat``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.engines import chat

from ..chat import chat_tokenizers
from ..deps import SettingsDep, TokenizersDep, check_text_size
from ..render import FastJSON

router = APIRouter()


class ChatMessageIn(BaseModel):
    role: str = Field(description="system, user or assistant")
    content: str


class ChatRequest(BaseModel):
    messages: list[ChatMessageIn]
    tokenizers: list[str] | None = Field(None, description="default: every tokenizer with the chat markup tokens")
    content_special: bool = Field(False, description="also parse special-token text inside messages as special")
    primer: bool = Field(True, description="end with <|im_start|>assistant<|im_sep|>")


@router.post("/chat")
def api_chat(body: ChatRequest, settings: SettingsDep, tokenizers: TokenizersDep) -> Response:
    """The rendered chat markup and its tokens per tokenizer (markup tokens as special tokens)."""
    messages = chat.check_messages(chat.Message(m.role, m.content) for m in body.messages)
    rendered = chat.render_chat(messages, primer=body.primer)
    check_text_size(rendered, settings)
    names = [tokenizers.resolve(n) for n in body.tokenizers] if body.tokenizers else chat_tokenizers()
    results = []
    for name in dict.fromkeys(names):
        result = chat.tokenize_chat(
            tokenizers.get(name), messages, primer=body.primer, content_special=body.content_special
        )
        results.append(result.to_dict() | {"special": sum(1 for t in result.tokens if t.special)})
    return FastJSON({"rendered": rendered, "results": results})
