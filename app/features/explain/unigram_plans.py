"""Explaining Unigram (Jurassic-2, uploaded unigram ``.model`` files, the lab's unigram runs): the lattice of the
span around a token, its best path, and the best segmentations after it.

A unigram model gives every piece a score (its log-probability). The encoder normalizes the text and keeps the
segmentation whose pieces' scores sum highest: a Viterbi pass over the lattice of every vocabulary piece found in
the text (:mod:`app.engines.sentencepiece.unigram`). There is no pre-tokenizer, so the units here are the
stretches the lattice itself cuts the text into: a position that no piece of the vocabulary spans in this text
is on every path, so the stretches between such positions are segmented independently. A long stretch is shown
as a window of whole tokens around the explained one: the best path of the text passes through the window's
edges, so between them it is a best path of the window too (the lattice's optimal substructure).

``best`` is the encoder's segmentation of the span, as the text's tokens show it. ``nbest`` lists the best
segmentations of the span (a k-best Viterbi over the same lattice, as ``sentencepiece``'s n-best encoding gives
them), the encoder's one first: where several tie at the top score the encoder keeps the one its 32-bit running
sums found first, which depends on the text before the span, and a note says so. Pieces are written as the
model writes them (``▁`` for a space); an ``<unk>`` node is written as the character it covers (as
``sentencepiece`` writes it), with the byte pieces it becomes under byte fallback.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from app.engines.sentencepiece.model import byte_piece
from app.engines.sentencepiece.proto import USER_DEFINED
from app.engines.sentencepiece.unigram import LatticeNode, UnigramTokenizer

from .normalization import Normalization, from_offsets, sentencepiece_steps
from .split_rules import Rule
from .units import Detail, Plan, Unit, window_around

#: The longest span whose lattice is shown (normalized characters); a longer stretch shows a window of whole tokens.
SPAN_CHARS = 40
#: The segmentations listed, best first.
NBEST = 5
#: Totals closer than this are ties for the 32-bit sums the encoder compares (a text's running sum reaches 1e5).
TIE = 0.02


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece on a path: ``normalized[start:end]`` (offsets into the span) is piece ``id`` with ``score``."""

    piece: str
    start: int
    end: int
    score: float
    id: int
    unknown: bool = False
    byte_pieces: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        out = {"piece": self.piece, "start": self.start, "end": self.end, "score": self.score, "id": self.id}
        if self.unknown:
            out["unknown"] = True
            out["byte_pieces"] = list(self.byte_pieces)
        return out


@dataclass(slots=True)
class UnigramDetail(Detail):
    """The span's lattice, the encoder's path through it (``best``), and the best segmentations (``nbest``)."""

    normalized: str
    best: list[Segment]
    best_score: float
    nbest: list[tuple[list[Segment], float]]
    lattice: list[LatticeNode]
    token_piece: int
    notes: list[str] = field(default_factory=list)
    kind: str = "unigram"
    window: tuple[int, int] | None = None
    span: tuple[int, int] = (0, 0)  # the span's characters in the input
    tokens: tuple[int, int] = (0, 0)  # the indexes of its tokens, [first, end)

    def to_dict(self) -> dict:
        return {
            "span": {"start": self.span[0], "end": self.span[1], "tokens": list(self.tokens)},
            "best": [s.to_dict() for s in self.best],
            "best_score": self.best_score,
            "nbest": [{"pieces": [s.piece for s in path], "score": score} for path, score in self.nbest],
            "lattice": [
                {"piece": n.piece, "start": n.start, "end": n.end, "score": n.score, "best": n.best}
                for n in self.lattice
            ],
            "token_piece": self.token_piece,
        }

    def shifted(self, chars: int, tokens: int) -> UnigramDetail:
        return replace(self, span=(self.span[0] + chars, self.span[1] + chars),
                       tokens=(self.tokens[0] + tokens, self.tokens[1] + tokens))


class UnigramPlan(Plan):
    """A :class:`~app.engines.sentencepiece.unigram.UnigramTokenizer`: Jurassic-2, uploads, lab runs."""

    algorithm = "unigram"
    symbol_name = "characters"
    special_off = "SentencePiece never reads control pieces such as <s> from text"

    def __init__(self, tokenizer: UnigramTokenizer):
        super().__init__(tokenizer, None)

    # -- units: the stretches no piece spans the edges of ----------------------------------------------------------
    def units(self, text: str, allow_special: bool) -> Iterator[Unit]:
        tok = self.tokenizer
        normalized, n2o = tok.normalizer.normalize(text)
        return self._units(normalized, n2o, tok.segments(normalized))

    def _units(self, normalized: str, n2o: list[int], segments) -> Iterator[Unit]:
        tok = self.tokenizer
        unk, fallback = tok.unk_id, tok.byte_fallback
        first, start, reach, done = 0, 0, 0, 0  # done: the positions whose pieces were looked at
        ids: list[int] = []
        parts: list[tuple[int, int, int]] = []
        per_part: list[int] = []
        prev_unk = False
        for k, (s, e, pid) in enumerate(segments):
            for i in range(done, e):
                reach = max(reach, tok.reach(normalized, i))
            done = e
            is_unk = pid == unk
            if is_unk and fallback:
                got = [tok.piece_to_id(byte_piece(b)) for b in normalized[s:e].encode("utf-8")]
            else:
                got = [] if is_unk and prev_unk else [pid]
            prev_unk = is_unk
            parts.append((s, e, pid, normalized[s:e] if is_unk else tok.pieces[pid]))
            per_part.append(len(got))
            ids.extend(got)
            fused_next = is_unk and not fallback and k + 1 < len(segments) and segments[k + 1][2] == unk
            if reach <= e and not fused_next:
                yield Unit(n2o[start], n2o[e], normalized[start:e], first, ids, parts=parts, per_part=per_part,
                           context=(start, n2o))
                first += len(ids)
                start, ids, parts, per_part = e, [], [], []

    def rule(self, unit: Unit) -> Rule:
        return Rule(
            "a stretch no piece of the vocabulary spans the edges of", None,
            "unigram: every segmentation of the text passes through its edges",
        )

    def data(self, part) -> bytes:
        return part[3].encode("utf-8")

    def size(self, part) -> int:
        return part[1] - part[0]

    def normalization(self, text: str, allow_special: bool) -> Normalization:
        tok = self.tokenizer
        steps = sentencepiece_steps(tok.normalizer_spec, tok.normalizer)
        return from_offsets(text, steps, *tok.normalizer.normalize(text))

    # -- one token -------------------------------------------------------------------------------------------------
    def detail(self, text: str, unit: Unit, part: int, sub: int) -> UnigramDetail:
        tok = self.tokenizer
        base, n2o = unit.context  # where the unit starts in the normalized text, and the map back to the input
        lo, hi = 0, len(unit.parts)
        if len(unit.text) > SPAN_CHARS:
            lo, hi = window_around([p[1] - p[0] for p in unit.parts], part, SPAN_CHARS)
        a, b = unit.parts[lo][0] - base, unit.parts[hi - 1][1] - base
        span = unit.text[a:b]
        best = [self._segment(span, s - base - a, e - base - a, pid) for s, e, pid, _ in unit.parts[lo:hi]]
        on_best = {(x.start, x.end, x.id) for x in best}
        lattice = [_marked(n, (n.start, n.end, n.id) in on_best) for n in tok.normalized_lattice(span)]
        best_score = sum(x.score for x in best)
        found = [([self._segment(span, n.start, n.end, n.id) for n in path], score)
                 for path, score in tok.normalized_nbest(span, NBEST)]
        nbest, notes = self._ranked(span, best, best_score, found)
        token = best[part - lo]
        notes[:0] = self._token_notes(token, sub)
        if hi - lo < len(unit.parts):
            notes.append(
                f"This stretch is {len(unit.text)} characters long; the lattice shows characters {a}–{b} of it, the "
                "whole tokens around this one. The text's best path passes through their edges, so between them it "
                "is a best path of this window too."
            )
        else:
            notes.append(
                "No piece of the vocabulary spans the edges of this stretch in the text, so every segmentation of "
                "the text passes through them: the stretch is segmented on its own."
            )
        if "\u2581" in span:
            notes.append("Spaces are written ▁ (U+2581) and are part of pieces like any other character.")
        window = (a, b) if hi - lo < len(unit.parts) else None
        counts = unit.per_part or [1] * len(unit.parts)
        first = unit.first + sum(counts[:lo])
        return UnigramDetail(
            span, best, best_score, nbest, lattice, part - lo, notes, window=window,
            span=(n2o[unit.parts[lo][0]], n2o[unit.parts[hi - 1][1]]), tokens=(first, first + sum(counts[lo:hi])),
        )

    def _segment(self, span: str, start: int, end: int, pid: int) -> Segment:
        tok = self.tokenizer
        if pid == tok.unk_id:
            surface = span[start:end]
            pieces = tuple(byte_piece(b) for b in surface.encode("utf-8")) if tok.byte_fallback else ()
            return Segment(surface, start, end, tok.path_score(pid), pid, True, pieces)
        return Segment(tok.pieces[pid], start, end, tok.path_score(pid), pid)

    def _ranked(self, span: str, best: list[Segment], best_score: float, found) -> tuple[list, list[str]]:
        """The n-best list with the encoder's path first, and what to say when it ties or near-ties another."""
        key = [(x.start, x.end, x.id) for x in best]
        paths = [[(x.start, x.end, x.id) for x in path] for path, _ in found]
        notes = [
            "A unigram model gives every piece a score (its log-probability) and keeps the segmentation whose "
            f"scores sum highest. The lattice shows every piece of the vocabulary found here; the best path "
            f"({' + '.join(x.piece for x in best)}) sums to {best_score:.3f}."
        ]
        if key in paths:
            at = paths.index(key)
            entry = found.pop(at)
        else:
            at, entry = -1, (best, best_score)
        top = max([best_score] + [score for _, score in found])
        tied = [path for path, score in found if abs(score - best_score) <= TIE]
        if at != 0 or tied:
            alone = self.tokenizer.segments(span)
            others = "; ".join(" + ".join(x.piece for x in path) for path in tied[:2])
            notes.append(
                f"{len(tied) + 1} segmentations score the same, or within the rounding of 32-bit sums "
                f"({top:.3f}){': ' + others if others else ''}. Which one the encoder keeps depends on its running "
                "sums from the start of the text, so this span on its own "
                + ("is cut the same way." if [(s, e, p) for s, e, p in alone] == key else "is cut another way.")
            )
        nbest = [entry, *found][:NBEST]
        return nbest, notes

    def _token_notes(self, token: Segment, sub: int) -> list[str]:
        tok = self.tokenizer
        if token.unknown:
            if tok.byte_fallback:
                return [
                    f"{token.piece!r} is no piece of the vocabulary: the lattice has an unknown node for it (score "
                    f"{token.score:.3f}, ten below the lowest piece), and byte fallback writes it as its UTF-8 bytes "
                    f"{' '.join(token.byte_pieces)}; this is byte {sub + 1} of {len(token.byte_pieces)}."
                ]
            return [f"{token.piece!r} is no piece of the vocabulary: it becomes <unk> (a run of unknown characters "
                    "is one <unk>)."]
        if tok.types[token.id] == USER_DEFINED:
            return [
                f"{token.piece!r} is a user-defined piece: it scores 0.1 × (its UTF-8 bytes − 1) = {token.score:.1f}, "
                "above every normal piece, so it is always cut out whole."
            ]
        return []


def _marked(node: LatticeNode, best: bool) -> LatticeNode:
    return node if node.best == best else LatticeNode(node.start, node.end, node.id, node.piece, node.score, best)
