"""The decoder of a tokenizer.json, turning token strings back into text exactly as Hugging Face ``tokenizers`` does.

``tokenizers`` decodes ids (``decode(ids, skip_special_tokens=False)``) by taking each id's token string (an added
token's content, else the model's vocabulary entry) and handing the whole list to the file's decoder, whose steps
each turn a list of strings into another (``Sequence`` runs them in order) before the last list is joined; a file
without a decoder joins the tokens with spaces. :func:`decoder` builds that function from the decoder's JSON object.
Steps: ``ByteLevel`` (byte-alphabet characters to bytes, then UTF-8 with U+FFFD for what is not), ``WordPiece``
(``##`` pieces glued, the others after a space, the library's clean-up of spaces before punctuation),
``Metaspace`` (``▁`` to a space, dropped at the start of the first token unless the scheme is ``never``),
``BPEDecoder`` (the end-of-word suffix becomes a space), ``CTC`` (repeats and padding removed), ``Replace``,
``Fuse``, ``Strip`` and ``ByteFallback`` (``<0xNN>`` runs to their text, or one U+FFFD per byte).

The library fails on odd input to a ``Strip`` step, and so does this module, with :class:`DecodeError` instead of a
crash: asked to strip more characters from the end of a token than it has while they all match, or to strip a
token from both ends past each other. Any step
type not listed raises :class:`~.tokenizer_json.UnsupportedTokenizerError` naming it when the decoder is built.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby

import regex

from ..budget import UserPattern
from ..errors import TokenplayError
from .onig_matches import spans as onig_spans
from .onig_regex import translate
from .tokenizer_json import TokenizerFileError, UnsupportedTokenizerError, byte_level_bytes, pipeline_steps
from .unicode import regex_view

Step = Callable[[list[str]], list[str]]

_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


class DecodeError(TokenplayError):
    """Ids this tokenizer's decoder cannot turn into text (the reference library fails on them too)."""


def cleanup(text: str) -> str:
    """The WordPiece decoder's clean-up: no space before common punctuation and English contractions.

    >>> cleanup("do n't stop , ok ?")
    "don't stop, ok?"
    """
    for old, new in _CLEANUP:
        text = text.replace(old, new)
    return text


def _byte_level(tokens: list[str]) -> list[str]:
    return [b"".join(map(byte_level_bytes, tokens)).decode("utf-8", "replace")]


def _wordpiece(prefix: str, clean: bool) -> Step:
    def apply(tokens: list[str]) -> list[str]:
        out = []
        for i, token in enumerate(tokens):
            if i:
                token = token[len(prefix) :] if token.startswith(prefix) else " " + token
            out.append(cleanup(token) if clean else token)
        return out

    return apply


def _metaspace(replacement: str, drop_first: bool) -> Step:
    def apply(tokens: list[str]) -> list[str]:
        return [
            token.replace(replacement, "" if i == 0 and drop_first else " ") for i, token in enumerate(tokens)
        ]

    return apply


def _bpe(suffix: str) -> Step:
    def apply(tokens: list[str]) -> list[str]:
        last = len(tokens) - 1
        return [token.replace(suffix, "" if i == last else " ") if suffix else token for i, token in enumerate(tokens)]

    return apply


def _ctc(pad: str, delimiter: str, clean: bool) -> Step:
    def apply(tokens: list[str]) -> list[str]:
        out = []
        for token, _ in groupby(tokens):
            token = token.replace(pad, "") if pad else token
            if clean:
                token = cleanup(token)
                token = token.replace(delimiter, " ") if delimiter else token
            if token:
                out.append(token)
        return out

    return apply


def _replace(pattern: regex.Pattern, content: str) -> Step:
    def apply(tokens: list[str]) -> list[str]:
        out = []
        for token in tokens:
            pieces, pos = [], 0
            for a, b in onig_spans(pattern, regex_view(token)) if token else ():  # nothing matches in nothing
                pieces += [token[pos:a], content]
                pos = b
            out.append("".join(pieces) + token[pos:])
        return out

    return apply


def _strip(content: str, start: int, stop: int) -> Step:
    def apply(tokens: list[str]) -> list[str]:
        out = []
        for token in tokens:
            head = 0
            while head < min(start, len(token)) and token[head] == content:
                head += 1
            tail = len(token)
            for i in range(stop):
                index = len(token) - i - 1
                if index < 0:
                    raise DecodeError(
                        f"this tokenizer's decoder cannot decode these ids: its Strip step strips {stop} "
                        f"characters from the end of the token {token!r}, which has fewer"
                    )
                if token[index] != content:
                    break
                tail = index
            if head > tail:
                raise DecodeError(
                    f"this tokenizer's decoder cannot decode these ids: its Strip step strips the token {token!r} "
                    "from both ends past each other"
                )
            out.append(token[head:tail])
        return out

    return apply


_HEX = frozenset("0123456789abcdefABCDEF")


def _fallback_byte(token: str) -> int:
    """The byte of a ``<0xNN>`` token as the ByteFallback decoder reads it (Rust's ``u8::from_str_radix``: hex
    digits of either case, after an optional ``+``), or -1.

    >>> _fallback_byte("<0xe3>"), _fallback_byte("<0x+A>"), _fallback_byte("<0x-0>"), _fallback_byte("<0x A>")
    (227, 10, -1, -1)
    """
    if len(token) != 6 or not token.isascii() or not token.startswith("<0x") or not token.endswith(">"):
        return -1
    digits = token[3:5]
    if digits[0] == "+":
        digits = digits[1:]
    return int(digits, 16) if digits and _HEX.issuperset(digits) else -1


def _byte_fallback(tokens: list[str]) -> list[str]:
    out: list[str] = []
    run = bytearray()
    for token in [*tokens, None]:
        b = _fallback_byte(token) if token is not None else -1
        if b >= 0:
            run.append(b)
            continue
        if run:
            try:
                out.append(run.decode("utf-8"))
            except UnicodeDecodeError:
                out.extend("\ufffd" * len(run))
            run.clear()
        if token is not None:
            out.append(token)
    return out


def _fuse(tokens: list[str]) -> list[str]:
    return ["".join(tokens)]


def _string(obj: dict, key: str, default: str) -> str:
    value = obj.get(key, default)
    if not isinstance(value, str):
        raise TokenizerFileError(f"the {obj.get('type')} decoder's {key} must be text, not {value!r}")
    return value


def _count(obj: dict, key: str) -> int:
    value = obj.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TokenizerFileError(f"the Strip decoder's {key} must be a whole number, not {value!r}")
    return value


def _step(obj: dict) -> Step:
    kind = obj.get("type")
    if kind == "ByteLevel":
        return _byte_level
    if kind == "WordPiece":
        return _wordpiece(_string(obj, "prefix", "##"), bool(obj.get("cleanup", True)))
    if kind == "Metaspace":
        scheme = obj.get("prepend_scheme", "always")
        if obj.get("add_prefix_space") is False:
            scheme = "never"
        return _metaspace(_string(obj, "replacement", "\u2581"), scheme != "never")
    if kind == "BPEDecoder":
        return _bpe(_string(obj, "suffix", "</w>"))
    if kind == "CTC":
        return _ctc(_string(obj, "pad_token", "<pad>"), _string(obj, "word_delimiter_token", "|"),
                    bool(obj.get("cleanup", True)))
    if kind == "Replace":
        pattern = obj.get("pattern") if isinstance(obj.get("pattern"), dict) else {}
        if isinstance(pattern.get("String"), str):
            compiled = regex.compile(regex.escape(pattern["String"]))
        elif isinstance(pattern.get("Regex"), str):
            try:
                # with Oniguruma's \w, \b, \h; a regex the file brings runs under the request's budget
                compiled = UserPattern(translate(pattern["Regex"]), "this tokenizer's decoder regex (Replace)")
            except regex.error as exc:
                raise TokenizerFileError(f"the Replace decoder's regex cannot be compiled: {exc}") from None
        else:
            raise TokenizerFileError(f"a Replace decoder needs a String or Regex pattern: {obj!r}")
        return _replace(compiled, _string(obj, "content", ""))
    if kind == "Fuse":
        return _fuse
    if kind == "Strip":
        content = _string(obj, "content", " ")
        if len(content) != 1:
            raise TokenizerFileError(f"the Strip decoder's content is one character, not {content!r}")
        return _strip(content, _count(obj, "start"), _count(obj, "stop"))
    if kind == "ByteFallback":
        return _byte_fallback
    raise UnsupportedTokenizerError(f"the {kind} decoder is not supported yet")


class Decoder:
    """The file's decoder as a function of the token strings (see the module docstring); pickled as its spec (its
    steps are closures, made again from it: a tokenizer's table).

    >>> Decoder({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
    ...                                            {"type": "ByteFallback"}, {"type": "Fuse"}]})(["▁Hi", "<0xE2>", "<0x9C>", "<0x93>"])
    ' Hi✓'
    >>> Decoder(None)(["a", "b"])
    'a b'
    """

    def __init__(self, spec: dict | None):
        self.spec = spec
        self.steps = None if spec is None else [_step(obj) for obj in pipeline_steps(spec, "decoders")]

    def __call__(self, tokens: list[str]) -> str:
        if self.steps is None:
            return " ".join(tokens)
        for step in self.steps:
            tokens = step(tokens)
        return "".join(tokens)

    def __reduce__(self):
        return Decoder, (self.spec,)


def decoder(spec: dict | None) -> Callable[[list[str]], str]:
    """The file's decoder (:class:`Decoder`)."""
    return Decoder(spec)
