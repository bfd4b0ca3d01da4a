"""The WordPiece trainer against a from-scratch reference that recounts everything each step with exact fractions,
and its exported tokenizer.json against Hugging Face ``tokenizers``."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest
from helpers import realtext
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, normalizers, pre_tokenizers

from app.engines.wordpiece import trainer as wordpiece_trainer
from app.engines.registry.loaders import load_tokenizer
from app.engines.wordpiece.trainer import (
    NORMALIZER,
    WordPieceTrainerState,
    corpus_words,
    rescore_python,
    tokenizer_json,
    train_wordpiece,
    word_counts,
)


def reference_steps(text: str, n: int, tie_break: str = "first", k: int = 1) -> list[tuple[list[tuple], list]]:
    """Per step, recounting pairs and parts from scratch: the ``k`` best rows ``((left, right), count, left count,
    right count, score)`` in winner order (the first is merged; scores exact fractions), and the pairs tied with
    the winner."""
    words, base = corpus_words(text)
    texts = {i: b.decode() for i, b in base.items()}
    segs = [([texts[i] for i in ids], freq) for ids, freq in words]
    vocab = set(texts.values())
    out = []
    for _ in range(n):
        parts: dict[str, int] = {}
        pairs: dict[tuple[str, str], int] = {}
        first: dict[tuple[str, str], tuple[int, int]] = {}
        for w, (seg, freq) in enumerate(segs):
            for p in seg:
                parts[p] = parts.get(p, 0) + freq
            for i in range(len(seg) - 1):
                pair = (seg[i], seg[i + 1])
                pairs[pair] = pairs.get(pair, 0) + freq
                first.setdefault(pair, (w, i))
        def joined(pair):
            return pair[0] + pair[1].removeprefix("##")
        def score(p):
            return Fraction(pairs[p], parts[p[0]] * parts[p[1]])
        def key(p):
            tie = first[p] if tie_break == "first" else (p[0].encode(), p[1].encode(), first[p])
            return (-score(p), tie)
        candidates = sorted((p for p in pairs if joined(p) not in vocab), key=key)
        if not candidates:
            break
        best = candidates[0]
        rows = [(p, pairs[p], parts[p[0]], parts[p[1]], score(p)) for p in candidates[:k]]
        out.append((rows, [p for p in candidates[1:] if score(p) == score(best)]))
        new = joined(best)
        vocab.add(new)
        for seg, _ in segs:
            i = 0
            while i < len(seg) - 1:
                if (seg[i], seg[i + 1]) == best:
                    seg[i : i + 2] = [new]
                i += 1
    return out


def reference_merges(text: str, n: int, tie_break: str = "first") -> list[str]:
    """Merged texts, by :func:`reference_steps`."""
    return [rows[0][0][0] + rows[0][0][1].removeprefix("##") for rows, _ in reference_steps(text, n, tie_break)]


CLASSIC = "low lower newest widest\n" * 3 + "hugging hug hugs pug pun bun\n"


@pytest.mark.parametrize("tie_break", ["first", "lexical"])
def test_merges_equal_the_reference(tie_break):
    state, _ = train_wordpiece(CLASSIC, 60, tie_break=tie_break)
    assert [s.token.decode() for s in state.steps] == reference_merges(CLASSIC, len(state.steps) + 1, tie_break)[: len(state.steps)]


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="abc dé,", min_size=1, max_size=60), st.sampled_from(["first", "lexical"]))
def test_merges_equal_the_reference_on_any_text(text, tie_break):
    try:
        words, base = corpus_words(text)
    except ValueError:
        return
    state = WordPieceTrainerState(words, base, tie_break=tie_break)
    got = []
    while not state.done and len(got) < 30:
        got.append(state.step().token.decode())
    assert got == reference_merges(text, len(got) + 1, tie_break)[: len(got)]
    assert state.done == (len(reference_merges(text, len(got) + 1, tie_break)) == len(got))


@pytest.mark.parametrize("tie_break", ["first", "lexical"])
@pytest.mark.parametrize("slack", [4096, 0])
def test_tables_and_ties_equal_the_reference(tie_break, slack):
    """The lab's records (10 scored rows, 24 ties): every row once, in winner order, with the reference's counts;
    also when the heap is rebuilt after every step (``slack`` 0, as long runs do now and then)."""
    realtext.require()
    text = CLASSIC + realtext.slices("en", 1, 2500, seed=5)[0]
    state = WordPieceTrainerState(*corpus_words(text), tie_break=tie_break)
    state.scores.slack = slack
    def texts(pair):
        return state.vocab[pair[0]].decode(), state.vocab[pair[1]].decode()
    expected = reference_steps(text, 120, tie_break, k=300)
    assert len(expected) == 120
    steps = []
    for n, (rows, _) in enumerate(expected):
        if n % 30 == 0:  # a long table now and then (the lab's table shown to its last rows)
            assert [(texts(p), c) for p, c in state.current_top_pairs(300)] == [row[:2] for row in rows]
        steps.append(state.step(top_k=10, max_ties=24))
    for step, (rows, ties) in zip(steps, expected):
        assert [(texts(p), c, a, b) for p, c, a, b, _ in step.scored] == [row[:4] for row in rows[:10]]
        assert [s for *_, s in step.scored] == [float(row[4]) for row in rows[:10]]
        assert step.score == float(rows[0][4])
        assert [texts(p) for p in step.ties] == ties[:24]


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from("ab é,.!-\t\n\r\x0b\x1c\x85\xa0\u3000\u2028北京\u00ad\u200b\ufffd\x00¿«"), max_size=40))
def test_word_counts_cut_as_tokenizers_pre_tokenizes(text):
    """The fast count (split at spaces, punctuation per distinct chunk) gives the words HF's BERT pipeline gives."""
    normalized = normalizers.BertNormalizer(**{k: v for k, v in NORMALIZER.items() if k != "type"}).normalize_str(text)
    words = [w for w, _ in pre_tokenizers.BertPreTokenizer().pre_tokenize_str(normalized)]
    assert word_counts(text) == Counter(words)
    assert list(word_counts(text)) == list(dict.fromkeys(words))  # first-seen order: the ``first`` tie rule's


def test_step_records_the_score_and_the_table():
    state = WordPieceTrainerState(*corpus_words(CLASSIC))
    step = state.step(top_k=5)
    assert step.score == pytest.approx(step.count / (step.left_count * step.right_count))
    assert step.scored[0][0] == step.pair and len(step.scored) == 5
    assert [row[4] for row in step.scored] == sorted((row[4] for row in step.scored), reverse=True)
    d = step.to_dict()
    assert d["score"] == step.score and d["token"] == step.token.decode() and len(d["scored_pairs"]) == 5


def test_export_encodes_like_tokenizers():
    realtext.require()
    text = "\n".join(realtext.slices("en", 60, 1500, seed=3) + realtext.slices("zh", 20, 500, seed=3))
    state, _ = train_wordpiece(text, 900)
    data = tokenizer_json(state.vocab)
    ours, ref = load_tokenizer(data.encode()), Tokenizer.from_str(data)
    for name in realtext.NAMES:
        for sample in realtext.slices(name, 3, 2000, seed=13):
            assert ours.encode(sample) == ref.encode(sample, add_special_tokens=False).ids


@pytest.mark.skipif(not wordpiece_trainer.COMPILED, reason="app/engines/training/_train.c is not built here")
@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.text("ab\xe9\u65e5\U0001f600", min_size=2, max_size=2),
                    st.one_of(st.integers(0, 9), st.integers(2**52, 2**70)), max_size=12),
    st.lists(st.one_of(st.integers(1, 9), st.integers(2**26, 2**40)), min_size=5, max_size=5),
    st.lists(st.text("ab\xe9\u65e5\U0001f600", min_size=2, max_size=2), max_size=12),
)
def test_compiled_rescore_equals_the_python_loop(counts, part_counts, keys):
    """The compiled scoring loop gives the same entries and the same heap as its Python twin, past 2**53 too."""
    parts = dict(zip(map(ord, "ab\xe9\u65e5\U0001f600"), part_counts))
    start = {key: (-0.5, key) for key in keys[::2]}  # some pairs have an entry already
    for key in keys[1::3]:
        if counts.get(key):
            start[key] = (-counts[key] / (parts[ord(key[0])] * parts[ord(key[1])]), key)  # unchanged: kept
    as_list = [0] * (max(parts) + 1)  # as the trainer keeps them
    for i, n in parts.items():
        as_list[i] = n
    results = []
    for rescore, counts_of_parts in [(rescore_python, parts), (wordpiece_trainer.rescore, parts),
                                     (wordpiece_trainer.rescore, as_list)]:
        live, heap = dict(start), sorted(start.values())
        rescore(keys + list(counts), counts, counts_of_parts, live, heap)
        results.append((live, heap, [id(live[k]) == id(start.get(k)) for k in live]))
    assert results[0] == results[1] == results[2]
