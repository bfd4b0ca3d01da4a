"""The shared merge loop: the list scan and the heap choose the same pair at every step, and both equal the
textbook rule (rescan every pair, join the lowest rank, leftmost on ties) written here from scratch."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engines import merging
from app.engines.compiled import twin
from app.engines.merging import merge, merge_heap


def textbook(parts: list, rank_of) -> tuple[list, list]:
    """The rule itself, O(n^2): the parts at the end, and each merge as (rank, index, left, right)."""
    parts = list(parts)
    steps = []
    while True:
        ranks = [rank_of(a, b) for a, b in zip(parts, parts[1:])]
        found = [(r, i) for i, r in enumerate(ranks) if r is not None]
        if not found:
            return parts, steps
        r, i = min(found)
        steps.append((r, i, parts[i], parts[i + 1]))
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


bytes_ranks = st.dictionaries(st.sampled_from([b"aa", b"ab", b"ba", b"bb", b"aab", b"aba", b"abab", b"bba"]),
                              st.integers(0, 6), max_size=8)
pieces = st.lists(st.sampled_from([b"a", b"b"]), max_size=70)


@settings(max_examples=400, deadline=None)
@given(parts=pieces, ranks=bytes_ranks)
def test_scan_and_heap_equal_the_textbook_rule(parts, ranks):
    want, want_steps = textbook(parts, lambda a, b: ranks.get(a + b))
    assert merge(list(parts), ranks.get, heap_from=10**9) == want
    assert merge_heap(list(parts), ranks.get) == want
    steps: list = []
    assert merge(list(parts), ranks.get, steps=steps) == want
    assert steps == want_steps  # equal ranks: the leftmost pair first


@settings(max_examples=200, deadline=None)
@given(
    ids=st.lists(st.integers(0, 3), max_size=40),
    merges=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), unique=True, max_size=6),
)
def test_pair_keyed_ranks_with_new_ids(ids, merges):
    """The lab's use: parts are ids, a pair's rank is its merge's step and the join is the new id."""
    rank = {p: r for r, p in enumerate(merges)}
    new_id = {p: 4 + r for r, p in enumerate(merges)}

    def step_by_step(seq):  # apply the merges in order, each everywhere, left to right
        for r, p in enumerate(merges):
            out, i = [], 0
            while i < len(seq):
                if i + 1 < len(seq) and (seq[i], seq[i + 1]) == p:
                    out.append(4 + r)
                    i += 2
                else:
                    out.append(seq[i])
                    i += 1
            seq = out
        return seq

    def key(a, b):
        return (a, b)

    def join(a, b):
        return new_id[(a, b)]

    # merges that only exist once their parts do: drop those whose parts are made by a later merge
    usable = all(all(x < 4 + r for x in p) for r, p in enumerate(merges))
    if usable:
        want = step_by_step(list(ids))
        assert merge(list(ids), rank.get, key=key, join=join, heap_from=10**9) == want
        assert merge_heap(list(ids), rank.get, key=key, join=join) == want


def test_record_keeps_the_last_candidate_of_each_key():
    record: dict = {}
    merge(list("abab"), {"ab": 0, "abab": 1, "ba": 5}.get, record=record)
    assert record["ab"] == ("a", "b") and record["abab"] == ("ab", "ab") and record["ba"] == ("b", "a")


def test_heap_edges_record_the_first_and_last_parts():
    firsts: list = []
    lasts: list = []
    merge_heap([b"a", b"b", b"c"], {b"bc": 0, b"abc": 1}.get, firsts=firsts, lasts=lasts)
    assert firsts == [b"a", b"abc"] and lasts == [b"c", b"bc", b"abc"]


# -- the compiled twin (app/engines/_merge.c) ------------------------------------------------------------------

def test_the_compiled_twin_is_built_where_a_c_compiler_is():
    """``pip install`` builds app/engines/_merge.c; only a machine without a C compiler runs without it."""
    import shutil

    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler on this machine: the Python loop serves (slower)")
    assert merging.COMPILED or os.environ.get("TOKENPLAY_PURE_PYTHON") == "1"


compiled = pytest.mark.skipif(not merging.COMPILED, reason="app/engines/_merge.c is not built here")

symbol_texts = st.one_of(
    st.lists(st.sampled_from([b"a", b"b", b"\xe3", b"\x81"]), max_size=300).map(b"".join),
    st.text(st.sampled_from("ab▁日"), max_size=300),
)


@compiled
@settings(max_examples=500, deadline=None)
@given(text=symbol_texts, data=st.data())
def test_compiled_merge_text_equals_the_python_loop(text, data):
    """Short inputs (the scan) and long ones (the heap), int and float ranks, equal ranks, pair keys, ids."""
    symbols = sorted(set(text[i : i + 1] for i in range(len(text)))) or [text[:0]]
    joined = st.lists(st.sampled_from(symbols), min_size=2, max_size=4).map(lambda p: text[:0].join(p))
    ranks = data.draw(st.dictionaries(joined, st.one_of(st.integers(0, 5), st.floats(-3, 3)), max_size=10))
    assert merging.merge_text(text, ranks) == merging.merge_text_python(text, ranks)
    ids = {part: n for n, part in enumerate(list(ranks) + symbols[:1])}
    assert merging.merge_text(text, ranks, ids) == merging.merge_text_python(text, ranks, ids)
    pairs = {(k[:1], k[1:]): r for k, r in ranks.items()}
    assert merging.merge_text(text, pairs, pair_keys=True) == merging.merge_text_python(text, pairs, pair_keys=True)


@compiled
def test_compiled_merge_of_a_long_run_is_linearithmic_and_exact():
    text = b"a" * 200_000
    ranks = {b"a" * (2**k): k for k in range(1, 12)}
    assert merging.merge_text(text, ranks) == merging.merge_text_python(text, ranks)
    assert list(map(len, merging.merge_text(text, ranks))) == [2048] * 97 + [1024, 256, 64]  # 200,000 in powers of two


# -- merge tables compiled once per model (merging.merge_table: _merge.c PairTable vs the Python MergeTable) ----

# "c" is in no pair: it never merges. Repeated pieces make long texts (the heap) often.
table_texts = st.one_of(
    st.text(st.sampled_from("ab▁日c"), max_size=140),
    st.tuples(st.text(st.sampled_from("ab▁日c"), min_size=1, max_size=12), st.integers(2, 60)).map(lambda t: t[0] * t[1]),
)


@st.composite
def str_tables(draw, text: str) -> tuple:
    """A table in one of the three forms (joined part -> rank, pair -> rank, list of pairs) over the text's
    symbols, and ids for some of its parts."""
    symbols = sorted(set(text) - {"c"}) or ["a"]
    part = st.lists(st.sampled_from(symbols), min_size=1, max_size=3).map("".join)
    rank = st.one_of(st.integers(0, 5), st.floats(-3, 3, allow_nan=False))
    form = draw(st.sampled_from(["joined", "pairs", "list"]))
    if form == "joined":
        table = draw(st.dictionaries(part.filter(lambda p: len(p) > 1), rank, max_size=10))
    elif form == "pairs":
        table = draw(st.dictionaries(st.tuples(part, part), rank, max_size=10))
    else:  # repeats allowed: the later one wins
        table = draw(st.lists(st.tuples(part, part), max_size=12))
    parts = sorted({*symbols, *(k for key in (table.keys() if isinstance(table, dict) else table) for k in key)})
    named = draw(st.lists(st.sampled_from(parts), unique=True, max_size=len(parts)))
    ids = dict(zip(named, draw(st.permutations(range(len(named) + 3)))))
    return table, ids, form != "joined"


@compiled
@settings(max_examples=500, deadline=None)
@given(text=table_texts, data=st.data())
def test_compiled_merge_table_equals_the_python_twin(text, data):
    """Short texts (the scan) and long ones (the heap); int and float ranks, equal ranks; ids for some parts."""
    table, ids, pair_keys = data.draw(str_tables(text))
    compiled_table = merging.merge_table(table, ids, pair_keys=pair_keys)
    assert type(compiled_table) is not merging.MergeTable
    want = merging.MergeTable(table, ids, pair_keys).merge(text)
    assert compiled_table.merge(text) == want
    if isinstance(table, dict):
        assert want == merging.merge_text_python(text, table, pair_keys=pair_keys)


@compiled
@settings(max_examples=300, deadline=None)
@given(text=table_texts, adjacent=st.sets(st.text(st.sampled_from("ab▁日c"), min_size=2, max_size=2)))
def test_compiled_cut_equals_the_python_twin(text, adjacent):
    want = merging.MergeTable({}, {}, adjacent=adjacent).cut(text)
    assert merging.merge_table({}, {}, adjacent=adjacent).cut(text) == want
    assert "".join(want) == text and all(want)


@compiled
def test_compiled_merge_table_of_a_long_run_is_exact():
    text = "a" * 200_000 + "b" + "a" * 1000
    joined = {"a" * (2**k): -k for k in range(1, 12)}  # minus a score: the longest piece merges first
    pairs = [("a", "a"), ("aa", "a"), ("aa", "aa"), ("aaaa", "aaa"), ("aaaa", "aaaa"), ("b", "a")]
    for table, pair_keys in ((joined, False), (pairs, True)):
        want = merging.MergeTable(table, {}, pair_keys).merge(text)
        assert merging.merge_table(table, {}, pair_keys=pair_keys).merge(text) == want
        assert "".join(want) == text and len(want) < len(text) // 7


@compiled
def test_compiled_merge_table_refuses_what_it_cannot_order():
    with pytest.raises(ValueError, match="NaN"):
        merging.merge_table({"ab": float("nan")}, {})
    with pytest.raises(TypeError, match="tuples"):
        merging.merge_table({"ab": 0}, {}, pair_keys=True)
    with pytest.raises(ValueError, match="ids"):
        merging.merge_table({"ab": 0}, {"a": -1})
    with pytest.raises(ValueError, match="2-character"):
        merging.merge_table({}, {}, adjacent=["abc"])


# -- the byte-level memo (merge(..., memo=PairMemo())): what the encoder's merges learn of the ranks, kept ------------
PairMemo = twin("_merge", "PairMemo")
compiled_merge = twin("_merge", "merge")


def _byte_level_ranks(joined: list[bytes], numbers: list[int]) -> dict[bytes, int]:
    """Every single byte of the texts below plus ``joined``, each with its own id: ranks as tiktoken's are."""
    keys = list(dict.fromkeys([bytes([b]) for b in b"ab\xe3\x81"] + joined))
    ids = list(dict.fromkeys(numbers + list(range(1000, 1000 + len(keys)))))[: len(keys)]
    return dict(zip(keys, ids))


byte_texts = st.lists(st.sampled_from([b"a", b"b", b"\xe3", b"\x81"]), max_size=200).map(b"".join)
joined_bytes = st.lists(st.lists(st.sampled_from([b"a", b"b", b"\xe3", b"\x81"]), min_size=2, max_size=5).map(b"".join),
                        max_size=25)


@compiled
@settings(max_examples=300, deadline=None)
@given(texts=st.lists(byte_texts, min_size=1, max_size=8), joined=joined_bytes,
       numbers=st.lists(st.integers(0, 60), max_size=30))
def test_merges_with_a_memo_equal_the_merges_without(texts, joined, numbers):
    """One memo over many merges (short ones scanned, long ones on the heap) answers as the dict does."""
    ranks = _byte_level_ranks(joined, numbers)
    memo = PairMemo()
    for text in texts + texts:  # the second time round, from the memo's answers
        assert compiled_merge(text, ranks, ranks, False, memo) == merging.merge_text_python(text, ranks, ranks)
    assert 0 < memo.answers or all(len(t) < 2 for t in texts)


@compiled
def test_a_memo_starts_afresh_for_another_table_and_without_a_byte():
    memo = PairMemo()
    first = {bytes([b]): b for b in range(256)} | {b"ab": 300}
    second = {bytes([b]): b for b in range(256)} | {b"ba": 300}
    assert compiled_merge(b"aba", first, first, False, memo) == [300, 97]
    assert compiled_merge(b"aba", second, second, False, memo) == [97, 300]  # not first's answer for (a, b)
    lacking = {b"a": 1, b"ab": 2}  # b"b" has no id: the merge goes without the memo
    assert compiled_merge(b"abb", lacking, lacking, False, memo) == [2, None]


@compiled
def test_a_memo_is_refused_where_ids_do_not_stand_for_tokens():
    ranks = {b"a": 0, b"b": 1, b"ab": 2}
    with pytest.raises(ValueError, match="memo needs"):
        compiled_merge(b"ab", ranks, None, False, PairMemo())
    with pytest.raises(ValueError, match="memo needs"):
        compiled_merge(b"ab", {(b"a", b"b"): 0}, ranks, True, PairMemo())
    with pytest.raises(ValueError, match="ints from 0"):
        floats = {b"a": 0, b"b": 1, b"ab": 2.5}
        compiled_merge(b"ab", floats, floats, False, PairMemo())
    with pytest.raises(TypeError, match="PairMemo"):
        compiled_merge(b"ab", ranks, ranks, False, {})


@compiled
def test_a_full_memo_stops_keeping_answers_and_still_answers_right():
    """200,000 random bytes hold nearly every one of the 65,536 byte pairs: more answers than a memo keeps."""
    rng = random.Random(7)
    text = rng.randbytes(200_000)
    ranks = {bytes([b]): b for b in range(256)}
    ranks |= {rng.randbytes(2): 256 + k for k in range(3000)}
    ranks |= {a + b: 4000 + k for k, (a, b) in enumerate(zip(list(ranks)[256:1256], list(ranks)[1256:2256]))}
    memo = PairMemo()
    want = compiled_merge(text, ranks, ranks)
    assert compiled_merge(text, ranks, ranks, False, memo) == want
    assert 60_000 < memo.answers <= 65_536
    assert compiled_merge(text[:50_000], ranks, ranks, False, memo) == compiled_merge(text[:50_000], ranks, ranks)
