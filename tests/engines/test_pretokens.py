"""Pre-tokens with no character lost (issue 34 part 1): a pattern's matches and the stretches between them, as
Hugging Face's ``Split`` pre-tokenizer cuts with behavior ``"isolated"`` (the referee), and a user's pattern
checked and stopped when it takes too long."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Regex, pre_tokenizers

from app.engines.bpe.patterns import LINES_DIGITS_R2L_PATTERN, PATTERNS, exact
from app.engines.bpe.pretokens import (
    MAX_PATTERN_CHARS,
    PatternError,
    PatternTimeout,
    SplitPattern,
    check_custom,
    custom,
    named,
)

#: Patterns the ``regex`` module and Oniguruma (Hugging Face's) read alike, some of them with empty matches.
HF_PATTERNS = [
    r"\S+",
    r"\d+",
    r" ?\p{L}+",
    r"x*",
    r"(?=b)|c",
    r"\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N}))",
    LINES_DIGITS_R2L_PATTERN,
    PATTERNS["gpt2"],
    PATTERNS["gpt4"],
    PATTERNS["digits-r2l"],
]
#: Characters every library here classifies alike (no code point assigned or moved in recent Unicode versions).
TEXTS = st.lists(st.sampled_from([*"abcx  b\n\r\t1234567.'!", "é", "日本", "ß", "The ", "\u00a0", "42"]), max_size=40).map("".join)


def hugging_face(pattern: str, text: str) -> list[str]:
    # Oniguruma reads ``{1,3}+`` as "one or more of {1,3}", not as a possessive {1,3}: GPT-4's number rule is
    # written without the + for it, as Hugging Face's GPT-4-style tokenizer.json files write it
    pattern = pattern.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")
    split = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    return [piece for piece, _ in split.pre_tokenize_str(text)]


@pytest.mark.parametrize("pattern", HF_PATTERNS)
@settings(max_examples=150, deadline=None)
@given(text=TEXTS)
def test_pieces_are_what_hugging_face_split_isolated_cuts(pattern, text):
    split = SplitPattern(pattern)
    pieces = split.pieces(text)
    assert "".join(pieces) == text and all(pieces)
    assert pieces == hugging_face(pattern, text)
    assert [text[a:b] for a, b in split.spans(text)] == pieces
    assert [(a, b) for a, b, _ in split.kinds(text)] == split.spans(text)


def test_kinds_say_which_pieces_are_matches():
    assert SplitPattern(r"\d+").kinds("ab12c") == [(0, 2, False), (2, 4, True), (4, 5, False)]
    assert named("none").kinds("a b") == [(0, 3, True)]


@pytest.mark.parametrize("name", [n for n, p in PATTERNS.items() if p is not None])
@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=30))
def test_the_shipped_patterns_match_every_character(name, text):
    """Their pieces are their matches (the compiled split), on any code point."""
    assert named(name).pieces(text) == exact(PATTERNS[name]).findall(text)


def test_digits_patterns():
    assert named("digits").pieces("in 2024, 1234567 x") == ["in", " ", "2", "0", "2", "4", ",", " ", "1", "2", "3",
                                                             "4", "5", "6", "7", " x"]
    assert named("digits-r2l").pieces("1234567 12") == ["1", "234", "567", " ", "12"]
    assert named("gpt4").pieces("1234567") == ["123", "456", "7"]
    assert SplitPattern(LINES_DIGITS_R2L_PATTERN).pieces("of the 12345 cats\nand dogs") == [
        "of the ", "12", "345", " cats", "\n", "and dogs"]


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("", "pattern_regex is empty"),
        ("(a", "is not a valid regular expression: missing \\) at character 3"),
        ("[a-", "is not a valid regular expression"),
        ("a{2,1}", "is not a valid regular expression"),
        ("x" * (MAX_PATTERN_CHARS + 1), "at most 1,000"),
        (None, "pattern_regex is missing"),
        (3, "pattern_regex must be text"),
    ],
)
def test_a_bad_custom_pattern_is_refused_in_words(pattern, says):
    with pytest.raises(PatternError, match=says):
        check_custom(pattern)


def test_a_pattern_that_only_matches_empty_strings_is_refused():
    with pytest.raises(PatternError, match="only matches empty strings"):
        custom(r"(?=[A-Z])").pieces("Hello World")
    with pytest.raises(PatternError, match="superwords.pattern_regex only matches empty strings"):
        custom(r"x*", "superwords.pattern_regex").pieces("abc")
    assert custom(r"x*").pieces("axb") == ["a", "x", "b"]  # empty matches cut, a real one is a piece
    assert custom(r"\d+").pieces("no digits") == ["no digits"]  # no match at all: the text is one piece


def test_a_catastrophic_pattern_is_stopped_at_its_time_budget():
    """``(a+)+$`` on ``aaaa…!`` backtracks for longer than any machine takes for the budget: it is stopped."""
    with pytest.raises(PatternTimeout, match=r"pattern_regex took more than 0.05 s on 5,001 characters"):
        custom(r"(a+)+$").pieces("a" * 5000 + "!", timeout=0.05)


def test_a_pattern_running_lets_other_threads_run():
    """While the ``regex`` module matches a user's pattern it holds no GIL: another thread finishes its work."""
    done = threading.Event()
    stopped: list[Exception] = []

    def slow() -> None:
        try:
            custom(r"(a+)+$").pieces("a" * 5000 + "!", timeout=30)
        except PatternTimeout as exc:  # pragma: no cover - only on a machine 30 s slow
            stopped.append(exc)

    worker = threading.Thread(target=slow, daemon=True)
    worker.start()

    def other() -> None:
        total = 0
        for i in range(200_000):  # pure Python: it needs the GIL all along
            total += i
        done.set()

    threading.Thread(target=other, daemon=True).start()
    assert done.wait(25)  # finished while the pattern was still backtracking (its budget is 30 s)
    assert worker.is_alive() or stopped
