"""The fast BPE trainer: worked examples with literal ids, bounds, manual mode, and equality with the
recount-everything reference (``tests/helpers/bpe_reference.py``) on random corpora for every pattern and tie-break."""

from __future__ import annotations

from itertools import pairwise

import pytest
from helpers import realtext
from helpers.bpe_reference import reference_train
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engines.bpe.trainer import (
    BPETrainerState,
    BPETrainingError,
    train,
    train_words,
    vocab_from_merges,
    words_from_text,
)
from app.engines.errors import TokenplayError
from app.engines.training.steps import MergeStep
from app.engines.training import run_merges

PATTERNS = ["none", "gpt2", "gpt4", "o200k"]
TIE_BREAKS = ["first", "lexical"]
ALPHABET = list("aab  bc\n\t'sx1.") + ["é", "日本", "ア", "👍", "aa", "ab ", "The ", "ll", "\r\n", "<|endoftext|>"]


def test_worked_example_aaabdaaabac():
    result = train("aaabdaaabac", 259, pattern="none")
    assert result.merges == [(97, 97), (256, 97), (257, 98)]
    assert result.vocab[256] == b"aa" and result.vocab[257] == b"aaa" and result.vocab[258] == b"aaab"
    first, second, third = result.steps
    # "aaa" holds (a, a) twice but only one can be merged: count 4, replaced 2
    assert first == MergeStep(1, (97, 97), b"a", b"a", 256, count=4, replaced=2, ties=[], corpus_tokens=9)
    # [256, 97, 98, 100, 256, 97, 98, 97, 99]: (256, 97) and (97, 98) both twice; (256, 97) is seen first
    assert second.pair == (256, 97) and second.count == 2 and second.ties == [(97, 98)]
    assert second.corpus_tokens == 7
    assert third.pair == (257, 98) and third.replaced == 2 and third.corpus_tokens == 5
    assert result.stop_reason == "vocab_size reached" and result.initial_tokens == 11


def test_worked_example_lexical_tie_break():
    result = train("aaabdaaabac", 259, pattern="none", tie_break="lexical")
    # step 2: (b"a", b"b") < (b"aa", b"a") because the left bytes compare first
    assert result.merges == [(97, 97), (97, 98), (256, 257)]
    assert result.steps[1].ties == [(256, 97)]
    assert result.vocab[258] == b"aaab"
    assert all(s.tie_break == "lexical" for s in result.steps)


def test_documented_tie_break_example():
    first = train("ba ab ba ab", 257, pattern="none", tie_break="first").steps[0]
    lexical = train("ba ab ba ab", 257, pattern="none", tie_break="lexical").steps[0]
    assert (first.left, first.right) == (b"b", b"a")
    assert (lexical.left, lexical.right) == (b" ", b"a")
    assert [(b, c) for b, c in lexical.ties] == [(97, 32), (97, 98), (98, 97)]
    assert first.ties == [(97, 32), (32, 97), (97, 98)]


def test_overlapping_runs_count_versus_replaced():
    step = train("aaaa aaa", 257, pattern="none").steps[0]
    # pairs: aaaa -> 3, " " splits nothing under "none": "aaaa aaa" has 3 + 2 = 5 (a, a)
    assert (step.count, step.replaced, step.corpus_tokens) == (5, 3, 5)


def test_merges_never_cross_pre_token_boundaries():
    result = train("ab ab ab ab", 300, pattern="gpt2")
    assert all(b" " not in tok[1:] for tok in (result.vocab[i] for i in range(256, 256 + len(result.merges))))
    assert result.vocab[257] == b" ab"


def test_stops_early_when_no_pair_occurs_twice():
    result = train("abcdef", 1000, pattern="none")
    assert result.merges == [] and result.steps == []
    assert result.stop_reason == "no pair occurs twice"
    result = train("abab", 1000, pattern="none")
    assert result.merges == [(97, 98)] and result.stop_reason == "no pair occurs twice"


def test_special_tokens_are_cut_out_of_the_corpus():
    text = "x<|endoftext|>x<|endoftext|>x<|endoftext|>"
    result = train(text, 300, pattern="gpt4", special_tokens=["<|endoftext|>"])
    assert result.merges == [] and result.initial_tokens == 3
    plain = train(text, 300, pattern="gpt4")
    assert b"<|" in set(plain.vocab.values())


@pytest.mark.parametrize("size", [0, 255, -1])
def test_vocab_size_below_256_is_refused(size):
    with pytest.raises(BPETrainingError, match="at least 256"):
        train("hello", size)


def test_vocab_size_above_the_limit_is_refused():
    with pytest.raises(BPETrainingError, match="max_vocab_size"):
        train("hello", 100_001)
    with pytest.raises(BPETrainingError, match="max_vocab_size"):
        train("hello", 1000, max_vocab_size=500)
    assert train("hello hello", 300, max_vocab_size=300).merges


def test_bad_arguments_are_value_errors_that_say_what_to_do():
    with pytest.raises(BPETrainingError, match="first, lexical"):
        train("hello", 300, tie_break="random")
    with pytest.raises(ValueError, match="none, gpt2, gpt4, o200k"):
        train("hello", 300, pattern="gpt5")
    with pytest.raises(BPETrainingError, match="whole number"):
        train("hello", 300.0)  # type: ignore[arg-type]
    assert issubclass(BPETrainingError, TokenplayError)


def test_vocab_is_derived_from_merges():
    result = train("the cat sat on the mat with the hat", 280, pattern="gpt2")
    assert result.vocab == vocab_from_merges(result.merges)
    with pytest.raises(BPETrainingError, match="does not exist"):
        vocab_from_merges([(97, 300)])


def test_progress_callback_sees_every_step():
    seen = []
    result = train("aaabdaaabac", 259, pattern="none", progress=lambda step, total, rec: seen.append((step, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)] and len(result.steps) == 3


def test_top_pairs_are_recorded_in_winner_order():
    result = train("aaabdaaabac", 258, pattern="none", top_k=3)
    assert result.steps[0].top_pairs == [((97, 97), 4), ((97, 98), 2), ((98, 100), 1)]


# -- manual mode (the BPE lab) --------------------------------------------------------------------------


def _recount(state: BPETrainerState) -> dict:
    counts: dict = {}
    for ids, freq in zip(state.words, state.freqs):
        for p in pairwise(ids):
            counts[p] = counts.get(p, 0) + freq
    return counts


def test_manual_mode_force_pair_then_automatic_steps():
    state = BPETrainerState.from_text("hello hello world", "gpt2")
    # words "hello", " hello", " world": (h, e), (e, l), (l, l), (l, o) all occur twice; (h, e) first
    assert state.best_pair() == (104, 101)
    assert state.current_top_pairs(2) == [((104, 101), 2), ((101, 108), 2)]
    forced = state.step(force_pair=(32, 119), top_k=2)
    assert forced.forced and forced.pair == (32, 119) and forced.new_id == 256
    assert forced.count == 1 and forced.replaced == 1
    assert forced.top_pairs == [((104, 101), 2), ((101, 108), 2)]
    assert state.counts == _recount(state)
    auto = state.step()
    assert not auto.forced and auto.new_id == 257 and auto.pair == (104, 101)
    assert state.counts == _recount(state)
    with pytest.raises(BPETrainingError, match="current_top_pairs"):
        state.step(force_pair=(1, 2))


@settings(max_examples=40, deadline=None)
@given(
    text=st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join),
    choices=st.lists(st.integers(0, 5), max_size=8),
    long_word=st.sampled_from([0, 4, 4096]),  # every word, some or none in the linked layout
)
def test_manual_mode_keeps_counts_exact(text, choices, long_word):
    state = BPETrainerState(words_from_text(text, "gpt2"), long_word=long_word)
    for choice in choices:
        top = state.current_top_pairs(6)
        if not top:
            break
        state.step(force_pair=top[choice % len(top)][0])
        assert state.counts == _recount(state)
        assert state.n_tokens == sum(len(w) * f for w, f in zip(state.words, state.freqs))


def test_manual_mode_refuses_when_done():
    state = BPETrainerState.from_text("abc", "none")
    assert state.done and state.best_pair() is None
    with pytest.raises(BPETrainingError, match="no pair occurs twice"):
        state.step()
    record = state.step(force_pair=(97, 98))
    assert record.count == 1 and record.forced and state.vocab[256] == b"ab"


def test_character_level_variant_via_base_vocab():
    chars = sorted(set("ねこねこねこ"))
    base = {i: ch.encode("utf-8") for i, ch in enumerate(chars)}
    words = [([chars.index(c) for c in "ねこねこねこ"], 2)]
    result = train_words(words, len(base) + 2, base)
    assert result.vocab[len(base)] == "ねこ".encode()
    assert result.vocab[len(base) + 1] == "ねこねこ".encode()
    assert result.steps[0].count == 6 and result.steps[0].replaced == 6
    with pytest.raises(BPETrainingError, match="at least 2"):
        train_words(words, 1, base)


# -- the fast trainer equals the reference ---------------------------------------------------------------

corpora = st.lists(st.sampled_from(ALPHABET), max_size=60).map("".join)


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=corpora,
    extra=st.integers(0, 60),
    top_k=st.sampled_from([0, 3]),
    specials=st.booleans(),
    max_ties=st.sampled_from([None, None, 0, 2]),
)
def test_fast_trainer_equals_reference(pattern, tie_break, text, extra, top_k, specials, max_ties):
    special_tokens = ["<|endoftext|>"] if specials else []
    fast = train(text, 256 + extra, pattern, special_tokens, tie_break, top_k=top_k, max_ties=max_ties)
    ref = reference_train(text, 256 + extra, pattern, special_tokens, tie_break, top_k=top_k, max_ties=max_ties)
    assert fast.merges == ref.merges
    for got, want in zip(fast.steps, ref.steps):
        assert got == want
    assert fast == ref


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
def test_fast_trainer_equals_reference_on_a_larger_corpus(tie_break):
    from helpers.sample_text import english_text, japanese_text

    text = english_text(6000) + japanese_text(3000)
    for pattern in PATTERNS:
        assert train(text, 330, pattern, tie_break=tie_break) == reference_train(
            text, 330, pattern, tie_break=tie_break
        )


def train_laid_out(text: str, vocab_size: int, pattern: str, tie_break: str, *, long_word: int, top_k: int = 0):
    """``train`` with the words longer than ``long_word`` ids kept in the linked layout."""
    state = BPETrainerState(words_from_text(text, pattern), tie_break=tie_break, long_word=long_word)
    return state.result(run_merges(state, vocab_size - 256, top_k=top_k))


@pytest.mark.parametrize("long_word", [0, 5])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=corpora,
    pattern=st.sampled_from(PATTERNS),
    tie_break=st.sampled_from(TIE_BREAKS),
    extra=st.integers(0, 60),
    top_k=st.sampled_from([0, 3]),
)
def test_linked_layout_for_long_words_equals_reference(long_word, text, pattern, tie_break, extra, top_k):
    got = train_laid_out(text, 256 + extra, pattern, tie_break, long_word=long_word, top_k=top_k)
    assert got == reference_train(text, 256 + extra, pattern, (), tie_break, top_k=top_k)


# -- real text (the corpora in ../shared/corpora) ------------------------------------------------------------


@pytest.mark.parametrize("name", realtext.NAMES)
@pytest.mark.parametrize("pattern", ["gpt4", "none"])
def test_fast_trainer_equals_reference_on_real_text(name, pattern):
    realtext.require()
    for tie_break, text in zip(TIE_BREAKS, realtext.slices(name, 2, 2500, seed=3)):
        want = reference_train(text, 300, pattern, tie_break=tie_break, top_k=3)
        assert train(text, 300, pattern, tie_break=tie_break, top_k=3) == want
        assert train_laid_out(text, 300, pattern, tie_break, long_word=0, top_k=3) == want
