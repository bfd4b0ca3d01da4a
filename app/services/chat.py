"""Chat prompts as each model reads them (:mod:`app.features.chat`), tokenized: for the chat page's panes, its
explanation of a prompt's token, and ``POST /api/chat``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.engines.base import Tokenizer
from app.engines.result import TokenizeResult
from app.features.chat import prompt as chat
from app.features.explain import Explanation, explain_pieces
from app.settings import Settings

from .catalog import Tokenizers
from .errors import check_text_size

#: Whose chat format renders a prompt when none is named.
DEFAULT_TOKENIZER = "cl100k_base"


@dataclass(slots=True)
class PromptTokens:
    """One tokenizer's chat prompt for some messages, and its tokens."""

    tokenizer: Tokenizer
    prompt: chat.ChatPrompt
    result: TokenizeResult

    @property
    def special(self) -> int:
        """How many of the tokens are special tokens (the markup)."""
        return chat.count_special(self.tokenizer, self.result.ids)


def check_messages_size(messages: Iterable[chat.Message], settings: Settings) -> None:
    """Refuse messages longer in all than a text may be, before any template runs on them."""
    check_text_size("".join(m.content for m in messages), settings)


def prompt_of(
    tokenizers: Tokenizers, name: str, messages: list[chat.Message], settings: Settings, *, primer: bool = True
) -> tuple[Tokenizer, chat.ChatPrompt]:
    """The tokenizer ``name`` and its model's prompt for ``messages``: its chat template (an uploaded tokenizer's
    own, brought with it), harmony or ChatML; a prompt over the size limit is refused."""
    tok = tokenizers.get(name)
    prompt = chat.chat_prompt(tok, messages, primer=primer, config=tokenizers.chat_config(tok.name))
    check_text_size(prompt.text, settings)
    return tok, prompt


def prompt_tokens(
    tokenizers: Tokenizers,
    name: str,
    messages: list[chat.Message],
    settings: Settings,
    *,
    primer: bool = True,
    content_special: bool = False,
) -> PromptTokens:
    """The prompt of :func:`prompt_of`, tokenized: the markup as special tokens, the messages as text (and their
    special-token text as special too with ``content_special``)."""
    tok, prompt = prompt_of(tokenizers, name, messages, settings, primer=primer)
    return PromptTokens(tok, prompt, chat.tokenize_prompt(tok, prompt, content_special=content_special))


def explain_prompt_token(
    tokenizers: Tokenizers, name: str, messages: list[chat.Message], index: int, settings: Settings
) -> tuple[str, Explanation]:
    """Why token ``index`` of the tokenizer ``name``'s prompt is what it is (the prompt explained piece by piece as
    it was tokenized); with the tokenizer's canonical name."""
    check_messages_size(messages, settings)
    tok, prompt = prompt_of(tokenizers, name, messages, settings)
    return tok.name, explain_pieces(tok, prompt.pieces, index)
