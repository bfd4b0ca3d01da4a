"""Budgets on what a user wrote (app/engines/budget.py): a regex or a child process over its time is stopped and
said in words; a child over its memory too. Every slow case here is slow on any machine (exponential backtracking,
a quadratic scan of 200,000 characters, a loop without end), and the clock of the budget's own checks is injected
where a test needs the moment it runs out."""

from __future__ import annotations

import json
import os
import pickle
import time

import pytest
import regex

from app.engines import budget
from app.engines.budget import Budget, OverBudget, UserPattern, probe_pattern, run_isolated
from app.engines.errors import InvalidTextError, TokenplayError
from app.engines.registry.loaders import regex_warnings, tokenizer_from_json, user_regexes

CATASTROPHIC = r"(a+)+$"
HOSTILE_TEXT = "a" * 5000 + "!"


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def split_json(pattern: str) -> dict:
    """A small BPE tokenizer.json whose pre-tokenizer is a Split with ``pattern``."""
    vocab = {c: i for i, c in enumerate("ab!xy ")}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        "post_processor": None, "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": ["a b"] if False else []},
    }


def test_budget_starts_on_first_use_and_runs_out_on_its_clock():
    clock = FakeClock()
    b = Budget(2.0, clock=clock)
    clock.now += 50  # waiting before the first use costs nothing
    assert b.check("work") == 2.0
    clock.now += 1.5
    assert b.remaining() == pytest.approx(0.5)
    clock.now += 0.5
    with pytest.raises(OverBudget, match=r"work took more than 2 s on this text"):
        b.check("work")


def test_a_cancelled_budget_stops_work_in_words():
    b = Budget(10.0)
    b.cancel()
    with pytest.raises(OverBudget, match="cancelled"):
        b.check("the regex")


def test_user_pattern_without_a_budget_is_the_regex_itself():
    p = UserPattern(r"\p{L}+|\d", "a regex")
    text = "ab12 cd"
    assert [m.span() for m in p.finditer(text)] == [m.span() for m in regex.finditer(r"\p{L}+|\d", text)]
    assert p.findall(text) == ["ab", "1", "2", "cd"]
    assert p.search(text, 2).group() == "1"
    assert pickle.loads(pickle.dumps(p)).findall(text) == p.findall(text)


def test_user_pattern_stops_catastrophic_backtracking_at_its_budget():
    p = UserPattern(CATASTROPHIC, "this tokenizer's pre-tokenizer regex")
    for method in ("findall", "search"):
        with budget.use(Budget(0.2)), pytest.raises(OverBudget, match="pre-tokenizer regex took more than 0.2 s"):
            getattr(p, method)(HOSTILE_TEXT)
    with budget.use(Budget(0.2)), pytest.raises(OverBudget):
        list(p.finditer(HOSTILE_TEXT))


def test_user_pattern_stops_a_pattern_that_is_only_quadratic_between_matches():
    # each match of a*b|a scans to the end of the text and fails, then takes one 'a': 200,000 matches of
    # 200,000 steps each; no single match is slow, so it is the clock between matches that stops it
    p = UserPattern(r"a*b|a", "a regex")
    with budget.use(Budget(0.2)), pytest.raises(OverBudget):
        for _ in p.finditer("a" * 200_000):
            pass


def test_probe_flags_catastrophic_patterns_and_passes_the_shipped_ones():
    from app.engines.openai.encodings import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN

    for bad in (CATASTROPHIC, r"(x+x+)+y", r"(a|aa)+b"):
        warning = probe_pattern(regex.compile(bad), budget_seconds=3)
        assert warning is not None and "backtracks catastrophically" in warning and "3 s" in warning, bad
    for good in (GPT2_PATTERN, CL100K_PATTERN, O200K_PATTERN, r"\s+|\w+"):
        assert probe_pattern(regex.compile(good)) is None, good


def test_upload_warnings_name_the_dangerous_regex_of_a_tokenizer_json():
    data = json.dumps(split_json(CATASTROPHIC)).encode()
    assert user_regexes(data, "tokenizer.json") == [CATASTROPHIC]
    (warning,) = regex_warnings(data, "tokenizer.json", budget_seconds=3)
    assert CATASTROPHIC in warning
    assert regex_warnings(json.dumps(split_json(r"\w+|\s+")).encode(), "tokenizer.json") == []
    assert user_regexes(b"", "tiktoken", "gpt4") == [] and user_regexes(b"", "tiktoken", "(a+)+$") == ["(a+)+$"]


def test_our_engine_stops_a_tokenizer_json_regex_at_the_budget():
    tok = tokenizer_from_json(json.dumps(split_json(CATASTROPHIC)).encode(), name="native-hostile")
    assert tok.encode("ab") == [0, 1]  # an ordinary text: as ever
    with budget.use(Budget(0.3)), pytest.raises(OverBudget, match="pre-tokenizer regex"):
        tok.encode(HOSTILE_TEXT)


def test_the_library_runs_an_uploaded_regex_in_a_child_stopped_at_the_budget():
    data = json.dumps(split_json(r"a*b|a")).encode()
    trusted = tokenizer_from_json(data, name="hostile", engine="huggingface")
    isolated = tokenizer_from_json(data, name="hostile", engine="huggingface", untrusted=True)
    assert isolated.isolated and not trusted.isolated
    for text in ("ab", "xa b!", "aab aaab"):  # the same answers from the child
        assert isolated.encode(text) == trusted.encode(text)
        assert isolated.tokenize(text).ids == trusted.tokenize(text).ids
        assert [(t.start, t.end) for t in isolated.tokenize(text).tokens] == \
            [(t.start, t.end) for t in trusted.tokenize(text).tokens]
    assert isolated.count_batch(["ab", "aab"]) == trusted.count_batch(["ab", "aab"])
    assert isolated.decode([0, 1, 2]) == trusted.decode([0, 1, 2])
    # each match of a*b|a scans to the end of the text, under Oniguruma's retry limit: 200,000 matches of up to
    # 200,000 steps, in Rust, where only killing its process stops it
    with budget.use(Budget(0.3)), pytest.raises(OverBudget, match="regex"):
        isolated.encode("a" * 200_000)


def test_the_library_giving_up_on_a_regex_is_said_in_words():
    tok = tokenizer_from_json(json.dumps(split_json(CATASTROPHIC)).encode(), name="hostile", engine="huggingface")
    with pytest.raises(InvalidTextError, match="backtracks too much on this text"):
        tok.encode(HOSTILE_TEXT)


def test_run_isolated_returns_raises_and_stops():
    assert run_isolated(sorted, [3, 1, 2], what="a sort") == [1, 2, 3]
    with pytest.raises(InvalidTextError, match="no"):
        run_isolated(_raise_invalid, what="a check")
    started = time.monotonic()
    with budget.use(Budget(0.3)), pytest.raises(OverBudget, match="the loop took more than 0.3 s"):
        run_isolated(_forever, what="the loop")
    assert time.monotonic() - started < 60  # a bound against hanging, not a speed requirement


def test_run_isolated_stops_a_child_over_its_memory_without_growing_the_parent():
    with pytest.raises(OverBudget, match="more memory than it may \\(64 MB\\)"):
        run_isolated(_allocate, 1 << 30, what="the allocation", memory_bytes=64 << 20)


def test_run_isolated_leaves_no_child_behind():
    before = _children()
    with budget.use(Budget(0.2)), pytest.raises(OverBudget):
        run_isolated(_forever, what="the loop")
    assert _children() <= before


def _children() -> set[int]:
    me = str(os.getpid())
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = open(os.path.join(entry.path, "stat")).read()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me:
                found.add(int(entry.name))
    return found


def _raise_invalid():
    raise InvalidTextError("no")


def _forever():
    while True:
        pass


def _allocate(n: int) -> int:
    return len(bytearray(n))


class _Unpicklable(TokenplayError):
    """An error that holds something pickle cannot take (as an error raised when the child has no memory left to
    pickle it cannot be pickled either)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.callback = lambda: None


def _raise_unpicklable() -> None:
    raise _Unpicklable("the words of the error")


def test_an_error_that_does_not_pickle_comes_back_as_its_class_with_its_words():
    with pytest.raises(_Unpicklable, match="^the words of the error$"):
        run_isolated(_raise_unpicklable, what="a thing")
