"""Unigram ``tokenizer.json`` models (files written by ``tokenizers``' ``UnigramTrainer``, T5- and XLM-R-style files)
run by Tokenplay's own code, id for id with Hugging Face ``tokenizers``.

The pipeline is the file's, as for every tokenizer.json engine: added tokens cut out first
(:mod:`..pipeline.added_tokens`), each piece between them normalized (:mod:`..pipeline.normalizers`: a
``Precompiled`` SentencePiece map, NFKC...) and cut into pre-tokens (:mod:`..pipeline.pretokenizers`: usually
``Metaspace``). Each pre-token is then segmented by the library's own Viterbi pass, which is not ``sentencepiece``'s
(:mod:`.unigram` runs that one):

- scores are 64-bit floats, summed without re-basing; every piece of the vocabulary takes part, the unknown piece,
  special pieces and ``<0xNN>`` pieces included (a text that spells one out can match it);
- from each character, every piece that starts there proposes a path to where it ends, and replaces the path
  already there only when its score is strictly higher; a character that no one-character piece covers gets an
  unknown path scored ``min_score - 10``, ``min_score`` being the lowest score of the whole vocabulary;
- on the best path, neighbouring unknown pieces are fused into one string (and so is a piece that spells the unknown
  token); each string is then looked up: a piece gives its id, else byte fallback gives its ``<0xNN>`` pieces when
  every byte has one, else the unknown id;
- a model without an unknown piece cannot encode a character no one-character piece covers: the library fails, and
  so does this engine, with :class:`~..errors.InvalidTextError` naming the character.

No beginning-of-text token is added; ``decode`` runs the file's decoder (:mod:`..pipeline.decoders`).
:meth:`UnigramJSONTokenizer.lattice` and :meth:`~UnigramJSONTokenizer.nbest` show a pre-token's lattice with these
scores. Nothing here trains a model.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from functools import partial

from ..base import check_text
from ..errors import InvalidTextError
from ..pipeline.added_tokens import AddedVocabulary, Piece
from ..pipeline.decoders import decoder
from ..pipeline.normalizers import TextNormalizer
from ..pipeline.pretokenizers import PreTokenizer
from ..pipeline.tokenizer_json import TokenizerFileError, TokenizerJSON
from ..result import Token, TokenizeResult
from ..pipeline.pieces import byte_piece, piece_to_byte
from .normalizer import Normalizer
from .proto import BYTE, CONTROL, NORMAL, UNKNOWN, NormalizerSpec
from .unigram import MAX_LATTICE_CHARS, PREFIX_BITS, PREFIX_MASK, LatticeNode, UnigramTokenizer

UNK_PENALTY = 10.0
#: Where a pre-token's characters are in the text it was cut from: from an offset on, or one position each.
Where = int | list[int]
#: A pre-token's result: each string of the best path (unknown runs fused) with its span and its ids.
Segments = tuple[tuple[int, int, tuple[int, ...]], ...]


class UnigramJSONTokenizer(UnigramTokenizer):
    """A Unigram ``tokenizer.json``, id for id with Hugging Face ``tokenizers``."""

    def __init__(self, spec: TokenizerJSON, *, name: str = ""):
        if spec.model_type != "Unigram" or spec.pieces is None or spec.scores is None:
            raise TokenizerFileError(f"this is a {spec.model_type} model, not Unigram")
        self.name = name
        n = spec.n_vocab
        model_pieces = spec.pieces
        self.pieces = list(model_pieces) + [""] * (n - len(model_pieces))
        self.types = [NORMAL] * n
        self.unk_id = spec.unk_id
        self.byte_fallback = spec.byte_fallback
        self.fuse_unk = True
        self.unk_surface = model_pieces[spec.unk_id] if spec.unk_id is not None else ""
        self.model_scores = list(spec.scores)  # float64, as the library sums them
        self._id_byte: dict[int, int] = {}
        for tid, piece in enumerate(model_pieces):
            if tid == spec.unk_id:
                self.types[tid] = UNKNOWN
            elif spec.byte_fallback and piece_to_byte(piece) >= 0:
                self.types[tid] = BYTE
                self._id_byte[tid] = piece_to_byte(piece)
        for token in spec.added_tokens:
            if token.id >= len(model_pieces):  # an added token the model itself does not have
                self.pieces[token.id] = token.content
                self.types[token.id] = CONTROL
        if "" in self.pieces:
            raise TokenizerFileError(f"no token has id {self.pieces.index('')}; ids must run from 0 without gaps")
        self._ids = dict(spec.vocab)  # piece -> id, a piece listed twice keeping its last id (as the library)
        self._lookup = self._ids
        self._byte_ids = [self._ids.get(byte_piece(b), -1) for b in range(256)]
        self.min_score = min(self.model_scores)
        self.unk_score = self.min_score - UNK_PENALTY
        self.max_piece_chars = max(map(len, model_pieces))
        self._starts = _prefix_bitmap(model_pieces)
        self.user_defined = []
        self.has_unused = False
        self._piece_bytes: dict[int, bytes] = {}
        self.normalizer_spec = NormalizerSpec(add_dummy_prefix=False, remove_extra_whitespaces=False)
        self.normalizer = Normalizer(add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False)
        self._special = {t.content: t.id for t in spec.added_tokens if t.special}
        normalizer = TextNormalizer(spec.normalizer)
        self.added = AddedVocabulary(spec.added_tokens, None if normalizer.identity else normalizer)
        self.pre = PreTokenizer(spec.pre_tokenizer)
        self._decode = decoder(spec.decoder)
        self._cache: dict[str, Segments] = {}

    def __getstate__(self) -> dict:
        """As a SentencePiece model's, without the prefix bitmap: its bits are Python's ``hash()`` of strings, which
        differs from process to process (a table is built in a child process), so it is made again on loading."""
        state = super().__getstate__()
        state.pop("_starts", None)
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._starts = _prefix_bitmap(list(self._ids))  # every piece's prefixes: a superset only looks further

    # -- vocabulary ------------------------------------------------------------------------------------------------
    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special)

    def token_bytes(self, token_id: int) -> bytes:
        """What a piece stands for: ``▁`` as a space, a byte piece as its byte, an added token or the unknown piece
        as its text."""
        if isinstance(token_id, int) and 0 <= token_id < len(self.pieces) and self.types[token_id] in (CONTROL, UNKNOWN):
            return self.pieces[token_id].encode("utf-8")
        return super().token_bytes(token_id)

    def piece_to_id(self, piece: str) -> int:
        found = self._ids.get(piece)
        return found if found is not None else (self.unk_id if self.unk_id is not None else -1)

    # -- the library's Viterbi pass ----------------------------------------------------------------------------------
    def _pieces_at(self, text: str, i: int):
        """``(end, id)`` of every piece that starts at ``text[i]``, shortest first."""
        get, starts = self._ids.get, self._starts
        for j in range(i + 1, min(len(text), i + self.max_piece_chars) + 1):
            sub = text[i:j]
            pid = get(sub)
            if pid is not None:
                yield j, pid
            else:
                h = hash(sub) & PREFIX_MASK
                if not starts[h >> 3] >> (h & 7) & 1:
                    return  # no piece begins with it: no longer one either

    def _best_path(self, text: str) -> list[tuple[int, int, int]]:
        """The best segmentation of ``text`` as ``(start, end, id)``, unknown pieces not fused yet."""
        n = len(text)
        best = [0.0] * (n + 1)
        came_from = [-1] * (n + 1)
        ids = [0] * (n + 1)
        scores, unk_id, unk_score = self.model_scores, self.unk_id, self.unk_score
        for i in range(n):
            here = best[i]
            single = False
            for j, pid in self._pieces_at(text, i):
                score = scores[pid] + here
                if came_from[j] < 0 or score > best[j]:
                    best[j], came_from[j], ids[j] = score, i, pid
                if j == i + 1:
                    single = True
            if not single:
                if unk_id is None:
                    raise InvalidTextError(
                        f"this tokenizer has no piece for {text[i]!r} (U+{ord(text[i]):04X}) and no unknown piece to "
                        "stand for it, so it cannot encode this text"
                    )
                score = unk_score + here
                if came_from[i + 1] < 0 or score > best[i + 1]:
                    best[i + 1], came_from[i + 1], ids[i + 1] = score, i, unk_id
        path: list[tuple[int, int, int]] = []
        end = n
        while end > 0:
            start = came_from[end]
            path.append((start, end, ids[end]))
            end = start
        path.reverse()
        return path

    def _segments_of(self, text: str) -> Segments:
        """A pre-token's strings on the best path (unknown runs fused), each with its span and ids (cached)."""
        found = self._cache.get(text)
        if found is not None:
            return found
        strings: list[tuple[int, int]] = []
        run: tuple[int, int] | None = None
        for start, end, pid in self._best_path(text):
            if pid == self.unk_id:
                run = (run[0] if run else start, end)
                continue
            if run:
                strings.append(run)
                run = None
            strings.append((start, end))
        if run:
            strings.append(run)
        found = tuple((a, b, self._string_ids(text[a:b])) for a, b in strings)
        if len(text) <= 256:
            if len(self._cache) >= 100_000:
                self._cache.clear()
            self._cache[text] = found
        return found

    def _string_ids(self, string: str) -> tuple[int, ...]:
        tid = self._ids.get(string)
        if tid is not None:
            return (tid,)
        if self.byte_fallback:
            data = string.encode("utf-8")
            got = tuple(self._byte_ids[b] for b in data)
            if -1 not in got:
                return got
        if self.unk_id is None:  # not reached: a string without a piece is a fused unknown run
            raise InvalidTextError(f"this tokenizer has no piece for {string!r} and no unknown piece to stand for it")
        return (self.unk_id,)

    # -- the Tokenizer contract ----------------------------------------------------------------------------------------
    def _pretokens(self, piece: Piece) -> list[tuple[str, Where]]:
        text = piece.text
        if not self.pre.transforms:
            return [(text[a:b], a) for a, b in self.pre(text)]
        origin = piece.origin()
        return self.pre.pieces(text, origin)

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids as ``tokenizers``' ``encode(text, add_special_tokens=False)``; with ``allow_special`` false special
        tokens are plain text, but non-special added tokens still match."""
        check_text(text)
        ids: list[int] = []
        for piece in self.added.split(text, allow_special):
            if piece.token is not None:
                ids.append(piece.token.id)
                continue
            for word, _ in self._pretokens(piece):
                for *_, got in self._segments_of(word):
                    ids.extend(got)
        return ids

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        """Tokens placed in the input: a piece covers the input characters it came from; the byte pieces of one
        string all get its span."""
        check_text(text)
        pieces = self.added.split(text, allow_special)
        words = [None if p.token is not None else [(w, where, self._segments_of(w)) for w, where in self._pretokens(p)]
                 for p in pieces]
        ids: list[int] = []
        for piece, found in zip(pieces, words):
            if found is None:
                ids.append(piece.token.id)
            else:
                ids.extend(i for _, _, segments in found for *_, got in segments for i in got)
        return TokenizeResult(self.name, text, ids, place=partial(self._place_all, pieces, words))

    def _place_all(self, pieces: list[Piece], words, offset: int, limit: int | None) -> list[Token]:
        tokens: list[Token] = []
        stop = None if limit is None else offset + limit
        for piece, found in zip(pieces, words):
            if stop is not None and len(tokens) >= stop:
                break
            if found is None:
                t = piece.token
                tokens.append(Token(t.id, t.content.encode(), piece.start, piece.end, t.content, t.special))
                continue
            spans = piece.spans
            for word, where, segments in found:
                for a, b, got in segments:
                    first, last = (where + a, where + b - 1) if isinstance(where, int) else (where[a], where[b - 1])
                    start, end = (spans[first][0], spans[last][1]) if spans else (piece.start + first, piece.start + last + 1)
                    for tid in got:
                        tokens.append(self._token(tid, start, end))
        return tokens[offset:] if stop is None else tokens[offset:stop]

    def _token(self, tid: int, start: int, end: int) -> Token:
        if tid in self._id_byte:
            byte = self._id_byte[tid]
            return Token(tid, bytes((byte,)), start, end, self.pieces[tid], False, byte < 0x80, True)
        data = self._piece_bytes.get(tid)
        if data is None:
            data = self._piece_bytes[tid] = self.token_bytes(tid)
        return Token(tid, data, start, end, self.pieces[tid])

    def decode(self, ids: Sequence[int]) -> str:
        """Text for ``ids`` as ``tokenizers``' ``decode(ids, skip_special_tokens=False)``."""
        return self._decode([self.pieces[i] for i in self.check_ids(ids)])

    # -- the lattice of a pre-token ------------------------------------------------------------------------------------
    def lattice(self, text: str) -> tuple[str, list[LatticeNode]]:
        """Every candidate piece of a pre-token (at most :data:`~.unigram.MAX_LATTICE_CHARS` characters) with the
        library's scores (an unknown piece where no one-character piece is), the best path's pieces marked."""
        check_text(text)
        text = text[:MAX_LATTICE_CHARS]
        on_path = set(self._best_path(text))
        nodes: list[LatticeNode] = []
        for i in range(len(text)):
            single = False
            for j, pid in self._pieces_at(text, i):
                single = single or j == i + 1
                nodes.append(LatticeNode(i, j, pid, text[i:j], self.model_scores[pid], (i, j, pid) in on_path))
            if not single and self.unk_id is not None:
                on = (i, i + 1, self.unk_id) in on_path
                nodes.append(LatticeNode(i, i + 1, self.unk_id, text[i], self.unk_score, on))
        return text, nodes

    def nbest(self, text: str, n: int = 5) -> list[tuple[list[int], float]]:
        """The ``n`` best segmentations of a pre-token as ``(piece ids, total score)``, best first."""
        text, nodes = self.lattice(text)
        ending: dict[int, list[LatticeNode]] = {}
        for node in nodes:
            ending.setdefault(node.end, []).append(node)
        kbest: list[list[tuple[float, tuple[int, ...]]]] = [[(0.0, ())]] + [[] for _ in text]
        for end in range(1, len(text) + 1):
            candidates = [(s + node.score, path + (node.id,)) for node in ending.get(end, []) for s, path in kbest[node.start]]
            kbest[end] = heapq.nlargest(n, candidates, key=lambda c: c[0])
        return [(list(path), score) for score, path in kbest[len(text)]] if text else []


def _prefix_bitmap(pieces: Sequence[str]) -> bytes:
    """One bit per hash of each string that begins a longer piece: a clear bit ends a walk (a false "maybe" only
    looks one character further, where nothing is found)."""
    bits = bytearray(PREFIX_BITS // 8)
    for h in [hash(p[:k]) & PREFIX_MASK for p in pieces for k in range(1, len(p))]:
        bits[h >> 3] |= 1 << (h & 7)
    return bytes(bits)
