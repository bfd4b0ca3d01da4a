"""Our SentencePiece engine against the ``sentencepiece`` library: Mistral 7B and models with every option."""

from __future__ import annotations

import pytest
from helpers import realtext
import sentencepiece as spm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from helpers.samples import ALL
from helpers.sentencepiece_referee import check_same, varied_text

from app.engines import registry
from app.engines.datafiles import data_path
from app.engines.errors import InvalidIdsError, InvalidTextError
from app.engines.sentencepiece import SentencePieceTokenizer
from app.engines.sentencepiece.model import ModelLoadError, decode_utf8_like_sentencepiece
from app.engines.sentencepiece.proto import UNUSED, USER_DEFINED, ModelProto, Piece

MISTRAL = "sentencepiece/mistral-7b-v0.1.model"


@pytest.fixture(scope="module")
def mistral() -> SentencePieceTokenizer:
    return registry.get("mistral-7b")


@pytest.fixture(scope="module")
def mistral_python() -> SentencePieceTokenizer:
    """Mistral run by the Python loop over chunks (not sentencepiece/_chunks.c)."""
    tok = SentencePieceTokenizer.from_data_file("sentencepiece/mistral-7b-v0.1.model")
    tok._chunker_c = None
    return tok


@pytest.fixture(scope="module")
def oracle() -> spm.SentencePieceProcessor:
    return spm.SentencePieceProcessor(model_file=str(data_path(MISTRAL)))


# -- Mistral 7B ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ALL))
def test_mistral_ids_equal_sentencepiece_on_samples(mistral, oracle, name):
    text = ALL[name]
    for variant in (text, " " + text, text + "  ", "  " + text + "\n "):
        assert mistral.encode(variant) == oracle.encode(variant)


def test_mistral_ids_equal_sentencepiece_on_a_large_varied_text(mistral, oracle):
    text = varied_text()
    ids = oracle.encode(text)
    assert len(text) > 100_000
    assert mistral.encode(text) == ids
    assert mistral.encode(text) == ids  # second run from the chunk cache
    assert mistral.decode(ids) == oracle.decode(ids)
    result = mistral.tokenize(text)
    assert result.ids == ids
    assert "".join(s.text for s in result.segments()) == text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80))
def test_mistral_matches_sentencepiece_on_any_text(mistral, oracle, text):
    ids = oracle.encode(text)
    assert mistral.encode(text) == ids
    assert mistral.decode(ids) == oracle.decode(ids)
    result = mistral.tokenize(text)
    assert result.ids == ids
    assert "".join(s.text for s in result.segments()) == text


CHUNKY = st.sampled_from(["▁", "▁▁", " ", "a", "Z", "é", "7", ".", "-", "(", "日", "本", "の", "ア", "😀", "\n", "\t",
                          "\u0301", "ꙮ", "一个", "<", "/"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(CHUNKY, max_size=120).map("".join) | st.text(max_size=60))
def test_compiled_chunks_equal_the_chunk_regex_on_any_text(mistral, mistral_python, text):
    """Every class of character (in no piece, the space symbol, word and other runs) and runs past 48 characters."""
    if mistral._chunker_c is None:
        pytest.skip("sentencepiece/_chunks.c is not built here")
    normalized = mistral.normalizer.normalize_text(text)
    assert mistral._chunker_c.chunks(normalized) == mistral._chunk_re.findall(normalized)
    assert mistral.encode(text) == mistral_python.encode(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 31999), max_size=30) | st.lists(st.integers(0, 300), max_size=30))
def test_mistral_decode_equals_sentencepiece_on_any_ids(mistral, oracle, ids):
    assert mistral.decode(ids) == oracle.decode(ids)


def test_mistral_tokens_show_pieces_and_group_byte_fallback(mistral):
    text = "Hello ꙮ world"
    result = mistral.tokenize(text)
    assert [t.text for t in result.tokens][:2] == ["▁Hello", "▁"]
    assert result.tokens[0].bytes == b" Hello" and (result.tokens[0].start, result.tokens[0].end) == (0, 5)
    fallback = [t for t in result.tokens if t.byte_fallback]
    assert [t.text for t in fallback] == ["<0xEA>", "<0x99>", "<0xAE>"]
    assert [t.bytes for t in fallback] == [b"\xea", b"\x99", b"\xae"]
    assert {(t.start, t.end) for t in fallback} == {(6, 7)}
    assert mistral.count_byte_fallback(result.ids) == 3
    longer = mistral.tokenize(text * 3)
    assert not any(t.byte_fallback for t in longer.window(0, 2)) and mistral.count_byte_fallback(longer.ids) == 9
    segments = result.segments()
    assert "ꙮ" in [s.text for s in segments]
    assert "".join(s.text for s in segments) == text


def test_mistral_vocabulary_facts(mistral, oracle):
    assert mistral.n_vocab == oracle.vocab_size() == 32000
    assert mistral.special_tokens == {"<s>": 1, "</s>": 2}
    assert mistral.token_bytes(1) == b"" and mistral.token_bytes(0) == " \u2047 ".encode()
    assert mistral.token_bytes(3 + 0xE3) == b"\xe3"
    for i in (0, 1, 2, 3, 259, 500, 31999):
        assert mistral.id_to_piece(i) == oracle.id_to_piece(i)
        assert mistral.piece_to_id(oracle.id_to_piece(i)) == i
    assert mistral.piece_to_id("no such piece") == oracle.piece_to_id("no such piece") == 0
    assert mistral.encode("<s>hi</s>") == oracle.encode("<s>hi</s>")  # control text is plain text
    assert mistral.byte_fallback is True


def test_invalid_input_and_ids_say_what_is_wrong(mistral):
    with pytest.raises(InvalidIdsError, match="valid ids are 0..31999"):
        mistral.decode([5, 32000])
    with pytest.raises(InvalidIdsError):
        mistral.decode([-1])
    with pytest.raises(InvalidTextError):
        mistral.encode("bad \udc80")


def test_decode_replaces_each_invalid_byte_like_sentencepiece():
    assert decode_utf8_like_sentencepiece(b"\xe3\x81") == "\ufffd\ufffd"
    assert decode_utf8_like_sentencepiece(b"\xc0\x80a\xf0\x9f\x98\x80") == "\ufffd\ufffda\U0001f600"


def test_model_without_pieces_or_of_another_type_is_refused(tmp_path):
    proto = ModelProto.parse(data_path(MISTRAL).read_bytes())
    proto.trainer_spec.model_type = 1
    with pytest.raises(ModelLoadError, match="unigram"):
        SentencePieceTokenizer(proto)


# -- every normalizer/model option, with models the library trains ---------------------------------------------

CORPUS = "\n".join(ALL[k] for k in sorted(ALL) if k != "long_run") * 3 + "\nfoo bar <tag> baz\n" * 30


def test_mistral_ids_equal_sentencepiece_on_long_single_chunks(mistral, oracle):
    """The compiled merge table's heap on long chunks (merging.merge_table), fresh and from the chunk cache."""
    fresh = SentencePieceTokenizer.from_data_file(MISTRAL)
    for label, text in realtext.long_runs().items():
        ids = oracle.encode(text)
        assert fresh.encode(text) == ids, label
        result = mistral.tokenize(text)
        assert result.ids == ids, label
        assert "".join(s.text for s in result.segments()) == text, label


def _train_library_model(tmp_path, **options) -> bytes:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    prefix = tmp_path / "m"
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(prefix), model_type="bpe", num_threads=1, minloglevel=2,
        hard_vocab_limit=False, **options,
    )
    return (tmp_path / "m.model").read_bytes()


MODEL_OPTIONS = {
    "nfkc-defaults": dict(vocab_size=300),
    "nfkc-bytes-userdefined": dict(
        vocab_size=600, byte_fallback=True, user_defined_symbols=["<tag>", "foo bar"], control_symbols=["<ctl>"]
    ),
    "identity-suffix-ws": dict(
        vocab_size=800, normalization_rule_name="identity", treat_whitespace_as_suffix=True,
        remove_extra_whitespaces=False,
    ),
    "no-split-by-whitespace": dict(vocab_size=800, split_by_whitespace=False, add_dummy_prefix=False),
    "whitespace-only-pieces": dict(
        vocab_size=1100, normalization_rule_name="identity", remove_extra_whitespaces=False,
        allow_whitespace_only_pieces=True, split_digits=True, byte_fallback=True,
    ),
}


@pytest.fixture(scope="module", params=sorted(MODEL_OPTIONS))
def library_model(request, tmp_path_factory):
    data = _train_library_model(tmp_path_factory.mktemp(request.param), **MODEL_OPTIONS[request.param])
    return SentencePieceTokenizer(data), spm.SentencePieceProcessor(model_proto=data)


def _with_unused(data: bytes) -> bytes:
    """The same model with some merged pieces marked UNUSED (they must be split back after merging)."""
    proto = ModelProto.parse(data)
    normal = [i for i, p in enumerate(proto.pieces) if p.type == 1 and len(p.piece) > 2]
    for i in normal[::3]:
        proto.pieces[i] = Piece(proto.pieces[i].piece, proto.pieces[i].score, UNUSED)
    return proto.serialize()


def test_library_models_encode_identically_on_varied_text(library_model):
    ours, theirs = library_model
    text = varied_text(400, seed=3) + " foo bar <tag><ctl> ＡＢＣ　ｶﾀｶﾅ ①②"
    check_same(ours, theirs, text)
    for line in text.splitlines():
        check_same(ours, theirs, line, windows=False)


FIXTURE_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
TRICKY = st.sampled_from(list("ab fo<tag>r \t\n\u3000\uff21\uff76\uff9e\u00c5\ud55c\u2460\U0001f600"))


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
@given(text=st.text(alphabet=TRICKY | st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_library_models_encode_identically_on_any_text(library_model, text):
    check_same(*library_model, text)


def test_unused_pieces_are_split_back_like_the_library(tmp_path):
    data = _with_unused(_train_library_model(tmp_path, vocab_size=1000, byte_fallback=True))
    ours, theirs = SentencePieceTokenizer(data), spm.SentencePieceProcessor(model_proto=data)
    assert ours.has_unused and ours._chunk_re is None
    for line in varied_text(300, seed=5).splitlines():
        check_same(ours, theirs, line, windows=False)


def test_user_defined_pieces_stay_whole(tmp_path):
    data = _train_library_model(tmp_path, **MODEL_OPTIONS["nfkc-bytes-userdefined"])
    ours = SentencePieceTokenizer(data)
    assert USER_DEFINED in ours.types
    assert "<tag>" in ours.encode_pieces("x<tag>y")


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
@given(data=st.data())
def test_library_models_decode_any_ids_like_the_library(library_model, data):
    ours, theirs = library_model
    ids = data.draw(st.lists(st.integers(0, ours.n_vocab - 1), max_size=20))
    assert ours.decode(ids) == theirs.decode(ids)
