"""Our SentencePiece trainers against sentencepiece's own: the same pieces (text, score, type), in the same order, for
BPE and unigram, on real text (English, Japanese, C, a mix), generated text and several option sets; models whose
ids equal the reference's on any text; the options refused as sentencepiece refuses them.

The referee is ``sentencepiece.SentencePieceTrainer.train(model_type=..., num_threads=1)`` on the same corpus (one
sentence a line) and options.
"""

from __future__ import annotations

import math

import pytest
import sentencepiece as spm
from helpers import realtext
from helpers.spm_trainer import reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engines.sentencepiece.bpe_trainer import train_bpe
from app.engines.sentencepiece.proto import ModelProto
from app.engines.sentencepiece.trainer_options import TrainerOptions, TrainerOptionsError
from app.engines.sentencepiece.training_corpus import CorpusError, OutOfReach, PieceRule, script_of
from app.engines.sentencepiece.unigram_trainer import WHY, train_unigram


def ours(text: str, vocab_size: int, model_type: str, **options) -> ModelProto:
    opts = TrainerOptions.from_dict(options)
    if model_type == "bpe":
        return train_bpe(text, vocab_size, opts).model
    return ModelProto.parse(train_unigram(text, vocab_size, opts).model)


def assert_same_pieces(got: ModelProto, want: ModelProto, tolerance: float = 0.0) -> None:
    assert [(p.piece, p.type) for p in got.pieces] == [(p.piece, p.type) for p in want.pieces]
    worst = max(abs(a.score - b.score) for a, b in zip(got.pieces, want.pieces))
    assert worst <= tolerance, f"a score differs by {worst}"


def excerpt(name: str, chars: int) -> str:
    realtext.require()
    return realtext.read(name)[:chars]


CORPORA = [("en", 60_000, 1_200), ("ja", 40_000, 2_500), ("c", 40_000, 900)]

OPTION_SETS = {
    "defaults": {},
    "llama-like": {"byte_fallback": True, "split_digits": True, "normalization_rule_name": "identity",
                   "remove_extra_whitespaces": False, "allow_whitespace_only_pieces": True,
                   "character_coverage": 0.99995},
    "suffix": {"treat_whitespace_as_suffix": True, "normalization_rule_name": "nmt_nfkc_cf"},
    "no-script-split": {"split_by_unicode_script": False, "split_by_number": False, "max_sentencepiece_length": 5,
                        "add_dummy_prefix": False, "normalization_rule_name": "nfkc"},
    "ids-and-symbols": {"user_defined_symbols": ["the", "<tag>"], "unk_id": 3, "bos_id": -1, "eos_id": 0,
                        "pad_id": 1, "character_coverage": 1.0, "normalization_rule_name": "nfkc_cf"},
}


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
@pytest.mark.parametrize("name,chars,vocab", CORPORA)
def test_real_text_gives_the_references_pieces(tmp_path, model_type, name, chars, vocab):
    text = excerpt(name, chars)
    assert_same_pieces(ours(text, vocab, model_type), reference(tmp_path, text, vocab, model_type))


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
@pytest.mark.parametrize("options", sorted(OPTION_SETS))
def test_option_sets_give_the_references_pieces(tmp_path, model_type, options):
    realtext.require()
    text = realtext.mixed_en_c_ja(40_000, seed=3)
    opts = OPTION_SETS[options]
    assert_same_pieces(ours(text, 1_200, model_type, **opts), reference(tmp_path, text, 1_200, model_type, **opts))


def test_bpe_without_splitting_by_whitespace(tmp_path):
    text = excerpt("c", 20_000)
    opts = {"split_by_whitespace": False}
    for model_type in ("bpe", "unigram"):
        assert_same_pieces(ours(text, 700, model_type, **opts), reference(tmp_path, text, 700, model_type, **opts))


LINE = st.text(alphabet=st.sampled_from(list("abcde fgh,.1234 ▁あいうアイ漢字éü\t<s>")), min_size=1, max_size=30)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINE, min_size=3, max_size=40), model_type=st.sampled_from(["bpe", "unigram"]),
       byte_fallback=st.booleans(), split_digits=st.booleans())
def test_generated_texts_give_the_references_pieces_or_its_refusal(tmp_path, lines, model_type, byte_fallback,
                                                                  split_digits):
    text = "\n".join(lines) + "\n"
    opts = {"byte_fallback": byte_fallback, "split_digits": split_digits, "character_coverage": 1.0}
    vocab = 300 if byte_fallback else 40
    try:
        want = reference(tmp_path, text, vocab, model_type, **opts)
    except RuntimeError:  # sentencepiece refuses: we refuse too, naming vocab_size (or the empty corpus)
        with pytest.raises(CorpusError) as refused:
            ours(text, vocab, model_type, **opts)
        assert refused.value.field in ("vocab_size", "corpus")
        return
    assert_same_pieces(ours(text, vocab, model_type, **opts), want)


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_the_exported_model_gives_the_references_ids(tmp_path, model_type):
    text = excerpt("en", 30_000)
    opts = {"byte_fallback": True}
    mine = ours(text, 800, model_type, **opts)
    path = tmp_path / "ours.model"
    path.write_bytes(mine.serialize())
    sp_ours = spm.SentencePieceProcessor(model_file=str(path))
    want = reference(tmp_path, text, 800, model_type, **opts)
    ref_path = tmp_path / "ref.model"
    ref_path.write_bytes(want.serialize())
    sp_ref = spm.SentencePieceProcessor(model_file=str(ref_path))
    for probe in (excerpt("en", 2_000)[-600:], excerpt("ja", 300), "한국어 텍스트입니다", "  odd   spacing\there ",
                  "<s> 12345 ünïcödé"):
        assert sp_ours.encode(probe) == sp_ref.encode(probe)


def test_bpe_merges_are_recorded_with_their_frequency(tmp_path):
    text = excerpt("en", 20_000)
    run = train_bpe(text, 600)
    want = reference(tmp_path, text, 600, "bpe")
    assert [m.piece for m in run.merges] == [p.piece for p in want.pieces[3:3 + len(run.merges)]]
    tokens = run.initial_tokens
    for m in run.merges:  # the winner heads its own pair table, and the counts only fall as merges go
        assert m.top[0] == (m.left, m.right, m.count)
        assert all(c <= m.count for _, _, c in m.top)
        tokens -= m.replaced
        assert m.corpus_tokens == tokens and 0 < m.replaced <= m.count


@pytest.mark.parametrize("text,size", [(None, 600), (("low lower lowest newer wider " * 3 + "\n") * 2, 18)],
                         ids=["en", "small"])
def test_unigram_rounds_are_recorded(tmp_path, text, size):
    """Every round lists the pieces it removed and why; the last ends with sentencepiece's final choice (the pieces
    beyond the size go, the required characters the EM steps dropped come back), so the last round's scores are the
    model's. The small corpus's EM steps drop characters that longer pieces cover, which the final choice restores."""
    text = text or excerpt("en", 20_000)
    run = train_unigram(text, size)
    assert [(p.piece, p.score) for p in run.final] == [(p.piece, p.score) for p in reference(tmp_path, text, size, "unigram").pieces]
    assert len(run.scores) == len(run.rounds) + 1 == len(run.corpus_tokens)
    assert all(not math.isnan(s) for s in run.scores[0])  # the seed: every piece has a score
    sizes = [r.vocab_size for r in run.rounds]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == size
    alive = sum(not math.isnan(s) for s in run.scores[0])
    for r, after in zip(run.rounds, run.scores[1:]):  # each round removes exactly the pieces it lists
        now = sum(not math.isnan(s) for s in after)
        assert alive - now == len(r.removed) - len(r.restored)
        assert {why for _, _, why in r.removed} <= set(WHY) and len(r.em) == 2
        losses = [loss for _, loss, why in r.removed if why == "loss"]
        assert losses == sorted(losses) and all(math.isnan(loss) for _, loss, why in r.removed if why != "loss")
        alive = now
    last = {run.pieces[i]: s for i, s in enumerate(run.scores[-1]) if not math.isnan(s)}
    assert last == {p.piece: p.score for p in run.final[3:]}  # the last round's model is the trained one
    restored = run.rounds[-1].restored
    dropped = {p for r in run.rounds for p, _, why in r.removed if why != "final"}
    assert all(len(c) == 1 and c in last and c in dropped for c in restored)
    if size == 18:
        assert restored


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_a_vocab_size_the_corpus_cannot_fill_is_refused_like_sentencepiece(tmp_path, model_type):
    text = "abc abd\nabc\n"
    with pytest.raises(RuntimeError, match="Vocabulary size"):
        reference(tmp_path, text, 60, model_type)
    with pytest.raises(CorpusError, match="at most") as refused:
        ours(text, 60, model_type)
    assert refused.value.field == "vocab_size"


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_a_number_of_pieces_to_learn_trains_the_size_it_makes(tmp_path, model_type):
    """``learned`` asks for merges (BPE) or longer pieces (unigram) beyond the meta pieces and the characters the
    corpus requires: the model is sentencepiece's at the size that makes, and one more than the corpus allows is
    refused with the most it allows."""
    text = excerpt("en", 6_000)
    opts = TrainerOptions(byte_fallback=True)
    trained = train_bpe(text, options=opts, learned=80).model if model_type == "bpe" else ModelProto.parse(
        train_unigram(text, options=opts, learned=80).model)
    assert sum(p.type == 1 and len(p.piece) > 1 for p in trained.pieces) == 80
    assert_same_pieces(trained, reference(tmp_path, text, len(trained.pieces), model_type, byte_fallback=True),
                       tolerance=1e-4)
    with pytest.raises(OutOfReach) as refused:
        ours("abc abd\nabc\n", 60, model_type)
    assert refused.value.least == 3 + 5 and 3 + 5 < refused.value.reached < 60  # ▁ a b c d
    with pytest.raises(RuntimeError, match="Vocabulary size"):
        reference(tmp_path, "abc abd\nabc\n", refused.value.reached + 1, model_type)
    assert len(ours("abc abd\nabc\n", refused.value.reached, model_type).pieces) == refused.value.reached


@pytest.mark.parametrize(
    "options,field",
    [
        ({"character_coverage": 0}, "sentencepiece.character_coverage"),
        ({"character_coverage": 1.01}, "sentencepiece.character_coverage"),
        ({"byte_fallback": "yes"}, "sentencepiece.byte_fallback"),
        ({"max_sentencepiece_length": 2.5}, "sentencepiece.max_sentencepiece_length"),
        ({"normalization_rule_name": "nfd"}, "sentencepiece.normalization_rule_name"),
        ({"no_such_option": 1}, "sentencepiece.no_such_option"),
        ({"user_defined_symbols": "abc"}, "sentencepiece.user_defined_symbols"),
        ({"bos_id": 0}, "sentencepiece.bos_id"),
    ],
)
def test_bad_options_are_refused_naming_the_field(options, field):
    with pytest.raises(TrainerOptionsError) as refused:
        TrainerOptions.from_dict(options)
    assert refused.value.field == field
    assert field in str(refused.value)


def test_script_table_agrees_with_sentencepiece_on_sampled_code_points(tmp_path):
    """Two characters pair into a piece only when sentencepiece's table gives them one script: train on pairs of
    code points from many blocks and compare which pairs each trainer merges."""
    rule = PieceRule(TrainerOptions())
    points = [0x41, 0x2C, 0x3B1, 0x416, 0x5D0, 0x627, 0x915, 0xE01, 0x10D0, 0x3042, 0x30A2, 0x4E00, 0xAC00, 0x0301,
              0x1F600, 0x2160, 0xFF21, 0x16A0, 0x1000, 0x0F40, 0x13A0, 0x1E00, 0x2C00, 0xA500, 0x10400]
    pairs = [chr(a) + chr(b) for a in points for b in points if a != b]
    text = "\n".join(f"{p} {p} {p}" for p in pairs) + "\n"
    want = reference(tmp_path, text, 1500, "bpe", character_coverage=1.0, hard_vocab_limit=False,
                     normalization_rule_name="identity")
    merged = {p.piece.lstrip("▁") for p in want.pieces if len(p.piece.lstrip("▁")) == 2}
    for pair in pairs:
        assert (pair in merged) == rule.valid(pair), (pair, [hex(ord(c)) for c in pair], script_of(ord(pair[0])))


@pytest.mark.parametrize("options", ["defaults", "llama-like", "suffix"])
def test_bpe_python_loop_equals_its_compiled_twin(monkeypatch, options):
    """The merge loop in Python (TOKENPLAY_PURE_PYTHON=1) and compiled (_spm_train.c) make the same records."""
    realtext.require()
    text = realtext.mixed_en_c_ja(20_000, seed=5)
    opts = TrainerOptions.from_dict(OPTION_SETS[options])
    compiled = train_bpe(text, 700, opts)
    monkeypatch.setenv("TOKENPLAY_PURE_PYTHON", "1")
    python = train_bpe(text, 700, opts)
    assert python.merges == compiled.merges
    assert python.serialize() == compiled.serialize()


def test_unigram_without_its_compiled_module_refuses_in_words(monkeypatch):
    """The unigram trainer has no Python twin: where _spm_unigram.c is not built it says so and what to do."""
    from app.engines.sentencepiece import unigram_trainer

    monkeypatch.setattr(unigram_trainer, "twin", lambda module, name: None)
    with pytest.raises(CorpusError, match="needs the compiled module app.engines.sentencepiece._spm_unigram") as refused:
        train_unigram("the cat sat\nthe mat\n", 20)
    assert refused.value.field == "algorithm" and "make install-dev" in str(refused.value)
