"""The lab's whole pair table (issue 33 part 4), typed merge lists (part 5) and compression curves (issue 34 part 3),
against the naive BPE of ``tests/helpers/bpe_naive.py`` and against the encode view."""

from __future__ import annotations

import re

import pytest
from helpers import realtext
from helpers.lab_training import done_run
from helpers.bpe_naive import apply_merge, naive_pairs, naive_words, vocab_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engines.bpe.patterns import LINES_DIGITS_R2L_PATTERN
from app.engines.bpe.patterns import PATTERNS as ENGINE_PATTERNS
from app.engines.pipeline.tokenizer_json import BYTE_OF_CHAR
from app.lab.algorithms import train
from app.lab.curves import CurvesError, curves, steps_for
from app.lab.merge_lists import MergeListError
from app.lab.options import Options
from app.lab.pair_tables import PairTableError
from app.lab.replay import RunReplay, replay_for

CHAR_OF_BYTE = {b: ch for ch, b in BYTE_OF_CHAR.items()}
SPLIT = {"gpt4": ENGINE_PATTERNS["gpt4"], "whitespace": r"\S+|\s+", "none": r"[\s\S]+"}
ALPHABET = [*"ab  ba\n", "the ", "of the ", "cat", ". ", "1234567", "é", "日本", "It's"]
texts = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=40).map("".join)


def written(token: bytes) -> str:
    """A byte-level token as a merges.txt writes it."""
    return "".join(CHAR_OF_BYTE[b] for b in token)


# -- the whole pair table ------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts,
    pattern=st.sampled_from(sorted(SPLIT)),
    tie_break=st.sampled_from(["first", "lexical"]),
    transition=st.sampled_from([None, 0, 5]),
    data=st.data(),
)
def test_the_pair_table_is_every_pair_in_the_trainer_s_order(text, pattern, tie_break, transition, data):
    superwords = None if transition is None else {"transition": transition}
    run = done_run(text, algorithm="byte", pattern=pattern, merges=12, tie_break=tie_break, superwords=superwords,
                   min_count=1)
    k = data.draw(st.integers(0, run.n_steps))
    merges = [s.pair for s in run.steps]
    # merge k + 1 is chosen on stage two from the transition on (when the run went past it)
    two = transition is not None and transition <= k and transition < run.n_steps
    words = naive_words(text, merges, k, LINES_DIGITS_R2L_PATTERN if two else SPLIT[pattern])
    want = naive_pairs(words, vocab_of(merges), tie_break)
    table = replay_for(run).pairs(k, limit=1000)
    assert table["total"] == len(want)
    assert [(tuple(row["ids"]), row["count"]) for row in table["pairs"]] == want
    assert sum(row["count"] for row in table["pairs"]) == sum(len(w) - 1 for w in words if w)
    if k < run.n_steps:  # the next merge is the table's first row
        assert tuple(table["pairs"][0]["ids"]) == run.steps[k].pair


def test_the_pair_table_pages_and_filters():
    run = done_run("the cat sat on the mat with the hat " * 4, algorithm="byte", pattern="gpt4", merges=5)
    replay = replay_for(run)
    whole = replay.pairs(2, limit=1000)
    first = replay.pairs(2, offset=0, limit=3)
    second = replay.pairs(2, offset=3, limit=3)
    assert first["total"] == whole["total"] and first["pairs"] + second["pairs"] == whole["pairs"][:6]
    at = replay.pairs(2, q="AT")  # any case, the two tokens' texts joined
    assert at["pairs"] and all("at" in "".join(row["pair"]).lower() for row in at["pairs"])
    assert at["total"] == sum("at" in "".join(row["pair"]) for row in whole["pairs"])
    assert replay.pairs(2, q="zzz") == {"total": 0, "offset": 0, "limit": 100, "pairs": []}
    # the first ten of the step's records are the table's first ten, where the page shows them today
    assert [(tuple(r["ids"]), r["count"]) for r in whole["pairs"][:10]] == run.steps[2].top_pairs
    with pytest.raises(PairTableError, match="limit from 1 to 1,000"):
        replay.pairs(2, limit=0)


def test_the_pair_table_is_for_merge_runs_of_bytes_and_characters():
    run = done_run("low lower newest widest " * 3, algorithm="wordpiece", merges=5)
    with pytest.raises(PairTableError, match="byte- and character-level BPE"):
        replay_for(run).pairs(0)


def test_the_pair_table_on_real_text_adds_up():
    realtext.require()
    (text,) = realtext.slices("en", 1, 20_000, seed=2)
    run = done_run(text, algorithm="byte", pattern="gpt4", merges=200)
    table = replay_for(run).pairs(150, limit=1000)
    words = naive_words(text, [s.pair for s in run.steps], 150, SPLIT["gpt4"])
    assert table["total"] == len({p for w in words for p in zip(w, w[1:])})
    assert table["pairs"][0]["count"] == run.steps[150].count


# -- typed merge lists --------------------------------------------------------------------------------------------


def test_a_typed_merge_list_replays_a_trained_run():
    text = "the cat sat on the mat. the hat of the cat" * 3
    trained = done_run(text, algorithm="byte", pattern="gpt4", merges=20)
    typed = "#version: 0.2\n" + "\n".join(f"{written(s.left)} {written(s.right)}" for s in trained.steps) + "\n"
    run = done_run(text, algorithm="byte", pattern="gpt4", merge_list=typed)
    assert [s.pair for s in run.steps] == [s.pair for s in trained.steps]
    assert [s.count for s in run.steps] == [s.count for s in trained.steps]
    assert [s.corpus_tokens for s in run.steps] == [s.corpus_tokens for s in trained.steps]
    assert all(s.forced for s in run.steps) and run.steps[0].top_pairs == trained.steps[0].top_pairs
    sample = "the cat and the hat"
    assert RunReplay(run).encode_trace(sample, 20)["ids"] == RunReplay(trained).encode_trace(sample, 20)["ids"]


def test_a_typed_merge_may_name_a_pair_the_corpus_lacks():
    run = done_run("abab", algorithm="byte", pattern="none", merge_list="a b\nb a\nab ab")
    assert [(s.token, s.count) for s in run.steps] == [(b"ab", 2), (b"ba", 0), (b"abab", 1)]


def test_a_character_level_list_writes_a_space_as_g_dot():
    run = done_run("of the of the", algorithm="char", pattern="none", merge_list="o f\nof Ġ\nt h\nth e")
    assert [s.token for s in run.steps] == [b"of", b"of ", b"th", b"the"]


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("t h\nĠt h", "line 2: the token 'Ġt' (' t') does not exist yet"),
        ("# merges\n\nt h\nt h", "line 4: t + h makes 'th', but line 3 makes it already"),
        ("t  h", "line 1 ('t  h') is not two tokens separated by one space"),
        ("t h x", "line 1 ('t h x') is not two tokens"),
        ("t", "line 1 ('t') is not two tokens"),
        ("t h\na ∑", "line 2: '∑' is not in GPT-2's byte alphabet"),
        ("# nothing", "merge_list has no merges"),
    ],
)
def test_a_bad_line_is_refused_with_its_number(typed, says):
    with pytest.raises(MergeListError, match=re.escape(says)):
        train("the cat", Options("byte", "gpt4", merge_list=typed), max_merges=10_000)


def test_a_merge_list_with_a_size_is_refused():
    with pytest.raises(Exception, match="give 'merge_list' alone"):
        Options("byte", "gpt4", merges=3, merge_list="t h").check(10_000)
    with pytest.raises(MergeListError, match="more than 2 merges"):
        train("abcd", Options("byte", "none", merge_list="a b\nc d\nab cd"), max_merges=2)


# -- curves -------------------------------------------------------------------------------------------------------


def test_steps_for_spreads_points_and_keeps_the_transition():
    assert steps_for(10, 3) == [0, 5, 10]
    assert steps_for(3, 20) == [0, 1, 2, 3]
    assert steps_for(100, 2, transition=37) == [0, 37, 100]


@pytest.mark.parametrize(
    "opts",
    [
        {"algorithm": "byte", "pattern": "gpt4", "merges": 60},
        {"algorithm": "byte", "pattern": "digits-r2l", "merges": 60, "superwords": {"transition": 30}},
        {"algorithm": "char", "pattern": "whitespace", "merges": 60, "end_of_word": True},
        {"algorithm": "char", "pattern": "gpt2", "merges": 60, "superwords": {"transition": 20}},
        {"algorithm": "sentencepiece", "merges": 20},
        {"algorithm": "wordpiece", "merges": 60},
        {"algorithm": "unigram", "vocab_size": 31},
    ],
    ids=["byte", "byte superwords", "char </w>", "char superwords", "sentencepiece", "wordpiece", "unigram"],
)
def test_each_point_is_the_encode_view_s_count(opts):
    corpus = "the cat sat on the mat. 1234567 cats sat on 42 mats. The end of the story.\n" * 6
    text = "a new text: the dog sat on the log, 7654321 dogs! ünïcödé 日本\n" * 3
    run = done_run(corpus, **opts)
    (line,) = curves([run], text, 20)["runs"]
    replay = replay_for(run)
    assert line["id"] == run.id and len(line["points"]) >= min(20, run.n_steps + 1)
    for point in line["points"]:
        assert point["tokens"] == len(replay.encode_trace(text, point["merges"])["ids"]), point
        assert point["vocab_size"] == run.vocab_size_at(point["merges"])
    if "superwords" in opts:
        assert line["transition"] == opts["superwords"]["transition"]
        assert opts["superwords"]["transition"] in [p["merges"] for p in line["points"]]


def test_curves_refuse_bad_requests_in_words():
    run = done_run("ab ab ab", algorithm="byte", pattern="gpt4", merges=2)
    with pytest.raises(CurvesError, match="points must be from 2 to 200"):
        curves([run], "ab", 1)
    with pytest.raises(CurvesError, match="runs must list 1 to 8 run ids"):
        curves([], "ab", 5)
    with pytest.raises(CurvesError, match="curves count at most 100,000"):
        curves([run], "a" * 100_001, 5)


def test_a_superword_run_cuts_a_new_text_with_stage_two_past_its_transition():
    corpus = "of the cat. of the dog. of the bird. the cats and the dogs and the birds. " * 10
    run = done_run(corpus, algorithm="byte", pattern="gpt4", merges=30, superwords={"transition": 15})
    assert run.n_steps == 30
    text = "of the cat and of the dog"
    (line,) = curves([run], text, 31)["runs"]
    by_k = {p["merges"]: p["tokens"] for p in line["points"]}
    merges = [s.pair for s in run.steps]
    for k in (0, 15, 16, 30):
        words = naive_words(text, merges, k, SPLIT["gpt4"], LINES_DIGITS_R2L_PATTERN, 15)
        assert by_k[k] == sum(map(len, words))
    assert by_k[30] < by_k[15]  # superwords cut the new text into fewer tokens
    assert apply_merge([[1, 2, 1, 2]], (1, 2), 9) == [[9, 9]]
