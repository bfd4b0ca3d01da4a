"""Encode text with BPE ranks exactly as tiktoken does, or with a merges list exactly as Hugging Face does.

The ranks are ``bytes -> id`` (the ``.tiktoken`` data, a trained vocabulary, or a tokenizer.json vocabulary in
bytes). Two merge rules share all the code below:

- tiktoken's (``pairs`` is ``None``): a pre-token that is itself a token becomes that token; otherwise its bytes
  are merged by repeatedly joining the adjacent pair whose joined bytes have the lowest rank, leftmost first,
  until no joined pair is a token;
- Hugging Face's BPE (``pairs`` maps ``(left bytes, right bytes)`` to the rank of that merge in the file's
  ``merges`` list): only listed pairs merge, the lowest-ranked pair first (leftmost on ties), and a pre-token is
  taken whole only when the model asks for it (``whole``: tokenizer.json's ``ignore_merges``). The two rules
  differ where a token can be split in two ways (tiktoken ranks both splits alike), so a tokenizer.json model
  is always run with its own pairs.

Short pre-tokens use a list scan; long ones (a 100 KB run of one letter, Japanese without spaces) use a heap
over a linked list, so they cost O(n log n), never O(n^2). Pre-tokens repeat a lot, so results are cached per
pre-token.

Pre-tokens of Japanese or Chinese are whole clauses (no spaces to split on), so they rarely repeat. They are
encoded as independent *segments* (single characters, joined where needed) whose results do repeat and are
cached: see :func:`merge_segmented` for why the joined result is exactly the merge of the whole pre-token (the
argument holds for either rule).

This module does not know about special-token policy beyond splitting on the allowed ones; guarding
(refusing special-token text) is the tokenizer's job (:mod:`app.engines.bpe.model`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from itertools import chain
from operator import add, itemgetter
from typing import NamedTuple

from ..errors import TokenplayError
from ..merging import merge, merge_heap
from .patterns import Splitter, special_splitter, split_specials

#: Pre-tokens longer than this many characters are not cached.
CACHE_PIECE_CHARS = 256
CACHE_LIMIT = 65_536  # entries per tokenizer (~10 MB); cleared when full
#: Pre-tokens with more UTF-8 bytes per character than this are encoded from segments (:func:`merge_segmented`).
WIDE_BYTES_PER_CHAR = 2.5


#: Hugging Face merges: ``(left bytes, right bytes) -> rank in the merges list``.
PairRanks = Mapping[tuple[bytes, bytes], int]


def pair(left: bytes, right: bytes) -> tuple[bytes, bytes]:
    """The key of a pair in :data:`PairRanks`."""
    return left, right


def merge_piece(piece: bytes, ranks: Mapping[bytes, int], pairs: PairRanks | None = None) -> list[int]:
    """Ids for one pre-token merged by rank (the caller has checked that it is not a token as a whole).

    >>> merge_piece(b"aaa", {b"a": 0, b"aa": 1})
    [1, 0]
    >>> merge_piece(b"abc", {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"bc": 4}, {(b"b", b"c"): 0})
    [0, 4]
    """
    parts = list(map(_BYTES.__getitem__, piece))
    merged = merge(parts, ranks.get) if pairs is None else merge(parts, pairs.get, key=pair)
    return list(map(ranks.__getitem__, merged))


_BYTES = [bytes([b]) for b in range(256)]


def merge_traced(piece: bytes, ranks: Mapping[bytes, int], pairs: PairRanks | None = None) -> MergedRun:
    """:func:`merge_piece`, also recording every part that was ever first or last: a :class:`MergedRun`.

    >>> merge_traced(b"abc", {b"a": 0, b"b": 1, b"c": 2, b"bc": 3})
    MergedRun(ids=(0, 3), firsts=(b'a',), lasts=(b'c', b'bc'))
    """
    firsts: list[bytes] = []
    lasts: list[bytes] = []
    bytes_of = list(map(_BYTES.__getitem__, piece))
    if pairs is None:
        parts = merge_heap(bytes_of, ranks.get, firsts=firsts, lasts=lasts)
    else:
        parts = merge_heap(bytes_of, pairs.get, key=pair, firsts=firsts, lasts=lasts)
    return MergedRun(tuple(map(ranks.__getitem__, parts)), tuple(firsts), tuple(lasts))


class MergedRun(NamedTuple):
    """The merges of one stretch of text: its ids, and every part that was at some time its first or last."""

    ids: tuple[int, ...]
    firsts: tuple[bytes, ...]
    lasts: tuple[bytes, ...]


#: A segment longer than this many characters gives up: the whole pre-token is merged at once instead.
SEGMENT_CHARS = 24


class _Segments(dict):
    """Segment text -> :class:`MergedRun`; :meth:`independent` says whether two segments never merge across."""

    def __init__(self, ranks: Mapping[bytes, int], pairs: PairRanks | None = None):
        super().__init__()
        self.ranks = ranks
        self.merges = pairs
        self.apart = _Apart(self)  # (left, right) -> independent(left, right), for C-level look-ups
        self.pairs = _CharPairs(self)  # two characters -> the first one's ids if the two are independent, else ()
        self.settled: set[str] = set()  # dependent runs with their free neighbours that needed no growing

    def __missing__(self, text: str) -> MergedRun:
        if len(self) >= CACHE_LIMIT:
            self.clear()
            self.apart.clear()
            self.pairs.clear()
            self.settled.clear()
        seg = self[text] = merge_traced(text.encode("utf-8"), self.ranks, self.merges)
        return seg

    def independent(self, left: str, right: str) -> bool:
        return self.apart[(left, right)]


class _Apart(dict):
    """``(left, right)`` -> no recorded last part of ``left`` and recorded first part of ``right`` merge (their
    joined bytes are no token, or with Hugging Face merges, the pair is not listed): the test of
    :func:`merge_segmented`."""

    def __init__(self, segments: _Segments):
        super().__init__()
        self.segments = segments

    def __missing__(self, key: tuple[str, str]) -> bool:
        if len(self) >= CACHE_LIMIT:
            self.clear()
        segments = self.segments
        rights = segments[key[1]].firsts
        lefts = segments[key[0]].lasts
        merges = segments.merges
        if merges is None:
            get = segments.ranks.get
            found = self[key] = not any(get(a + b) is not None for a in lefts for b in rights)
        else:
            found = self[key] = not any((a, b) in merges for a in lefts for b in rights)
        return found


class _CharPairs(dict):
    """Two characters (one string) -> the first one's ids when the two are independent, else ``()``."""

    def __init__(self, segments: _Segments):
        super().__init__()
        self.segments = segments

    def __missing__(self, pair: str) -> tuple[int, ...]:
        if len(self) >= CACHE_LIMIT:
            self.clear()
        first = pair[0]
        found = self[pair] = self.segments[first].ids if self.segments.independent(first, pair[1]) else ()
        return found


#: Japanese cut into runs of one script (a kanji compound, a kana word): far fewer segments than characters,
#: and they repeat. Kanji runs are capped so that text without kana (Chinese) never makes long segments.
_UNITS = re.compile(r"[\u3041-\u309f]+|[\u30a0-\u30ff]+|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{1,8}|.", re.S)
_KANA = re.compile(r"[\u3041-\u30ff]")


def merge_units(piece: str, segments: _Segments) -> tuple[int, ...] | None:
    """The merge of a Japanese ``piece`` from runs of one script, or ``None`` when two neighbouring runs fail
    the independence test of :func:`merge_segmented` (the same proof holds for any cut into segments). Every
    step is a C-level loop: a regex, then ``map`` over the runs and their neighbour pairs."""
    if len(piece) > CACHE_PIECE_CHARS:
        return None  # a long run would become one long cached segment; the character path handles it
    units = _UNITS.findall(piece)
    if len(units) > 1 and not all(map(segments.apart.__getitem__, zip(units, units[1:]))):
        return None
    return tuple(chain.from_iterable(map(_SEG_IDS, map(segments.__getitem__, units))))


_SEG_IDS = itemgetter(0)


def merge_segmented(piece: str, segments: _Segments) -> tuple[int, ...] | None:
    """The merge of ``piece`` built from cached segments, or ``None`` when a segment grows too long.

    Why it is exact: follow the merge of the whole piece cut into segments. As long as no merge crosses a cut,
    each segment sees exactly its own merges in its own order (the lowest, leftmost pair overall is also the
    lowest, leftmost inside its segment), so the part at either edge of a segment is always one of the parts
    recorded in ``firsts`` / ``lasts``. A merge across a cut would join a recorded last part of the left segment
    with a recorded first part of the right one; when none of those joins is a token, no merge ever crosses
    the cut, and the piece's ids are the segments' ids in a row.

    Segments start as single characters, except that neighbours which fail the test start joined. A joined
    segment is then tested against its neighbours and grows until both pass. Only the joined segments cost
    Python steps; the free characters are handled by C loops (``map``), which is what makes this fast.
    """
    # each character's ids where it is independent of the next character, else ()
    ids = list(map(segments.pairs.__getitem__, map(add, piece, piece[1:])))
    ids.append(segments[piece[-1]].ids)
    if all(ids):
        return tuple(chain.from_iterable(ids))
    # joined segments as [start, end) character ranges: first each run of dependent neighbours...
    runs: list[tuple[int, int]] = []
    find, last = ids.index, len(ids) - 1
    i = find(())  # () compares fast with tuples (None would not)
    while True:
        j = i + 1
        while not ids[j]:
            j += 1
        runs.append((i, j + 1))
        try:
            i = find((), j + 1, last)
        except ValueError:
            break
    # ...then grown until independent of both neighbours (a neighbour run is taken in whole)
    independent, settled = segments.independent, segments.settled
    done: list[tuple[int, int]] = []
    n = len(piece)
    for k, (a, b) in enumerate(runs):
        if b - a > SEGMENT_CHARS:
            return None
        stop = runs[k + 1][0] if k + 1 < len(runs) else n  # the next run checks this one from its side
        alone = (not done or done[-1][1] != a) and (b < stop or b == n)  # its neighbours are free characters
        if alone:
            window = piece[max(a - 1, 0) : b + 1]  # the run and its neighbours: what the checks below depend on
            if window in settled:
                done.append((a, b))
                continue
        grown = False
        while True:
            seg = piece[a:b]
            if done and done[-1][1] == a:
                left_start = done[-1][0]
            else:
                left_start = a - 1
            if left_start >= 0 and not independent(piece[left_start:a], seg):
                if done and done[-1][1] == a:
                    done.pop()
                a = left_start
            elif b < stop and not independent(seg, piece[b]):
                b += 1
            else:
                break
            grown = True
            if b - a > SEGMENT_CHARS:
                return None
        if alone and not grown:
            if len(settled) >= CACHE_LIMIT:
                settled.clear()
            settled.add(window)
        done.append((a, b))
    seg_of = segments.__getitem__
    for a, b in reversed(done):
        ids[a:b] = [seg_of(piece[a:b]).ids]
    return tuple(chain.from_iterable(ids))


class _PieceCache(dict):
    """Pre-token text -> ids; a missing entry is computed (and kept unless the piece is long)."""

    def __init__(self, ranks: Mapping[bytes, int], pairs: PairRanks | None = None, whole: bool = True):
        super().__init__()
        self.ranks = ranks
        self.pairs = pairs
        self.whole = whole
        self.segments = _Segments(ranks, pairs)

    def __missing__(self, piece: str) -> tuple[int, ...]:
        data = piece.encode("utf-8")
        r = self.ranks.get(data) if self.whole else None
        if r is not None:
            ids: tuple[int, ...] | None = (r,)
        else:
            ids = None
            if len(data) > WIDE_BYTES_PER_CHAR * len(piece):  # mostly CJK or emoji: characters rarely merge
                if _KANA.search(piece) is not None:
                    ids = merge_units(piece, self.segments)
                if ids is None:
                    ids = merge_segmented(piece, self.segments)
            if ids is None:
                ids = tuple(merge_piece(data, self.ranks, self.pairs))
        if len(piece) <= CACHE_PIECE_CHARS:
            if len(self) >= CACHE_LIMIT:
                self.clear()
            self[piece] = ids
        return ids


class RankEncoder:
    """Ranks + split pattern + special tokens: ``encode_ordinary`` and ``encode`` as tiktoken has them.

    With ``pairs`` (and ``whole``), pre-tokens are merged by Hugging Face's rule instead (see the module docstring);
    :meth:`encode_pretokens` then encodes pre-tokens cut by a tokenizer.json pipeline.
    """

    def __init__(
        self,
        ranks: Mapping[bytes, int],
        pattern: str | None,
        special_tokens: Mapping[str, int] = {},
        *,
        pairs: PairRanks | None = None,
        whole: bool = True,
    ):
        missing = [b for b in range(256) if bytes([b]) not in ranks]
        if missing:
            raise TokenplayError(f"ranks lack single-byte tokens (e.g. byte {missing[0]}); every byte needs a rank")
        self.ranks = ranks
        self.pairs = pairs  # the merge rule, kept for the explain view (app.engines.explain) to retrace merges
        self.whole = whole
        self.pattern = pattern
        self.special_tokens = dict(special_tokens)
        self.split = Splitter(pattern)
        self._cache = _PieceCache(ranks, pairs, whole)
        self._special_res: dict[frozenset, object] = {}

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids with special-token text treated as plain text (tiktoken's ``encode_ordinary``)."""
        return self.encode_pretokens(self.split(text))

    def encode_pretokens(self, pieces: Iterable[str]) -> list[int]:
        """Ids for text already cut into pre-tokens."""
        return list(chain.from_iterable(map(self._cache.__getitem__, pieces)))

    def special_regex(self, allowed: Collection[str]):
        key = frozenset(allowed)
        found = self._special_res.get(key)
        if found is None:
            found = self._special_res[key] = special_splitter(key)
        return found

    def encode(self, text: str, allowed_special: Collection[str] = ()) -> list[int]:
        """Ids where the ``allowed_special`` tokens' text becomes their special ids; other text is ordinary."""
        allowed = [s for s in allowed_special if s in self.special_tokens]
        if not allowed:
            return self.encode_ordinary(text)
        out: list[int] = []
        for segment, is_special in split_specials(text, self.special_regex(allowed)):
            if is_special:
                out.append(self.special_tokens[segment])
            else:
                out.extend(self.encode_ordinary(segment))
        return out
