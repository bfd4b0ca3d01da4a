"""Our unigram trainer: the same pruning order as a brute-force reference on tiny corpora, rounds as data, and
models that ``sentencepiece`` and our engine encode identically."""

from __future__ import annotations

import pytest
import realtext
import sentencepiece as spm
from unigram_reference import ReferenceUnigram

from app.engines.sentencepiece.unigram import UnigramTokenizer
from app.engines.sentencepiece.unigram_trainer import UnigramTrainer, digamma, train_unigram
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
