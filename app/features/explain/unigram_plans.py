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

import threading
from bisect import bisect_right
from collections.abc import Iterator
from itertools import accumulate
from dataclasses import dataclass, field, replace

from app.engines.pipeline.pieces import byte_piece
from app.engines.sentencepiece.proto import USER_DEFINED
from app.engines.sentencepiece.unigram import LatticeNode, UnigramTokenizer

from .normalization import Normalization, from_offsets, sentencepiece_steps
from .split_rules import Rule
from .units import Detail, Plan, Unit, window_around

#: The longest span whose lattice is shown (normalized characters); a longer stretch shows a window of whole tokens.
SPAN_CHARS = 40
#: The segmentations listed, best first.
NBEST = 5
#: How far from a token its stretch's edges are looked for (normalized characters, each side); a stretch longer
#: than that (1 MB of one letter) is shown as the part looked at, and says so.
LOCATE_CHARS = 4096
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
        self._local = threading.local()  # the last text segmented, per thread (a plan serves every request)

    # -- units: the stretches no piece spans the edges of ----------------------------------------------------------
    def units(self, text: str, allow_special: bool) -> Iterator[Unit]:
        seg = self._segmented(text)
        first, start = 0, 0
        for k in range(len(seg.segments)):
            if seg.is_cut(k + 1):
                yield seg.unit(start, k + 1, first)
                first = seg.firsts[k + 1]
                start = k + 1

    def locate(self, text: str, allow_special: bool, *, index: int | None = None, offset: int | None = None) -> Unit | None:
        """The stretch around a token found from the token itself: its edges are the nearest cuts on either side,
        looked for among the segment edges near it (a position is a cut when no piece starting up to the longest
        piece's length before it ends after it), so a token at the end of a long text costs as little as one at
        its start."""
        seg = self._segmented(text)
        if not seg.segments:
            return None
        if index is not None:
            k = bisect_right(seg.firsts, index) - 1
            while k > 0 and seg.firsts[k] == seg.firsts[k - 1] and seg.firsts[k] > index:
                k -= 1
        else:
            k = min(bisect_right(seg.ends, offset), len(seg.segments) - 1)
        k = min(max(k, 0), len(seg.segments) - 1)
        segments = seg.segments
        lo, floor = k, segments[k][0] - LOCATE_CHARS
        while not seg.is_cut(lo) and segments[lo][0] > floor:
            lo -= 1
        hi, ceiling = k + 1, segments[k][1] + LOCATE_CHARS
        while not seg.is_cut(hi) and segments[hi - 1][1] < ceiling:
            hi += 1
        return seg.unit(lo, hi, seg.firsts[lo], open_ends=(not seg.is_cut(lo), not seg.is_cut(hi)))

    def _segmented(self, text: str) -> _Segmented:
        """The text normalized and segmented by the encoder (the last text this thread asked for is kept:
        explaining several tokens of one text segments it once; its memos are never shared between threads)."""
        last = getattr(self._local, "last", None)
        if last is not None and last.text is text:
            return last
        tok = self.tokenizer
        normalized, n2o = tok.normalizer.normalize(text)
        found = self._local.last = _Segmented(tok, text, normalized, n2o, tok.segments(normalized))
        return found

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
        base, n2o, open_ends = unit.context  # where the unit starts in the normalized text, the map to the input
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
            size = f"more than {len(unit.text):,}" if any(open_ends) else f"{len(unit.text):,}"
            notes.append(
                f"This stretch is {size} characters long; the lattice shows characters {a}–{b} of it, the whole "
                "tokens around this one. The text's best path passes through their edges, so between them it is a "
                "best path of this window too."
            )
            if any(open_ends):
                notes.append(
                    f"No position that no piece spans was found within {LOCATE_CHARS:,} characters of this token on "
                    "one side or both, so the stretch shown is the part of it looked at around this token."
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


class _Segmented:
    """A text as the unigram encoder segments it: the normalized text, the map back to the input, the segments
    ``(start, end, id)``, the index of each segment's first token (``firsts``, one more entry for the end) and
    the input offset each segment ends at (``ends``). :meth:`is_cut` says whether the edge before segment ``k``
    is a position no piece spans (reaches are looked up once each)."""

    def __init__(self, tok: UnigramTokenizer, text: str, normalized: str, n2o: list[int], segments):
        self.tok, self.text, self.normalized, self.n2o, self.segments = tok, text, normalized, n2o, segments
        unk, fallback = tok.unk_id, tok.byte_fallback
        counts, prev_unk = [], False
        for s, e, pid in segments:  # the ids each segment becomes, as the encoder makes them
            is_unk = pid == unk
            counts.append(len(normalized[s:e].encode("utf-8")) if is_unk and fallback else 0 if is_unk and prev_unk else 1)
            prev_unk = is_unk
        self.counts = counts
        self.firsts = list(accumulate(counts, initial=0))
        self.ends = [n2o[e] for _, e, _ in segments]
        self._reach: dict[int, int] = {}
        self._runmax: list[int] = []  # runmax[i]: the furthest any piece starting at or before i reaches

    def reach(self, i: int) -> int:
        found = self._reach.get(i)
        if found is None:
            found = self.tok.reach(self.normalized, i)
            if len(self._reach) < 100_000:  # a window's reaches are kept; a walk from the start needs none twice
                self._reach[i] = found
        return found

    def is_cut(self, k: int) -> bool:
        """Whether the edge before segment ``k`` (``0`` and ``len(segments)``: the text's ends) is a cut: no piece
        starting before it ends after it, and it does not part two unknown pieces the encoder writes as one."""
        segments = self.segments
        if k <= 0 or k >= len(segments):
            return True
        p = segments[k][0]
        tok = self.tok
        if not tok.byte_fallback and segments[k - 1][2] == tok.unk_id == segments[k][2]:
            return False
        longest = tok.max_piece_chars
        if p <= len(self._runmax) + 4 * longest:  # in order: the furthest reach of every position before p
            runmax = self._runmax
            top = runmax[-1] if runmax else 0
            for i in range(len(runmax), p):
                top = max(top, self.reach(i))
                runmax.append(top)
            return runmax[p - 1] <= p
        # the nearest positions first: where a piece crosses p, one of them usually shows it at once
        return all(self.reach(i) <= p for i in range(p - 1, max(0, p - longest + 1) - 1, -1))

    def unit(self, lo: int, hi: int, first: int, open_ends: tuple[bool, bool] = (False, False)) -> Unit:
        """Segments ``lo..hi`` as a unit whose first token is ``first`` (``open_ends``: the stretch goes on past
        that edge, which was not looked for further)."""
        tok, normalized = self.tok, self.normalized
        unk = tok.unk_id
        parts, ids, per_part = [], [], []
        for (s, e, pid), n in zip(self.segments[lo:hi], self.counts[lo:hi]):
            parts.append((s, e, pid, normalized[s:e] if pid == unk else tok.pieces[pid]))
            per_part.append(n)
            if pid == unk and tok.byte_fallback:
                ids.extend(tok.piece_to_id(byte_piece(b)) for b in normalized[s:e].encode("utf-8"))
            elif n:
                ids.append(pid)
        start, end = self.segments[lo][0], self.segments[hi - 1][1]
        return Unit(self.n2o[start], self.n2o[end], normalized[start:end], first, ids, parts=parts,
                    per_part=per_part, context=(start, self.n2o, open_ends))
