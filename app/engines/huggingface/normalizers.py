"""The normalizer of a tokenizer.json, run as Hugging Face ``tokenizers`` runs it, with a map back to the input.

Supported steps (and ``Sequence`` of them): ``NFC``, ``NFD``, ``NFKC``, ``NFKD`` (with ``tokenizers``' Unicode
tables, see :mod:`.unicode`), ``Replace`` with a string pattern, ``Prepend``, and BERT's ``BertNormalizer`` and
``Lowercase`` (:mod:`.bert_text`). Any other step type raises
:class:`~app.engines.huggingface.tokenizer_json.UnsupportedTokenizerError` naming it.

:class:`TextNormalizer` returns the normalized text and, when it is not a character-for-character rewrite of the
input, the input span of every normalized character (a character that came from several input characters, or a
group that normalization recombined, gets the span of the whole group), so that tokens can be placed in the
original text. It does not split or tokenize.
"""

from __future__ import annotations

from collections.abc import Callable

from . import unicode as hf_unicode
from .bert_text import bert_normalizer
from .tokenizer_json import UnsupportedTokenizerError, pipeline_steps

#: ``spans[i]``: the input span of output character ``i``; ``None`` means output character ``i`` came from input
#: character ``i`` (same length, one for one).
Spans = list[tuple[int, int]] | None
Step = Callable[[str, Spans], tuple[str, Spans]]


def _positions(text: str, spans: Spans) -> list[tuple[int, int]]:
    return [(i, i + 1) for i in range(len(text))] if spans is None else spans


def _unicode_form(form: str) -> Step:
    def apply(text: str, spans: Spans) -> tuple[str, Spans]:
        if hf_unicode.is_normalized(form, text):
            return text, spans
        return _normalize_in_groups(form, text, _positions(text, spans))

    return apply


def _normalize_in_groups(form: str, text: str, spans: list[tuple[int, int]]) -> tuple[str, Spans]:
    """Normalize ``text`` group by group, a group being the smallest stretch that normalizes on its own.

    Groups start at characters of combining class 0 (marks attach to the character before them); two neighbouring
    groups are joined when normalizing them together differs from normalizing each (a composition across them).
    Every output character of a group gets the input span of the whole group.
    """
    starts = [i for i, ch in enumerate(text) if i == 0 or hf_unicode.is_starter(ch)]
    starts.append(len(text))
    out: list[str] = []
    out_spans: list[tuple[int, int]] = []

    def emit(a: int, b: int, normalized: str) -> None:
        out.append(normalized)
        out_spans.extend([(spans[a][0], spans[b - 1][1])] * len(normalized))

    a, b = starts[0], starts[1]
    current = hf_unicode.normalize(form, text[a:b])
    for nxt in starts[2:]:
        alone = hf_unicode.normalize(form, text[b:nxt])
        joined = hf_unicode.normalize(form, text[a:nxt])
        if joined == current + alone:
            emit(a, b, current)
            a, current = b, alone
        else:
            current = joined
        b = nxt
    emit(a, b, current)
    return "".join(out), out_spans


def _replace(old: str, new: str) -> Step:
    def apply(text: str, spans: Spans) -> tuple[str, Spans]:
        if old not in text:
            return text, spans
        if len(old) == len(new) == 1:
            return text.replace(old, new), spans
        source = _positions(text, spans)
        out: list[str] = []
        out_spans: list[tuple[int, int]] = []
        pos = 0
        while True:
            hit = text.find(old, pos)
            if hit < 0:
                break
            out.append(text[pos:hit])
            out_spans.extend(source[pos:hit])
            out.append(new)
            out_spans.extend([(source[hit][0], source[hit + len(old) - 1][1])] * len(new))
            pos = hit + len(old)
        out.append(text[pos:])
        out_spans.extend(source[pos:])
        return "".join(out), out_spans

    return apply


def _prepend(prefix: str) -> Step:
    def apply(text: str, spans: Spans) -> tuple[str, Spans]:
        if not text:
            return text, spans
        source = _positions(text, spans)
        return prefix + text, [source[0]] * len(prefix) + source

    return apply


def _bert(obj: dict) -> Step:
    """``BertNormalizer``: every character mapped on its own, so each output character comes from one input one."""
    normalize = bert_normalizer(
        obj.get("clean_text", True), obj.get("handle_chinese_chars", True), obj.get("strip_accents"), obj.get("lowercase", True)
    )
    char_map = normalize.char_map

    def apply(text: str, spans: Spans) -> tuple[str, Spans]:
        out = normalize(text)
        if out == text:
            return text, spans
        out_spans: list[tuple[int, int]] = []
        for span, ch in zip(_positions(text, spans), text):
            out_spans.extend([span] * len(char_map[ord(ch)]))
        return out, out_spans

    return apply


def _step(obj: dict) -> Step:
    kind = obj.get("type")
    if kind in ("NFC", "NFD", "NFKC", "NFKD"):
        return _unicode_form(kind)
    if kind == "Replace":
        pattern = obj.get("pattern") or {}
        if "String" not in pattern:
            raise UnsupportedTokenizerError("Replace normalizers with a regex pattern are not supported yet")
        return _replace(pattern["String"], obj.get("content", ""))
    if kind == "Prepend":
        return _prepend(obj.get("prepend", ""))
    if kind == "BertNormalizer":
        return _bert(obj)
    if kind == "Lowercase":
        return _bert({"clean_text": False, "handle_chinese_chars": False, "strip_accents": False, "lowercase": True})
    raise UnsupportedTokenizerError(f"the {kind} normalizer is not supported yet")


class TextNormalizer:
    """A tokenizer.json normalizer: ``normalizer(text) -> (normalized, spans)`` (see :data:`Spans`).

    >>> TextNormalizer({"type": "Sequence", "normalizers": [{"type": "NFC"}]})("e\\u0301x")
    ('éx', [(0, 2), (2, 3)])
    >>> TextNormalizer({"type": "Replace", "pattern": {"String": " "}, "content": "▁"})("a b")
    ('a▁b', None)
    """

    def __init__(self, spec: dict | None):
        self.spec = spec  # as the file wrote it (the explain view names the steps)
        self.steps = [_step(obj) for obj in pipeline_steps(spec, "normalizers")]

    def __reduce__(self):  # the steps are closures, made again from the spec (a tokenizer's table)
        return TextNormalizer, (self.spec,)

    @property
    def identity(self) -> bool:
        return not self.steps

    def __call__(self, text: str) -> tuple[str, Spans]:
        spans: Spans = None
        for step in self.steps:
            text, spans = step(text, spans)
        return text, spans
