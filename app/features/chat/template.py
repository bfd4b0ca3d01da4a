"""Render a conversation the way a model's authors do: its own Jinja chat template, or OpenAI's harmony format.

A ``tokenizer_config.json`` carries the model's ``chat_template``. :func:`render_template` runs it as Hugging Face
``transformers`` does (``apply_chat_template``): Jinja2 in an ``ImmutableSandboxedEnvironment`` (a template cannot
touch anything outside its data) with ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, the
``raise_exception`` and ``strftime_now`` functions, a ``tojson`` filter that keeps non-ASCII text as it is, and the
variables ``messages``, ``add_generation_prompt``, ``tools`` and ``documents`` (none), and the special tokens the
config sets (``bos_token``, ``eos_token``, ``unk_token``, ``sep_token``, ``pad_token``, ``cls_token``,
``mask_token``; one it leaves out or sets to null is undefined, as in ``transformers``). ``strftime_now`` reads a
:class:`Clock`: the server's clock, as ``transformers`` reads it, or a moment the caller fixes; the clock records
whether a template read it. :func:`read_chat_config` checks a ``tokenizer_config.json`` a user brings.

:func:`render_harmony` writes the harmony format of gpt-oss (``o200k_harmony``): the default system message
(identity, knowledge cutoff, date, reasoning effort, channels), the conversation's system prompts as the developer
message's instructions, user messages, earlier assistant answers on the ``final`` channel, and
``<|start|>assistant`` for the model to answer. It returns the text as (piece, is_markup) pairs, so the caller can
encode markup as special tokens and contents as text.

:func:`template_pieces` renders a template the same way but returns (piece, is_markup) pairs too: the special
tokens the template itself writes are markup, and special-token text a message merely contains is not (the
contents go through the template shielded, see its docstring). Counting the tokens of a rendered prompt is
:mod:`.prompt`'s job.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from typing import Any

from jinja2 import TemplateError, TemplateSyntaxError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from app.engines.budget import run_isolated
from app.engines.errors import TokenplayError
from app.engines.pipeline.added_tokens import trie_pattern


class ChatTemplateError(TokenplayError):
    """A chat template that cannot be compiled, or that refuses the messages (its own ``raise_exception``)."""


class _Refusal(TemplateError):
    """What a template's own ``raise_exception`` raises: the template refuses the messages, with its reason."""


def _raise_exception(message: str) -> None:
    raise _Refusal(message)


#: The clock of the render under way (:func:`render_template` sets it), which a template's ``strftime_now`` reads.
_CLOCK: ContextVar[Clock | None] = ContextVar("chat_template_clock", default=None)


def _strftime_now(fmt: str) -> str:
    clock = _CLOCK.get()
    return clock.read().strftime(fmt) if clock is not None else datetime.now().strftime(fmt)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, separators=None,
            sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


#: The most characters a chat template may write (a prompt longer than any text Tokenplay counts is a runaway
#: template); checked while it renders, and for every string or list it builds with ``*`` or ``+``.
MAX_OUTPUT = 4_000_000
#: The most bits of an integer a template may compute with ``**``.
MAX_INT_BITS = 4_096
#: How much more memory than the server's worker the child rendering a user's template may take.
TEMPLATE_MEMORY = 256 << 20


class _TooBig(TemplateError):
    """A template building a string, a list or a number beyond the limits (the message says which)."""


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, (str, list, tuple)) else None


class _LimitedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox, with ``*``, ``+`` and ``**`` checked before they run: a template cannot build a string, a list
    or a number far beyond what a prompt needs (``{{ 'x' * 300000000 }}`` is refused before the string exists)."""

    intercepted_binops = frozenset({"*", "+", "**"})

    def call_binop(self, context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                n = _size(seq)
                if n is not None and isinstance(times, int) and n * max(times, 0) > MAX_OUTPUT:
                    what = f"a text of {n:,} character{'s' * (n != 1)}" if isinstance(seq, str) else f"a list of {n:,} items"
                    raise _TooBig(f"it repeats {what} {times:,} times, beyond the {MAX_OUTPUT:,} a template may "
                                  "build")
        elif operator == "+":
            a, b = _size(left), _size(right)
            if a is not None and b is not None and a + b > MAX_OUTPUT:
                raise _TooBig(f"it joins {a + b:,} items, beyond the {MAX_OUTPUT:,} a template may build")
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0:
            if right * abs(left).bit_length() > MAX_INT_BITS:
                raise _TooBig(f"it raises {left} to the power {right:,}, a number too large to compute")
        return super().call_binop(context, operator, left, right)


@cache
def _environment() -> ImmutableSandboxedEnvironment:
    env = _LimitedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


def token_text(value: Any) -> str | None:
    """A special token of a tokenizer_config.json: a string, or an AddedToken object with its ``content``.

    >>> token_text({"__type": "AddedToken", "content": "<s>"}), token_text("</s>"), token_text(None)
    ('<s>', '</s>', None)
    """
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


#: The special tokens ``transformers`` hands a chat template by name (``special_tokens_map``), when the config sets them.
TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def chat_template_of(config: dict) -> str | None:
    """The chat template of a tokenizer_config.json, or None: its ``chat_template`` string, or of a list of named
    templates the one named ``default`` (what ``apply_chat_template`` uses without tools).

    >>> chat_template_of({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})
    'D'
    """
    template = config.get("chat_template")
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    return template if isinstance(template, str) and template else None


class ChatConfigError(TokenplayError):
    """A tokenizer_config.json brought with a tokenizer file that gives no chat template to render."""


def read_chat_config(data: bytes) -> dict:
    """A ``tokenizer_config.json`` brought with a tokenizer file, checked: JSON (else where and why not, in words),
    an object, with a chat template (:func:`chat_template_of`) that compiles. Returns the parsed config."""
    from app.engines.pipeline.tokenizer_json import load_json

    config = load_json(data, "this tokenizer_config.json")
    if not isinstance(config, dict):
        raise ChatConfigError("this tokenizer_config.json is not a JSON object of settings, as that file is")
    template = chat_template_of(config)
    if template is None:
        if isinstance(config.get("chat_template"), list):
            raise ChatConfigError(
                "the chat_template of this tokenizer_config.json lists named templates but none named default, "
                "the one a chat is rendered with"
            )
        raise ChatConfigError(
            "this tokenizer_config.json has no chat_template, so it adds nothing to the tokenizer; add the "
            "tokenizer without it, or with the tokenizer_config.json of a chat model"
        )
    try:
        _environment().from_string(template)
    except TemplateSyntaxError as exc:
        raise ChatConfigError(
            f"the chat_template of this tokenizer_config.json is not a valid Jinja template: {exc.message} "
            f"(line {exc.lineno} of the template)"
        ) from None
    return config


@dataclass
class Clock:
    """The moment a template's ``strftime_now`` reads: ``now`` if set, else the server's clock when first read (as
    ``transformers`` reads it while rendering); ``used`` says whether a template read it."""

    now: datetime | None = None
    used: bool = False

    def read(self) -> datetime:
        if self.now is None:
            self.now = datetime.now()
        self.used = True
        return self.now


def render_template(
    template: str,
    messages: Sequence[dict],
    *,
    config: dict | None = None,
    add_generation_prompt: bool = True,
    clock: Clock | None = None,
    untrusted: bool = False,
) -> str:
    """The prompt ``template`` renders for ``messages`` (dicts with ``role`` and ``content``); the special tokens
    come from ``config`` (a tokenizer_config.json: those it sets, as ``transformers`` passes them). A template's
    ``strftime_now`` reads ``clock`` (default: now), which records that it was read. ``untrusted``: a template a
    user brought, rendered in a child process under the request's budget and a memory limit (see
    :mod:`app.engines.budget`); every template is refused past :data:`MAX_OUTPUT` characters and past the limits
    of :class:`_LimitedEnvironment`."""
    config = config or {}
    messages = list(messages)
    clock = clock or Clock()
    if not untrusted:
        return _render(template, messages, config, add_generation_prompt, clock)
    # A template a user brought runs in a child process: killed when the request's budget is spent, refused past
    # TEMPLATE_MEMORY; the clock it read comes back with the text.
    text, read = run_isolated(_render_with_clock, template, messages, config, add_generation_prompt, clock,
                              what="the model's chat template", memory_bytes=TEMPLATE_MEMORY)
    clock.now, clock.used = read.now, read.used
    return text


def _render_with_clock(template: str, messages: list[dict], config: dict, add_generation_prompt: bool,
                       clock: Clock) -> tuple[str, Clock]:
    return _render(template, messages, config, add_generation_prompt, clock), clock


def _render(template: str, messages: list[dict], config: dict, add_generation_prompt: bool, clock: Clock) -> str:
    tokens = {key: text for key in TOKEN_KEYS if (text := token_text(config.get(key))) is not None}
    reset = _CLOCK.set(clock)
    try:
        compiled = _environment().from_string(template)
        out: list[str] = []
        size = 0
        for piece in compiled.generate(
            messages=messages, add_generation_prompt=add_generation_prompt, tools=None, documents=None, **tokens
        ):
            size += len(piece)
            if size > MAX_OUTPUT:
                raise _TooBig(f"it writes more than {MAX_OUTPUT:,} characters")
            out.append(piece)
        return "".join(out)
    except _Refusal as exc:
        raise ChatTemplateError(f"the model's chat template refused the messages: {exc}") from None
    except _TooBig as exc:
        raise ChatTemplateError(f"the model's chat template was stopped: {exc}") from None
    except RecursionError:
        raise ChatTemplateError(
            "the model's chat template was stopped: it calls itself too deeply (a macro or an include without end)"
        ) from None
    except MemoryError:
        raise ChatTemplateError("the model's chat template was stopped: it needs more memory than a prompt may") from None
    except (TemplateError, TypeError, ValueError, LookupError, ArithmeticError, OverflowError) as exc:
        # A template written for other input (no message at all, say) fails inside Jinja: still the input's fault.
        hint = "; add a message" if not messages else ""
        raise ChatTemplateError(f"the model's chat template cannot render these messages: {exc}{hint}") from None
    finally:
        _CLOCK.reset(reset)


def _free_mark(texts: Sequence[str]) -> str:
    """A private-use character that none of ``texts`` contains (a placeholder's delimiter)."""
    for code in range(0xE000, 0xF900):
        mark = chr(code)
        if not any(mark in text for text in texts):
            return mark
    raise ChatTemplateError("the messages use every private-use character; remove some of them")


@cache
def _special_finder(special_tokens: frozenset[str]) -> re.Pattern:
    """Leftmost-longest matches of any of the special tokens."""
    return re.compile(trie_pattern(special_tokens))


def template_pieces(
    template: str,
    messages: Sequence[dict],
    *,
    special_tokens: Collection[str],
    config: dict | None = None,
    add_generation_prompt: bool = True,
    clock: Clock | None = None,
    untrusted: bool = False,
) -> list[tuple[str, bool]]:
    """The prompt :func:`render_template` gives, as (piece, is_markup) pairs: each special token the template writes
    is a markup piece; the text between them (message contents included) is not.

    Special-token text inside a message must stay text, so the template never sees it: each occurrence becomes a
    placeholder (private-use characters and a number) that string filters such as ``trim`` leave alone, and is put
    back once the template has rendered. Any special token left in the output is then the template's own markup.
    Added tokens that are not special (Qwen3's ``<think>``, DeepSeek V3's ``<｜User｜>``) are text here: the
    tokenizer matches them wherever they appear, in a message too, as the model's own tokenizer does.

    >>> pieces = template_pieces("{% for m in messages %}<s>{{ m.content | trim }}</s>{% endfor %}",
    ...                          [{"role": "user", "content": " a</s>b "}], special_tokens={"<s>", "</s>"})
    >>> pieces
    [('<s>', True), ('a</s>b', False), ('</s>', True)]
    """
    specials = frozenset(t for t in special_tokens if t)
    if not specials:
        text = render_template(
            template, messages, config=config, add_generation_prompt=add_generation_prompt, clock=clock,
            untrusted=untrusted,
        )
        return [(text, False)] if text else []
    finder = _special_finder(specials)
    mark = _free_mark([template, *(m["content"] for m in messages)])
    hidden: list[str] = []

    def hide(match: re.Match) -> str:
        hidden.append(match.group())
        return f"{mark}{len(hidden) - 1}{mark}"

    shielded = [m | {"content": finder.sub(hide, m["content"])} for m in messages]
    rendered = render_template(
        template, shielded, config=config, add_generation_prompt=add_generation_prompt, clock=clock,
        untrusted=untrusted,
    )
    pieces: list[tuple[str, bool]] = []
    text = ""
    end = 0
    for match in re.finditer(f"{mark}(\\d+){mark}|{finder.pattern}", rendered):
        text += rendered[end : match.start()]
        end = match.end()
        if match.group(1) is not None:  # a message's special-token text: back in place, as text
            text += hidden[int(match.group(1))]
            continue
        if text:
            pieces.append((text, False))
        pieces.append((match.group(), True))
        text = ""
    text += rendered[end:]
    if text:
        pieces.append((text, False))
    return pieces


# -- harmony (gpt-oss) ---------------------------------------------------------------------------------------------
MODEL_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
KNOWLEDGE_CUTOFF = "2024-06"
CHANNELS_NOTE = "# Valid channels: analysis, commentary, final. Channel must be included for every message."


def render_harmony(
    messages: Sequence[dict],
    *,
    add_generation_prompt: bool = True,
    today: date | None = None,
    reasoning: str = "medium",
) -> list[tuple[str, bool]]:
    """The harmony prompt as (piece, is_markup) pairs; ``"".join`` of the pieces is the text.

    >>> text = "".join(p for p, _ in render_harmony([{"role": "user", "content": "Hi"}], today=date(2025, 6, 28)))
    >>> text.endswith("<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant")
    True
    """
    today = today or date.today()
    system = (
        f"{MODEL_IDENTITY}\nKnowledge cutoff: {KNOWLEDGE_CUTOFF}\nCurrent date: {today.isoformat()}\n\n"
        f"Reasoning: {reasoning}\n\n{CHANNELS_NOTE}"
    )
    pieces: list[tuple[str, bool]] = [("<|start|>", True), ("system", False), ("<|message|>", True),
                                      (system, False), ("<|end|>", True)]
    instructions = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    if instructions:
        pieces += [("<|start|>", True), ("developer", False), ("<|message|>", True),
                   (f"# Instructions\n\n{instructions}", False), ("<|end|>", True)]
    for m in messages:
        if m["role"] == "user":
            pieces += [("<|start|>", True), ("user", False), ("<|message|>", True), (m["content"], False),
                       ("<|end|>", True)]
        elif m["role"] == "assistant":
            pieces += [("<|start|>", True), ("assistant", False), ("<|channel|>", True), ("final", False),
                       ("<|message|>", True), (m["content"], False), ("<|end|>", True)]
    if add_generation_prompt:
        pieces += [("<|start|>", True), ("assistant", False)]
    return pieces
