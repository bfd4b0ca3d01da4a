"""Run a SentencePiece *unigram* model (T5, ALBERT, XLM-R, Jurassic-2...) exactly as the ``sentencepiece`` library does.

A unigram model gives every piece a log-probability (its score). Encoding normalizes the text as the model says
(:mod:`.normalizer`), then picks the segmentation whose pieces' scores sum highest: a Viterbi pass over the
lattice of every vocabulary piece that occurs in the text. It is the library's own "optimized" encoder, step for
step:

- positions are walked left to right; from each, every piece that starts there (found through a table of the
  pieces and of their prefixes, or the compiled twin's character trie, so the walk stops as soon as no piece can
  continue) proposes a path to where it ends; a path replaces the one already there only when its score is
  strictly higher;
- a user-defined piece scores ``0.1 * (its length in bytes - 1)``, which makes it win over normal pieces (whose
  scores are log-probabilities, below 0); ``UNUSED`` pieces never take part;
- a character that no one-character piece covers gets an ``<unk>`` path scored ``min_score - 10``;
- the arithmetic is the library's (``sentencepiece`` 0.2.3): every sum is a 32-bit float, and once the score at
  a position passes ±100,000 the scores from there on are re-based to 0. Near-ties therefore fall the way they
  fall in the library, which is why the text is never cut into chunks scored on their own.

Each position is visited once and each proposes at most one path per piece length, so the cost is the text's
length times the longest piece, never more. Ids are then produced as by :class:`.model.SentencePieceTokenizer`:
an ``<unk>`` becomes its ``<0xNN>`` byte pieces under byte fallback, else one ``<unk>`` per run. Decoding, the
vocabulary facts and ``token_bytes`` are the BPE engine's (the library decodes both kinds the same way). Tokens
are placed from the segments only when asked for; a window is placed from the segment that gives its first token.

:meth:`UnigramTokenizer.lattice` and :meth:`UnigramTokenizer.nbest` show the lattice of a short text and its best
segmentations (the lab's "encoding a word"). This module does not sample (subword regularization) and does not
run BPE, word or char models (:mod:`.model` runs BPE).
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import ChainMap
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, partial
from operator import itemgetter

from ..base import check_text
from ..compiled import twin
from ..result import Token, TokenizeResult
from ..pipeline.pieces import byte_piece, piece_to_byte
from .model import ModelLoadError, SentencePieceTokenizer, damaged, shown
from .normalizer import Normalizer
from .proto import BYTE, NORMAL, UNIGRAM, UNKNOWN, UNUSED, USER_DEFINED, ModelProto

FLT_MAX = 3.4028234663852886e38
UNK_PENALTY = 10.0
RESET_THRESHOLD = 100_000.0  # path scores beyond this are re-based to 0, as in the library
PREFIX_BITS = 1 << 25
PREFIX_MASK = PREFIX_BITS - 1

_compiled = twin("_lattice", "viterbi")  # the Viterbi pass's compiled twin, when built
_compiled_trie = twin("_lattice", "trie")  # the pieces as the trie it walks
MAX_LATTICE_CHARS = 200  # lattice() and nbest() are for a word or a short text



def _f32(x: float) -> float:
    """``x`` rounded to a 32-bit float, as a C ``float`` stores it."""
    return array("f", (x,))[0]


@dataclass(frozen=True, slots=True)
class LatticeNode:
    """One candidate piece in a text's lattice: ``text[start:end]`` is piece ``id`` with ``score``."""

    start: int
    end: int
    id: int
    piece: str
    score: float
    best: bool = False  # on the best (Viterbi) path


class UnigramTokenizer(SentencePieceTokenizer):
    """A SentencePiece unigram model run by Tokenplay's own code, id for id with the ``sentencepiece`` library."""

    def __init__(self, model: ModelProto | bytes, *, name: str = ""):
        if isinstance(model, (bytes, bytearray)):
            model = ModelProto.parse(bytes(model))
        trainer, norm = model.trainer_spec, model.normalizer_spec
        if trainer.model_type != UNIGRAM:
            raise ModelLoadError("this is not a unigram SentencePiece model; load it with SentencePieceTokenizer")
        self.name = name
        self.normalizer_spec = norm
        self.pieces = [p.piece for p in model.pieces]
        self.types = [p.type for p in model.pieces]
        self.scores = array("f", [p.score for p in model.pieces])
        self.byte_fallback = bool(trainer.byte_fallback)
        self.fuse_unk = True
        self.unk_surface = trainer.unk_surface
        self._build_vocabulary()
        self.normalizer = Normalizer(
            add_dummy_prefix=norm.add_dummy_prefix,
            remove_extra_whitespaces=norm.remove_extra_whitespaces,
            escape_whitespaces=norm.escape_whitespaces,
            treat_whitespace_as_suffix=trainer.treat_whitespace_as_suffix,
            charsmap=norm.precompiled_charsmap,
            user_defined=self.user_defined,
        )
        self._build_table()
        self._piece_bytes: dict[int, bytes] = {}  # token_bytes of the pieces placed so far

    def _build_vocabulary(self) -> None:
        """Piece lookups, the ``<unk>`` id and the byte pieces, checked as the library checks them."""
        mergeable: dict[str, int] = {}
        reserved: dict[str, int] = {}
        self._id_byte: dict[int, int] = {}
        for i, (piece, ptype) in enumerate(zip(self.pieces, self.types)):
            if not piece:
                raise damaged(f"piece {i:,} is empty")
            target = mergeable if ptype in (NORMAL, USER_DEFINED, UNUSED) else reserved
            if piece in target:
                raise damaged(f"piece {shown(piece, i)} is defined twice")
            target[piece] = i
            if ptype == BYTE:
                if not self.byte_fallback:
                    raise damaged(f"it has a byte piece, {shown(piece, i)}, but does not cut unknown characters into bytes")
                self._id_byte[i] = piece_to_byte(piece)
                if self._id_byte[i] < 0:
                    raise damaged(f"its byte piece {shown(piece, i)} is none of <0x00> to <0xFF>")
        unk = [i for i, t in enumerate(self.types) if t == UNKNOWN]
        if len(unk) != 1:
            raise damaged("it has no <unk> piece, or more than one (a model has exactly one)")
        self.unk_id = unk[0]
        if self.byte_fallback and len(self._id_byte) != 256:
            raise damaged("it cuts unknown characters into bytes but lacks some of the 256 byte pieces <0x00> to <0xFF>")
        self._piece_ids = mergeable  # the pieces a path may use are among these
        self._lookup = ChainMap(reserved, mergeable)  # reserved pieces win, as in sentencepiece
        self._byte_ids = [self._lookup.get(byte_piece(b), self.unk_id) for b in range(256)]
        self.user_defined = [p for p, t in zip(self.pieces, self.types) if t == USER_DEFINED]
        self.has_unused = UNUSED in self.types

    def _build_table(self) -> None:
        """Each piece's path score (0 for those no path uses), and the compiled trie of the pieces a path may use
        when the twin is built."""
        if any(math.isnan(s) or math.isinf(s) for s in self.scores):
            raise damaged("a piece's score is not a finite number")
        self.min_score = min((s for s, t in zip(self.scores, self.types) if t == NORMAL), default=FLT_MAX)
        self.unk_score = _f32(self.min_score - UNK_PENALTY)
        self._usable = bytearray(len(self.pieces))
        self._path_score = array("f", bytes(4 * len(self.pieces)))
        longest = 1
        for i, (piece, ptype) in enumerate(zip(self.pieces, self.types)):
            if ptype == NORMAL:
                self._path_score[i] = self.scores[i]
            elif ptype == USER_DEFINED:
                self._path_score[i] = 0.1 * (len(piece.encode("utf-8")) - 1)
            else:
                continue
            self._usable[i] = 1
            longest = max(longest, len(piece))
        self._usable = bytes(self._usable)
        self._score_bytes = self._path_score.tobytes()
        self.max_piece_chars = longest
        self._trie = _compiled_trie(self.pieces, self._usable) if _compiled_trie is not None else b""

    @cached_property
    def _prefixes(self) -> bytes:
        """A bitmap of the hashes of the strings that begin a piece a path may use (so the walk from a position
        stops about where the library's trie walk stops). Built on first use: only the Python Viterbi loop,
        :meth:`lattice` and :meth:`nbest` walk it, so a model run by the compiled trie never pays for it."""
        prefixes = bytearray(PREFIX_BITS // 8)
        usable = [p for p, use in zip(self.pieces, self._usable) if use]
        for h in [hash(p[:k]) & PREFIX_MASK for p in usable for k in range(1, len(p))]:
            prefixes[h >> 3] |= 1 << (h & 7)
        # One bit per hash: a string whose bit is set may begin a piece (a false "maybe" only makes the walk look
        # one character further, where it finds nothing); 4 MB instead of a set of every prefix.
        return bytes(prefixes)

    def _pieces_from(self, normalized: str, i: int) -> Iterator[tuple[int, int]]:
        """``(end, id)`` of every piece a path may use that starts at ``i`` (shortest first)."""
        get, usable, prefixes = self._piece_ids.get, self._usable, self._prefixes
        for j in range(i + 1, min(len(normalized), i + self.max_piece_chars) + 1):
            sub = normalized[i:j]
            pid = get(sub)
            if pid is None:
                h = hash(sub) & PREFIX_MASK
                if prefixes[h >> 3] >> (h & 7) & 1:
                    continue
                return
            if usable[pid]:
                yield j, pid

    # -- the Viterbi pass -------------------------------------------------------------------------------------
    def _segments(self, normalized: str) -> list[tuple[int, int, int]]:
        """The best segmentation of a normalized string: ``(start, end, id)`` per piece, ``<unk>`` included (run by
        ``app/engines/sentencepiece/_lattice.c`` when it is built, walking a character trie of the usable pieces that
        finds the pieces the Python loop's table finds; else by :meth:`_segments_python`, step for step the same)."""
        if not normalized:
            return []
        if _compiled is not None:
            return _compiled(normalized, self._trie, self._score_bytes, self.unk_id, self.unk_score)
        return self._segments_python(normalized)

    def _segments_python(self, normalized: str) -> list[tuple[int, int, int]]:
        n = len(normalized)
        best = array("f", bytes(4 * (n + 1)))  # float32 path scores, as the library stores them
        came_from = [-1] * (n + 1)
        ids = [0] * (n + 1)
        one = array("f", (0.0,))  # rounds a sum to float32: float + float in C
        pieces_from, path_score, unk_id, unk_score = self._pieces_from, self._path_score, self.unk_id, self.unk_score
        frontier = 0  # the furthest end any path reaches yet
        for i in range(n):
            here = best[i]
            if here < -RESET_THRESHOLD or here > RESET_THRESHOLD:
                # the library keeps its float32 scores small: every score from here on is taken relative to here
                for k in range(i, frontier + 1):
                    if k == i or came_from[k] >= 0:
                        best[k] -= here
                here = 0.0
            single = False
            for j, pid in pieces_from(normalized, i):
                one[0] = path_score[pid] + here
                if came_from[j] < 0 or one[0] > best[j]:
                    best[j] = one[0]
                    came_from[j] = i
                    ids[j] = pid
                if j == i + 1:
                    single = True
                if j > frontier:
                    frontier = j
            if not single:
                one[0] = unk_score + here
                if came_from[i + 1] < 0 or one[0] > best[i + 1]:
                    best[i + 1] = one[0]
                    came_from[i + 1] = i
                    ids[i + 1] = unk_id
                if i + 1 > frontier:
                    frontier = i + 1
        out: list[tuple[int, int, int]] = []
        end = n
        while end > 0:
            start = came_from[end]
            out.append((start, end, ids[end]))
            end = start
        out.reverse()
        return out

    def _ids_of(self, normalized: str, segments: list[tuple[int, int, int]]) -> list[int]:
        """Ids for the segments: byte fallback for ``<unk>``, or one ``<unk>`` per run of them."""
        unk, byte_ids = self.unk_id, self._byte_ids
        ids = list(map(itemgetter(2), segments))
        if unk not in ids:  # the common case: one id per segment (a whole declaration's in one C loop)
            return ids
        ids = []
        prev_unk = False
        for start, end, pid in segments:
            is_unk = pid == unk
            if is_unk and self.byte_fallback:
                ids.extend(byte_ids[b] for b in normalized[start:end].encode("utf-8"))
            elif not (is_unk and prev_unk):
                ids.append(pid)
            prev_unk = is_unk
        return ids

    # -- the Tokenizer contract ----------------------------------------------------------------------------------
    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids exactly as ``sentencepiece.SentencePieceProcessor.encode(text)`` (control pieces never come from
        text, so ``allow_special`` has no effect)."""
        check_text(text)
        normalized = self.normalizer.normalize_text(text)
        return self._ids_of(normalized, self._segments(normalized))

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        """Tokens placed in the input: a piece covers the input characters it came from; the byte pieces of one
        character share its span; a dummy-prefix ``▁`` alone gets the span of the character it prefixes."""
        check_text(text)
        normalized, n2o = self.normalizer.normalize(text)
        segments = self._segments(normalized)
        ids = self._ids_of(normalized, segments)
        return TokenizeResult(self.name, text, ids, place=partial(self._place_segments, text, normalized, n2o, segments))

    def _place_segments(self, text: str, normalized: str, n2o: list[int], segments, offset: int, limit: int | None) -> list[Token]:
        first, before = self._first_segment(normalized, segments, offset)
        need = None if limit is None else offset - before + limit  # tokens to place from segments[first]
        tokens: list[Token] = []
        unk, pieces, byte_ids, n_text = self.unk_id, self.pieces, self._byte_ids, len(text)
        piece_bytes = self._piece_bytes
        for k in range(first, len(segments)):
            start, end, pid = segments[k]
            a, b = n2o[start], n2o[end]
            if pid != unk:
                if need is not None and len(tokens) >= need:
                    break
                if a == b < n_text:  # the dummy-prefix ▁ alone: it prefixes the next character
                    b = a + 1
                data = piece_bytes.get(pid)
                if data is None:
                    data = piece_bytes[pid] = self.token_bytes(pid)
                tokens.append(Token(pid, data, a, b, pieces[pid]))
            elif self.byte_fallback:
                if need is not None and len(tokens) >= need:
                    break
                for byte in normalized[start:end].encode("utf-8"):
                    bid = byte_ids[byte]
                    tokens.append(Token(bid, bytes((byte,)), a, b, pieces[bid], False, byte < 0x80, True))
            elif tokens and tokens[-1].id == unk and tokens[-1].end == a:  # one <unk> for a run of them
                tokens[-1].end = b
            else:
                if need is not None and len(tokens) >= need:
                    break
                tokens.append(Token(unk, self.token_bytes(unk), a, b, pieces[unk]))
        skip = offset - before
        return tokens[skip:] if need is None else tokens[skip:need]

    def _first_segment(self, normalized: str, segments, offset: int) -> tuple[int, int]:
        """The index of the segment that gives token ``offset`` (or ``len(segments)``), and how many tokens come
        before that segment: counted as :meth:`_ids_of` makes them, without placing them."""
        if offset <= 0:
            return 0, 0
        unk, fallback = self.unk_id, self.byte_fallback
        count, prev_unk = 0, False
        for k, (start, end, pid) in enumerate(segments):
            is_unk = pid == unk
            if not is_unk:
                made = 1
            elif fallback:
                made = len(normalized[start:end].encode("utf-8"))
            else:
                made = 0 if prev_unk else 1
            if count + made > offset:
                return k, count
            count += made
            prev_unk = is_unk
        return len(segments), count

    # -- the lattice of a word -------------------------------------------------------------------------------------
    def lattice(self, text: str) -> tuple[str, list[LatticeNode]]:
        """The normalized ``text`` and every candidate piece in it (``<unk>`` where no one-character piece is), the
        pieces of the best path marked. For short texts (at most :data:`MAX_LATTICE_CHARS` characters)."""
        check_text(text)
        normalized = self.normalizer.normalize_text(text[: MAX_LATTICE_CHARS])
        return normalized, self.normalized_lattice(normalized)

    def nbest(self, text: str, n: int = 5) -> list[tuple[list[int], float]]:
        """The ``n`` best segmentations of a short text as ``(ids before byte fallback, total score)``, best first
        (a k-best Viterbi over :meth:`lattice`)."""
        normalized, nodes = self.lattice(text)
        return self._kbest(normalized, nodes, n)

    # -- a stretch of normalized text (the explain view) -------------------------------------------------------------
    def segments(self, normalized: str) -> list[tuple[int, int, int]]:
        """The best segmentation of an already normalized string, ``(start, end, id)`` per piece (``<unk>``
        included, before byte fallback): what the encoder does with it."""
        return self._segments(normalized)

    def path_score(self, piece_id: int) -> float:
        """The score a piece adds to a path (a user-defined piece's ``0.1 * (bytes - 1)``; ``<unk>``'s penalty)."""
        return self.unk_score if piece_id == self.unk_id else self._path_score[piece_id]

    def reach(self, normalized: str, start: int) -> int:
        """Where the longest piece a path may use that starts at ``start`` ends (``start + 1`` when none does:
        an ``<unk>`` covers one character)."""
        end = start + 1
        for j, _ in self._pieces_from(normalized, start):
            end = j
        return end

    def normalized_lattice(self, normalized: str) -> list[LatticeNode]:
        """Every candidate piece of an already normalized string (``<unk>`` where no one-character piece is), the
        pieces of its best path marked. The caller keeps the string short."""
        on_path = set(self._segments(normalized))
        nodes: list[LatticeNode] = []
        for i in range(len(normalized)):
            single = False
            for j, pid in self._pieces_from(normalized, i):
                single = single or j == i + 1
                nodes.append(LatticeNode(i, j, pid, normalized[i:j], self._path_score[pid], (i, j, pid) in on_path))
            if not single:
                unk_on_path = (i, i + 1, self.unk_id) in on_path
                nodes.append(LatticeNode(i, i + 1, self.unk_id, normalized[i], self.unk_score, unk_on_path))
        return nodes

    def normalized_nbest(self, normalized: str, n: int = 5) -> list[tuple[list[LatticeNode], float]]:
        """The ``n`` best segmentations of an already normalized string as ``(its lattice nodes, total score)``,
        best first (a k-best Viterbi; equal totals in the order their paths were found)."""
        nodes = self.normalized_lattice(normalized)
        return [([nodes[k] for k in path], score) for path, score in self._kbest(normalized, nodes, n, by_node=True)]

    @staticmethod
    def _kbest(normalized: str, nodes: list[LatticeNode], n: int, by_node: bool = False) -> list:
        ending: dict[int, list[int]] = {}
        for k, node in enumerate(nodes):
            ending.setdefault(node.end, []).append(k)
        kbest: list[list[tuple[float, tuple[int, ...]]]] = [[(0.0, ())]] + [[] for _ in normalized]
        for end in range(1, len(normalized) + 1):
            candidates = [
                (score + nodes[k].score, path + (k if by_node else nodes[k].id,))
                for k in ending.get(end, [])
                for score, path in kbest[nodes[k].start]
            ]
            kbest[end] = heapq.nlargest(n, candidates, key=lambda c: c[0])
        if not normalized:
            return []
        return [(list(path), score) for score, path in kbest[len(normalized)]]


def sentencepiece_tokenizer(data: bytes | ModelProto, *, name: str = "") -> SentencePieceTokenizer:
    """The engine for a ``.model`` file: :class:`UnigramTokenizer` for unigram models, else the BPE engine
    (which refuses word and char models)."""
    model = ModelProto.parse(bytes(data)) if isinstance(data, (bytes, bytearray)) else data
    if model.trainer_spec.model_type == UNIGRAM:
        return UnigramTokenizer(model, name=name)
    return SentencePieceTokenizer(model, name=name)

