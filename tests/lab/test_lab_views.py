"""The lab's step views against the trainers: the corpus at step k is what training had after k merges."""

from __future__ import annotations


import pytest
from helpers import realtext
from helpers.spm_trainer import processor, reference_model
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from app.lab.algorithms import chunk_spans, train
from app.lab.options import LabOptionsError, Options
from app.lab.runs import Run, new_id
from app.engines.training.steps import MergeStep
from app.lab.replay import Merges, RunReplay
from app.lab.replay import SpmReplay
from app.lab.spm_replay import step_proto


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
@given(corpora, st.sampled_from(["byte", "char"]), st.sampled_from(["none", "whitespace", "gpt2"]),
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


def pieces(processor, text: str) -> list[str]:
    """The pieces sentencepiece cuts ``text`` into, by id (its string output gives an unknown character as itself)."""
    return [processor.id_to_piece(i) for i in processor.encode(text)]


spm_lines = st.lists(st.sampled_from(["ab", "ba", "abc", "c", "あい", "aaa", "bab", "a1", "12", "x,", "  ", "Ⅸ"]),
                     min_size=2, max_size=12).map(" ".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(spm_lines, min_size=1, max_size=6).map("\n".join), st.booleans())
@example(corpus="   \n  ", byte_fallback=False)  # only spaces: refused in words, nothing left once normalized
def test_a_sentencepiece_run_at_step_k_cuts_as_sentencepiece_trained_with_k_merges(tmp_path, corpus, byte_fallback):
    """Step k's corpus view is what sentencepiece's own trainer, asked for k merges on the same corpus, cuts the
    window into (normalization included: Ⅸ is IX after nmt_nfkc); step k's model, loaded in sentencepiece, gives
    the view's ids; the tokens sit in the text they came from."""
    options = {"byte_fallback": byte_fallback}
    try:
        run = make_run(corpus, algorithm="sentencepiece", merges=40, sentencepiece=options)
    except LabOptionsError as exc:  # fewer merges on this corpus: sentencepiece's limit, and it is one
        if "no sentence to train on" in str(exc):  # only spaces: nothing is left once normalized
            assert not corpus.strip()
            return
        most = int(exc.args[0].split("ends at ")[1].split()[0])
        run = make_run(corpus, algorithm="sentencepiece", merges=most, sentencepiece=options)
    view = SpmReplay(run)
    least = len(run.base)  # the meta pieces and the characters
    for k in sorted({0, 1, run.n_steps // 2, run.n_steps}):
        if k > run.n_steps:
            continue
        want = processor(reference_model(tmp_path, corpus, least + k, "bpe", **options))
        got = view.corpus_at(k)
        assert [view.model(k).id_to_piece(i) for i in got.ids] == pieces(want, corpus), k
        assert processor(step_proto(run, k).serialize()).encode(corpus) == got.ids
        assert view.text_tokens(k) == len(want.encode(corpus))  # counted for every step from one encoding
        assert "".join(seg.text for seg in got.segments()) == corpus
        assert all(0 <= t.start <= t.end <= len(corpus) for t in got.tokens)
    assert view.text_tokens(run.n_steps) == len(processor(run.model).encode(corpus))


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
@given(wordy, st.sampled_from(["byte", "char"]), st.data())
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
    except LabOptionsError as exc:  # a pair the trainer refuses: a clear error
        assert "cannot be merged" in str(exc), exc
        return
    cont.status = "done"
    event(f"continued ({algorithm})")
    assert [s.pair for s in cont.steps[:k]] == [s.pair for s in run.steps[:k]]
    assert cont.steps[k].pair == pair and cont.steps[k].forced
    view = RunReplay(cont)
    for j in range(cont.n_steps + 1):
        assert len(view.corpus_at(j).ids) == cont.tokens_at(j)


@pytest.mark.parametrize("algorithm", ["sentencepiece", "unigram"])
def test_sentencepiece_runs_have_no_manual_mode(algorithm):
    """sentencepiece's trainers make their own choices in their own order: continuing such a run with a chosen pair
    is refused in words, naming manual mode."""
    run = make_run("ab ab ab abc abc bc\nab bc", algorithm=algorithm, merges=2)
    options = Options(algorithm=algorithm, merges=3)
    with pytest.raises(LabOptionsError, match="manual mode") as refused:
        train(run.corpus, options, max_merges=100, prefix=run.steps[:1] if algorithm == "sentencepiece" else (),
              force=(3, 4))
    assert refused.value.field == "algorithm"


SPM_OPTION_SETS = {
    "llama-like": {"byte_fallback": True, "split_digits": True, "normalization_rule_name": "identity",
                   "remove_extra_whitespaces": False, "allow_whitespace_only_pieces": True},
    "suffix": {"treat_whitespace_as_suffix": True, "normalization_rule_name": "nmt_nfkc_cf"},
    "no-script-split": {"split_by_unicode_script": False, "split_by_number": False, "max_sentencepiece_length": 5,
                        "add_dummy_prefix": False, "normalization_rule_name": "nfkc"},
    "ids-and-symbols": {"user_defined_symbols": ["the", "<tag>"], "unk_id": 3, "bos_id": -1, "eos_id": 0,
                        "pad_id": 1, "character_coverage": 1.0, "normalization_rule_name": "nfkc_cf"},
}


@pytest.mark.parametrize("options", SPM_OPTION_SETS.values(), ids=SPM_OPTION_SETS.keys())
def test_sentencepiece_runs_with_options_step_and_encode_as_sentencepiece(tmp_path, options):
    """With sentencepiece's options (normalization rules, user-defined symbols, whitespace as suffix, other ids), every
    step's corpus and a new text's ids are sentencepiece's: its trainer asked for that many merges, its model."""
    realtext.require()
    corpus = "\n".join(realtext.slices("en", 6, 500, seed=3) + realtext.slices("ja", 3, 200, seed=3)
                       + realtext.slices("c", 3, 400, seed=3) + ["<tag> the   THE Ⅻ 12345  ½"])
    run = make_run(corpus, algorithm="sentencepiece", merges=60, sentencepiece=options)
    view = SpmReplay(run)
    window = corpus[:2000]
    least = len(run.base)
    for k in (0, 17, 60):
        want = processor(reference_model(tmp_path, corpus, least + k, "bpe", **options))
        assert [view.model(k).id_to_piece(i) for i in view.corpus_at(k).ids] == pieces(want, window), k
        assert view.state(k)["vocab_size"] == least + k
    text = "The <tag> 東京 Ⅻ   tabs\there 12 ꙮ"
    assert view.encode_trace(text, 60)["ids"] == processor(run.model).encode(text)
    entries, total = view.vocab_entries(60, limit=1000)
    assert total == least + 60 and [e["id"] for e in entries] == sorted(e["id"] for e in entries)


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="ab c\nあいꙮ😀 ", min_size=1, max_size=60), st.booleans())
def test_a_sentencepiece_encode_trace_ends_at_the_models_ids(text, byte_fallback):
    """Whatever the text (characters the run lacks, runs of them, line breaks, spaces), the trace's last stage holds
    the ids the run's model gives it."""
    run = make_run("ab ab abc bab c\nあい あい ab", algorithm="sentencepiece", merges=4,
                   sentencepiece={"byte_fallback": byte_fallback})
    trace = SpmReplay(run).encode_trace(text, run.n_steps)
    assert trace["ids"] == processor(run.model).encode(text)
    assert [i for w in trace["stages"][-1]["word_ids"] for i in w] == trace["ids"]
