"""Run a SentencePiece BPE model (a ``.model`` file) exactly as the ``sentencepiece`` library does, in pure Python.

Encoding is: normalize (see ``normalizer.py``), split into characters (user-defined pieces stay whole and never
merge), then repeatedly merge the adjacent pair whose concatenation is a vocabulary piece with the highest
score (ties: the leftmost pair), then split ``UNUSED`` pieces back into the pieces they were made of, and
finally turn each unknown piece into ``<0xNN>`` byte pieces (byte fallback) or one ``<unk>`` per run of unknown
characters. Decoding follows the library too: ``▁`` becomes a space, the dummy prefix's space is dropped, byte
pieces are joined and each invalid byte becomes U+FFFD.

The same engine runs SentencePiece-style ``tokenizer.json`` files (:mod:`.json_model`): their pieces merge by the
file's ``merges`` list (pair -> rank) instead of by score.

Speed: when the loaded vocabulary guarantees that no piece can span certain boundaries (around a character that
occurs in no multi-character piece; before a ``▁`` run that follows another character; between letters/digits
and punctuation; in a long chunk, between two characters that are neighbours in no piece), the normalized text is
cut there and each chunk is merged on its own and cached: merges never cross such a cut, so the result is the
same as merging the whole text. Each rule is checked against the
vocabulary at load time and used only if it holds; a model with ``UNUSED`` pieces (whose re-splitting depends
on the whole text) is always merged whole. Short chunks use a list scan, long ones the library's heap. The loop
over the chunks runs in ``_chunks.c``, its compiled twin, when it is built: most chunks of a Japanese text are one
character, which it answers from a table by code point.

This module does not run unigram, word or char models, does not add ``<s>``/``</s>`` (neither does
``sentencepiece``'s ``encode`` by default), does not sample (BPE-dropout) and ignores a denormalizer spec.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import accumulate, chain, compress, repeat
from operator import add, eq
from pathlib import Path

from ..base import Tokenizer, check_text
from ..compiled import twin
from ..datafiles import verified_bytes
from ..errors import TokenplayError
from ..merging import Ranking, StrMerges, merge, merge_table, pair
from ..result import Columns, Token, TokenizeResult
from ..pipeline.pieces import SPACE_SYMBOL, byte_piece, piece_to_byte
from .normalizer import Normalizer
from .proto import BPE, BYTE, CONTROL, NORMAL, UNKNOWN, UNUSED, USER_DEFINED, ModelProto

_HEAP_FROM = 48  # chunks up to this many symbols use the list scan; longer ones the heap
_CACHE_LIMIT = 200_000
#: Chunks up to this many characters are cached (long ones repeat too: rules of ASCII tables, "▁▁▁▁+-----").
_CACHE_CHARS = 4_096
#: The classes of a character for chunking (see :meth:`SentencePieceTokenizer._chunk_classes`): in no
#: multi-character piece (a chunk alone), the space symbol that starts a run, and the two kinds of run.
OUT, SPACE, RUN_A, RUN_B = range(4)
_Chunker = twin("_chunks", "Chunker")  # the compiled loop over chunks (sentencepiece/_chunks.c)


class ModelLoadError(TokenplayError):
    """A ``.model`` file this engine cannot run (not BPE, no ``<unk>``, broken byte pieces)."""


def damaged(what: str) -> ModelLoadError:
    """The error for a ``.model`` file whose content makes no model, ``what`` saying how in words.

    >>> str(damaged("piece 3 is empty"))
    'this SentencePiece .model file is damaged: piece 3 is empty'
    """
    return ModelLoadError(f"this SentencePiece .model file is damaged: {what}")


def shown(piece: str, index: int) -> str:
    """Piece number ``index`` of a damaged file as a message names it: its text, quoted, when that is short
    printable text; else its number (the text of a damaged file is often bytes of the file's own layout).

    >>> shown("<0xG1>", 7), shown("\\n\\x06<0x07>\\x15", 12)
    ("'<0xG1>'", 'number 12')
    """
    return f"'{piece}'" if piece.isprintable() and len(piece) <= 40 else f"number {index:,}"


def decode_utf8_like_sentencepiece(data: bytes) -> str:
    """Bytes to text the way sentencepiece decodes byte pieces: every byte that does not start a valid
    character becomes its own U+FFFD (Python's ``errors="replace"`` folds some of them into one).

    >>> decode_utf8_like_sentencepiece(bytes([0xE3, 0x81, 0x41]))
    '��A'
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        size = 1 if b < 0x80 else 2 if b & 0xE0 == 0xC0 else 3 if b & 0xF0 == 0xE0 else 4 if b & 0xF8 == 0xF0 else 0
        if size:
            try:
                out.append(data[i : i + size].decode("utf-8"))
                i += size
                continue
            except UnicodeDecodeError:
                pass
        out.append("\ufffd")
        i += 1
    return "".join(out)


def _is_word_char(c: str) -> bool:
    """Letters, marks and decimal digits: the characters words are made of (for finer chunking).

    >>> _is_word_char("é"), _is_word_char("²"), _is_word_char(".")
    (True, False, False)
    """
    cat = unicodedata.category(c)
    return cat[0] in "LM" or cat == "Nd"


def _char_class(chars: Iterable[str]) -> str:
    return "".join(re.escape(c) for c in sorted(chars))


def _class_blocks(classes: dict[str, int]) -> tuple[bytes, bytes]:
    """``classes`` (character -> class; the others are ``OUT``) as the compiled chunker reads them: the block
    number of each 256 code points (``uint16``, native order) and the distinct blocks (a byte a code point)."""
    table = bytearray(0x110000)
    for ch, cls in classes.items():
        table[ord(ch)] = cls
    blocks: dict[bytes, int] = {}
    index = array("H", (blocks.setdefault(bytes(table[k : k + 256]), len(blocks)) for k in range(0, 0x110000, 256)))
    return index.tobytes(), b"".join(blocks)


class _Fixed(str):
    """A user-defined piece among the symbols to merge: it never merges with a neighbour."""


def _pair_key(left: str, right: str) -> str | None:
    """The merge key of two symbols: their joined text, or ``None`` (no rank) when either is a user-defined piece."""
    return None if type(left) is _Fixed or type(right) is _Fixed else left + right


class SentencePieceTokenizer(Tokenizer):
    """A SentencePiece BPE model run by Tokenplay's own code.

    Pieces are shown as they are (``▁Hello``, ``<0xE3>``). ``token_bytes(id)`` is what a piece decodes to in
    the middle of a text: ``▁`` as a space (``▁Hello`` -> ``b" Hello"``), a byte piece as its byte, a control
    piece as nothing and ``<unk>`` as the model's unknown surface (`` ⁇ ``). ``decode`` follows sentencepiece
    (dummy-prefix space dropped, per-byte U+FFFD), so it is not always ``b"".join(token_bytes)``.
    """

    def __init__(self, model: ModelProto | bytes, *, name: str = ""):
        if isinstance(model, (bytes, bytearray)):
            model = ModelProto.parse(bytes(model))
        self.name = name
        trainer, norm = model.trainer_spec, model.normalizer_spec
        if trainer.model_type != BPE:
            kind = {1: "unigram", 3: "word", 4: "char"}.get(trainer.model_type, str(trainer.model_type))
            if kind.isdigit():
                raise damaged(f"its model type ({kind}) is none SentencePiece has")
            raise ModelLoadError(f"this is a {kind} SentencePiece model; Tokenplay runs BPE and unigram models only")
        self.normalizer_spec = norm
        pieces = model.pieces
        user_defined = [p.piece for p in pieces if p.type == USER_DEFINED]
        self._load(
            [p.piece for p in pieces],
            [p.type for p in pieces],
            scores=[p.score for p in pieces],
            byte_fallback=bool(trainer.byte_fallback),
            unk_surface=trainer.unk_surface,
            normalizer=Normalizer(
                add_dummy_prefix=norm.add_dummy_prefix,
                remove_extra_whitespaces=norm.remove_extra_whitespaces,
                escape_whitespaces=norm.escape_whitespaces,
                treat_whitespace_as_suffix=trainer.treat_whitespace_as_suffix,
                charsmap=norm.precompiled_charsmap,
                user_defined=user_defined,
            ),
        )

    def _load(
        self,
        pieces: list[str],
        types: list[int],
        *,
        scores: list[float] | None = None,
        merges: list[tuple[str, str]] | None = None,
        byte_fallback: bool,
        unk_surface: str,
        normalizer: Normalizer,
        fuse_unk: bool = True,
        space: str | None = None,
    ) -> None:
        """Set up the vocabulary. Pieces merge by ``scores`` (a ``.model``: the higher the score of the joined
        piece, the sooner) or by ``merges`` (a tokenizer.json's pairs, the earlier the sooner; only listed pairs
        merge). With
        ``merges``, control pieces are never looked up by their text (tokenizer.json's added tokens are found
        before the model runs) and ``fuse_unk`` says whether a run of unknown characters is one ``<unk>``."""
        self.pieces = pieces
        self.types = types
        # Normal, user-defined and unused pieces can be merged into; the others are looked up first by piece.
        self._merge_ids: dict[str, int] = {}
        reserved: dict[str, int] = {}
        for i, (piece, ptype) in enumerate(zip(pieces, types)):
            if not piece:
                if merges is not None:  # Hugging Face tokenizers loads such a tokenizer.json
                    raise ModelLoadError(f"token {i:,} is the empty text; Tokenplay's engine does not run such a file yet")
                raise damaged(f"piece {i:,} is empty")
            target = self._merge_ids if ptype in (NORMAL, USER_DEFINED, UNUSED) else reserved
            if piece in target:
                raise damaged(f"piece {shown(piece, i)} is defined twice")
            if ptype != CONTROL or merges is None:
                target[piece] = i
        unk = [i for i, t in enumerate(types) if t == UNKNOWN]
        if len(unk) != 1:
            raise damaged("it has no <unk> piece, or more than one (a model has exactly one)")
        self.unk_id = unk[0]
        if merges is None:
            self._lookup = {**self._merge_ids, **reserved}  # reserved pieces win, as in sentencepiece
        else:  # a tokenizer.json: one dict (byte pieces can only come from a listed merge, like any piece)
            self._merge_ids.update(reserved)
            self._lookup = self._merge_ids
        if merges is None:
            scores = scores or [0.0] * len(pieces)
            if any(s != s for s in scores):
                raise damaged("a piece's score is not a number, so the pieces cannot be ordered")
            rank: dict = {p: -scores[i] for p, i in self._merge_ids.items()}  # higher score merges first
            self._key = add
        else:
            rank = merges
            self._key = pair
        self.fuse_unk = fuse_unk
        self.byte_fallback = byte_fallback
        self._byte_ids = [self.unk_id] * 256
        self._id_byte: dict[int, int] = {}
        for i, t in enumerate(types):
            if t == BYTE:
                b = piece_to_byte(pieces[i])
                if b < 0:
                    raise damaged(f"its byte piece {shown(pieces[i], i)} is none of <0x00> to <0xFF>")
                self._id_byte[i] = b
        for b in range(256):
            self._byte_ids[b] = self._lookup.get(byte_piece(b), self.unk_id)
        if self.byte_fallback and len(self._id_byte) != 256:
            self._check_missing_bytes(merges is not None)
        self.unk_surface = unk_surface
        self.user_defined = [p for p, t in zip(pieces, types) if t == USER_DEFINED]
        self.has_unused = UNUSED in types
        self.normalizer = normalizer
        self._space = space or (SPACE_SYMBOL if normalizer.escape_whitespaces else " ")
        self._user_re = (
            re.compile("|".join(re.escape(u) for u in sorted(self.user_defined, key=len, reverse=True)))
            if self.user_defined
            else None
        )
        # The Python merge's ranks (user-defined and unused pieces, which only .model files have, and the explain
        # view). A tokenizer.json's merges list stays a list until the explain view first asks (:meth:`ranking`).
        self._rank: dict | list = rank
        self._table: StrMerges | None = None
        self._chunk_re: re.Pattern | None = None
        self._chunk_blocks: tuple[bytes, bytes] | None = None
        if not self.has_unused:  # re-splitting unused pieces depends on the whole text: such models merge it whole
            multi = [p for p in self._merge_ids if len(p) > 1]
            # Every two neighbouring characters inside some piece: a merge never joins any other two (see _chunks).
            adjacent = frozenset(chain.from_iterable(map(map, repeat(add), multi, [p[1:] for p in multi])))
            classes = self._chunk_classes(multi, adjacent)
            self._chunk_re = self._chunker(classes)
            self._table = merge_table(rank, self._merge_ids, pair_keys=merges is not None, adjacent=adjacent)
            self._chunk_blocks = _class_blocks(classes)
        self._start_chunker()
        self._piece_cache: dict[str, tuple[str, ...]] = {}
        self._id_cache: dict[str, tuple[int, ...]] = {}

    def __getstate__(self) -> dict:
        """What a table stores (app/engines/registry/table_files.py): a tokenizer.json's merges as the dict
        :meth:`ranking` would make of them (a table keeps it as a map read in place), the caches empty, and the
        compiled chunker as what it is made of (:meth:`__setstate__` makes it again around the loaded lookup), and no
        bitmap of ``hash()`` values (another process hashes strings otherwise)."""
        state = self.__dict__.copy()
        if isinstance(state.get("_rank"), list):
            state["_rank"] = {p: i for i, p in enumerate(state["_rank"])}
        for cache in ("_piece_cache", "_id_cache"):
            if cache in state:
                state[cache] = {}
        state["_chunker_c"] = None
        state.pop("_prefixes", None)  # a unigram model's bitmap of Python hash() values: this process's only
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._start_chunker()

    def _start_chunker(self) -> None:
        """The compiled chunker (``_chunks.c``), when it is built and the model chunks."""
        self._chunker_c = None
        blocks = self.__dict__.get("_chunk_blocks")  # None: no chunks (a unigram model has none at all)
        if _Chunker is not None and blocks is not None:
            self._chunker_c = _Chunker(
                *blocks, self._lookup, self.unk_id, tuple(self._byte_ids), self._table.cut, _HEAP_FROM
            )

    def _check_missing_bytes(self, json_file: bool) -> None:
        """Refuse byte fallback without all 256 ``<0xNN>`` pieces, unless (in a tokenizer.json) no text can need
        the missing ones: each is an ASCII byte whose character is a piece of its own (Gemma 2 has the piece
        ``"\\t"`` and no ``<0x09>``). Hugging Face ``tokenizers`` falls back to bytes only for a character that is no
        piece, and the one character holding an ASCII byte is that character, so such a piece is never asked for.
        A ``.model`` file must have all 256, as ``sentencepiece`` requires."""
        have = set(self._id_byte.values())
        missing = [b for b in range(256) if b not in have]
        if not json_file:
            raise damaged("it cuts unknown characters into bytes but lacks some of the 256 byte pieces <0x00> to <0xFF>")
        needed = [b for b in missing if b >= 0x80 or chr(b) not in self._merge_ids]
        if needed:
            shown = ", ".join(map(byte_piece, needed[:4])) + (f" and {len(needed) - 4} more" if len(needed) > 4 else "")
            raise ModelLoadError(
                f"byte_fallback is on but the model lacks the byte pieces {shown}, which characters that are no "
                "piece would need; Tokenplay's engine does not run such a file yet"
            )

    # -- construction helpers ------------------------------------------------------------------------------
    @classmethod
    def from_file(cls, path: str | Path, **kwargs) -> SentencePieceTokenizer:
        return cls(Path(path).read_bytes(), **kwargs)

    @classmethod
    def from_data_file(cls, rel: str, **kwargs) -> SentencePieceTokenizer:
        """Load a shipped model (``tokenizers/<rel>``) after checking its sha256 against the manifest."""
        return cls(verified_bytes(rel), **kwargs)

    def _chunk_classes(self, multi: list[str], adjacent: frozenset[str]) -> dict[str, int]:
        """The class of every character in some multi-character mergeable piece (``multi``; ``adjacent``: every
        two neighbouring characters inside one of them); the others are ``OUT``, each a chunk alone.

        Safe cut points: around any character that occurs in no multi-character mergeable piece; before a run of
        spaces (``▁``, ``SPACE``) when no mergeable piece has a space right after another character; and between
        word characters (letters, marks, digits: ``RUN_A``) and other characters (``RUN_B``) when no piece goes
        from one kind to the other. Otherwise every character in a piece is ``RUN_A``.
        """
        inside = set().union(*map(set, multi)) if multi else set()
        space = self._space
        if not (space in inside and not any(b == space and a != space for a, b in adjacent)):
            return dict.fromkeys(inside, RUN_A)
        rest = inside - {space}
        word = {c for c in rest if _is_word_char(c)}
        other = rest - word
        mixed = any((a in word and b in other) or (a in other and b in word) for a, b in adjacent)
        if mixed or not word or not other:
            return {space: SPACE} | dict.fromkeys(rest, RUN_A)
        return {space: SPACE} | dict.fromkeys(word, RUN_A) | dict.fromkeys(other, RUN_B)

    def _chunker(self, classes: dict[str, int]) -> re.Pattern:
        """A regex whose matches are chunks that no vocabulary piece can span (see :meth:`_chunk_classes`): an
        ``OUT`` character alone, the run of ``SPACE`` before a run of ``RUN_A`` (or of ``RUN_B``) characters with
        it, a run of each alone. The compiled chunker (``_chunks.c``) reads the same classes."""
        if not classes:
            return re.compile(r".", re.DOTALL)
        cls = _char_class(classes)
        spaces = [c for c, k in classes.items() if k == SPACE]
        if not spaces:
            return re.compile(f"[^{cls}]|[{cls}]+", re.DOTALL)
        sp = re.escape(spaces[0])
        runs = [{c for c, k in classes.items() if k == kind} for kind in (RUN_A, RUN_B)]
        alternatives = [f"[^{cls}]", *(f"{sp}*[{_char_class(run)}]+" for run in runs if run), f"{sp}+"]
        return re.compile("|".join(alternatives), re.DOTALL)

    # -- vocabulary ------------------------------------------------------------------------------------------
    @property
    def n_vocab(self) -> int:
        return len(self.pieces)

    @property
    def special_tokens(self) -> dict[str, int]:
        """Control pieces (``<s>``, ``</s>``, ...). Text never encodes to them."""
        return {p: i for i, (p, t) in enumerate(zip(self.pieces, self.types)) if t == CONTROL}

    def id_to_piece(self, token_id: int) -> str:
        if not 0 <= token_id < len(self.pieces):
            raise KeyError(token_id)
        return self.pieces[token_id]

    def piece_to_id(self, piece: str) -> int:
        """The id of ``piece``, or the ``<unk>`` id (as sentencepiece's ``piece_to_id``)."""
        return self._lookup.get(piece, self.unk_id)

    def count_byte_fallback(self, ids: Iterable[int]) -> int:
        """How many of ``ids`` are ``<0xNN>`` byte pieces: the byte-fallback count for a whole text, also when
        a windowed result holds Token records for part of it only.

        >>> tok = SentencePieceTokenizer.from_data_file("sentencepiece/mistral-7b-v0.1.model")
        >>> tok.count_byte_fallback(tok.encode("ꙮ ok"))
        3
        """
        id_byte = self._id_byte
        return sum(1 for i in ids if i in id_byte)

    def token_bytes(self, token_id: int) -> bytes:
        if not isinstance(token_id, int) or not 0 <= token_id < len(self.pieces):
            raise KeyError(token_id)
        t = self.types[token_id]
        if t == BYTE:
            return bytes([self._id_byte[token_id]])
        if t == CONTROL:
            return b""
        if t == UNKNOWN:
            return self.unk_surface.encode("utf-8")
        return self.pieces[token_id].replace(SPACE_SYMBOL, " ").encode("utf-8")

    def _symbols(self, text: str) -> list[str]:
        """The characters of ``text``, except that user-defined pieces stay whole (as :class:`_Fixed`)."""
        if self._user_re is None:
            return list(text)
        symbols: list[str] = []
        pos = 0
        for m in self._user_re.finditer(text):
            symbols.extend(text[pos : m.start()])
            symbols.append(_Fixed(m.group()))
            pos = m.end()
        symbols.extend(text[pos:])
        return symbols

    def _merge(self, text: str) -> list[str]:
        """The library's BPE: best score first, leftmost on ties; then ``UNUSED`` pieces are split back by the
        last pair recorded for them (which is why such models always merge a text whole)."""
        if self._user_re is None and self._table is not None:  # the common case (compiled: merging.merge_table)
            return self._table.merge(text)
        symbols = self._symbols(text)
        key = self._key if self._user_re is None else _pair_key
        if not self.has_unused:
            return merge(symbols, self._rank.get, key=key, heap_from=_HEAP_FROM)
        record: dict[str, tuple[str, str]] = {}
        out: list[str] = []
        for piece in merge(symbols, self._rank.get, key=key, heap_from=_HEAP_FROM, record=record):
            self._resegment(piece, record, out)
        return out

    def _resegment(self, piece: str, record: dict[str, tuple[str, str]], out: list[str]) -> None:
        pid = self._lookup.get(piece, self.unk_id)
        if self.types[pid] != UNUSED or piece not in record:
            out.append(piece)
            return
        left, right = record[piece]
        self._resegment(left, record, out)
        self._resegment(right, record, out)

    def _chunk_pieces(self, chunk: str) -> tuple[str, ...]:
        cached = self._piece_cache.get(chunk)
        if cached is None:
            cached = tuple(self._merge(chunk))
            if len(chunk) <= _CACHE_CHARS:
                if len(self._piece_cache) > _CACHE_LIMIT:
                    self._piece_cache.clear()
                self._piece_cache[chunk] = cached
        return cached

    def _chunks(self, normalized: str) -> Iterator[str]:
        """The chunks of a normalized string that merge on their own (the caller checked ``_chunk_re``).

        A long chunk of the regex is cut further between any two characters that are not neighbours inside some
        piece: a merge there would make a piece with those two characters side by side. (Gemma's single piece
        ``>▁</`` defeats the regex's cut before ``▁``; without this, a whole line would be one chunk.)
        """
        cut = self._table.cut
        chunks = self._chunk_re.findall if self._chunker_c is None else self._chunker_c.chunks
        for chunk in chunks(normalized):
            if len(chunk) <= _HEAP_FROM:
                yield chunk
            else:
                yield from cut(chunk)

    def _pieces(self, normalized: str) -> list[str]:
        """The merged pieces for a normalized string (before byte fallback)."""
        if not normalized:
            return []
        if self._chunk_re is None:
            return self._merge(normalized)
        out: list[str] = []
        for chunk in self._chunks(normalized):
            out.extend(self._chunk_pieces(chunk))
        return out

    # -- hooks of the explain view (app.features.explain): how a normalized text is merged ---------------------------
    def merge_chunks(self, normalized: str) -> Iterator[tuple[str, tuple[str, ...]]]:
        """The stretches of ``normalized`` that merge on their own, in order, each with its merged pieces (before
        byte fallback): :meth:`_chunks`, each cut further between two characters that are neighbours in no piece
        (which :meth:`_chunks` does to long chunks only), so that a stretch is about a word."""
        if not normalized:
            return
        if self._chunk_re is None:
            yield normalized, self._chunk_pieces(normalized)
            return
        for chunk in self._chunks(normalized):
            for stretch in self._table.cut(chunk):
                yield stretch, self._chunk_pieces(stretch)

    def ranking(self) -> tuple[Callable[[str], list[str]], Ranking]:
        """The symbols a stretch starts as, and how their pairs rank: what :meth:`_merge` merges with."""
        if isinstance(self._rank, list):  # a tokenizer.json's merges list: a later repeat wins, as in a dict
            self._rank = {p: i for i, p in enumerate(self._rank)}
        return self._symbols, Ranking(self._rank.get, self._key if self._user_re is None else _pair_key)

    def _piece_ids(self, pieces: Iterable[str]) -> list[int]:
        """Ids for merged pieces: byte fallback for unknown ones, or one ``<unk>`` per run of unknowns."""
        lookup, unk = self._lookup, self.unk_id
        ids: list[int] = []
        prev_unk = False
        for w in pieces:
            pid = lookup.get(w, unk)
            is_unk = pid == unk
            if is_unk and self.byte_fallback:
                ids.extend(self._byte_ids[b] for b in w.encode("utf-8"))
            elif not (is_unk and prev_unk and self.fuse_unk):
                ids.append(pid)
            prev_unk = is_unk
        return ids

    # -- the Tokenizer contract --------------------------------------------------------------------------------
    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids exactly as ``sentencepiece.SentencePieceProcessor.encode(text)``.

        ``allow_special`` has no effect: SentencePiece never reads control pieces such as ``<s>`` from text.
        """
        check_text(text)
        return self._encode_normalized(self.normalizer.normalize_text(text))

    def _encode_normalized(self, normalized: str) -> list[int]:
        if not normalized:
            return []
        if self._chunk_re is None or not self.byte_fallback:
            return self._piece_ids(self._pieces(normalized))
        if self._chunker_c is not None:
            return self._chunker_c.encode(normalized, self._id_cache, self._chunk_ids, _CACHE_CHARS, _CACHE_LIMIT)
        ids: list[int] = []
        cache = self._id_cache
        for chunk in self._chunks(normalized):
            got = cache.get(chunk)
            if got is None:
                got = self._chunk_ids(chunk)
                if len(chunk) <= _CACHE_CHARS:
                    if len(cache) > _CACHE_LIMIT:
                        cache.clear()
                    cache[chunk] = got
            ids.extend(got)
        return ids

    def _chunk_ids(self, chunk: str) -> tuple[int, ...]:
        """The ids of one chunk (with byte fallback, a chunk's ids do not depend on its neighbours).

        The encoder caches these ids itself, so a chunk it has not seen is merged without also keeping its pieces
        (:meth:`_chunk_pieces`'s cache is for placing tokens), and pieces that are all in the vocabulary are looked
        up in one go: a text of many new words (the first count of a language) spends its time merging."""
        pieces = self._piece_cache.get(chunk)
        if pieces is None:
            pieces = self._merge(chunk)
        ids = tuple(map(self._lookup.get, pieces))
        if None in ids or self.unk_id in ids:  # unknown pieces: byte fallback or one <unk> per run
            return tuple(self._piece_ids(pieces))
        return ids

    def encode_pieces(self, text: str) -> list[str]:
        """Pieces as ``sentencepiece``'s ``encode(text, out_type=str)``."""
        return [self.pieces[i] for i in self.encode(text)]

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        """Tokens placed in the original text: a piece's span covers the input characters it came from; the
        byte pieces of one character all get that character's span (so they group into one segment), and a
        dummy-prefix ``▁`` standing alone gets the span of the character it prefixes (so it joins that segment).
        """
        check_text(text)
        pieces = self._pieces(self.normalizer.normalize_text(text))  # merged once: placing walks these
        return TokenizeResult(
            self.name, text, self._piece_ids(pieces), place=partial(self._place, text, pieces),
            columns=partial(self._columns, text, pieces),
        )

    def _columns(self, text: str, merged: list[str]) -> Columns | None:
        """Every token's span as :meth:`_place` places it, computed as columns (no Token per token); None when a
        piece is a control, byte or unknown piece taken as itself (the rare texts :meth:`_place` handles alone)."""
        spans = self._spans(text, merged)
        return None if spans is None else Columns(zip(*spans), self._column_info)

    def _spans(self, text: str, merged: list[str]) -> tuple[list[int], list[int]] | None:
        """The (starts, ends) of :meth:`_columns`, or None."""
        normalized, n2o = self.normalizer.normalize(text)
        unk, types = self.unk_id, self.types
        pids = list(map(self._lookup.get, merged, repeat(unk)))
        if any(types[pid] in (CONTROL, BYTE) or (pid == unk and not self.byte_fallback) for pid in set(pids)):
            return None
        offsets = list(map(n2o.__getitem__, accumulate(map(len, merged), initial=0)))
        starts, ends = offsets[:-1], offsets[1:]
        n_text = len(text)
        # a piece alone on no character (the dummy-prefix ▁) gets the character it prefixes; a byte-fallback
        # piece's bytes keep their character's span
        for k in compress(range(len(starts)), map(eq, starts, ends)):
            if ends[k] < n_text and pids[k] != unk:
                ends[k] += 1
        if unk in pids:  # each unknown piece is its UTF-8 bytes, one byte piece each, all on its characters
            counts = [len(w.encode("utf-8")) if pid == unk else 1 for w, pid in zip(merged, pids)]
            starts = list(chain.from_iterable(map(repeat, starts, counts)))
            ends = list(chain.from_iterable(map(repeat, ends, counts)))
        return starts, ends

    def _column_info(self, token_id: int) -> tuple[bytes, str, bool, bool, bool]:
        """What :meth:`_place`'s Token records say about ``token_id`` (a byte piece only ever from byte fallback)."""
        if self.types[token_id] == BYTE:
            b = self._id_byte[token_id]
            return bytes([b]), self.pieces[token_id], False, b < 0x80, True
        return self.token_bytes(token_id), self.pieces[token_id], False, True, False

    def _place(self, text: str, merged: list[str] | None, offset: int, limit: int | None) -> list[Token]:
        """The Token records of ``ids[offset:offset + limit]`` (every id's when ``limit`` is None); ``merged``:
        the text's pieces if the caller has them."""
        normalized, n2o = self.normalizer.normalize(text)
        if merged is None:
            merged = self._pieces(normalized)
        tokens: list[Token] = []
        n_ids = 0
        end_window = None if limit is None else offset + limit
        pos = 0
        lookup, unk, types, pieces = self._lookup, self.unk_id, self.types, self.pieces
        byte_ids, fallback = self._byte_ids, self.byte_fallback
        n_text = len(text)
        prev_unk = False
        for w in merged:
            if end_window is not None and n_ids >= end_window + (prev_unk and not fallback):
                break  # past the window (an <unk> ending it may still be widened by the unknown pieces after it)
            pid = lookup.get(w, unk)
            is_unk = pid == unk
            nxt = pos + len(w)
            if is_unk and fallback:
                start, end = n2o[pos], n2o[nxt]
                for b in w.encode("utf-8"):
                    if offset <= n_ids and (end_window is None or n_ids < end_window):
                        bid = byte_ids[b]
                        tokens.append(Token(bid, bytes([b]), start, end, pieces[bid], False, b < 0x80, True))
                    n_ids += 1
            elif is_unk and prev_unk and self.fuse_unk:  # one <unk> for a run of unknown pieces
                if tokens and offset <= n_ids - 1 and (end_window is None or n_ids - 1 < end_window):
                    tokens[-1].end = n2o[nxt]
            else:
                if offset <= n_ids and (end_window is None or n_ids < end_window):
                    start, end = n2o[pos], n2o[nxt]
                    if types[pid] == CONTROL:
                        tokens.append(Token(pid, b"", start, start, w, True))
                    else:
                        if start == end < n_text:  # the dummy-prefix ▁ alone: it prefixes the next character
                            end = start + 1
                        tokens.append(Token(pid, self.token_bytes(pid), start, end, pieces[pid]))
                n_ids += 1
            prev_unk = is_unk
            pos = nxt
        return tokens

    def decode(self, ids: Sequence[int]) -> str:
        """Text for ``ids`` exactly as ``sentencepiece``'s ``decode(ids)``."""
        ids = self.check_ids(ids)
        norm = self.normalizer_spec
        strip_first = norm.add_dummy_prefix or norm.remove_extra_whitespaces
        out: list[str] = []
        nonempty = False
        pending = bytearray()
        is_bos_ws, bos_ws_seen = True, False
        for tid in ids:
            if self.types[tid] == BYTE:
                pending.append(self._id_byte[tid])
                continue
            if pending:
                s = decode_utf8_like_sentencepiece(bytes(pending))
                out.append(s)
                nonempty = nonempty or bool(s)
                pending.clear()
            if bos_ws_seen or nonempty:
                is_bos_ws = False
            piece = self.pieces[tid]
            pid = self._lookup.get(piece, self.unk_id)
            t = self.types[pid]
            has_bos_ws = False
            if t == CONTROL:
                decoded = ""
            elif t == UNKNOWN:
                decoded = self.unk_surface if self.pieces[pid] == piece else piece
            else:
                if is_bos_ws and strip_first and piece.startswith(SPACE_SYMBOL):
                    piece = piece[1:]
                    has_bos_ws = not norm.remove_extra_whitespaces
                decoded = piece.replace(SPACE_SYMBOL, " ")
            bos_ws_seen = has_bos_ws
            out.append(decoded)
            nonempty = nonempty or bool(decoded)
        if pending:
            out.append(decode_utf8_like_sentencepiece(bytes(pending)))
        return "".join(out)

    def _has_gaps(self) -> bool:
        return False
