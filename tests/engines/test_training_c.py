"""The compiled twins of the training core's loops (app/engines/training/_train.c) give exactly what the Python loops
give: for app/engines/training/words.py the same pair index and counts, the same rewritten words, the same ``where``
lists and the same changes, merge after merge, on random words of every string width; for
app/engines/training/pair_counts.py the same counts, buckets, ranked list and entering pairs."""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engines.training import pair_counts, words
from app.engines.training.pair_counts import apply_counts_python
from app.engines.training.words import index_pairs_python, merge_words_python


def test_the_compiled_twin_is_built_where_a_c_compiler_is():
    """``pip install`` builds app/engines/training/_train.c; only a machine without a C compiler runs without it."""
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler on this machine: the Python loops serve (slower)")
    assert (words.COMPILED and pair_counts.COMPILED) or os.environ.get("TOKENPLAY_PURE_PYTHON") == "1"


compiled = pytest.mark.skipif(not words.COMPILED, reason="app/engines/training/_train.c is not built here")

#: Characters of every str width (ASCII, Latin-1, the BMP, beyond it), few enough that pairs repeat.
ALPHABETS = st.sampled_from(["ab", "abc", "a\xe9", "ab\u65e5", "a\U0001f600b", "\u65e5\u672c\U0001f600"])
#: Frequencies, some past 64 bits so that sums leave C integers.
FREQS = st.one_of(st.integers(1, 5), st.integers(1, 2**62), st.integers(2**63, 2**70))


@st.composite
def corpora(draw: st.DrawFn) -> tuple[list[str], list[int]]:
    alphabet = draw(ALPHABETS)
    texts = draw(st.lists(st.text(st.sampled_from(alphabet), max_size=12), max_size=25))
    return texts, [draw(FREQS) for _ in texts]


def _fresh(texts: list[str], extra: int = 0) -> str:
    """A character above every one in ``texts`` (as a new id is above every id so far)."""
    return chr(max((max(map(ord, t)) for t in texts if t), default=0x60) + 1 + extra)


@compiled
@settings(max_examples=400, deadline=None)
@given(corpus=corpora())
def test_compiled_index_pairs_equals_the_python_loop(corpus):
    texts, freqs = corpus
    where, counts = words.index_pairs(texts, freqs)
    assert (where, counts) == index_pairs_python(texts, freqs)
    assert list(where) == list(index_pairs_python(texts, freqs)[0])  # first-met order too


def _merge_both(texts: list[str], freqs: list[int], where: dict, entries: list[int], pair: str, new: str) -> list:
    """Run both loops on copies; assert they agree on everything and return the changes."""
    py_texts, py_where = list(texts), dict(where)
    c_texts, c_where = list(texts), dict(where)
    expected = merge_words_python(py_texts, freqs, py_where, list(entries), pair, new)
    got = words.merge_words(c_texts, freqs, c_where, list(entries), pair, new)
    assert got == expected
    assert c_texts == py_texts  # equal strings are of the same width, so the compiled ones are canonical
    assert c_where == py_where
    texts[:] = c_texts
    where.clear()
    where.update(c_where)
    return got


@compiled
@settings(max_examples=400, deadline=None)
@given(corpus=corpora(), data=st.data())
def test_compiled_merge_words_equals_the_python_loop(corpus, data):
    """Any entries (stale, repeated, out of order) and any pair; ``new`` fresh, or already in the words."""
    texts, freqs = corpus
    alphabet = sorted(set("".join(texts))) or ["a"]
    pair = data.draw(st.sampled_from(alphabet)) + data.draw(st.sampled_from(alphabet))
    new = data.draw(st.sampled_from([_fresh(texts), _fresh(texts, 0x10000), alphabet[0], "\x00"]))
    entries = data.draw(st.lists(st.integers(0, max(len(texts) - 1, 0)), max_size=30)) if texts else []
    _merge_both(texts, freqs, {}, entries, pair, new)


@compiled
@settings(max_examples=200, deadline=None)
@given(corpus=corpora(), data=st.data())
def test_compiled_merges_in_a_row_equal_the_python_loops(corpus, data):
    """As training runs them: the index first, then merges of counted pairs, each into a new character."""
    texts, freqs = corpus
    where, _ = words.index_pairs(texts, freqs)
    for _ in range(data.draw(st.integers(1, 8))):
        if not where:
            break
        pair = data.draw(st.sampled_from(sorted(where)))
        _merge_both(texts, freqs, where, where.pop(pair), pair, _fresh(texts))


@compiled
def test_compiled_loops_refuse_what_is_not_a_word_list():
    with pytest.raises(TypeError):
        words.index_pairs(["ab", 3], [1, 1])
    with pytest.raises(ValueError):
        words.index_pairs(["ab"], [])
    with pytest.raises(IndexError):
        words.merge_words(["ab"], [1], {}, [5], "ab", "X")
    with pytest.raises(ValueError):
        words.merge_words(["ab"], [1], {}, [0], "abc", "X")


# -- PairCounts.apply's loop ----------------------------------------------------------------------------------

PAIRS = st.sampled_from(["ab", "ba", "bb", "aX", "Xb", "XX", "\u65e5X"])
COUNTS = st.one_of(st.integers(1, 6), st.integers(2**63, 2**63 + 3))


@st.composite
def count_states(draw: st.DrawFn) -> tuple:
    """Counts, buckets (counts above 1), a ranked count and its pairs in some order, and changes to apply."""
    counts = draw(st.dictionaries(PAIRS, COUNTS, max_size=6))
    buckets: dict = {}
    for pair, count in counts.items():
        if count > 1:
            buckets.setdefault(count, set()).add(pair)
    ranked_count = draw(st.sampled_from([-1, 1, *counts.values()]))
    ranked = draw(st.permutations([p for p, c in counts.items() if c == ranked_count]))
    changes = draw(st.lists(st.tuples(PAIRS, PAIRS, st.one_of(st.integers(1, 4), COUNTS)), max_size=8))
    return counts, buckets, list(ranked), ranked_count, changes


def _outcome(apply, state) -> tuple:
    """What ``apply`` does to a copy of ``state``: its answer (or error type) and the state after, orders included."""
    counts, buckets, ranked, ranked_count, changes = state
    counts, buckets, ranked = dict(counts), {c: set(ps) for c, ps in buckets.items()}, list(ranked)
    try:
        answer = apply(counts, buckets, ranked, ranked_count, changes)
    except (KeyError, ValueError) as exc:
        answer = type(exc)
    return answer, list(counts.items()), list(buckets.items()), ranked


@compiled
@settings(max_examples=500, deadline=None)
@given(state=count_states())
def test_compiled_apply_counts_equals_the_python_loop(state):
    """Pairs entering and leaving the ranked count (twice in one merge), counts past 64 bits, changes that drive a
    count to zero or below, and pairs changed twice."""
    assert _outcome(pair_counts.apply_counts, state) == _outcome(apply_counts_python, state)
