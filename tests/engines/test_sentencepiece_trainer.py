"""The SentencePiece-style BPE trainer: steps against a naive reference, saved models against the library."""

from __future__ import annotations

from collections import Counter

import pytest
from helpers import realtext
import sentencepiece as spm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engines.sentencepiece.model import SentencePieceTokenizer
from app.engines.sentencepiece.proto import BYTE, CONTROL, NORMAL, UNKNOWN, ModelProto
from app.engines.sentencepiece.trainer import (
    STOP_NO_PAIR,
    STOP_VOCAB_SIZE,
    SentencePieceTrainerState,
    SentencePieceTrainingError,
    normalize_corpus,
    required_chars,
    split_words,
    train_sentencepiece,
)

ENGLISH_CORPUS = (
    "The cat sat on the mat. The dog sat on the log.\n"
    "A cat and a dog are friends; the cat likes the mat and the dog likes the log.\n"
    "Cats sit, dogs sit, and everyone sits on mats and logs in the sun.\n"
) * 20


# -- a naive reference: recount every pair at every step ---------------------------------------------------------

def reference_train(text, vocab_size, *, byte_fallback, add_dummy_prefix, coverage, tie_break, max_len=16):
    sentences = normalize_corpus(text, add_dummy_prefix)
    chars_count = Counter("".join(sentences))
    chars = required_chars(chars_count, coverage)
    texts = ["<unk>", "<s>", "</s>"] + ([f"<0x{b:02X}>" for b in range(256)] if byte_fallback else []) + chars
    char_id = {c: len(texts) - len(chars) + i for i, c in enumerate(chars)}
    words: dict[str, int] = {}
    for s in sentences:
        for w in split_words(s):
            words[w] = words.get(w, 0) + 1
    seqs = [[char_id.get(c, -1) for c in w] for w in words]
    freqs = list(words.values())
    steps = []
    while len(texts) < vocab_size:
        counts: dict = {}
        first: dict = {}
        for wi, ids in enumerate(seqs):
            for j, p in enumerate(zip(ids, ids[1:])):
                a, b = p
                if a < 0 or b < 0 or len(texts[a]) + len(texts[b]) > max_len or texts[a] + texts[b] in texts:
                    continue
                counts[p] = counts.get(p, 0) + freqs[wi]
                first.setdefault(p, (wi, j))
        if not counts or max(counts.values()) < 2:
            break
        c = max(counts.values())
        tied = [p for p in counts if counts[p] == c]
        if tie_break == "lexical":
            tied.sort(key=lambda p: (texts[p[0]].encode(), texts[p[1]].encode()))
        else:
            tied.sort(key=lambda p: first[p])
        pair = tied[0]
        new_id = len(texts)
        texts.append(texts[pair[0]] + texts[pair[1]])
        replaced = 0
        for wi, ids in enumerate(seqs):
            out, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                    out.append(new_id)
                    i += 2
                    replaced += freqs[wi]
                else:
                    out.append(ids[i])
                    i += 1
            seqs[wi] = out
        tokens = sum(len(s) * f for s, f in zip(seqs, freqs))
        steps.append((pair, c, replaced, tied[1:], tokens))
    return steps


texts_strategy = st.text(alphabet=st.sampled_from("aab bc  cd\nééx한"), min_size=1, max_size=300)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts_strategy,
    extra=st.integers(0, 40),
    byte_fallback=st.booleans(),
    add_dummy_prefix=st.booleans(),
    tie_break=st.sampled_from(["first", "lexical"]),
    coverage=st.sampled_from([1.0, 0.9, 0.6]),
    max_len=st.sampled_from([16, 3]),
)
def test_steps_match_a_naive_reference(text, extra, byte_fallback, add_dummy_prefix, tie_break, coverage, max_len):
    try:
        probe = SentencePieceTrainerState(
            text, 100_000, byte_fallback=byte_fallback, add_dummy_prefix=add_dummy_prefix,
            character_coverage=coverage, tie_break=tie_break, max_piece_length=max_len,
        )
    except SentencePieceTrainingError as exc:
        assert "empty" in str(exc)
        return
    base = probe.base_size
    vocab_size = base + extra
    state = SentencePieceTrainerState(
        text, vocab_size, byte_fallback=byte_fallback, add_dummy_prefix=add_dummy_prefix,
        character_coverage=coverage, tie_break=tie_break, max_piece_length=max_len,
    )
    result = state.run(top_k=3)
    expected = reference_train(
        text, vocab_size, byte_fallback=byte_fallback, add_dummy_prefix=add_dummy_prefix, coverage=coverage,
        tie_break=tie_break, max_len=max_len,
    )
    got = [(s.pair, s.count, s.replaced, s.ties, s.corpus_tokens) for s in result.steps]
    assert got == expected
    for s in result.steps:
        assert s.new_id == state.base_size + s.step - 1
        assert s.top_pairs and s.top_pairs[0] == (s.pair, s.count)
    assert result.stop_reason == STOP_VOCAB_SIZE or result.stop_reason.startswith(STOP_NO_PAIR)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    corpus=st.text(alphabet=st.sampled_from("abcab  de\nfé<>s/0x"), min_size=1, max_size=200),
    probe=st.text(max_size=60),
    byte_fallback=st.booleans(),
    add_dummy_prefix=st.booleans(),
    extra=st.integers(0, 60),
)
def test_saved_model_encodes_identically_in_sentencepiece(tmp_path_factory, corpus, probe, byte_fallback,
                                                          add_dummy_prefix, extra):
    try:
        state = SentencePieceTrainerState(corpus, 10**5, byte_fallback=byte_fallback, add_dummy_prefix=add_dummy_prefix)
    except SentencePieceTrainingError:
        return
    state.requested_vocab_size = state.base_size + extra
    state.run()
    model = state.model()
    path = model.save(tmp_path_factory.mktemp("sp") / "m.model")
    sp = spm.SentencePieceProcessor(model_file=str(path))
    ours = SentencePieceTokenizer.from_file(path)
    for text in (probe, corpus, corpus[::-1] + probe):
        ids = sp.encode(text)
        assert ours.encode(text) == ids
        assert ours.decode(ids) == sp.decode(ids)
        assert "".join(seg.text for seg in ours.tokenize(text).segments()) == text


def test_saved_file_round_trips_and_has_the_sentencepiece_layout(tmp_path):
    model, result = train_sentencepiece(ENGLISH_CORPUS, 400)
    path = model.save(tmp_path / "english.model")
    proto = ModelProto.parse(path.read_bytes())
    types = [p.type for p in proto.pieces]
    assert types[:3] == [UNKNOWN, CONTROL, CONTROL]
    assert types[3:259] == [BYTE] * 256 and proto.pieces[3].piece == "<0x00>"
    assert all(t == NORMAL for t in types[259:])
    assert proto.trainer_spec.model_type == 2 and proto.trainer_spec.byte_fallback
    assert proto.normalizer_spec.name == "identity" and not proto.normalizer_spec.remove_extra_whitespaces
    sp = spm.SentencePieceProcessor(model_file=str(path))
    assert sp.vocab_size() == model.vocab_size == len(proto.pieces)
    # merge k scores -k; the vocabulary in the result agrees with the file
    for s in result.steps:
        assert proto.pieces[s.new_id].piece == (s.left + s.right).decode()
        assert proto.pieces[s.new_id].score == -(s.step - 1)
        assert result.vocab[s.new_id] == s.left + s.right


def test_worked_example_korean_falls_back_to_bytes_and_decodes_back(tmp_path):
    model, result = train_sentencepiece(ENGLISH_CORPUS, 320, byte_fallback=True)
    assert result.stop_reason == STOP_VOCAB_SIZE
    path = model.save(tmp_path / "english.model")
    ours = SentencePieceTokenizer.from_file(path, name="english-sp")
    sp = spm.SentencePieceProcessor(model_file=str(path))
    text = "The cat says 안녕하세요 to the dog."
    ids = ours.encode(text)
    assert ids == sp.encode(text)
    pieces = [ours.id_to_piece(i) for i in ids]
    korean = "안녕하세요".encode()
    byte_pieces = [p for p in pieces if p.startswith("<0x")]
    assert byte_pieces == [f"<0x{b:02X}>" for b in korean]  # 5 syllables x 3 bytes, none in the vocabulary
    assert ours.decode(ids) == sp.decode(ids) == text
    result_view = ours.tokenize(text)
    assert sum(t.byte_fallback for t in result_view.tokens) == 15
    segs = [s.text for s in result_view.segments()]
    assert all(ch in segs or f" {ch}" in segs for ch in "녕하세요")  # each syllable's bytes group into it
    assert "".join(segs) == text


def test_small_corpus_stops_at_the_size_reached_and_says_so():
    model, result = train_sentencepiece("the cat sat", 2000, byte_fallback=False)
    assert result.stop_reason.startswith(STOP_NO_PAIR)
    assert f"{model.vocab_size} of the 2000" in result.stop_reason
    assert "too small" in result.stop_reason
    assert model.vocab_size < 2000


def test_vocab_size_below_the_base_vocabulary_says_what_to_do():
    with pytest.raises(SentencePieceTrainingError, match="use at least 264"):
        train_sentencepiece("abc abc abcd", 100)  # 3 specials + 256 bytes + 5 characters (▁abcd)


def test_character_coverage_leaves_rare_characters_to_byte_fallback_or_unk(tmp_path):
    corpus = "aaaa bbbb aaaa bbbb ab ab\n" * 50 + "z"
    state = SentencePieceTrainerState(corpus, 280, byte_fallback=True, character_coverage=0.999)
    assert "z" in state.unknown_chars
    model, _ = train_sentencepiece(corpus, 280, character_coverage=0.999)
    tok = model.tokenizer()
    assert tok.encode("z") == [tok.piece_to_id("▁"), tok.piece_to_id("<0x7A>")]
    model_unk, _ = train_sentencepiece(corpus, 30, character_coverage=0.999, byte_fallback=False)
    tok_unk = model_unk.tokenizer()
    path = model_unk.save(tmp_path / "unk.model")
    sp = spm.SentencePieceProcessor(model_file=str(path))
    assert tok_unk.encode("zz ab zz") == sp.encode("zz ab zz")
    assert tok_unk.encode("zz")[-1] == tok_unk.unk_id
    assert tok_unk.decode(tok_unk.encode("zz")) == sp.decode(sp.encode("zz"))


def test_force_pair_and_step_records():
    state = SentencePieceTrainerState("low lower lowest newer", 500, byte_fallback=False, tie_break="lexical")
    best = state.best_pair()
    top = state.current_top_pairs(5)
    assert top[0][0] == best
    e, r = state.known["e"], state.known["r"]
    step = state.step(force_pair=(e, r), top_k=5)
    assert step.forced and step.left == b"e" and step.right == b"r" and step.count == 2 and step.replaced == 2
    assert step.top_pairs == top
    assert state.piece(step.new_id) == "er"
    with pytest.raises(SentencePieceTrainingError, match="does not occur"):
        state.step(force_pair=(e, r))
    auto = state.step()
    assert not auto.forced and auto.pair == best
    assert state.result().stop_reason == "stopped by the user before the end"
    assert state.result().to_dict()["steps"][0]["token"] == "er"


def test_dummy_prefix_off_and_tie_break_recorded():
    model, result = train_sentencepiece(
        "ab ab ab", 40, byte_fallback=False, add_dummy_prefix=False, tie_break="lexical"
    )
    assert result.steps[0].tie_break == "lexical"
    tok = model.tokenizer()
    assert tok.encode_pieces("ab ab") == ["ab", "▁ab"]
    with pytest.raises(SentencePieceTrainingError, match="tie-break"):
        train_sentencepiece("ab", 40, tie_break="random")
    with pytest.raises(SentencePieceTrainingError, match="empty"):
        train_sentencepiece("\n\n", 40)


def brute_force_winner(state: SentencePieceTrainerState):
    """The winner and ties recomputed from the state's words alone (no incremental bookkeeping)."""
    counts: dict = {}
    first: dict = {}
    for wi, ids in enumerate(state.words):
        for j, p in enumerate(zip(ids, ids[1:])):
            a, b = p
            if a < 0 or b < 0 or state.lengths[a] + state.lengths[b] > state.max_piece_length:
                continue
            if state.texts[a] + state.texts[b] in state.known:
                continue
            counts[p] = counts.get(p, 0) + state.freqs[wi]
            first.setdefault(p, (wi, j))
    if not counts or max(counts.values()) < 2:
        return None, counts
    c = max(counts.values())
    tied = [p for p in counts if counts[p] == c]
    if state.tie_break == "lexical":
        tied.sort(key=lambda p: (state.surfaces[p[0]], state.surfaces[p[1]]))
    else:
        tied.sort(key=lambda p: first[p])
    return (tied[0], tied[1:]), counts


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts_strategy,
    tie_break=st.sampled_from(["first", "lexical"]),
    choices=st.lists(st.integers(0, 5), min_size=1, max_size=25),
)
def test_incremental_state_matches_a_recount_after_forced_and_automatic_steps(text, tie_break, choices):
    try:
        state = SentencePieceTrainerState(text, 100_000, byte_fallback=False, tie_break=tie_break, max_piece_length=4)
    except SentencePieceTrainingError:
        return
    for choice in choices:
        expected, counts = brute_force_winner(state)
        got = state._winner()
        assert (got and (got[0], got[1])) == (expected and (expected[0], expected[1]))
        for p, c in counts.items():
            assert state.pair_count(p) == c
        candidates = sorted(counts)
        if choice and candidates:  # force some pair, not necessarily the winner
            state.step(force_pair=candidates[choice % len(candidates)])
        elif expected is not None:
            assert state.step().pair == expected[0]
        else:
            break


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=st.text(min_size=1, max_size=150), probe=st.text(max_size=40), extra=st.integers(0, 50))
def test_any_unicode_corpus_saves_a_model_sentencepiece_loads(corpus, probe, extra):
    try:
        state = SentencePieceTrainerState(corpus * 2, 100_000, byte_fallback=extra % 2 == 0)
    except SentencePieceTrainingError:
        return
    state.requested_vocab_size = state.base_size + extra
    state.run()
    data = state.model().serialize()
    sp = spm.SentencePieceProcessor(model_proto=data)
    ours = SentencePieceTokenizer(data)
    for text in (probe, corpus):
        assert ours.encode(text) == sp.encode(text)


def test_nul_is_never_a_piece():
    model, _ = train_sentencepiece("a\x00b a\x00b a\x00b", 300)
    assert all("\x00" not in p.piece for p in model.pieces)
    sp = spm.SentencePieceProcessor(model_proto=model.serialize())
    assert model.tokenizer().encode("a\x00b") == sp.encode("a\x00b")


# -- real text (the corpora in ../shared/corpora) ------------------------------------------------------------


@pytest.mark.parametrize("name", realtext.NAMES)
def test_steps_match_a_naive_reference_on_real_text(name):
    realtext.require()
    for tie_break, text in zip(["first", "lexical"], realtext.slices(name, 2, 3000, seed=4)):
        vocab_size = SentencePieceTrainerState(text, 100_000).base_size + 40
        result = SentencePieceTrainerState(text, vocab_size, tie_break=tie_break).run()
        expected = reference_train(
            text, vocab_size, byte_fallback=True, add_dummy_prefix=True, coverage=1.0, tie_break=tie_break
        )
        assert [(s.pair, s.count, s.replaced, s.ties, s.corpus_tokens) for s in result.steps] == expected


@pytest.mark.parametrize("name", realtext.NAMES)
def test_model_trained_on_real_text_encodes_like_sentencepiece(name, tmp_path):
    realtext.require()
    corpus = "".join(realtext.slices(name, 4, 20_000, seed=5))
    size = SentencePieceTrainerState(corpus, 100_000, character_coverage=0.9995).base_size + 600
    model, result = train_sentencepiece(corpus, size, character_coverage=0.9995)
    assert result.stop_reason == STOP_VOCAB_SIZE
    path = model.save(tmp_path / f"{name}.model")
    sp = spm.SentencePieceProcessor(model_file=str(path))
    ours = SentencePieceTokenizer.from_file(path)
    others = [realtext.slices(other, 1, 3000, seed=6)[0] for other in realtext.NAMES if other != name]
    for probe in realtext.slices(name, 5, 6000, seed=7) + others:
        ids = sp.encode(probe)
        assert ours.encode(probe) == ids
        assert ours.decode(ids) == sp.decode(ids)
