"""A minimal protobuf (proto2 wire format) reader and writer for SentencePiece's ``ModelProto``.

A SentencePiece ``.model`` file is one serialized ``ModelProto``: the pieces (string, float score, type), a
``TrainerSpec``, a ``NormalizerSpec`` and optionally a self-test set and a denormalizer spec. This module reads
and writes exactly that schema by hand (varints, fixed32 floats, length-delimited strings and sub-messages), so
the app needs neither ``protobuf`` nor ``sentencepiece`` at run time.

It deliberately does not implement protobuf in general: only the fields SentencePiece defines are named;
fields it does not know are kept as raw bytes and written back unchanged, so a model read and saved again keeps
them. Field numbers follow ``sentencepiece_model.proto``.

>>> spec = NormalizerSpec(name="identity", add_dummy_prefix=False)
>>> NormalizerSpec.parse(spec.serialize()).add_dummy_prefix
False
>>> NormalizerSpec.parse(spec.serialize()).escape_whitespaces   # unset: the schema default
True
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, ClassVar

# Wire types.
VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

# Piece types (ModelProto.SentencePiece.Type).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
# TrainerSpec.ModelType.
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4


class ModelFormatError(ValueError):
    """Bytes that are not a SentencePiece model (truncated, corrupt, or another kind of file). The message says
    what is wrong in plain words ("it holds a record of an unknown kind"), for the caller to put after what the
    file is."""


class ModelTruncatedError(ModelFormatError):
    """Bytes that end in the middle of a model: the file is cut short."""


# -- wire primitives -----------------------------------------------------------------------------------------

def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode one varint at ``pos``; return ``(value, next position)``.

    >>> read_varint(bytes([0xAC, 0x02]), 0)
    (300, 2)
    """
    result = shift = 0
    n = len(data)
    while True:
        if pos >= n:
            raise ModelTruncatedError("the data ends in the middle of a number")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ModelFormatError("it holds a number longer than any model writes")


def write_varint(value: int) -> bytes:
    """Encode a non-negative int (negative ints as their 64-bit two's complement, as protobuf does).

    >>> write_varint(300).hex()
    'ac02'
    >>> len(write_varint(-1))
    10
    """
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def iter_fields(data: bytes):
    """Yield ``(field number, wire type, value, raw bytes of the whole field)`` for one message body.

    Varints come as ints, fixed32/fixed64 as raw 4/8 bytes, length-delimited fields as bytes.
    """
    pos, n = 0, len(data)
    while pos < n:
        start = pos
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ModelFormatError("it holds a record numbered 0, which no model has")
        if wire == VARINT:
            value, pos = read_varint(data, pos)
        elif wire == FIXED32:
            value, pos = data[pos : pos + 4], pos + 4
        elif wire == FIXED64:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == LEN:
            length, pos = read_varint(data, pos)
            value, pos = data[pos : pos + length], pos + length
        else:
            raise ModelFormatError("it holds a record of an unknown kind")
        if pos > n:
            raise ModelTruncatedError("the data ends in the middle of a record")
        yield number, wire, value, data[start:pos]


def looks_like_model(data: bytes) -> bool:
    """Whether ``data`` begins as a SentencePiece ``.model`` does: its first piece (field 1, length-delimited) whose
    own first field is the piece's UTF-8 text (every writer puts the pieces first). A file cut short after its
    first piece's text still does; a text file or random bytes almost never do.

    >>> model = bytes([0x0A, 0x09, 0x0A, 0x05]) + b"<unk>" + bytes([0x18, 0x02])
    >>> looks_like_model(model), looks_like_model(model[:9]), looks_like_model(b"# README"), looks_like_model(b"")
    (True, True, False, False)
    """
    if len(data) < 3 or data[0] != 0x0A:
        return False
    try:
        length, pos = read_varint(data, 1)
        piece = data[pos : pos + length]
        if not piece or piece[0] != 0x0A:
            return False
        text_length, start = read_varint(piece, 1)
        if start + text_length > length:
            return False
        text = piece[start : start + text_length]
        if len(text) == text_length:
            text.decode("utf-8")
        if len(piece) == length:
            for _ in iter_fields(piece):
                pass
    except (ModelFormatError, UnicodeDecodeError):
        return False
    return True


def _key(number: int, wire: int) -> bytes:
    return write_varint((number << 3) | wire)


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


# -- schema-driven messages ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class F:
    """One field of a message schema: number, kind and default (``repeated`` fields default to a new list)."""

    number: int
    kind: str  # "string", "bytes", "bool", "int32", "int64", "uint64", "enum", "float", or a ProtoMessage subclass name
    default: Any = None
    repeated: bool = False


class ProtoMessage:
    """A proto2 message with a fixed schema. Unset fields read as their default; ``has(name)`` tells them apart.

    Subclasses set ``SCHEMA`` (name -> :class:`F`). Construct with keyword arguments for the fields to set.
    """

    SCHEMA: ClassVar[dict[str, F]] = {}
    SUBMESSAGES: ClassVar[dict[str, type[ProtoMessage]]] = {}
    WHAT: ClassVar[str] = "settings"  # what its messages call it ("its trainer settings hold ...")

    def __init__(self, **values: Any):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_unknown", [])
        for name, value in values.items():
            setattr(self, name, value)

    def __getattr__(self, name: str) -> Any:
        schema = type(self).SCHEMA
        if name not in schema:
            raise AttributeError(name)
        values = self.__dict__["_values"]
        if name in values:
            return values[name]
        field = schema[name]
        if field.repeated:
            values[name] = []
            return values[name]
        return field.default

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in type(self).SCHEMA:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        self._values[name] = value

    def has(self, name: str) -> bool:
        value = self._values.get(name)
        return value is not None and not (type(self).SCHEMA[name].repeated and not value)

    def clear(self, name: str) -> None:
        self._values.pop(name, None)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._values.items() if not isinstance(v, list) or len(v) < 8)
        return f"{type(self).__name__}({shown})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.serialize() == other.serialize()  # type: ignore[union-attr]

    # -- parsing -------------------------------------------------------------------------------------------
    @classmethod
    def parse(cls, data: bytes) -> ProtoMessage:
        msg = cls()
        by_number = cls._by_number()
        values = msg._values
        for number, wire, raw, whole in iter_fields(data):
            entry = by_number.get(number)
            if entry is None:
                msg._unknown.append(whole)
                continue
            name, field = entry
            value = cls._decode(field, wire, raw)
            if field.repeated:
                if isinstance(value, list):  # packed repeated scalars
                    values.setdefault(name, []).extend(value)
                else:
                    values.setdefault(name, []).append(value)
            else:
                values[name] = value
        return msg

    @classmethod
    def _by_number(cls) -> dict[int, tuple[str, F]]:
        cache = cls.__dict__.get("_BY_NUMBER")
        if cache is None:
            cache = {f.number: (name, f) for name, f in cls.SCHEMA.items()}
            cls._BY_NUMBER = cache
        return cache

    @classmethod
    def _decode(cls, field: F, wire: int, raw: Any) -> Any:
        kind = field.kind
        if kind in cls.SUBMESSAGES:
            if wire != LEN:
                raise ModelFormatError(f"its {cls.WHAT} hold a value of the wrong kind")
            return cls.SUBMESSAGES[kind].parse(raw)
        if kind == "string":
            if wire != LEN:
                raise ModelFormatError(f"its {cls.WHAT} hold a value of the wrong kind")
            return raw.decode("utf-8", "surrogateescape")
        if kind == "bytes":
            return bytes(raw)
        if kind == "float":
            if wire == LEN:  # packed
                return list(struct.unpack(f"<{len(raw) // 4}f", raw))
            if wire != FIXED32:
                raise ModelFormatError(f"its {cls.WHAT} hold a value of the wrong kind")
            return struct.unpack("<f", raw)[0]
        if wire == LEN:  # packed varints
            out, pos = [], 0
            while pos < len(raw):
                v, pos = read_varint(raw, pos)
                out.append(cls._scalar(kind, v))
            return out
        if wire != VARINT:
            raise ModelFormatError(f"its {cls.WHAT} hold a value of the wrong kind")
        return cls._scalar(kind, raw)

    @staticmethod
    def _scalar(kind: str, v: int) -> Any:
        if kind == "bool":
            return v != 0
        if kind in ("int32", "enum"):
            return _signed(v, 32)
        if kind == "int64":
            return _signed(v, 64)
        return v  # uint64

    # -- writing -------------------------------------------------------------------------------------------
    def serialize(self) -> bytes:
        out = bytearray()
        values = self._values
        for name, field in sorted(type(self).SCHEMA.items(), key=lambda kv: kv[1].number):
            if name not in values or values[name] is None:
                continue
            items = values[name] if field.repeated else [values[name]]
            for item in items:
                out += self._encode(field, item)
        for whole in self._unknown:
            out += whole
        return bytes(out)

    def _encode(self, field: F, value: Any) -> bytes:
        kind, number = field.kind, field.number
        if kind in self.SUBMESSAGES:
            body = value.serialize()
            return _key(number, LEN) + write_varint(len(body)) + body
        if kind in ("string", "bytes"):
            body = value.encode("utf-8", "surrogateescape") if kind == "string" else bytes(value)
            return _key(number, LEN) + write_varint(len(body)) + body
        if kind == "float":
            return _key(number, FIXED32) + struct.pack("<f", value)
        if kind == "bool":
            return _key(number, VARINT) + write_varint(1 if value else 0)
        return _key(number, VARINT) + write_varint(int(value))


class TrainerSpec(ProtoMessage):
    WHAT: ClassVar[str] = "trainer settings"
    SCHEMA: ClassVar[dict[str, F]] = {
        "input": F(1, "string", repeated=True),
        "input_format": F(7, "string", ""),
        "model_prefix": F(2, "string", ""),
        "model_type": F(3, "enum", UNIGRAM),
        "vocab_size": F(4, "int32", 8000),
        "accept_language": F(5, "string", repeated=True),
        "self_test_sample_size": F(6, "int32", 0),
        "enable_differential_privacy": F(50, "bool", False),
        "differential_privacy_noise_level": F(51, "float", 0.0),
        "differential_privacy_clipping_threshold": F(52, "uint64", 0),
        "character_coverage": F(10, "float", 0.9995),
        "input_sentence_size": F(11, "uint64", 0),
        "shuffle_input_sentence": F(19, "bool", True),
        "mining_sentence_size": F(12, "int32", 0),
        "training_sentence_size": F(13, "int32", 0),
        "seed_sentencepiece_size": F(14, "int32", 1000000),
        "shrinking_factor": F(15, "float", 0.75),
        "max_sentence_length": F(18, "int32", 4192),
        "num_threads": F(16, "int32", 16),
        "num_sub_iterations": F(17, "int32", 2),
        "max_sentencepiece_length": F(20, "int32", 16),
        "split_by_unicode_script": F(21, "bool", True),
        "split_by_number": F(23, "bool", True),
        "split_by_whitespace": F(22, "bool", True),
        "treat_whitespace_as_suffix": F(24, "bool", False),
        "allow_whitespace_only_pieces": F(26, "bool", False),
        "split_digits": F(25, "bool", False),
        "pretokenization_delimiter": F(53, "string", ""),
        "control_symbols": F(30, "string", repeated=True),
        "user_defined_symbols": F(31, "string", repeated=True),
        "required_chars": F(36, "string", ""),
        "byte_fallback": F(35, "bool", False),
        "vocabulary_output_piece_score": F(32, "bool", True),
        "hard_vocab_limit": F(33, "bool", True),
        "use_all_vocab": F(34, "bool", False),
        "unk_id": F(40, "int32", 0),
        "bos_id": F(41, "int32", 1),
        "eos_id": F(42, "int32", 2),
        "pad_id": F(43, "int32", -1),
        "unk_piece": F(45, "string", "<unk>"),
        "bos_piece": F(46, "string", "<s>"),
        "eos_piece": F(47, "string", "</s>"),
        "pad_piece": F(48, "string", "<pad>"),
        "unk_surface": F(44, "string", " \u2047 "),
        "train_extremely_large_corpus": F(49, "bool", False),
        "seed_sentencepieces_file": F(54, "string", ""),
    }


class NormalizerSpec(ProtoMessage):
    WHAT: ClassVar[str] = "normalizer settings"
    SCHEMA: ClassVar[dict[str, F]] = {
        "name": F(1, "string", ""),
        "precompiled_charsmap": F(2, "bytes", b""),
        "add_dummy_prefix": F(3, "bool", True),
        "remove_extra_whitespaces": F(4, "bool", True),
        "escape_whitespaces": F(5, "bool", True),
        "normalization_rule_tsv": F(6, "string", ""),
    }


class SelfTestSample(ProtoMessage):
    WHAT: ClassVar[str] = "self-test samples"
    SCHEMA: ClassVar[dict[str, F]] = {"input": F(1, "string", ""), "expected": F(2, "string", "")}


class SelfTestData(ProtoMessage):
    WHAT: ClassVar[str] = "self-test data"
    SCHEMA: ClassVar[dict[str, F]] = {"samples": F(1, "Sample", repeated=True)}
    SUBMESSAGES: ClassVar[dict[str, type[ProtoMessage]]] = {"Sample": SelfTestSample}


@dataclass(slots=True)
class Piece:
    """One vocabulary entry: its text (``▁Hello``, ``<0xE3>``), score (higher merges first in BPE) and type."""

    piece: str
    score: float = 0.0
    type: int = NORMAL


_SCORE = struct.Struct("<f")


def _parse_piece(data: bytes) -> Piece:
    n = len(data)
    # The layout every writer uses (piece < 128 bytes, score, then a one-byte type unless NORMAL), read directly:
    # a 262,144-piece model loads several times faster than through iter_fields.
    end = 7 + data[1] if n > 6 and data[0] == 0x0A and data[1] < 0x80 else n + 1
    if end <= n and data[end - 5] == 0x15:
        if end == n or (end + 2 == n and data[end] == 0x18 and data[end + 1] < 0x80):
            ptype = data[end + 1] if end < n else NORMAL
            return Piece(data[2:end - 5].decode("utf-8", "surrogateescape"), _SCORE.unpack_from(data, end - 4)[0], ptype)
    piece, score, ptype = "", 0.0, NORMAL
    for number, wire, raw, _ in iter_fields(data):
        if number == 1 and wire == LEN:
            piece = raw.decode("utf-8", "surrogateescape")
        elif number == 2 and wire == FIXED32:
            score = struct.unpack("<f", raw)[0]
        elif number == 3 and wire == VARINT:
            ptype = _signed(raw, 32)
    return Piece(piece, score, ptype)


def _serialize_piece(p: Piece) -> bytes:
    body = p.piece.encode("utf-8", "surrogateescape")
    out = b"\x0a" + write_varint(len(body)) + body + b"\x15" + struct.pack("<f", p.score)
    if p.type != NORMAL:
        out += b"\x18" + write_varint(p.type)
    return out


@dataclass
class ModelProto:
    """A whole ``.model`` file: pieces in id order plus the specs."""

    pieces: list[Piece]
    trainer_spec: TrainerSpec
    normalizer_spec: NormalizerSpec
    denormalizer_spec: NormalizerSpec | None = None
    self_test_data: SelfTestData | None = None
    unknown: tuple[bytes, ...] = ()

    @classmethod
    def parse(cls, data: bytes) -> ModelProto:
        """Read a serialized ``ModelProto``.

        >>> m = ModelProto([Piece("<unk>", 0.0, UNKNOWN), Piece("▁a", -1.5)], TrainerSpec(model_type=BPE),
        ...                NormalizerSpec(name="identity"))
        >>> back = ModelProto.parse(m.serialize())
        >>> [(p.piece, p.score, p.type) for p in back.pieces], back.trainer_spec.model_type
        ([('<unk>', 0.0, 2), ('▁a', -1.5, 1)], 2)
        """
        pieces: list[Piece] = []
        trainer = normalizer = None
        denormalizer = selftest = None
        unknown: list[bytes] = []
        for number, wire, raw, whole in iter_fields(data):
            if wire != LEN:
                unknown.append(whole)
            elif number == 1:
                pieces.append(_parse_piece(raw))
            elif number == 2:
                trainer = TrainerSpec.parse(raw)
            elif number == 3:
                normalizer = NormalizerSpec.parse(raw)
            elif number == 4:
                selftest = SelfTestData.parse(raw)
            elif number == 5:
                denormalizer = NormalizerSpec.parse(raw)
            else:
                unknown.append(whole)
        if not pieces:
            raise ModelFormatError("it has no pieces")
        return cls(pieces, trainer or TrainerSpec(), normalizer or NormalizerSpec(), denormalizer, selftest,
                   tuple(unknown))

    def serialize(self) -> bytes:
        out = bytearray()
        for p in self.pieces:
            body = _serialize_piece(p)
            out += b"\x0a" + write_varint(len(body)) + body
        for number, msg in ((2, self.trainer_spec), (3, self.normalizer_spec), (4, self.self_test_data),
                            (5, self.denormalizer_spec)):
            if msg is not None:
                body = msg.serialize()
                out += _key(number, LEN) + write_varint(len(body)) + body
        for whole in self.unknown:
            out += whole
        return bytes(out)
