"""The lab's step views against the trainers: the corpus at step k is what training had after k merges."""

from __future__ import annotations


import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from app.lab.algorithms import chunk_spans, sp_spans, train
from app.lab.options import LabOptionsError, Options
from app.lab.runs import Run, new_id
from app.engines.training.steps import MergeStep
from app.lab.replay import Merges, RunReplay


def make_run(corpus: str, **opts) -> Run:
    options = Options(**opts)
    run = Run(new_id(), corpus, options)
    run.apply(train(corpus, options, max_merges=10_000))
    run.status = "done"
    return run


def naive(ids: list[int], merges: list[tuple[tuple[int, int], int]]) -> list[int]:
    """Apply each merge in order to the whole list, left to right (what the trainer does)."""
    for (a, b), new in merges:
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and ids[i] == a and ids[i + 1] == b:
                out.append(new)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    return ids


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=60), st.data())
def test_merges_apply_equals_applying_merges_in_order(seq, data):
    merges, next_id, alive = [], 5, list(range(5))
    for _ in range(data.draw(st.integers(0, 12))):
        a, b = data.draw(st.sampled_from(alive)), data.draw(st.sampled_from(alive))
        if any(p == (a, b) for p, _ in merges):
            continue
        merges.append(((a, b), next_id))
        alive.append(next_id)
        next_id += 1
    applied = Merges([MergeStep(r + 1, p, b"", b"", new, 0, 0) for r, (p, new) in enumerate(merges)])
    for k in range(len(merges) + 1):
        assert applied.apply(seq, k) == naive(list(seq), merges[:k])


corpora = st.text(alphabet="ab c\nあい", min_size=1, max_size=80)


@settings(max_examples=60, deadline=None)
@given(corpora, st.sampled_from(["byte", "char", "sentencepiece"]), st.sampled_from(["none", "whitespace", "gpt2"]),
       st.sampled_from(["first", "lexical"]), st.booleans())
def test_corpus_view_token_count_matches_the_records_at_every_step(corpus, algorithm, pattern, tie_break, eow):
    if not corpus.strip():
        return
    run = make_run(corpus, algorithm=algorithm, pattern=pattern, merges=12, tie_break=tie_break,
                   end_of_word=eow and algorithm == "char")
    view = RunReplay(run)
    for k in range(run.n_steps + 1):
        corpus_k = view.corpus_at(k)
        assert len(corpus_k.ids) == run.tokens_at(k), (k, corpus)
        if k:
            assert corpus_k.ids.count(run.steps[k - 1].new_id) == run.steps[k - 1].replaced
        # placed in the text: the view's segments join back to the corpus, tokens never outside it
        assert "".join(seg.text for seg in corpus_k.segments()) == corpus
        assert all(0 <= t.start <= t.end <= len(corpus) for t in corpus_k.tokens)


def test_corpus_view_highlights_the_new_tokens():
    run = make_run("aaabdaaabac", algorithm="byte", pattern="none", merges=3)
    view = RunReplay(run)
    at_1 = view.corpus_at(1)
    assert [t.text for t in at_1.tokens][:3] == ["aa", "a", "b"] and at_1.ids[0] == run.steps[0].new_id


def test_corpus_view_shows_only_the_window():
    run = make_run("abc " * 2000, algorithm="byte", pattern="gpt2", merges=5)
    assert run.n_steps == 3 and run.stop_reason == "no pair occurs twice"  # ab, abc, " abc"
    view = RunReplay(run, window_chars=100)
    assert view.truncated and "".join(t.text for t in view.corpus_at(3).tokens) == ("abc " * 25)
    assert len(view.state(3)["tokens"]) == 26
    assert view.state(3)["corpus_tokens"] == run.steps[-1].corpus_tokens == 2001  # "abc", 1999 " abc", " "


@pytest.mark.parametrize(
    ("text", "spans"),
    [
        ("a b", [(0, 1, True), (1, 3, False)]),
        ("  two", [(0, 0, True), (0, 1, False), (1, 5, False)]),
        ("x\n\ny z", [(0, 1, True), (3, 4, True), (4, 6, False)]),
    ],
)
def test_sp_spans_follow_sentencepiece_words(text, spans):
    assert sp_spans(text) == spans


def test_whitespace_pattern_keeps_the_spaces_between_words_as_pre_tokens():
    """Every pattern's pre-tokens are its matches and the stretches between them (issue 34): no character is lost."""
    assert chunk_spans("low  lower\n", "whitespace") == [(0, 3), (3, 5), (5, 10), (10, 11)]


def test_merge_tree_and_vocab_entries():
    run = make_run("aaabdaaabac", algorithm="byte", pattern="none", merges=3)
    view = RunReplay(run)
    tree = view.merge_tree(258)
    assert tree["text"] == "aaab" and tree["step"] == 3
    assert [c["text"] for c in tree["children"]] == ["aaa", "b"]
    assert [c["text"] for c in tree["children"][0]["children"]] == ["aa", "a"]
    entries, total = view.vocab_entries(2, "aa")
    assert [e["text"] for e in entries] == ["aaa", "aa", "\\xaa"] and total == 3


def test_display_text_escapes_invalid_utf8_and_control_bytes():
    from app.lab.display import display_text

    assert display_text("あ".encode()[:2]) == "\\xe3\\x81"
    assert display_text(b"\x00") == "\\x00" and display_text(b"a\x7f") == "a\\x7f"
    assert display_text(b"a\nb\t") == "a\nb\t" and display_text("日本".encode()) == "日本"


wordy = st.lists(st.sampled_from(["ab", "ba", "abc", "c", "あい", "aaa", "bab"]), min_size=3, max_size=20).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(wordy, st.sampled_from(["byte", "char", "sentencepiece"]), st.data())
def test_manual_continuation_keeps_the_prefix_and_matches_its_records(corpus, algorithm, data):
    if not corpus.strip():
        return
    pattern = "whitespace" if algorithm == "char" else "none"
    run = make_run(corpus, algorithm=algorithm, pattern=pattern, merges=8)
    if not run.n_steps:
        return
    k = data.draw(st.integers(0, run.n_steps - 1))
    candidates = [p for p, _ in (run.steps[k].top_pairs or [])]
    if not candidates:
        return
    pair = data.draw(st.sampled_from(candidates))
    options = Options(algorithm=algorithm, pattern=pattern, merges=8)
    cont = Run(new_id(), corpus, options, parent=run.id)
    try:
        cont.apply(train(corpus, options, max_merges=100, prefix=run.steps[:k], prefix_n_ties=run.n_ties[:k], force=pair))
    except LabOptionsError as exc:  # a pair SentencePiece refuses (it spells an existing piece): a clear error
        assert "already piece" in str(exc) or "cannot be merged" in str(exc), exc
        return
    cont.status = "done"
    event(f"continued ({algorithm})")
    assert [s.pair for s in cont.steps[:k]] == [s.pair for s in run.steps[:k]]
    assert cont.steps[k].pair == pair and cont.steps[k].forced
    view = RunReplay(cont)
    for j in range(cont.n_steps + 1):
        assert len(view.corpus_at(j).ids) == cont.tokens_at(j)
