"""Our unigram engine against the ``sentencepiece`` library: the sdist's test models, models the library trains here
with every option that matters (byte fallback, user-defined and control pieces, no dummy prefix, kept spaces), on
slices of every real-text corpus, hard strings and any text; and the lattice views."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from helpers import realtext
import sentencepiece as spm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from helpers.sentencepiece_referee import check_same, varied_text

from app.engines import registry
from app.engines.errors import TokenplayError
from app.engines.registry.loaders import load_tokenizer
from app.engines.sentencepiece.model import ModelLoadError, SentencePieceTokenizer
from app.engines.sentencepiece.proto import UNUSED, ModelProto, Piece
from app.engines.sentencepiece import normalizer, unigram
from app.engines.sentencepiece.normalizer import Normalizer
from app.engines.sentencepiece.unigram import UnigramTokenizer

DATA = Path(__file__).parents[1] / "data" / "sentencepiece"
SDIST_MODELS = ("botchan_en_unigram_1000.model", "kyoto_ja_unigram_8000.model")
HARD = [
    "", " ", "   a  b   ", "\n\n", "\t x", "😀👍🏽 👩‍👩‍👧‍👦", "e\u0301 é ①② ＡＢＣ ｶﾞ", "日本語の文章です。", "中文句子，测试。",
    "한국어 문장", "a" * 3000, "-" * 501, " " * 300 + "x", "\x00\x01\x7f", "ꙮ\U0010fffd\ufffd", "<s></s><unk>",
]
TRAINING = "\n".join(realtext.slices("en", 120, 400, seed=11) + realtext.slices("ja", 80, 300, seed=11)) if realtext.available() else ""
OPTIONS = {
    "defaults": dict(vocab_size=800),
    "bytes-user-control": dict(
        vocab_size=1000, byte_fallback=True, user_defined_symbols=["<tag>", "foo bar", "日本"], control_symbols=["<ctl>"],
        character_coverage=0.98,
    ),
    "identity-kept-spaces": dict(
        vocab_size=900, normalization_rule_name="identity", remove_extra_whitespaces=False, add_dummy_prefix=False,
        split_digits=True, allow_whitespace_only_pieces=True,
    ),
    "suffix-no-split": dict(vocab_size=700, treat_whitespace_as_suffix=True, split_by_whitespace=False),
}


def _train(tmp_path: Path, **options) -> bytes:
    realtext.require()
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TRAINING + "\nfoo bar <tag> baz\n" * 20, encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(tmp_path / "m"), model_type="unigram", num_threads=1, minloglevel=2,
        hard_vocab_limit=False, **options,
    )
    return (tmp_path / "m.model").read_bytes()


@pytest.fixture(scope="module", params=[*SDIST_MODELS, *sorted(OPTIONS)])
def pair(request, tmp_path_factory) -> tuple[UnigramTokenizer, spm.SentencePieceProcessor]:
    if request.param in SDIST_MODELS:
        data = (DATA / request.param).read_bytes()
    else:
        data = _train(tmp_path_factory.mktemp(request.param), **OPTIONS[request.param])
    return UnigramTokenizer(data), spm.SentencePieceProcessor(model_proto=data)


@pytest.mark.parametrize("corpus", realtext.NAMES)
def test_unigram_ids_equal_sentencepiece_on_real_text(pair, corpus):
    realtext.require()
    ours, theirs = pair
    for text in realtext.slices(corpus, 6, 2500, seed=5):
        assert ours.encode(text) == theirs.encode(text)
    whole = "".join(realtext.slices(corpus, 40, 2500, seed=9))  # long enough for the scores to be re-based
    assert ours.encode(whole) == theirs.encode(whole)


def test_unigram_matches_sentencepiece_on_hard_strings(pair):
    ours, theirs = pair
    for text in HARD:
        check_same(ours, theirs, text, windows=bool(text.strip()))
    check_same(ours, theirs, varied_text(300, seed=4) + " foo bar <tag><ctl> ＡＢＣ")


FIXTURE_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
TRICKY = st.sampled_from(list("ab -fo<tag>r日本 \t\n\u3000\uff21\uff76\uff9e\u00c5\ud55c\u2460\U0001f600"))


@settings(max_examples=50, deadline=None, suppress_health_check=FIXTURE_OK)
@given(text=st.text(alphabet=TRICKY | st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_unigram_matches_sentencepiece_on_any_text(pair, text):
    check_same(*pair, text, windows=False)


def test_unigram_decodes_random_ids_like_sentencepiece(pair):
    ours, theirs = pair
    rng = random.Random(17)
    for _ in range(200):
        ids = rng.choices(range(ours.n_vocab), k=rng.randrange(20))
        assert ours.decode(ids) == theirs.decode(ids)


def test_unused_pieces_never_take_part_like_the_library(tmp_path):
    proto = ModelProto.parse(_train(tmp_path, vocab_size=800, byte_fallback=True))
    for i, p in enumerate(proto.pieces):
        if p.type == 1 and (len(p.piece) == 1 or i % 4 == 0):
            proto.pieces[i] = Piece(p.piece, p.score, UNUSED)
    data = proto.serialize()
    ours, theirs = UnigramTokenizer(data), spm.SentencePieceProcessor(model_proto=data)
    assert ours.has_unused
    for text in realtext.slices("en", 5, 1500, seed=2) + HARD:
        check_same(ours, theirs, text, windows=False)


def test_loaders_pick_the_engine_by_model_type(tmp_path):
    unigram = load_tokenizer(_train(tmp_path, vocab_size=600))
    assert type(unigram) is UnigramTokenizer
    bpe = load_tokenizer((Path(__file__).parents[2] / "tokenizers/sentencepiece/mistral-7b-v0.1.model").read_bytes())
    assert type(bpe) is SentencePieceTokenizer


def test_broken_unigram_models_are_refused(tmp_path):
    proto = ModelProto.parse((DATA / SDIST_MODELS[0]).read_bytes())
    proto.pieces[10] = Piece(proto.pieces[10].piece, float("nan"), 1)
    with pytest.raises(ModelLoadError, match="not a finite number"):
        UnigramTokenizer(proto.serialize())
    proto = ModelProto.parse((DATA / SDIST_MODELS[0]).read_bytes())
    proto.pieces[0] = Piece(proto.pieces[0].piece, 0.0, 1)  # no <unk> left
    with pytest.raises(TokenplayError, match="<unk>"):
        load_tokenizer(proto.serialize())


# -- the lattice of a word ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def botchan() -> tuple[UnigramTokenizer, spm.SentencePieceProcessor]:
    data = (DATA / SDIST_MODELS[0]).read_bytes()
    return UnigramTokenizer(data), spm.SentencePieceProcessor(model_proto=data)


@pytest.mark.parametrize("word", ["unbelievable", "Hello world", "ꙮx", "newest widest"])
def test_lattice_best_path_is_the_encoding(botchan, word):
    ours, theirs = botchan
    normalized, nodes = ours.lattice(word)
    path = sorted((n.start, n.end, n.id) for n in nodes if n.best)
    assert [i for _, _, i in path] == theirs.encode(word)
    assert "".join(normalized[a:b] for a, b, _ in path) == normalized  # the best path tiles the word
    for node in nodes:
        assert node.piece == normalized[node.start : node.end]
        if node.id != ours.unk_id:
            assert ours.pieces[node.id] == node.piece and node.score == theirs.GetScore(node.id)


def test_nbest_segmentations_are_the_librarys(botchan):
    ours, theirs = botchan
    for word in ("unbelievable", "newest", "widest lower"):
        got = ours.nbest(word, 5)
        want = theirs.nbest_encode_as_ids(word, 5)
        assert [ids for ids, _ in got] == want
        scores = [score for _, score in got]
        assert scores == sorted(scores, reverse=True)


# -- the compiled twins (app/engines/sentencepiece/_lattice.c) against the Python loops -------------------------

compiled = pytest.mark.skipif(
    unigram._compiled is None or normalizer._compiled is None,
    reason="app/engines/sentencepiece/_lattice.c is not built here",
)
TWIN_TEXT = TRICKY | st.sampled_from(["  ", "foo bar", "<tag>", "日本", "ｶﾞ", "e\u0301", "\u200d", "ﬁ", "㍿", "(,)"])


def test_the_compiled_twin_is_built_where_a_c_compiler_is():
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler on this machine: the Python loops serve (slower)")
    assert unigram._compiled is not None or os.environ.get("TOKENPLAY_PURE_PYTHON") == "1"
    assert normalizer._compiled is not None or os.environ.get("TOKENPLAY_PURE_PYTHON") == "1"


def _same_twins(tokenizer: UnigramTokenizer, text: str) -> None:
    got = tokenizer.normalizer.normalize(text)
    assert got == tokenizer.normalizer._normalize_python(text)
    if got[0]:
        assert tokenizer._segments(got[0]) == tokenizer._segments_python(got[0])


@compiled
@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
@given(parts=st.lists(TWIN_TEXT | st.text(st.characters(blacklist_categories=("Cs",)), max_size=5), max_size=30))
def test_compiled_normalizer_and_viterbi_equal_the_python_loops(pair, parts):
    _same_twins(pair[0], "".join(parts))


@compiled
@pytest.mark.parametrize("flags", range(16))
@settings(max_examples=25, deadline=None, suppress_health_check=FIXTURE_OK)
@given(parts=st.lists(TWIN_TEXT, max_size=30))
def test_compiled_normalizer_equals_python_with_every_whitespace_option(botchan, flags, parts):
    """Every combination of the spec's whitespace options, with the botchan charsmap and user-defined symbols."""
    text = "".join(parts)
    options = dict(
        add_dummy_prefix=bool(flags & 1), remove_extra_whitespaces=bool(flags & 2), escape_whitespaces=bool(flags & 4),
        treat_whitespace_as_suffix=bool(flags & 8), user_defined=["foo bar", "<tag>", " ", "日本"],
    )
    for charsmap in (botchan[0].normalizer_spec.precompiled_charsmap, b""):
        norm = Normalizer(charsmap=charsmap, **options)
        assert norm.normalize(text) == norm._normalize_python(text)


@compiled
def test_compiled_twins_equal_the_python_loops_on_real_and_hostile_text():
    realtext.require()
    jurassic = registry.get("jurassic-2")
    squeezed = "".join("".join(realtext.slices("en", 20, 3000, seed=3) + realtext.slices("ja", 20, 3000)).split())
    for text in (*realtext.slices("ja", 3, 4000, seed=8), squeezed, "a" * 20_000, "\U0001F468\u200d" * 3000):
        _same_twins(jurassic, text)


def test_every_window_is_placed_like_a_slice_of_all_the_tokens(pair):
    """Windows that start inside a character's byte pieces, on a fused run of ``<unk>`` and at the ends."""
    ours, theirs = pair
    text = "ꙮꙮ\U0010fffd x ꙮ日本語 ＡＢＣ foo bar <tag> " * 3 + "😀👍🏽 \U0010fffdꙮ"
    full = ours.tokenize(text)
    assert full.ids == theirs.encode(text)
    for offset in range(len(full.ids) + 2):
        for limit in (1, 2, 5):
            assert ours.tokenize(text).window(offset, limit) == full.tokens[offset : offset + limit]
