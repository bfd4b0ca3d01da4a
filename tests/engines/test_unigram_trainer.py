"""Our unigram trainer: the same pruning order as a brute-force reference on tiny corpora, rounds as data, models
that ``sentencepiece`` and our engine encode identically, and its compiled twin
(app/engines/sentencepiece/_unigram_train.c) giving the Python loops' numbers bit for bit."""

from __future__ import annotations

import os
import shutil
from collections import Counter

import pytest
from helpers import realtext
import sentencepiece as spm
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers.unigram_reference import ReferenceUnigram

from app.engines.sentencepiece.unigram import UnigramTokenizer
from app.engines.sentencepiece.unigram_trainer import UnigramTrainer, digamma, substring_counts, train_unigram
from app.engines.compiled import twin
from app.engines.training import TrainingError

TINY = {
    "classic": ("low lower newest widest\n" * 3 + "low low lowest wider\nnew news newer\n", 300),
    "sentences": ("the cat sat on the mat\nthe dog sat on the log\na cat and a dog\nthat hat\n" * 2, 300),
    "japanese": ("東京都の天気\n京都の天気は晴れ\n東京の空\n", 275),
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_pruning_order_equals_the_reference(name):
    corpus, size = TINY[name]
    ours = UnigramTrainer(corpus, size)
    reference = ReferenceUnigram(corpus, size)
    want = reference.rounds()
    got = []
    while not ours.done:
        record = ours.round()
        got.append([p for p, _ in record.removed])
        if not record.removed:
            break
    assert got == want
    assert sum(map(len, got)) > 5


def test_losses_equal_the_reference():
    corpus, size = TINY["sentences"]
    ours, reference = UnigramTrainer(corpus, size), ReferenceUnigram(corpus, size)
    for _ in range(2):
        ours.em_step(ours._lattices())
        reference.em()
    ours_losses = [(ours.pieces[i], loss) for loss, i in ours.losses(ours._lattices())]
    ref_losses = reference.prune_order()
    assert [p for p, _ in ours_losses] == [p for p, _ in ref_losses]
    assert [loss for _, loss in ours_losses] == pytest.approx([loss for _, loss in ref_losses], rel=1e-9, abs=1e-12)


def test_digamma_recurrence():
    for x in (0.5, 1.0, 2.5, 7.0, 40.0):
        assert digamma(x + 1) == pytest.approx(digamma(x) + 1 / x, abs=1e-9)  # the series is good to ~1e-10


def test_rounds_are_recorded_as_data():
    trained = train_unigram(TINY["sentences"][0] * 3, 290)
    assert trained.rounds and trained.rounds[-1].vocab_size <= 290
    sizes = [r.vocab_size for r in trained.rounds]
    assert sizes == sorted(sizes, reverse=True)
    step = trained.rounds[0].to_dict()
    assert set(step) == {"round", "removed", "vocab_size", "log_likelihood"}
    assert all(set(r) == {"piece", "loss"} for r in step["removed"])
    assert len(trained.scores) == len(trained.rounds) + 1


def test_trained_model_runs_in_sentencepiece_and_our_engine():
    realtext.require()
    corpus = "\n".join(realtext.slices("en", 40, 1500, seed=4) + realtext.slices("ja", 20, 800, seed=4))
    trained = train_unigram(corpus, 1500)
    ours, theirs = UnigramTokenizer(trained.model), spm.SentencePieceProcessor(model_proto=trained.model)
    assert ours.n_vocab == theirs.get_piece_size() == trained.rounds[-1].vocab_size
    for name in realtext.NAMES:
        for text in realtext.slices(name, 3, 2000, seed=12):
            assert ours.encode(text) == theirs.encode(text)


def test_too_small_vocab_is_refused():
    with pytest.raises(TrainingError, match="choose at least"):
        UnigramTrainer("abc def\n", 100)


COMPILED = twin("_unigram_train", "estep") is not None


def test_the_compiled_twin_is_built_where_a_c_compiler_is():
    """``pip install`` builds app/engines/sentencepiece/_unigram_train.c; only a machine without a C compiler runs
    without it."""
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler on this machine: the Python loops serve (slower)")
    assert COMPILED or os.environ.get("TOKENPLAY_PURE_PYTHON") == "1"


def _trained_both_ways(corpus: str, size: int, **options) -> tuple:
    """The same training with the compiled twin and with the Python loops (``TOKENPLAY_PURE_PYTHON=1``)."""
    compiled = UnigramTrainer(corpus, size, **options)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOKENPLAY_PURE_PYTHON", "1")
        python = UnigramTrainer(corpus, size, **options)
    assert compiled._twin is not None and python._twin is None
    return compiled, python


#: A few characters of every str width, so that pieces repeat and lattices branch.
ALPHABETS = st.sampled_from(["ab", "abc", "a\xe9b", "ab\u65e5", "a\U0001f600b", "\u65e5\u672c\U0001f600"])
#: Lines of words over one of them.
CORPORA = ALPHABETS.flatmap(
    lambda alphabet: st.lists(
        st.lists(st.text(st.sampled_from(alphabet), min_size=1, max_size=9), min_size=1, max_size=6).map(" ".join),
        min_size=1,
        max_size=30,
    ).map("\n".join)
)


@pytest.mark.skipif(not COMPILED, reason="the compiled twin is off here (not built, or TOKENPLAY_PURE_PYTHON=1)")
@settings(max_examples=150, deadline=None)
@given(corpus=CORPORA, extra=st.integers(0, 40), max_len=st.integers(2, 8), seed=st.integers(20, 400))
def test_compiled_twin_equals_the_python_loops(corpus, extra, max_len, seed):
    """Expected counts, log-likelihood, losses, every round and the saved model: identical, not just close."""
    size = len(UnigramTrainer(corpus, 10_000).chars) + 259 + extra
    compiled, python = _trained_both_ways(corpus, size, max_piece_length=max_len, seed_size=seed)
    assert compiled.pieces == python.pieces
    while not python.done:
        assert compiled.losses(compiled._lattices()) == python.losses(python._lattices())
        assert compiled._corpus_tokens() == python._corpus_tokens()
        ours, theirs = compiled.round(), python.round()
        assert ours == theirs
        assert compiled.logp == python.logp and compiled.alive == python.alive
        if not theirs.removed:
            break
    assert compiled.done == python.done
    assert compiled.model_proto().serialize() == python.model_proto().serialize()


@pytest.mark.skipif(not COMPILED, reason="the compiled twin is off here (not built, or TOKENPLAY_PURE_PYTHON=1)")
def test_compiled_twin_equals_the_python_loops_on_real_text():
    realtext.require()
    corpus = "\n".join(realtext.slices("en", 30, 1500, seed=7) + realtext.slices("zh", 10, 600, seed=7))
    compiled, python = _trained_both_ways(corpus, 1200)
    assert compiled.train().rounds == python.train().rounds
    assert [s.tobytes() for s in compiled.scores] == [s.tobytes() for s in python.scores]  # NaN: removed
    assert compiled.corpus_tokens == python.corpus_tokens


@settings(max_examples=200, deadline=None)
@given(
    words=ALPHABETS.flatmap(
        lambda a: st.dictionaries(
            st.text(st.sampled_from(a), min_size=1, max_size=12), st.integers(1, 2**40), max_size=20
        )
    ),
    max_len=st.integers(2, 6),
)
def test_substring_counts_count_every_occurrence(words, max_len):
    """The seed's substring counts, compiled or not, are the frequency-weighted occurrences counted one by one."""
    want: Counter = Counter()
    for word, freq in words.items():
        for i in range(len(word)):
            for j in range(i + 2, min(len(word), i + max_len) + 1):
                want[word[i:j]] += freq
    assert dict(substring_counts(Counter(words), max_len)) == want
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOKENPLAY_PURE_PYTHON", "1")
        assert dict(substring_counts(Counter(words), max_len)) == want
