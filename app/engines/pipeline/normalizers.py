"""The normalizer of a tokenizer.json, run as Hugging Face ``tokenizers`` runs it, with a map back to the input.

Supported steps (and ``Sequence`` of them): ``NFC``, ``NFD``, ``NFKC``, ``NFKD`` (with ``tokenizers``' Unicode
tables, see :mod:`.unicode`), ``Replace`` with a string pattern, ``Prepend``, and BERT's ``BertNormalizer`` and
``Lowercase`` (:mod:`.bert_text`); ``Strip``, ``StripAccents``, ``Nmt``, ``Precompiled``, ``Replace`` with a regex
and ``ByteLevel`` are built by :mod:`.normalizer_steps`. Any other step type raises
:class:`~app.engines.pipeline.tokenizer_json.UnsupportedTokenizerError` naming it.

:class:`TextNormalizer` returns the normalized text and, when it is not a character-for-character rewrite of the
input, the input span of every normalized character (a character that came from several input characters, or a
group that normalization recombined, gets the span of the whole group), so that tokens can be placed in the
original text. It does not split or tokenize.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from itertools import compress

from . import unicode as hf_unicode
from .bert_text import bert_normalizer
from .tokenizer_json import TokenizerFileError, pipeline_steps

#: ``spans[i]``: the input span of output character ``i``; ``None`` means output character ``i`` came from input
#: character ``i`` (same length, one for one).
Spans = list[tuple[int, int]] | None
Step = Callable[[str, Spans], tuple[str, Spans]]


_PLAIN_RUN = re.compile("p{4,}")
_COMPOSES_AFTER: frozenset[str] | None = None  # the characters that are the second of a canonical composition


def _plain(ch: str) -> bool:
    """Whether ``ch`` is a starter without any decomposition that no composition takes as its second character (nor
    a Hangul jamo or syllable, composed by rule, nor a character the library's tables do not know): every form
    leaves it as it is, and two of them side by side as they are."""
    global _COMPOSES_AFTER
    if _COMPOSES_AFTER is None:
        seconds = set()
        for cp in range(0x30000):
            parts = unicodedata.decomposition(chr(cp)).split()
            if len(parts) == 2 and not parts[0].startswith("<"):
                seconds.add(chr(int(parts[1], 16)))
        _COMPOSES_AFTER = frozenset(seconds)
    cp = ord(ch)
    if 0x1100 <= cp <= 0x11FF or 0x3130 <= cp <= 0x318F or 0xA960 <= cp <= 0xA97F or 0xAC00 <= cp <= 0xD7FF:
        return False
    return (
        unicodedata.combining(ch) == 0
        and not unicodedata.decomposition(ch)
        and ch not in _COMPOSES_AFTER
        and hf_unicode.is_starter(ch)
        and hf_unicode.is_normalized("NFKD", ch)
        and hf_unicode.normalize("NFKC", ch) == ch
    )


def _positions(text: str, spans: Spans) -> list[tuple[int, int]]:
    return list(zip(range(len(text)), range(1, len(text) + 1))) if spans is None else spans


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
    A group that normalization leaves as it is keeps each character's span; in one it changes, every output
    character starts where the library's alignment starts it (:func:`_aligned`) and ends where the group ends, so
    that the tokens over a group cover all of it.
    """
    starter = {ch: hf_unicode.is_starter(ch) for ch in set(text)}
    starts = list(compress(range(len(text)), map(starter.__getitem__, text)))
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    starts.append(len(text))
    memo: dict[str, str] = {}  # the groups (and pairs of them) a text repeats, normalized once

    def normalize(piece: str) -> str:
        found = memo.get(piece)
        if found is None:
            found = memo[piece] = hf_unicode.normalize(form, piece)
        return found

    # Runs of plain characters (:func:`_plain`): there each character is a group of its own, which normalizing
    # leaves as it is and never joins with the next, so the loop below passes over such a run's inside at once
    # (its edges are decided as any group's).
    mask = text.translate({ord(ch): "p" if _plain(ch) else "x" for ch in starter})
    runs = [(m.start(), m.end()) for m in _PLAIN_RUN.finditer(mask)]
    run_starts = [r[0] for r in runs]
    out: list[str] = []
    out_spans: list[tuple[int, int]] = []

    def emit(a: int, b: int, normalized: str) -> None:
        out.append(normalized)
        if normalized == text[a:b]:
            out_spans.extend(spans[a:b])
            return
        aligned = _aligned(form, text[a:b], normalized)
        end = spans[b - 1][1]
        if aligned is None:
            out_spans.extend([(spans[a][0], end)] * len(normalized))
        else:
            out_spans.extend((spans[a + k][0], end) for k in aligned)

    a, b = starts[0], starts[1]
    current = normalize(text[a:b])
    i, n_starts = 2, len(starts)  # starts[i] is the end of the group after b
    while i < n_starts:
        if b == a + 1 and mask[a] == "p":  # the current group is one plain character: in a run?
            k = bisect_right(run_starts, a) - 1
            if k >= 0 and a + 1 < runs[k][1] - 2:
                stop = runs[k][1] - 2  # the run's characters before its last two each stay a group as they are
                out.append(text[a:stop])
                out_spans.extend(spans[a:stop])
                i += stop - a
                a, b, current = stop, stop + 1, text[stop]
                continue
        nxt = starts[i]
        alone = normalize(text[b:nxt])
        joined = normalize(text[a:nxt])
        if joined == current + alone:
            emit(a, b, current)
            a, current = b, alone
        else:
            current = joined
        b = nxt
        i += 1
    emit(a, b, current)
    return "".join(out), out_spans


def _aligned(form: str, text: str, normalized: str) -> list[int] | None:
    """For each character of ``normalized`` (``text`` normalized to ``form``), the index of the character of
    ``text`` the library aligns it to: its normalizer yields each output character with a change (0 it replaces
    the next input character, +1 it is inserted after the last one, -n it replaces one and removes n more), the
    decomposition marking the characters a decomposition adds, the canonical reordering moving the changes with
    the characters, and a composition adding the changes of the two characters less one. ``None`` when the
    emulation does not give ``normalized`` (the group is then aligned as a whole)."""
    compat = form in ("NFKC", "NFKD")
    pairs: list[tuple[int, str, int]] = []  # (combining class, character, change)
    ready = 0
    for ch in text:
        parts = hf_unicode.normalize("NFKD" if compat else "NFD", ch)  # a character it does not know stays
        for i, part in enumerate(parts):
            cls = 0 if hf_unicode.is_starter(part) else unicodedata.combining(part)
            if cls == 0:
                pairs[ready:] = sorted(pairs[ready:], key=lambda p: p[0])
                ready = len(pairs)
            pairs.append((cls, part, 0 if i == 0 else 1))
    pairs[ready:] = sorted(pairs[ready:], key=lambda p: p[0])
    stream = [(ch, change) for _, ch, change in pairs]
    if form in ("NFC", "NFKC"):
        stream = _recomposed(stream)
    if "".join(ch for ch, _ in stream) != normalized:
        return None
    aligned: list[int] = []
    consumed = 0
    for _, change in stream:
        if change > 0:
            aligned.append(max(consumed - 1, 0))
        else:
            aligned.append(min(consumed, len(text) - 1))
            consumed += 1 - change
    return aligned


def _compose(a: str, b: str) -> str | None:
    """The character ``a`` and ``b`` compose to, or None (a character the library does not know composes with
    nothing: :func:`.unicode.normalize` does not normalize across it)."""
    r = hf_unicode.normalize("NFC", a + b)
    return r if len(r) == 1 else None


def _recomposed(stream: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The library's recomposition of a decomposed stream of (character, change), the changes carried along."""
    out: list[tuple[str, int]] = []
    composee: tuple[str, int] | None = None
    last: int | None = None  # the combining class of the last character held back
    held: list[tuple[str, int]] = []
    for ch, change in stream:
        cls = 0 if hf_unicode.is_starter(ch) else unicodedata.combining(ch)
        if composee is None:
            if cls != 0:
                out.append((ch, change))
            else:
                composee = (ch, change)
            continue
        if last is not None and last >= cls:  # blocked from the composee
            if cls == 0:
                out.append(composee)
                out.extend(held)
                held, composee, last = [], (ch, change), None
            else:
                held.append((ch, change))
                last = cls
            continue
        composed = _compose(composee[0], ch)
        if composed is not None:
            composee = (composed, composee[1] + change - 1)
        elif last is None and cls == 0:
            out.append(composee)
            composee = (ch, change)
        else:
            held.append((ch, change))
            last = cls
    if composee is not None:
        out.append(composee)
    out.extend(held)
    return out


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
            # the library aligns what it puts in to the last character it replaces (so does the "first" Metaspace)
            out_spans.extend([source[hit + len(old) - 1]] * len(new))
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


def _text(obj: dict, key: str) -> str:
    value = obj.get(key, "")
    if not isinstance(value, str):
        raise TokenizerFileError(f"a normalizer's {key} must be text, not {value!r}")
    return value


def _step(obj: dict) -> Step:
    kind = obj.get("type")
    if kind in ("NFC", "NFD", "NFKC", "NFKD"):
        return _unicode_form(kind)
    if kind == "Replace" and isinstance(obj.get("pattern"), dict) and "String" in obj["pattern"]:
        return _replace(_text(obj["pattern"], "String"), _text(obj, "content"))
    if kind == "Prepend":
        return _prepend(_text(obj, "prepend"))
    if kind == "BertNormalizer":
        return _bert(obj)
    if kind == "Lowercase":
        return _bert({"clean_text": False, "handle_chinese_chars": False, "strip_accents": False, "lowercase": True})
    from . import normalizer_steps  # the other step types (Strip, Precompiled, a regex Replace...), or the refusal

    return normalizer_steps.step(obj)


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
