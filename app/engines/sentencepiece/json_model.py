"""SentencePiece-style BPE ``tokenizer.json`` models (Gemma 3; Llama 2 / Mistral files) run by our SentencePiece engine.

These files describe a SentencePiece model in Hugging Face's terms: pieces written with ``▁`` for a space, a ``merges``
list, byte fallback to ``<0xNN>`` pieces, and a pipeline around the model. Every step is the one Hugging Face
``tokenizers`` takes, so the ids are the library's: added tokens are cut out first (:mod:`..pipeline.added_tokens`;
Gemma's newline and tab runs among them), each piece between them is normalized (:mod:`..pipeline.normalizers`:
``Replace(" ", "▁")``, ``Prepend("▁")``) and split by the pre-tokenizer if any (``Metaspace`` and ``ByteLevel``
rewrite what they cut: :mod:`..pipeline.pretokenizer_steps`), and each word is merged by
:class:`.model.SentencePieceTokenizer` with the file's merges as pair ranks (only listed pairs merge, the lowest rank
first; with ``ignore_merges`` a word that is a token is taken whole). A character that is no piece becomes its
``<0xNN>`` byte pieces, or the unknown token (``fuse_unk``: one for a run), or nothing when the model has no unknown
token. No beginning-of-text token is added. ``decode`` runs the file's decoder (:mod:`..pipeline.decoders`), as
the library does with ``skip_special_tokens=False``.

The same engine runs every other BPE tokenizer.json that is not byte-level BPE over all 256 bytes (those are
:mod:`app.engines.bpe.json_model`'s): files trained by ``tokenizers``' ``BpeTrainer`` with any pre-tokenizer, a
byte-level vocabulary that lacks some bytes among them (its pieces are then shown as the bytes they stand for).
It refuses, named, the merges it would run differently: a merge of the unknown token or of a ``<0xNN>`` byte piece
(the library merges the unknown symbol and byte-fallback pieces; this engine never sees them as symbols).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from itertools import chain, repeat
from operator import add, itemgetter, sub

from ..pipeline.added_tokens import AddedVocabulary, Piece
from ..base import check_text
from ..pipeline.decoders import decoder
from ..pipeline.normalizers import TextNormalizer
from ..pipeline.pretokenizers import PreTokenizer
from ..result import ByteInfo, Columns, Token, TokenizeResult
from ..pipeline.tokenizer_json import (
    BYTE_OF_CHAR,
    TokenizerFileError,
    TokenizerJSON,
    UnsupportedTokenizerError,
    byte_level_bytes,
)
from ..pipeline.pieces import SPACE_SYMBOL, piece_to_byte
from .model import ModelLoadError, SentencePieceTokenizer
from .normalizer import Normalizer
from .proto import BYTE, CONTROL, NORMAL, UNKNOWN, NormalizerSpec

#: Where a pre-token's characters are in the text it was cut from: from an offset on, or one position each.
Where = int | list[int]
_START, _END = itemgetter(0), itemgetter(1)


class SentencePieceJSONTokenizer(SentencePieceTokenizer):
    """A SentencePiece-style BPE ``tokenizer.json``, id for id with Hugging Face ``tokenizers``."""

    def __init__(self, spec: TokenizerJSON, *, name: str = ""):
        _check_merges(spec)
        self._decode = decoder(spec.decoder)
        self.name = name
        n = spec.n_vocab
        pieces: list[str | None] = [None] * n
        types = [NORMAL] * n
        for piece, tid in spec.vocab.items():
            pieces[tid] = piece
            if piece == spec.unk_token:
                types[tid] = UNKNOWN
            elif piece_to_byte(piece) >= 0 and spec.byte_fallback:
                types[tid] = BYTE
        for token in spec.added_tokens:
            if pieces[token.id] is None:  # an added token the model itself does not have
                pieces[token.id] = token.content
                types[token.id] = CONTROL
        if None in pieces:
            raise TokenizerFileError(f"no token has id {pieces.index(None)}; ids must run from 0 without gaps")
        #: No unknown token: characters that are no piece give no id (the library drops them). The engine still
        #: needs one unknown piece, so it gets one past the vocabulary, which no id list holds.
        self.drops_unknown = spec.unk_token is None
        if self.drops_unknown:
            pieces.append("\ufffd<unk>")
            types.append(UNKNOWN)
        self.whole_words = spec.ignore_merges
        #: Pieces written in GPT-2's byte alphabet (a ByteLevel step): shown as the bytes they stand for.
        self.byte_alphabet = bool(spec.byte_level) and all(
            set(p) <= BYTE_OF_CHAR.keys() for p, t in zip(pieces, types) if t == NORMAL
        )
        self.normalizer_spec = NormalizerSpec(add_dummy_prefix=False, remove_extra_whitespaces=False)
        try:
            self._load(
                pieces,  # type: ignore[arg-type]
                types,
                merges=spec.merges,
                byte_fallback=spec.byte_fallback,
                unk_surface=spec.unk_token or "",
                normalizer=Normalizer(add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False),
                fuse_unk=spec.fuse_unk,
                space=SPACE_SYMBOL,
            )
        except ModelLoadError as exc:
            raise TokenizerFileError(str(exc)) from None
        self._special = {t.content: t.id for t in spec.added_tokens if t.special}
        normalizer = TextNormalizer(spec.normalizer)
        self.added = AddedVocabulary(spec.added_tokens, None if normalizer.identity else normalizer)
        self.pre = PreTokenizer(spec.pre_tokenizer)

    @property
    def _word_ids(self):
        """A pre-token's ids: merged, or with ignore_merges taken whole when it is a token (a property, not a bound
        method kept in the instance: a table pickles the instance)."""
        return self._whole_or_merged if self.whole_words else self._encode_normalized

    # -- vocabulary ------------------------------------------------------------------------------------------------
    @property
    def n_vocab(self) -> int:
        return len(self.pieces) - self.drops_unknown

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special)

    def token_bytes(self, token_id: int) -> bytes:
        """What the piece stands for: ``▁`` as a space, a byte piece as its byte, an added token as its text (a
        byte-alphabet piece: the bytes its characters stand for)."""
        if not isinstance(token_id, int) or not 0 <= token_id < self.n_vocab:
            raise KeyError(token_id)
        if self.types[token_id] in (CONTROL, UNKNOWN):
            return self.pieces[token_id].encode("utf-8")
        if self.byte_alphabet and self.types[token_id] == NORMAL:
            return byte_level_bytes(self.pieces[token_id])
        return super().token_bytes(token_id)

    # -- encoding --------------------------------------------------------------------------------------------------
    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids as ``tokenizers``' ``encode(text, add_special_tokens=False)``; with ``allow_special`` false special
        tokens are plain text, but non-special added tokens (``<unusedN>``, whitespace runs) still match."""
        check_text(text)
        ids: list[int] = []
        for piece in self.added.split(text, allow_special):
            ids.extend(self._piece_ids_of(piece))
        return ids

    def pretoken_texts(self, piece: Piece) -> list[tuple[str, Where]]:
        """The pre-tokens of a plain added-vocabulary piece: their text as the model merges it, and where their
        characters are in the piece's text."""
        text = piece.text
        if not self.pre.transforms:
            return [(text[a:b], a) for a, b in self.pre(text)]
        origin = piece.origin()
        return self.pre.pieces(text, origin)

    def _piece_ids_of(self, piece: Piece) -> list[int]:
        if piece.token is not None:
            return [piece.token.id]
        ids: list[int] = []
        word_ids = self._word_ids
        if self.pre.transforms:
            for word, _ in self.pretoken_texts(piece):
                ids.extend(word_ids(word))
        else:
            text = piece.text
            for a, b in self.pre(text):
                ids.extend(word_ids(text[a:b]))
        return ids

    def _whole(self, word: str) -> int | None:
        """With ``ignore_merges``: the id of a word that is a vocabulary token, taken whole."""
        tid = self._lookup.get(word) if self.whole_words else None
        return None if tid is None or tid == self.unk_id or self.types[tid] == CONTROL else tid

    def _whole_or_merged(self, word: str) -> list[int]:
        tid = self._whole(word)
        return [tid] if tid is not None else self._encode_normalized(word)

    def _pieces(self, normalized: str) -> list[str]:
        return [normalized] if self._whole(normalized) is not None else super()._pieces(normalized)

    def _piece_ids(self, pieces) -> list[int]:
        ids = super()._piece_ids(pieces)
        if self.drops_unknown and self.unk_id in ids:
            unk = self.unk_id
            return [i for i in ids if i != unk]
        return ids

    def _place(self, text: str, merged: list[str] | None, offset: int, limit: int | None) -> list[Token]:
        if not self.drops_unknown:
            placed = super()._place(text, merged, offset, limit)
        else:
            placed = [t for t in super()._place(text, merged, 0, None) if t.id != self.unk_id]
            placed = placed[offset:] if limit is None else placed[offset : offset + limit]
        if self.byte_alphabet:  # a byte-level file's pieces are shown as the bytes they stand for, not as Ġ...
            for token in placed:
                if self.types[token.id] == NORMAL:
                    info = ByteInfo(token.bytes)
                    token.text, token.valid_utf8 = info.text, info.valid
        return placed

    def _column_info(self, token_id: int) -> tuple[bytes, str, bool, bool, bool]:
        if not (self.byte_alphabet and self.types[token_id] == NORMAL):
            return super()._column_info(token_id)
        info = ByteInfo(self.token_bytes(token_id))
        return info.data, info.text, False, info.valid, False

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        """Tokens placed in the input: a piece covers the input characters it came from; the byte pieces of one
        character all get that character's span."""
        check_text(text)
        pieces = self.added.split(text, allow_special)
        # each added-vocabulary piece's pre-tokens, merged once: the ids come from them and placing walks them
        merged = [None if p.token is not None else self._pre_tokens(p) for p in pieces]
        per_piece = [[p.token.id] if m is None else [i for *_, got in m for i in got] for p, m in zip(pieces, merged)]
        ids = [i for group in per_piece for i in group]

        def place(offset: int, limit: int | None) -> list[Token]:
            stop = None if limit is None else offset + limit
            tokens: list[Token] = []
            seen = 0
            for piece, pre, group in zip(pieces, merged, per_piece):
                if stop is not None and seen >= stop:
                    break
                if seen + len(group) > offset:
                    start = max(0, offset - seen)
                    tokens.extend(self._place_piece(piece, pre, start, None if stop is None else stop - seen - start))
                seen += len(group)
            return tokens

        return TokenizeResult(
            self.name, text, ids, place=place, columns=partial(self._columns_of, pieces, merged, len(ids))
        )

    def _columns_of(self, pieces: list[Piece], merged: list, n_ids: int) -> Columns | None:
        """Every token's span as ``place`` in :meth:`tokenize` places it, without a Token per token; None for the
        texts left to the Token records (a model that drops unknown characters, an added token's id that merging
        also gives, and what :meth:`_spans` leaves)."""
        if self.drops_unknown:
            return None
        out: list[tuple[int, int]] = []
        cut: dict[int, tuple[bytes, str, bool, bool, bool]] = {}  # the added tokens cut out of the text
        seen: set[int] = set()  # ids merging gave
        for piece, pre in zip(pieces, merged):
            if pre is None:
                t = piece.token
                out.append((piece.start, piece.end))
                cut[t.id] = (t.content.encode(), t.content, t.special, True, False)
                continue
            spans, base = piece.spans, piece.start
            for word, where, pieces_of_word, got in pre:
                word_spans = self._spans(word, pieces_of_word)
                if word_spans is None:
                    return None
                seen.update(got)
                # a token's first and last character in the word, then in the piece's text, then in the input
                firsts = word_spans[0]
                lasts = list(map(max, firsts, map(sub, word_spans[1], repeat(1))))
                if isinstance(where, int):
                    firsts, lasts = map(add, firsts, repeat(where)), map(add, lasts, repeat(where))
                else:
                    firsts, lasts = map(where.__getitem__, firsts), map(where.__getitem__, lasts)
                if spans is None:
                    out.extend(zip(map(add, firsts, repeat(base)), map(add, lasts, repeat(base + 1))))
                else:
                    out.extend(zip(map(_START, map(spans.__getitem__, firsts)), map(_END, map(spans.__getitem__, lasts))))
        if len(out) != n_ids or not seen.isdisjoint(cut):
            return None

        def info(tid: int) -> tuple[bytes, str, bool, bool, bool]:
            found = cut.get(tid)
            return found if found is not None else self._column_info(tid)

        return Columns(out, info)

    def _pre_tokens(self, piece: Piece) -> list[tuple[str, Where, list[str], list[int]]]:
        """A piece's pre-tokens as (text, where its characters are in the piece's text, merged pieces, ids)."""
        out = []
        for word, where in self.pretoken_texts(piece):
            merged = self._pieces(word)
            out.append((word, where, merged, self._piece_ids(merged)))
        return out

    def _place_piece(self, piece: Piece, pre, offset: int, limit: int | None) -> list[Token]:
        """Tokens ``offset`` to ``offset + limit`` of one added-vocabulary piece (``pre``: its :meth:`_pre_tokens`)."""
        if piece.token is not None:
            t = piece.token
            return [Token(t.id, t.content.encode(), piece.start, piece.end, t.content, t.special)]
        spans = piece.spans  # None: the text is the input's own, character for character
        tokens: list[Token] = []
        seen = 0
        for word, where, merged, got in pre:
            if limit is not None and len(tokens) >= limit:
                break
            if seen + len(got) > offset:
                want = None if limit is None else limit - len(tokens)
                for token in self._place(word, merged, max(0, offset - seen), want):
                    first, last = token.start, max(token.start, token.end - 1)
                    first, last = (where + first, where + last) if isinstance(where, int) else (where[first], where[last])
                    if spans is None:
                        token.start, token.end = piece.start + first, piece.start + last + 1
                    else:
                        token.start, token.end = spans[first][0], spans[last][1]
                    tokens.append(token)
            seen += len(got)
        return tokens

    # -- decoding --------------------------------------------------------------------------------------------------
    def decode(self, ids: Sequence[int]) -> str:
        """Text for ``ids`` as ``tokenizers``' ``decode(ids, skip_special_tokens=False)``."""
        return self._decode([self.pieces[i] for i in self.check_ids(ids)])


def _check_merges(spec: TokenizerJSON) -> None:
    """Refuse merges this engine would not make as the library makes them: the library merges the unknown symbol
    a character without a piece becomes, and the byte pieces of byte fallback, as symbols of their own."""
    symbols = {spec.unk_token} if spec.unk_token is not None else set()
    if spec.byte_fallback:
        symbols.update(piece for piece in spec.vocab if piece_to_byte(piece) >= 0)
    merged = symbols.intersection(chain.from_iterable(spec.merges))
    if merged:
        side = min(merged)
        a, b = next(pair for pair in spec.merges if side in pair)
        what = "the unknown token" if side == spec.unk_token else "the byte piece"
        raise UnsupportedTokenizerError(
            f"a merge of {what} {side!r} ({a!r} + {b!r}) is not supported: the library merges it as a symbol where "
            "a character has no piece, which Tokenplay's engine does not"
        )
