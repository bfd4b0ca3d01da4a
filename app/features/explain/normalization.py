"""What a tokenizer's normalizer did to a text before it was cut: the normalized text, and each change in words.

Every model rewrites its input before cutting it, or says it does not: BERT lower-cases and strips accents,
SentencePiece models apply NFKC-style rules and write spaces as ``▁`` (and may put a ``▁`` before the text),
Qwen3 applies NFC, tiktoken's encodings change nothing. A :class:`Normalization` holds, for each stretch of plain
text the model normalized (the text between added tokens), the normalized text and the input span every
normalized character came from: the maps the engines themselves keep to place tokens in the input. From them it
finds the :class:`Change` s inside any span of the input: input characters and what they became (``"É"`` ->
``"e"``), named by what explains it (``lowercased``, ``accents stripped``, ``NFKC``, ``space → ▁``, ``dummy prefix
▁``, ``removed``...; :func:`what_changed`).

Input characters are grouped by the normalized characters that share their span, so a change is never smaller
than what the normalizer rewrote as one (a decomposed accent and its letter become one change); characters that
vanished are a change of their own (``after`` empty). Replacing each change's ``before`` by its ``after`` in the
input gives the normalized text back, exactly (the tests check it against the reference libraries' normalizers).
:func:`merged` joins neighbouring changes of one kind for showing them (``HELLO`` -> ``hello``).

It reads the engines' normalizers; it never normalizes text any other way than they do, and renders nothing.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations

SPACE = "\u2581"  # ▁


@dataclass(frozen=True, slots=True)
class Change:
    """Input characters ``start..end`` (``before``) became ``after`` in the normalized text, for the reasons in
    ``what``; ``at`` is where ``after`` begins in the normalized text of its stretch."""

    start: int
    end: int
    before: str
    after: str
    what: tuple[str, ...]
    at: int = 0

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "before": self.before, "after": self.after, "what": list(self.what)}


@dataclass(slots=True)
class Stretch:
    """Plain input ``start..end`` normalized as ``text``; ``spans[i]`` is the input span normalized character ``i``
    came from (``None``: each normalized character came from the input character at its place)."""

    start: int
    end: int
    text: str
    spans: Sequence[tuple[int, int]] | None = None
    _starts: list[int] | None = field(default=None, repr=False)

    def starts(self) -> list[int]:
        if self._starts is None:
            self._starts = [a for a, _ in self.spans] if self.spans is not None else []
        return self._starts


class Normalization:
    """A text's normalization (see the module docstring). ``steps`` names what the model's normalizer does, in
    order (empty: the model has none)."""

    def __init__(self, text: str, steps: Sequence[str], stretches: Sequence[Stretch]):
        self.text = text
        self.steps = list(steps)
        self.stretches = list(stretches)
        self._firsts = [s.start for s in self.stretches]
        # a composition NFC explains is NFKC's too: named after the form the model's normalizer runs
        said = " ".join(self.steps)
        self._rename = {"NFC": "NFKC"} if "NFKC" in said and "NFC" not in said.replace("NFKC", "") else {}

    def changes(self, start: int, end: int) -> list[Change]:
        """The changes that touch input characters ``start..end`` (an insertion at ``start`` counts), in order."""
        if not self.steps:
            return []
        out: list[Change] = []
        k = max(0, bisect_right(self._firsts, start) - 1)
        for stretch in self.stretches[k:]:
            if stretch.start > end:
                break
            if stretch.end < start:
                continue
            if stretch.spans is None:  # one normalized character per input character
                if stretch.text == self.text[stretch.start : stretch.end]:
                    continue
                stretch.spans = [(stretch.start + i, stretch.start + i + 1) for i in range(len(stretch.text))]
            out.extend(_changes(self.text, stretch, start, end))
        if self._rename:
            out = [Change(c.start, c.end, c.before, c.after, tuple(self._rename.get(w, w) for w in c.what), c.at)
                   for c in out]
        return out

    def summary(self, changes: Sequence[Change]) -> str:
        """One sentence saying what the normalizer did (or that it did nothing, or that there is none)."""
        if not self.steps:
            return "This model has no normalizer: it cuts the text exactly as it was typed."
        if not changes:
            return f"The normalizer ({'; '.join(self.steps)}) changed nothing here."
        kinds = list(dict.fromkeys(w for c in changes for w in c.what))
        return f"The normalizer ({'; '.join(self.steps)}) changed {len(changes)} thing{'s' if len(changes) != 1 else ''} here: {', '.join(kinds)}."

    def to_dict(self, start: int, end: int) -> dict:
        changes = merged(self.changes(start, end))
        return {"steps": self.steps, "changes": [c.to_dict() for c in changes], "summary": self.summary(changes)}


def identity(text: str) -> Normalization:
    """The normalization of a model without a normalizer."""
    return Normalization(text, [], [])


def from_offsets(text: str, steps: Sequence[str], normalized: str, n2o: Sequence[int]) -> Normalization:
    """A SentencePiece-style map: ``n2o[i]`` the input offset normalized character ``i`` comes from, plus a final
    entry for where the normalized text ends in the input (:meth:`app.engines.sentencepiece.normalizer.Normalizer.normalize`).
    Normalized character ``i`` spans the input from ``n2o[i]`` to the next larger offset (the final entry after the
    last one)."""
    n = len(normalized)
    final = n2o[n] if len(n2o) > n else len(text)
    spans: list[tuple[int, int]] = []
    j = 0
    for i in range(n):
        a = n2o[i]
        if j <= i:
            j = i + 1
            while j < n and n2o[j] == a:
                j += 1
        b = n2o[j] if j < n else final
        spans.append((a, max(a, b)))
    return Normalization(text, steps, [Stretch(0, len(text), normalized, spans)])


def tokenizer_json_normalization(added, text: str, allow_special: bool) -> Normalization:
    """A tokenizer.json model's normalization: its added tokens cut out first, then each stretch between them
    normalized (:class:`~app.engines.pipeline.added_tokens.AddedVocabulary`)."""
    normalize = added.normalize
    steps = tokenizer_json_steps(normalize.spec) if normalize is not None else []
    stretches = [Stretch(p.start, p.end, p.text, p.spans) for p in added.split(text, allow_special) if p.token is None]
    return Normalization(text, steps, stretches)


# -- the changes of one stretch --------------------------------------------------------------------------------------
def _changes(text: str, stretch: Stretch, lo: int, hi: int) -> list[Change]:
    """The changes of ``stretch`` that touch input ``lo..hi``: its normalized characters grouped by input span,
    with the input no normalized character came from (removed) between the groups."""
    spans, norm = stretch.spans, stretch.text
    n = len(norm)
    i = max(0, bisect_left(stretch.starts(), lo) - 1)
    while i > 0 and spans[i - 1] == spans[i]:
        i -= 1
    covered = spans[i - 1][1] if i > 0 else stretch.start  # the input before this is accounted for
    raw: list[Change] = []
    while i < n:
        a, b = spans[i]
        if a > covered:  # input no normalized character came from
            raw.append(Change(covered, a, text[covered:a], "", (), i))
        if a >= hi and a > lo:
            break
        j = i + 1
        while j < n and spans[j] == (a, b):
            j += 1
        before, after = text[a:b], norm[i:j]
        if before != after:
            raw.append(Change(a, b, before, after, (), i))
        covered = max(covered, b)
        i = j
    if i >= n and covered < stretch.end:
        raw.append(Change(covered, stretch.end, text[covered : stretch.end], "", (), n))
    return [
        Change(c.start, c.end, c.before, c.after, what_changed(c.before, c.after), c.at)
        for c in raw
        if c.start < hi and c.end > lo
    ]


#: A run of changes is joined up to this many input characters.
MERGED_CHARS = 64


def merged(changes: Sequence[Change]) -> list[Change]:
    """Adjacent changes of the same kind as one (``HELLO`` lower-cased, a run of spaces), for showing them: a
    word's changes read as one; runs are cut every :data:`MERGED_CHARS` input characters."""
    out: list[Change] = []
    for c in changes:
        last = out[-1] if out else None
        if (last is not None and last.end == c.start and last.at + len(last.after) == c.at and last.what == c.what
                and c.end - last.start <= MERGED_CHARS):
            out[-1] = Change(last.start, c.end, last.before + c.before, last.after + c.after, c.what, last.at)
        else:
            out.append(c)
    return out


def tally(changes: Sequence[Change]) -> list[tuple[Change, int]]:
    """Identical changes (the same characters becoming the same, for the same reasons) once each, with how many
    times they occur, in the order they first occur: a list to read."""
    counts: dict[tuple, list] = {}
    for c in changes:
        key = (c.before, c.after, c.what)
        if key in counts:
            counts[key][1] += 1
        else:
            counts[key] = [c, 1]
    return [(c, n) for c, n in counts.values()]


# -- naming a change -------------------------------------------------------------------------------------------------
def _strip_accents(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")


def _collapse(s: str) -> str:
    out = []
    for c in s:
        if c in (" ", SPACE) and out and out[-1] == c:
            continue
        out.append(c)
    return "".join(out)


#: What a normalizer may do, in the order the names are tried together (each a function of the input text).
_TRANSFORMS: tuple[tuple[str, object], ...] = (
    ("whitespace → space", lambda s: "".join(" " if c.isspace() and c != " " else c for c in s)),
    ("NFC", lambda s: unicodedata.normalize("NFC", s)),
    ("NFKC", lambda s: unicodedata.normalize("NFKC", s)),
    ("NFD", lambda s: unicodedata.normalize("NFD", s)),
    ("NFKD", lambda s: unicodedata.normalize("NFKD", s)),
    ("accents stripped", _strip_accents),
    ("lowercased", str.lower),
    ("spaced out (a CJK character is a word of its own)", lambda s: f" {s} "),
    ("extra spaces removed", _collapse),
    ("space → ▁", lambda s: s.replace(" ", SPACE)),
    ("dummy prefix ▁", lambda s: SPACE + s),
)


@lru_cache(maxsize=4096)
def what_changed(before: str, after: str) -> tuple[str, ...]:
    """Why ``before`` became ``after``, as the fewest of the usual normalizer steps that turn one into the other
    (tried in the order a normalizer runs them).

    >>> what_changed("É", "e"), what_changed(" ", "▁"), what_changed("ﬁ", "fi"), what_changed("\\x00", "")
    (('accents stripped', 'lowercased'), ('space → ▁',), ('NFKC',), ('removed',))
    """
    if not after:
        return ("extra spaces removed",) if before and all(c in (" ", SPACE) for c in before) else ("removed",)
    if not before:
        return ("dummy prefix ▁",) if after == SPACE else ("inserted",)
    for size in (1, 2, 3):
        for combo in combinations(_TRANSFORMS, size):
            s = before
            for _, fn in combo:
                s = fn(s)
            if s == after:
                return tuple(name for name, _ in combo)
    return ("replaced",)


# -- what each kind of model says its normalizer does ---------------------------------------------------------------
def sentencepiece_steps(spec, normalizer) -> list[str]:
    """A ``.model``'s normalizer in words: its character map, the space handling, the dummy prefix."""
    steps = []
    name = getattr(spec, "name", "") or ""
    if normalizer.charsmap is not None:
        steps.append(f"the character map {name!r}" + (" (NFKC-style)" if "nfkc" in name.lower() else ""))
    if normalizer.remove_extra_whitespaces:
        steps.append("leading, trailing and repeated spaces removed")
    if normalizer.escape_whitespaces:
        steps.append("spaces written ▁")
    if normalizer.add_dummy_prefix:
        steps.append("a ▁ put before the text (the dummy prefix)")
    return steps


def tokenizer_json_steps(spec: dict | None) -> list[str]:
    """A tokenizer.json normalizer in words, one entry per step."""
    if not spec:
        return []
    steps = spec.get("normalizers") if spec.get("type") == "Sequence" else [spec]
    out = []
    for step in steps or []:
        kind = step.get("type")
        if kind == "BertNormalizer":
            lower = step.get("lowercase", True)
            strip = lower if step.get("strip_accents") is None else step.get("strip_accents")
            parts = ["BERT's"]
            if step.get("clean_text", True):
                parts.append("control characters removed, whitespace made spaces")
            if step.get("handle_chinese_chars", True):
                parts.append("CJK characters spaced out")
            if strip:
                parts.append("accents stripped")
            if lower:
                parts.append("lower-cased")
            out.append(": ".join([parts[0], ", ".join(parts[1:])]) if len(parts) > 1 else parts[0])
        elif kind == "Replace":
            pattern = step.get("pattern") if isinstance(step.get("pattern"), dict) else {}
            if "Regex" in pattern:  # an uploaded tokenizer.json may replace what a regex matches
                out.append(f"matches of the regex {pattern['Regex']!r} replaced by {step.get('content', '')!r}")
            else:
                out.append(f"{pattern.get('String', '')!r} replaced by {step.get('content', '')!r}")
        elif kind == "Prepend":
            out.append(f"{step.get('prepend', '')!r} put before the text")
        elif kind == "Lowercase":
            out.append("lower-cased")
        else:
            out.append(str(kind))
    return out
