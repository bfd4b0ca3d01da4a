"""The reference libraries' view of WordPiece and Unigram models, for checking explanations: Hugging Face
``tokenizers`` for a WordPiece model's words and their pieces, ``sentencepiece`` for a unigram model's pieces and
its n-best segmentations, read from the libraries' own answers, never from Tokenplay's engines.

``sentencepiece``'s Python package hands n-best scores out only as a serialized protobuf message; without the
``protobuf`` package the message is read here field by field (:func:`_fields`). To give the library exactly a
stretch of normalized text (what the encoder segments on its own), :func:`plain_model` writes a copy of a
``.model`` whose normalizer does nothing but read ``▁`` as it is (no character map, no dummy prefix, spaces kept).
"""

from __future__ import annotations

import struct

import sentencepiece as spm
from tokenizers import Tokenizer as HFTokenizer
from tokenizers.implementations import BertWordPieceTokenizer


# -- protobuf wire format ---------------------------------------------------------------------------------------------
def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(data: bytes):
    """``(field number, wire type, value)`` of a message: ints for varints, bytes for length-delimited and
    fixed-width fields."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def _key(number: int, wire: int) -> bytes:
    return _encode_varint(number << 3 | wire)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def plain_model(model: bytes) -> bytes:
    """A copy of a ``.model`` whose normalizer (ModelProto field 3) is ``identity`` without a dummy prefix and
    without removing spaces: it segments exactly the text it is given (spaces escaped as ``▁``, ``▁`` kept)."""
    out = bytearray()
    for number, wire, value in _fields(model):
        if number == 3:
            continue
        out += _key(number, wire)
        if wire == 0:
            out += _encode_varint(value)
        elif wire == 2:
            out += _encode_varint(len(value)) + value
        else:
            out += value
    spec = (_key(1, 2) + _encode_varint(8) + b"identity" + _key(3, 0) + b"\x00" + _key(4, 0) + b"\x00"
            + _key(5, 0) + b"\x01")
    return bytes(out + _key(3, 2) + _encode_varint(len(spec)) + spec)


# -- sentencepiece ----------------------------------------------------------------------------------------------------
def unbyte(pieces: list[str]) -> list[str]:
    """Pieces with each run of ``<0xNN>`` byte pieces written as the characters they spell (as an explanation
    writes an unknown character)."""
    out: list[str] = []
    run = bytearray()
    for piece in pieces + [""]:
        if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            run.append(int(piece[3:5], 16))
            continue
        if run:
            out.extend(bytes(run).decode("utf-8"))
            run.clear()
        if piece:
            out.append(piece)
    return out


class UnigramReferee:
    """A unigram ``.model`` run by ``sentencepiece``: its normalizer, its pieces for a text, and the n-best
    segmentations of a stretch of normalized text (through :func:`plain_model`)."""

    def __init__(self, model: bytes):
        self.library = spm.SentencePieceProcessor(model_proto=model)
        self.plain = spm.SentencePieceProcessor(model_proto=plain_model(model))

    def normalize(self, text: str) -> str:
        return self.library.normalize(text)

    def pieces(self, text: str) -> list[str]:
        return self.library.encode(text, out_type=str)

    def nbest(self, normalized: str, n: int, library=None) -> list[tuple[list[str], float]]:
        """The ``n`` best segmentations of ``normalized`` as the library lists them: ``(pieces, score)``."""
        data = (library or self.plain).nbest_encode(normalized, nbest_size=n, out_type="serialized_proto")
        found = []
        for number, _, text in _fields(data):
            assert number == 1
            pieces, score = [], None
            for field, _, value in _fields(text):
                if field == 2:
                    piece = next(v for f, _, v in _fields(value) if f == 1)
                    pieces.append(piece.decode("utf-8"))
                elif field == 3:
                    (score,) = struct.unpack("<f", value)
            found.append((pieces, score))
        return found


# -- tokenizers ------------------------------------------------------------------------------------------------------
class WordPieceReferee:
    """A WordPiece ``tokenizer.json`` (or BERT's vocabulary) run by ``tokenizers``: its normalizer, its words, and
    its model's pieces of one word."""

    def __init__(self, library: HFTokenizer):
        self.library = library
        self.vocab = library.get_vocab()
        self.longest = max(map(len, self.vocab))

    @classmethod
    def from_json(cls, data: str | bytes) -> WordPieceReferee:
        return cls(HFTokenizer.from_str(data.decode() if isinstance(data, bytes) else data))

    @classmethod
    def bert(cls, tokens: list[str], lowercase: bool = True) -> WordPieceReferee:
        """BERT's pipeline around a vocabulary (as ``BertWordPieceTokenizer`` builds it)."""
        vocab = {t: i for i, t in enumerate(tokens)}
        return cls(BertWordPieceTokenizer(vocab, lowercase=lowercase)._tokenizer)

    def words(self, text: str) -> list[str]:
        """The words of ``text``: normalized, then pre-tokenized."""
        lib = self.library
        normalized = lib.normalizer.normalize_str(text) if lib.normalizer is not None else text
        if lib.pre_tokenizer is None:
            return [normalized] if normalized else []
        return [w for w, _ in lib.pre_tokenizer.pre_tokenize_str(normalized)]

    def word_pieces(self, word: str) -> list[str]:
        return [t.value for t in self.library.model.tokenize(word)]

    def ids(self, text: str) -> list[int]:
        self.library.encode_special_tokens = True
        return self.library.encode(text, add_special_tokens=False).ids
