"""Byte-level BPE ``tokenizer.json`` models (Llama 3, Qwen3, DeepSeek V3, ...) run by Tokenplay's own BPE engine.

Every step is the one Hugging Face ``tokenizers`` takes, so the ids are the library's: added tokens are cut out first
(:mod:`..pipeline.added_tokens`), each piece between them is normalized (:mod:`..pipeline.normalizers`) and cut
into pre-tokens (:mod:`..pipeline.pretokenizers`; a ``ByteLevel`` step with ``add_prefix_space`` puts a space before
each piece it cuts), and each pre-token is merged by the file's ``merges`` list, lowest rank first, by
:class:`~.encoder.RankEncoder` with Hugging Face's rule (a pre-token that is a token is taken whole only with
``ignore_merges``). No beginning-of-text token is added. ``decode`` runs the file's decoder
(:mod:`..pipeline.decoders`; ``ByteLevel``'s is the bytes of the tokens, as for every byte-level tokenizer).

Tokens are placed in the text as for every byte-level tokenizer: their bytes join up to the text's UTF-8, and a
token cut inside a character shares that character's span. Where normalization changed the text (Qwen3's NFC on
decomposed accents), a token gets the span of the input characters its normalized characters came from.

It runs byte-level vocabularies with all 256 bytes (the loader sends the others to
:mod:`app.engines.sentencepiece.json_model`). This module does not read files;
:func:`~..pipeline.tokenizer_json.parse_tokenizer_json` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from ..pipeline.added_tokens import AddedVocabulary, Piece
from ..base import Tokenizer, VocabFacts, check_text
from ..errors import TokenplayError
from ..pipeline.decoders import decoder
from ..pipeline.normalizers import TextNormalizer
from ..pipeline.pretokenizers import PreTokenizer
from ..result import Token, TokenizeResult, byte_level_result, byte_table, tokens_after
from ..pipeline.tokenizer_json import (
    BYTE_OF_CHAR,
    TokenizerFileError,
    TokenizerJSON,
    UnsupportedTokenizerError,
    byte_level_bytes,
    pipeline_steps,
)
from .encoder import RankEncoder, merge_piece


def runs_byte_level(spec: TokenizerJSON) -> bool:
    """Whether this engine runs ``spec`` as the library does: a BPE whose last pre-tokenizer step, and its only
    ``ByteLevel`` one (no ``Metaspace``), writes text in the byte alphabet, every byte of which is a token, and whose
    whole-word lookup (``ignore_merges``) can find only tokens written in that alphabet (this engine looks words up
    by their bytes). Another BPE runs on :mod:`app.engines.sentencepiece.json_model`, over characters."""
    kinds = [step.get("type") for step in pipeline_steps(spec.pre_tokenizer, "pretokenizers")]
    if spec.model_type != "BPE" or kinds.count("ByteLevel") != 1 or kinds[-1] != "ByteLevel" or "Metaspace" in kinds:
        return False
    if not all(ch in spec.vocab for ch in BYTE_OF_CHAR):
        return False
    return not spec.ignore_merges or all(set(token) <= BYTE_OF_CHAR.keys() for token in spec.vocab)


class ByteLevelJSONTokenizer(VocabFacts, Tokenizer):
    """A byte-level BPE ``tokenizer.json``, id for id with Hugging Face ``tokenizers``."""

    def __init__(self, spec: TokenizerJSON, *, name: str = ""):
        if not spec.byte_level:
            raise UnsupportedTokenizerError("this tokenizer.json is not byte-level (it has no ByteLevel pre-tokenizer)")
        decoders = [step.get("type") for step in pipeline_steps(spec.decoder, "decoders")]
        # the library's ByteLevel decoder gives the tokens' bytes as UTF-8 (Tokenizer.decode); any other, its steps
        self._decode = None if decoders == ["ByteLevel"] else decoder(spec.decoder)
        self._strings = None if self._decode is None else _token_strings(spec)
        self.name = name
        as_bytes = {token: byte_level_bytes(token) for token in spec.vocab}
        ranks: dict[bytes, int] = {}
        for token, tid in spec.vocab.items():
            data = as_bytes[token]
            if data in ranks:
                raise TokenizerFileError(f"two vocabulary entries stand for the same bytes {data!r}")
            ranks[data] = tid
        pairs = {(as_bytes[a], as_bytes[b]): rank for rank, (a, b) in enumerate(spec.merges)}
        try:
            self.encoder = RankEncoder(ranks, None, pairs=pairs, whole=spec.ignore_merges)
        except TokenplayError as exc:
            raise TokenizerFileError(f"the byte-level vocabulary is incomplete: {exc}") from None
        n_vocab = spec.n_vocab
        self._bytes: list[bytes | None] = [None] * n_vocab  # a list: a dict would cost ten times the memory
        for data, tid in ranks.items():
            self._bytes[tid] = data
        for token in spec.added_tokens:
            if self._bytes[token.id] is None:
                self._bytes[token.id] = byte_level_bytes(token.content)
        self._special = {t.content: t.id for t in spec.added_tokens if t.special}
        normalizer = TextNormalizer(spec.normalizer)
        self.added = AddedVocabulary(spec.added_tokens, None if normalizer.identity else normalizer)
        self.pre = PreTokenizer(spec.pre_tokenizer, map_bytes=False)
        self._transformed: dict[bytes, tuple[int, ...]] = {}  # pre-token bytes -> ids, when the pre-tokenizer rewrites
        # Added tokens whose decoded bytes are not their text's UTF-8: the byte-level alphabet maps them.
        self._remapped = {t.content for t in spec.added_tokens if byte_level_bytes(t.content) != t.content.encode()}
        self._n_vocab = spec.reference_size  # as the library counts it
        self._id_bound = n_vocab
        self._holes = None in self._bytes

    # -- the Tokenizer contract ------------------------------------------------------------------------------------
    def token_bytes(self, token_id: int) -> bytes:
        data = self._bytes[token_id] if token_id >= 0 else None
        if data is None:
            raise KeyError(token_id)
        return data

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids as ``tokenizers``' ``encode(text, add_special_tokens=False)``; with ``allow_special`` false special
        tokens are plain text (``encode_special_tokens``), but non-special added tokens still match."""
        check_text(text)
        return self._ids(self.added.split(text, allow_special))

    def _ids(self, pieces: list[Piece]) -> list[int]:
        ids: list[int] = []
        pretokens = self.encoder.encode_pretokens
        for piece in pieces:
            if piece.token is not None:
                ids.append(piece.token.id)
            elif self.pre.transforms:
                ids.extend(i for data in self._pretoken_bytes(piece) for i in self._bytes_ids(data))
            else:
                ids.extend(pretokens(self.pre.texts(piece.text)))
        return ids

    def _pretoken_bytes(self, piece: Piece) -> list[bytes]:
        """The bytes of a piece's pre-tokens, when the pre-tokenizer rewrites them (``ByteLevel``'s prefix space)."""
        return [data for data, _ in self._pretokens(piece)]

    def _pretokens(self, piece: Piece) -> list[tuple[bytes, list[int]]]:
        """A piece's pre-tokens as their bytes and, per byte, the position in the piece's text it comes from."""
        origin = piece.origin()
        out = []
        for text, pos in self.pre.pieces(piece.text, origin):  # the text itself: ByteLevel is the last step
            data = text.encode("utf-8")
            if len(data) != len(text):
                pos = [p for ch, p in zip(text, pos) for _ in range(len(ch.encode("utf-8")))]
            out.append((data, pos))
        return out

    def _bytes_ids(self, data: bytes) -> tuple[int, ...]:
        """Ids of one pre-token given as bytes (cached)."""
        found = self._transformed.get(data)
        if found is None:
            encoder = self.encoder
            whole = encoder.ranks.get(data) if encoder.whole else None
            found = (whole,) if whole is not None else tuple(merge_piece(data, encoder.ranks, encoder.pairs))
            if len(data) <= 256:
                if len(self._transformed) >= 65_536:
                    self._transformed.clear()
                self._transformed[data] = found
        return found

    def decode(self, ids: Sequence[int]) -> str:
        """Text as ``tokenizers``' ``decode(ids, skip_special_tokens=False)``: the file's decoder run on the tokens'
        strings (a ``ByteLevel`` decoder: the tokens' bytes as UTF-8)."""
        if self._decode is None:
            return super().decode(ids)
        return self._decode([self._strings[i] for i in self.check_ids(ids)])

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        check_text(text)
        pieces = self.added.split(text, allow_special)
        ids = self._ids(pieces)
        if self._bytes_join_to(text, pieces):
            return byte_level_result(self.name, text, ids, byte_table(self))
        return TokenizeResult(self.name, text, ids, place=partial(self._place, pieces))

    def _bytes_join_to(self, text: str, pieces: list[Piece]) -> bool:
        """Whether the tokens' bytes join up to ``text``'s UTF-8 (nothing normalized, removed or remapped)."""
        if not self.pre.keeps_text:
            return False
        for piece in pieces:
            if piece.token is not None:
                if piece.token.content in self._remapped:
                    return False
            elif piece.spans is not None or piece.text != text[piece.start : piece.end]:
                return False
        return True

    def _place(self, pieces: list[Piece], offset: int, limit: int | None) -> list[Token]:
        """Tokens placed pre-token by pre-token, their normalized spans mapped back to the input."""
        table = byte_table(self)
        tokens: list[Token] = []
        stop = None if limit is None else offset + limit  # placed in order: no piece past the window is needed
        for piece in pieces:
            if stop is not None and len(tokens) >= stop:
                break
            if piece.token is not None:
                t = piece.token
                tokens.append(Token(t.id, t.content.encode(), piece.start, piece.end, t.content, t.special))
                continue
            spans = piece.spans or [(piece.start + i, piece.start + i + 1) for i in range(len(piece.text))]
            if self.pre.transforms:
                tokens.extend(self._place_rewritten(piece, spans, table))
                continue
            for a, b in self.pre(piece.text):
                if stop is not None and len(tokens) >= stop:
                    break
                for token in tokens_after(self.encoder.encode_pretokens([piece.text[a:b]]), a, table):
                    token.start, token.end = spans[token.start][0], spans[token.end - 1][1]
                    tokens.append(token)
        return tokens[offset:] if limit is None else tokens[offset : offset + limit]

    def _place_rewritten(self, piece: Piece, spans: list[tuple[int, int]], table) -> list[Token]:
        """The tokens of a piece whose pre-tokens were rewritten: each covers the input characters its bytes came
        from (a prefix space, the character it was put before)."""
        special_ids = table.special_ids
        tokens: list[Token] = []
        for data, pos in self._pretokens(piece):
            at = 0
            for tid in self._bytes_ids(data):
                info = table[tid]
                first, last = pos[at], pos[at + len(info.data) - 1]
                tokens.append(Token(tid, info.data, spans[first][0], spans[last][1], info.text, tid in special_ids, info.valid))
                at += len(info.data)
        return tokens


def _token_strings(spec: TokenizerJSON) -> list[str]:
    """Each id's token as the library's decoder receives it: an added token's content, else the vocabulary's."""
    strings = [""] * spec.n_vocab
    for token, tid in spec.vocab.items():
        strings[tid] = token
    for token in spec.added_tokens:
        strings[token.id] = token.content
    return strings
