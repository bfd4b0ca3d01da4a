"""Find the added tokens of a tokenizer.json in text, as Hugging Face ``tokenizers`` does, before the model runs.

Added tokens (``<|im_start|>``, ``<think>``, Gemma's ``<unused0>`` and whitespace runs...) are cut out of the text
first; the model never sees them and merges never cross them. The rules, from ``tokenizers``' AddedVocabulary:

- matching is leftmost-longest over all added tokens at once, without overlaps;
- a *special* token found while special tokens are not allowed (``encode_special_tokens``) is dropped from the
  matches and its text stays plain text, but it still hides any shorter token inside it;
- a *non-special* added token always matches, whether special tokens are allowed or not (so Qwen3's ``<think>``,
  Gemma's ``<unusedN>`` and DeepSeek's tool tokens are single tokens in any text, as in the models themselves);
- ``single_word`` tokens match only between non-word characters; ``lstrip`` / ``rstrip`` tokens take the
  whitespace before / after them (``lstrip`` not what an earlier match took; a match is found where the one
  before it ended without its ``rstrip`` spaces, so matches may overlap, as in the library);
- tokens with ``normalized`` false are matched in the original text; the others in each normalized piece between
  those (see :meth:`AddedVocabulary.split`).

It does not normalize or tokenize the pieces between added tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import NamedTuple

import regex

from ..errors import InvalidTextError
from ..result import Token
from .tokenizer_json import AddedToken, UnsupportedTokenizerError

_WORD = regex.compile(r"\w")
_SPACE = regex.compile(r"\s")
_SPACES = regex.compile(r"\s*")


def trie_pattern(words: Iterable[str]) -> str:
    """A regex matching the longest of ``words`` at a position (a trie, so a big set stays fast).

    >>> re.findall(trie_pattern(["ab", "abcd", "b"]), "abcdabcb")
    ['abcd', 'ab', 'b']
    """
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:  # a word ends here: the longer branches are tried first, this end is the fallback
            return f"(?:{body})?"
        return body

    return emit(trie)


class Match(NamedTuple):
    """A stretch of text: an added token (``token`` set) or the plain text between added tokens."""

    start: int
    end: int
    token: AddedToken | None


class _Matcher:
    """Leftmost-longest matching of one set of added tokens (the ``find_matches`` of ``tokenizers``)."""

    def __init__(self, tokens: Sequence[AddedToken]):
        self.by_content = {t.content: t for t in tokens}
        self.find = re.compile(trie_pattern(self.by_content)).finditer if tokens else None

    def __reduce__(self):  # the pattern's bound method is made again (a tokenizer's table)
        return _Matcher, (list(self.by_content.values()),)

    def split(self, text: str, allow_special: bool) -> list[Match]:
        if self.find is None or not text:
            return [Match(0, len(text), None)] if text else []
        out: list[Match] = []
        done = 0  # where the last kept match ended
        for m in self.find(text):
            token = self.by_content[m.group()]
            start, stop = m.span()
            if token.special and not allow_special:
                continue
            if token.single_word and (
                (start > 0 and _WORD.match(text, start - 1)) or (stop < len(text) and _WORD.match(text, stop))
            ):
                continue
            if token.lstrip:  # the spaces before it, but not those an earlier match took
                while start > 0 and _SPACE.match(text, start - 1):
                    start -= 1
                start = max(start, done)
            if token.rstrip:
                stop = _SPACES.match(text, stop).end()
            if start > stop:  # an earlier match's spaces took all of it and more: the library fails here
                raise InvalidTextError(
                    f"this tokenizer cannot encode this text: its added token {token.content!r} overlaps the spaces "
                    "an earlier one took (Hugging Face tokenizers fails on it too)"
                )
            if done < start:
                out.append(Match(done, start, None))
            if start < stop:  # one an earlier match's spaces took whole is dropped, as the library drops it
                out.append(Match(start, stop, token))
            done = stop
        if done < len(text):
            out.append(Match(done, len(text), None))
        return out


#: ``normalize(text) -> (normalized, spans)``: ``spans[i]`` is the input span of normalized character ``i``, or
#: ``spans`` is ``None`` when the text came out unchanged.
NormalizeFn = Callable[[str], tuple[str, "list[tuple[int, int]] | None"]]


class Piece(NamedTuple):
    """Part of the input: an added token, or normalized plain text for the model.

    ``start``/``end`` are offsets into the input. For plain text, ``text`` is the normalized text and ``spans``
    maps each of its characters to the input span it came from (``None``: ``text`` is ``input[start:end]``).
    """

    start: int
    end: int
    text: str
    token: AddedToken | None = None
    spans: list[tuple[int, int]] | None = None

    def origin(self):
        """The input offset each position of a plain piece's text came from (what the pre-tokenizer's
        :meth:`~.pretokenizers.PreTokenizer.pieces` reads)."""
        spans, start = self.spans, self.start
        return (lambda p: spans[p][0]) if spans else (lambda p: start + p)


class AddedVocabulary:
    """The added tokens of one tokenizer, split into those matched before and after normalization."""

    def __init__(self, tokens: Sequence[AddedToken], normalize: NormalizeFn | None = None):
        self.normalize = normalize
        self.raw = _Matcher([t for t in tokens if not t.normalized])
        normalized = [t for t in tokens if t.normalized]
        if normalize is not None:  # a normalized token is looked for in its normalized form
            normalized = [replace(t, content=normalize(t.content)[0]) for t in normalized]
            _check_normalized(tokens, normalized)
        self.normalized = _Matcher(normalized)

    def split(self, text: str, allow_special: bool) -> list[Piece]:
        """Cut ``text`` into added tokens and normalized plain pieces, in order."""
        out: list[Piece] = []
        for start, end, token in self.raw.split(text, allow_special):
            if token is not None:
                out.append(Piece(start, end, text[start:end], token))
                continue
            plain = text[start:end]
            normalized, spans = self.normalize(plain) if self.normalize is not None else (plain, None)
            for a, b, inner in self.normalized.split(normalized, allow_special):
                if spans is None:
                    piece_spans = None
                    first, last = start + a, start + b
                else:
                    piece_spans = spans[a:b] if not start else [(s + start, e + start) for s, e in spans[a:b]]
                    first, last = piece_spans[0][0], piece_spans[-1][1]
                out.append(Piece(first, last, normalized[a:b], inner, None if inner is not None else piece_spans))
        return out



def _check_normalized(tokens: Sequence[AddedToken], normalized: Sequence[AddedToken]) -> None:
    """Refuse normalized added tokens the library matches in no defined way: one that normalizes to nothing (it
    would match between every two characters), two that normalize to the same text (which of them a match gives
    depends on the order of a hash map)."""
    original = {t.id: t.content for t in tokens}
    seen: dict[str, AddedToken] = {}
    for token in normalized:
        if not token.content:
            raise UnsupportedTokenizerError(
                f"the added token {original[token.id]!r} normalizes to nothing, which the library would match "
                "everywhere; it is not supported"
            )
        other = seen.setdefault(token.content, token)
        if other.id != token.id:
            raise UnsupportedTokenizerError(
                f"the added tokens {original[other.id]!r} and {original[token.id]!r} both normalize to "
                f"{token.content!r}; which one the library gives is not defined, so this is not supported"
            )


def added_token(piece: Piece) -> Token:
    """The :class:`~..result.Token` of an added token cut out of the input."""
    t = piece.token
    return Token(t.id, t.content.encode(), piece.start, piece.end, t.content, t.special)


def input_spans(piece: Piece) -> list[tuple[int, int]]:
    """The input span of each character of a plain piece's (normalized) text."""
    return piece.spans or [(piece.start + i, piece.start + i + 1) for i in range(len(piece.text))]
