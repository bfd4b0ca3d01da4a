"""Chat markup: render messages the way cl100k- and o200k-based chat models see them, and tokenize that.

The format (ChatML with the separator token)::

    <|im_start|>system<|im_sep|>You are helpful.<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|>
    <|im_start|>assistant<|im_sep|>

with no newlines between messages (shown broken here for width), ending with the assistant primer: the model
writes its answer after it. A tokenizer supports the format when it has all three markup special tokens
(``<|im_start|>``, ``<|im_sep|>``, ``<|im_end|>``): cl100k_base, o200k_base and any engine running the same
vocabularies.

:func:`tokenize_chat` encodes the markup as special tokens and the roles and contents as plain text, so a message
that happens to contain ``<|im_end|>`` cannot close itself early (what a chat API does). For contents free of
special-token text this is exactly ``encode(render_chat(messages), allowed_special="all")``; pass
``content_special=True`` to get that encoding in every case.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .errors import TokenplayError
from .openai import IM_END, IM_SEP, IM_START
from .result import Token, TokenizeResult

ROLES = ("system", "user", "assistant")
MARKUP_TOKENS = (IM_START, IM_SEP, IM_END)
MAX_MESSAGES = 200


class ChatError(TokenplayError):
    """Messages that cannot be rendered, or a tokenizer without the chat markup tokens."""


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str

    def to_dict(self) -> dict:
        return {"role": self.role, "content": self.content}


def check_messages(messages: Iterable[Message]) -> list[Message]:
    messages = list(messages)
    if len(messages) > MAX_MESSAGES:
        raise ChatError(f"{len(messages)} messages; at most {MAX_MESSAGES} can be rendered, remove some")
    for index, m in enumerate(messages):
        if m.role not in ROLES:
            raise ChatError(f"message {index + 1} has role {m.role!r}; use one of: {', '.join(ROLES)}")
    return messages


def _pieces(messages: Sequence[Message], *, primer: bool) -> list[tuple[str, bool]]:
    """The rendered text as (piece, is_markup) pairs."""
    pieces: list[tuple[str, bool]] = []
    for m in messages:
        pieces += [(IM_START, True), (m.role, False), (IM_SEP, True), (m.content, False), (IM_END, True)]
    if primer:
        pieces += [(IM_START, True), ("assistant", False), (IM_SEP, True)]
    return pieces


def render_chat(messages: Iterable[Message], *, primer: bool = True) -> str:
    """``<|im_start|>role<|im_sep|>content<|im_end|>`` per message, then ``<|im_start|>assistant<|im_sep|>``."""
    return "".join(piece for piece, _ in _pieces(check_messages(messages), primer=primer))


def supports_chat(tokenizer) -> bool:
    """Whether ``tokenizer`` has the three chat markup tokens as special tokens."""
    specials = tokenizer.special_tokens
    return all(t in specials for t in MARKUP_TOKENS)


def tokenize_chat(
    tokenizer, messages: Iterable[Message], *, primer: bool = True, content_special: bool = False
) -> TokenizeResult:
    """Tokenize the rendered chat: markup as special tokens, roles and contents as text.

    With ``content_special`` special-token text inside a message is a special token too (the whole rendered string
    encoded with all special tokens allowed).
    """
    if not supports_chat(tokenizer):
        raise ChatError(
            f"{tokenizer.name} has no chat markup tokens ({', '.join(MARKUP_TOKENS)}); "
            "use a cl100k_base- or o200k_base-based tokenizer"
        )
    messages = check_messages(messages)
    pieces = _pieces(messages, primer=primer)
    text = "".join(p for p, _ in pieces)
    if content_special:
        return tokenizer.tokenize(text, allow_special=True)
    ids: list[int] = []
    tokens: list[Token] = []
    offset = 0
    for piece, markup in pieces:
        if piece:
            part = tokenizer.tokenize(piece, allow_special=markup)
            ids += part.ids
            for t in part.tokens:
                tokens.append(
                    Token(
                        t.id,
                        t.bytes,
                        t.start + offset,
                        t.end + offset,
                        t.text,
                        t.special,
                        t.valid_utf8,
                        t.byte_fallback,
                    )
                )
        offset += len(piece)
    return TokenizeResult(tokenizer.name, text, ids, tokens)


def parse_messages(roles: Sequence[str], contents: Sequence[str]) -> list[Message]:
    """Messages from parallel role/content lists (form fields), checked."""
    if len(roles) != len(contents):
        raise ChatError(f"{len(roles)} roles but {len(contents)} contents; send one role per message content")
    return check_messages(Message(r, c) for r, c in zip(roles, contents))


DEFAULT_MESSAGES: tuple[Message, ...] = (
    Message("system", "You are a helpful assistant."),
    Message("user", "How many tokens is this conversation?"),
)
