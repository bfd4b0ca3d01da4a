"""The compare stats, best values and boundary differences, checked against values computed by hand."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engines import registry
from app.features.compare import (
    CompareError,
    best_per_column,
    boundaries,
    boundary_diff,
    check_selection,
    compare,
    compute_stats,
    count_words,
    mark_segments,
    unk_id_of,
)
from app.features.presets import BY_KEY, PRESETS
from app.engines.result import Token, TokenizeResult, group_segments


def _result(name: str, text: str, cuts: list[int], ids: list[int] | None = None, **flags) -> TokenizeResult:
    """A hand-made result: tokens cover text[cuts[i]:cuts[i+1]]."""
    bounds = [0, *cuts, len(text)]
    ids = ids if ids is not None else list(range(len(bounds) - 1))
    tokens = [
        Token(i, text[a:b].encode(), a, b, text[a:b], **flags) for i, (a, b) in zip(ids, itertools.pairwise(bounds))
    ]
    return TokenizeResult(name, text, ids, tokens)


def test_stats_hello_world_gpt2_hand_computed():
    stats = compute_stats(registry.get("gpt2").tokenize("Hello world"))
    # "Hello" + " world": 2 tokens, 11 characters and bytes, 2 words.
    assert stats.tokens == 2
    assert stats.chars == 11 and stats.bytes == 11 and stats.words == 2
    assert stats.chars_per_token == 5.5
    assert stats.bytes_per_token == 5.5
    assert stats.fertility == 1.0
    assert stats.partial == 0 and stats.partial_share == 0.0
    assert stats.unknown == 0 and stats.special == 0


def test_stats_partial_share_cjk_gpt2():
    # gpt2 cuts 閒 (E9 96 92) into two byte tokens, neither valid UTF-8 on its own.
    result = registry.get("gpt2").tokenize("閒")
    stats = compute_stats(result)
    assert stats.tokens == 2
    assert stats.partial == 2 and stats.partial_share == 1.0
    assert stats.chars_per_token == 0.5
    assert stats.bytes_per_token == 1.5
    assert stats.words == 1 and stats.fertility is None  # one Han character: no words to count per


def test_fertility_only_where_words_are_written_with_spaces():
    en = compute_stats(registry.get("gpt2").tokenize("a tokenizer cuts text"))
    assert en.words == 4 and en.fertility == round(en.tokens / 4, 3)
    ja = compute_stats(registry.get("gpt2").tokenize("東京は日本の首都です。 京都は古い都です。"))
    assert ja.words == 2 and ja.fertility is None
    mixed = compute_stats(registry.get("gpt2").tokenize("the word 日本 in English text"))
    assert mixed.fertility is not None


def test_stats_partial_share_mixed_text():
    # "a 閒": "a" is whole, " 閒" is cut into byte tokens by gpt2.
    result = registry.get("gpt2").tokenize("a 閒")
    partial = sum(1 for t in result.tokens if not t.valid_utf8)
    stats = compute_stats(result)
    assert partial >= 1
    assert stats.partial == partial
    assert stats.partial_share == round(partial / result.count, 4)


def test_byte_fallback_of_whole_characters_is_not_partial():
    """Mistral spells a newline as <0x0A>: a whole character, counted apart; <0xE3> of a cut character is partial."""
    mistral = registry.get("mistral-7b")
    code = compute_stats(mistral.tokenize("def f():\n    return 1\n"))
    assert code.byte_fallback == 2 and code.partial == 0
    ours = mistral.tokenize("Hello ꙮ\n")  # ꙮ is not in the vocabulary: three byte pieces
    stats = compute_stats(ours)
    assert stats.partial == 3 and stats.byte_fallback == 1
    assert stats.partial_share == round(3 / ours.count, 4)


def test_stats_unknown_tokens_use_unk_id():
    result = _result("sp", "a?b?", [1, 2, 3], ids=[7, 0, 8, 0])
    assert compute_stats(result, unk_id=0).unknown == 2
    assert compute_stats(result, unk_id=None).unknown == 0


def test_unk_id_of_reads_the_tokenizer_attribute():
    class WithUnk:
        unk_id = 3

    class Without:
        pass

    class Negative:
        unk_id = -1

    assert unk_id_of(WithUnk()) == 3
    assert unk_id_of(Without()) is None
    assert unk_id_of(Negative()) is None


def test_stats_empty_text_has_no_ratios():
    stats = compute_stats(registry.get("gpt2").tokenize(""))
    assert stats.tokens == 0 and stats.words == 0
    assert stats.chars_per_token is None and stats.fertility is None and stats.partial_share is None


def test_count_words_splits_on_any_whitespace():
    assert count_words("Hello world") == 2
    assert count_words("  a\tb\nc\u3000d  ") == 4  # ideographic space separates too
    assert count_words("吾輩は猫である。") == 1  # no spaces: one word
    assert count_words("") == 0


def test_best_per_column_marks_ties_and_direction():
    a = compute_stats(_result("a", "abcd", [2]))  # 2 tokens
    b = compute_stats(_result("b", "abcd", [1, 2]))  # 3 tokens
    c = compute_stats(_result("c", "abcd", [2]))  # 2 tokens
    best = best_per_column({"a": a, "b": b, "c": c})
    assert best["tokens"] == ["a", "c"]  # fewer is better
    assert best["chars_per_token"] == ["a", "c"]  # more is better
    assert best["fertility"] == ["a", "c"]
    assert best["unknown"] == ["a", "b", "c"]


def test_best_per_column_skips_missing_values():
    empty = compute_stats(_result("e", "", []))
    assert best_per_column({"e": empty})["fertility"] == []


def test_boundary_diff_extra_and_missing_hand_made():
    ref = _result("ref", "abcd", [2])  # ab|cd
    other = _result("other", "abcd", [1])  # a|bcd
    assert boundaries(ref) == {2} and boundaries(other) == {1}
    diff = boundary_diff(other, ref)
    assert diff.extra == [1] and diff.missing == [2] and diff.offsets == [1, 2]
    marked = mark_segments(other.segments(), boundaries(ref))
    assert [m.text for m in marked] == ["a", "bcd"]
    assert [m.extra_cut for m in marked] == [False, True]
    assert marked[1].missing_cuts == [2]
    assert marked[1].pieces() == ["b", "cd"]
    assert marked[0].pieces() == ["a"]


def test_boundary_diff_real_digits_gpt2_vs_cl100k():
    text = "Hello world 12345"
    gpt2 = registry.get("gpt2").tokenize(text)  # Hello| world| 123|45
    cl100k = registry.get("cl100k_base").tokenize(text)  # Hello| world| |123|45
    diff = boundary_diff(cl100k, gpt2)
    assert diff.extra == [12] and diff.missing == []
    assert boundary_diff(gpt2, gpt2).offsets == []


def test_boundaries_fold_partial_characters():
    # Byte tokens inside one character never make a boundary: boundaries are character offsets.
    result = registry.get("gpt2").tokenize("閒閒")
    assert result.count > 2
    assert boundaries(result) <= {1}


def test_compare_reference_defaults_to_first_and_must_be_compared():
    text = "Hello world 12345"
    results = [registry.get(n).tokenize(text) for n in ("gpt2", "cl100k_base")]
    comparison = compare(text, results)
    assert comparison.reference == "gpt2"
    assert comparison.diffs["cl100k_base"].offsets == [12]
    with pytest.raises(CompareError, match="choose one of: gpt2, cl100k_base"):
        compare(text, results, reference="o200k_base")


def test_check_selection_deduplicates_and_needs_two():
    assert check_selection(["gpt2", "cl100k_base", "gpt2"]) == ["gpt2", "cl100k_base"]
    with pytest.raises(CompareError, match="at least 2"):
        check_selection(["gpt2", "gpt2"])


def test_presets_cover_the_issue_list():
    keys = {p.key for p in PRESETS}
    assert {"english", "python", "json-yaml", "japanese", "korean", "chinese", "emoji", "numbers", "url"} <= keys
    assert " SolidGoldMagikarp" in BY_KEY["glitch"].text
    assert "<|endoftext|>" in BY_KEY["endoftext"].text
    assert "\n    " in BY_KEY["python"].text  # indentation
    assert "\u200d" in BY_KEY["emoji"].text and "🇯🇵" in BY_KEY["emoji"].text  # ZWJ sequence and a flag


def test_glitch_preset_is_one_token_in_gpt2():
    ids = registry.get("gpt2").encode(" SolidGoldMagikarp")
    assert len(ids) == 1


@settings(max_examples=30, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=40))
def test_boundaries_equal_segment_starts_for_every_tokenizer(text):
    for name in registry.names():
        result = registry.get(name).tokenize(text)
        assert boundaries(result) == {seg.start for seg in result.segments() if seg.start > 0}, name


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=12), st.integers(0, 4))
def test_boundaries_equal_segment_starts_for_any_placed_tokens(steps, tail):
    # Tokens as engines place them, in order: each starts at or after the previous one's start (gaps, overlaps,
    # empty tokens); the text may run past the last. The C-level loops of boundaries() fold them as group_segments.
    tokens, start = [], 0
    for skip, length in steps:
        start += skip
        tokens.append(Token(len(tokens), b"x", start, start + length, "x"))
    size = max([t.end for t in tokens], default=0) + tail
    result = TokenizeResult("t", "x" * size, [t.id for t in tokens], tokens)
    assert boundaries(result) == {seg.start for seg in group_segments(result.text, tokens) if seg.start > 0}
