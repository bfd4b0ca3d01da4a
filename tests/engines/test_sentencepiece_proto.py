"""The hand-written ModelProto reader/writer: byte-exact round trips and clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engines.datafiles import verified_bytes
from app.engines.sentencepiece.proto import (
    BYTE,
    CONTROL,
    NORMAL,
    UNKNOWN,
    ModelFormatError,
    ModelProto,
    NormalizerSpec,
    Piece,
    TrainerSpec,
    read_varint,
    write_varint,
)


def test_mistral_model_parses_and_serializes_back_byte_for_byte():
    data = verified_bytes("sentencepiece/mistral-7b-v0.1.model")
    proto = ModelProto.parse(data)
    assert len(proto.pieces) == 32000
    assert [p.type for p in proto.pieces[:4]] == [UNKNOWN, CONTROL, CONTROL, BYTE]
    assert proto.pieces[3].piece == "<0x00>" and proto.pieces[258].piece == "<0xFF>"
    assert proto.trainer_spec.model_type == 2 and proto.trainer_spec.byte_fallback
    assert proto.trainer_spec.pad_id == -1  # a negative int32 (ten-byte varint)
    assert proto.normalizer_spec.name == "identity" and not proto.normalizer_spec.remove_extra_whitespaces
    assert proto.serialize() == data


@given(st.integers(0, 2**64 - 1))
def test_varints_round_trip(value):
    assert read_varint(write_varint(value), 0) == (value, len(write_varint(value)))


def test_unset_fields_read_as_schema_defaults_and_unknown_fields_survive():
    spec = TrainerSpec(vocab_size=123)
    assert spec.has("vocab_size") and not spec.has("byte_fallback")
    assert spec.byte_fallback is False and spec.unk_surface == " \u2047 " and spec.pad_id == -1
    unknown_field = bytes([0xF8, 0x0C, 0x01])  # field 200 (an extension), varint 1
    parsed = TrainerSpec.parse(spec.serialize() + unknown_field)
    assert parsed.vocab_size == 123 and parsed.serialize().endswith(unknown_field)
    with pytest.raises(AttributeError):
        TrainerSpec(no_such_field=1)


def test_pieces_scores_and_types_round_trip():
    proto = ModelProto(
        [Piece("<unk>", 0.0, UNKNOWN), Piece("▁hello", -3.5, NORMAL), Piece("<0x41>", 0.0, BYTE)],
        TrainerSpec(model_type=2, byte_fallback=True),
        NormalizerSpec(name="identity", add_dummy_prefix=False),
    )
    back = ModelProto.parse(proto.serialize())
    assert back.pieces == proto.pieces
    assert back.normalizer_spec.add_dummy_prefix is False


@pytest.mark.parametrize("data", [b"", b"\x0a\x05ab", b"\xff\xff\xff", b"\x07", b"not a model at all"])
def test_broken_files_raise_model_format_error(data):
    with pytest.raises(ModelFormatError):
        ModelProto.parse(data)
