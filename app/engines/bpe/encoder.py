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

Each pre-token is merged by :func:`app.engines.merging.merge_text`, whose compiled twin (``_merge.c``) runs the
loop in C: a list scan for short pre-tokens, a heap over a linked list for long ones (a 100 KB run of one
letter, a Japanese clause), so a pre-token costs O(n log n), never O(n^2). Pre-tokens repeat a lot, so results
are cached per pre-token; the loop over the pre-tokens runs in ``bpe/_pieces.c``, its compiled twin, which hands a
new pre-token to the merge with no Python call in between (on a text of many distinct pre-tokens, English, C and
Japanese mixed, those calls were the largest cost of a fresh tokenizer).

This module does not know about special-token policy beyond splitting on the allowed ones; guarding
(refusing special-token text) is the tokenizer's job (:mod:`app.engines.bpe.model`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from itertools import chain

from ..compiled import twin
from ..errors import TokenplayError
from ..merging import merge_text
from .patterns import Splitter, special_splitter, split_specials

#: Pre-tokens longer than this many characters are not cached.
CACHE_PIECE_CHARS = 256
CACHE_LIMIT = 65_536  # entries per tokenizer (~10 MB); cleared when full
#: Hugging Face merges: ``(left bytes, right bytes) -> rank in the merges list``.
PairRanks = Mapping[tuple[bytes, bytes], int]

_compiled_merge = twin("_merge", "merge")
_PairMemo = twin("_merge", "PairMemo")
_compiled_encode = twin("_pieces", "encode")
#: What the compiled merge takes as ranks or pairs: dicts, and a table file's maps (read in place, with no memo: a
#: lookup in one builds no object already; app/engines/registry/table_files.py).
_MERGE_TABLES = tuple(t for t in (dict, twin("_frozen", "FrozenMap")) if t is not None)


def merge_piece(piece: bytes, ranks: Mapping[bytes, int], pairs: PairRanks | None = None) -> list[int]:
    """Ids for one pre-token merged by rank (the caller has checked that it is not a token as a whole).

    >>> merge_piece(b"aaa", {b"a": 0, b"aa": 1})
    [1, 0]
    >>> merge_piece(b"abc", {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"bc": 4}, {(b"b", b"c"): 0})
    [0, 4]
    """
    if pairs is None:
        return merge_text(piece, ranks, ranks)
    return merge_text(piece, pairs, ranks, pair_keys=True)


def piece_merger(ranks: Mapping[bytes, int], pairs: PairRanks | None = None) -> tuple[Callable[..., list[int]], tuple]:
    """:func:`merge_piece` with these ranks, as a function and the arguments after the piece (``f(piece, *args)``):
    the compiled merge itself when it takes them (dicts), so the compiled loop over pre-tokens calls it with nothing
    in between.

    With tiktoken's rule, the merge keeps what it learns of the ranks in a memo (``_merge.PairMemo``, one per call
    of this function): the rank of joining two tokens, by their ids. Every part of that merge is a token, so an id
    stands for one token's bytes, provided that no two tokens share an id (checked here) and the ranks do not change.
    """
    table = ranks if pairs is None else pairs
    if _compiled_merge is None or type(table) not in _MERGE_TABLES or type(ranks) not in _MERGE_TABLES:
        return merge_piece, (ranks, pairs)
    if pairs is None and _PairMemo is not None and type(ranks) is dict and _memo_fits(ranks):
        return _compiled_merge, (ranks, ranks, False, _PairMemo())
    return _compiled_merge, (table, ranks, pairs is not None)


def _memo_fits(ranks: Mapping[bytes, int]) -> bool:
    """Whether a memo can know tokens by their ids: distinct ints from 0 to 2**31 - 2."""
    ids = set(ranks.values())
    if not ids or set(map(type, ids)) != {int}:
        return False
    return len(ids) == len(ranks) and 0 <= min(ids) and max(ids) < 2**31 - 1


class _PieceCache(dict):
    """Pre-token text -> ids; a missing entry is computed (and kept unless the piece is long)."""

    def __init__(self, ranks: Mapping[bytes, int], pairs: PairRanks | None = None, whole: bool = True):
        super().__init__()
        self.ranks = ranks
        self.pairs = pairs
        self.whole = whole

    def __reduce__(self):  # stored empty (a tokenizer's table)
        return _PieceCache, (self.ranks, self.pairs, self.whole)

    def __missing__(self, piece: str) -> tuple[int, ...]:
        data = piece.encode("utf-8")
        r = self.ranks.get(data) if self.whole else None
        ids = (r,) if r is not None else tuple(merge_piece(data, self.ranks, self.pairs))
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
        self.pairs = pairs  # the merge rule, kept for the explain view (app.features.explain) to retrace merges
        self.whole = whole
        self.pattern = pattern
        self.special_tokens = dict(special_tokens)
        self.split = Splitter(pattern)
        self._cache = _PieceCache(ranks, pairs, whole)
        self._special_res: dict[frozenset, object] = {}
        self._start_merge()

    def _start_merge(self) -> None:
        """The merge of a new pre-token and the loop over pre-tokens, compiled when they take these ranks."""
        self._merge, self._merge_args = piece_merger(self.ranks, self.pairs)
        # the compiled loop looks whole pre-tokens up in a dict or a table's map; others go through the Python loop
        self._compiled = _compiled_encode is not None and (type(self.ranks) in _MERGE_TABLES or not self.whole)

    def __getstate__(self) -> dict:
        """What a table stores (app/engines/registry/table_files.py): no merge function or memo, which
        :meth:`__setstate__` makes again for the ranks as they are loaded (a map read in place)."""
        state = self.__dict__.copy()
        for name in ("_merge", "_merge_args", "_compiled"):
            state.pop(name, None)
        state["_special_res"] = {}
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._start_merge()

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids with special-token text treated as plain text (tiktoken's ``encode_ordinary``)."""
        return self.encode_pretokens(self.split(text))

    def encode_pretokens(self, pieces: Iterable[str]) -> list[int]:
        """Ids for text already cut into pre-tokens."""
        if self._compiled:
            return _compiled_encode(
                pieces if type(pieces) is list else list(pieces),
                self._cache,
                self.ranks if self.whole else None,
                self._merge,
                self._merge_args,
                CACHE_PIECE_CHARS,
                CACHE_LIMIT,
            )
        return list(chain.from_iterable(map(self._cache.__getitem__, pieces)))

    def pretoken_ids(self, pieces: Iterable[str]) -> list[tuple[int, ...]]:
        """Each pre-token's ids, one tuple per pre-token (the explain view, app.features.explain, needs them apart)."""
        return list(map(self._cache.__getitem__, pieces))

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
