"""Our BPE engine reads Unicode as tiktoken does, on every code point (app/engines/openai/unicode.py).

The referee is tiktoken itself. An encoding of the 256 single-byte ranks whose split pattern is one class encodes
only the text that class matches, so encoding every code point gives exactly the members of the class for
tiktoken. Around every character whose class differs between the ``regex`` module (Unicode 17) and tiktoken
(Unicode 16), the native engines of the OpenAI encodings, custom-bpe and byte-level runs give tiktoken's ids, and the
explain view names the rule tiktoken's pattern applied.
"""

from __future__ import annotations

import re

import pytest
import regex
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers.oracles import tiktoken_reference

from app.engines import registry
from app.engines.bpe.model import BPETokenizer
from app.engines.bpe.patterns import PATTERNS, Splitter, bmp_pattern, exact, pattern_regex, splitter
from app.engines.bpe.trainer import words_from_text
from app.features.explain.explainer import Explainer
from app.engines.openai.encodings import ENCODINGS
from app.engines.openai.unicode import (
    CATEGORIES,
    TIKTOKEN_VERSION,
    agrees,
    category,
    char_class,
    disagreeing,
    disagreements,
    ranges,
    spell_out,
)
from app.lab.algorithms import chunk_spans

CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
ALL = "".join(map(chr, CODE_POINTS))
_BYTES = {bytes([b]): b for b in range(256)}
#: Every class the shipped split patterns use, and the other groups a custom pattern may use.
PATTERN_CLASSES = ["L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "N", "P", "S", "s"]
EVERY_CLASS = list(dict.fromkeys([*CATEGORIES, *PATTERN_CLASSES]))


def tiktoken_members(pattern: str, text: str = ALL) -> set[int]:
    """The code points of ``text`` that tiktoken's split regex ``pattern`` (one character) matches."""
    enc = tiktoken.Encoding(name="class-probe", pat_str=pattern, mergeable_ranks=_BYTES, special_tokens={})
    return set(map(ord, bytes(enc.encode_ordinary(text)).decode("utf-8")))


def members(compiled, text: str = ALL) -> set[int]:
    return {ord(m.group()) for m in compiled.finditer(text)}


def source(name: str) -> str:
    return r"\s" if name == "s" else rf"\p{{{name}}}"


@pytest.fixture(scope="module")
def theirs() -> dict[str, set[int]]:
    return {name: tiktoken_members(source(name)) for name in EVERY_CLASS}


def points(rs) -> set[int]:
    return {c for a, b in rs for c in range(a, b + 1)}


# -- (a) the tables are tiktoken's, on every code point ------------------------------------------------------------
def test_tables_come_from_the_installed_tiktoken():
    assert TIKTOKEN_VERSION == tiktoken.__version__


@pytest.mark.parametrize("name", EVERY_CLASS)
def test_every_class_holds_the_code_points_tiktoken_puts_in_it(theirs, name):
    assert points(ranges(name)) - set(range(0xD800, 0xE000)) == theirs[name]


@pytest.mark.parametrize("name", PATTERN_CLASSES)
def test_spelled_out_classes_match_tiktoken_on_every_code_point(theirs, name):
    assert members(regex.compile(spell_out(source(name)))) == theirs[name]


@pytest.mark.parametrize("name", ["L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "N", "s"])
def test_the_bmp_pattern_classes_match_tiktoken_below_u10000(theirs, name):
    bmp = "".join(map(chr, (c for c in CODE_POINTS if c < 0x10000)))
    assert members(re.compile(bmp_pattern(source(name))), bmp) == {c for c in theirs[name] if c < 0x10000}


def test_unassigned_is_what_no_category_holds(theirs):
    assigned = set().union(*(theirs[c] for c in CATEGORIES))
    assert points(ranges("Cn")) == set(CODE_POINTS) - assigned
    assert category("\u0558") == "Cn" and category("\u0295") == "Ll" and category("a") == "Ll"
    assert all(category(chr(c)) == cat for cat in CATEGORIES for c in list(theirs[cat])[:50])


@pytest.mark.parametrize("letter", sorted(set("sdmtlver")))
def test_case_insensitive_contractions_match_the_same_letters(letter):
    # cl100k and o200k match 's, 't, 'll... in any case; the case folding must agree too
    pattern = f"(?i:{letter})"
    assert members(regex.compile(pattern)) == tiktoken_members(pattern)


def test_disagreeing_code_points_are_exactly_where_regex_and_tiktoken_differ(theirs):
    differ = set()
    for name in EVERY_CLASS:
        differ |= members(regex.compile(source(name))) ^ theirs[name]
    known = points(disagreeing())
    assert differ <= known  # a text without these is split by the pattern as written exactly as by tiktoken
    assert {0x0558, 0x0295, 0x323B0} <= differ and not any(c < 0x80 for c in known)
    unassigned = points(ranges("Cn"))
    assert known - differ <= unassigned  # the rest: Cn for tiktoken, Cn/Co/Cs... nowhere else it would matter


def test_agrees_and_disagreements_find_a_disagreeing_character_anywhere():
    for c in sorted(points(disagreeing()))[::97] + [0x0558, 0x0295, 0x323B0, 0x16EA0]:
        for text in (chr(c), f"plain {chr(c)}", f"日本語{chr(c)}🙂", f"🙂x{chr(c)}"):
            assert not agrees(text), hex(c)
            assert disagreements(text) == [text.index(chr(c))]
    assert agrees("") and agrees("ascii only") and agrees("日本語 🙂 𝐀 𠀀 é\u0301")
    assert disagreements("日本語 🙂 𝐀 𠀀 é\u0301") == []
    assert disagreements("\u0558🙂\U000323b0\u0295") == [0, 2, 3]


def test_spell_out_reads_every_way_of_naming_a_class():
    L, N, ws = char_class("L"), char_class("N"), char_class("s")
    assert spell_out(r"\pL\PN") == f"[{L}][^{N}]"
    assert spell_out(r"\p{Letter}\p{gc=N}\p{^L}") == f"[{L}][{N}][^{L}]"
    assert spell_out(r"[^\s\p{L}]\S\d") == f"[^{ws}{L}][^{ws}][{char_class('Nd')}]"
    assert spell_out(r"[\S]").startswith("[\\u0000-\\u0008")
    assert spell_out(r"\p{Han}\w\\p{L}") == r"\p{Han}\w\\p{L}"  # no table for these; an escaped backslash
    assert spell_out(r"[]\p{N}]") == f"[]{N}]" and spell_out(r"[[:alpha:]\pN]") == f"[[:alpha:]{N}]"


def test_exact_split_cuts_as_tiktoken_where_the_regex_module_does_not():
    assert exact(PATTERNS["gpt4"]).findall("\u0558's") == ["\u0558'", "s"]  # U+0558: unassigned for tiktoken
    assert regex.findall(PATTERNS["gpt4"], "\u0558's") == ["\u0558", "'s"]  # the regex module's own view


SPLIT_ALPHABET = [*"aZs 'S\n\t.1", " x", "'ll", "é", "日", "🙂", "𝐀"]
SPLIT_ALPHABET += ["\u0558", "\u0295", "\U000323b0", "\U00016ea0"]  # new or recategorised in Unicode 17


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(SPLIT_ALPHABET), max_size=60).map("".join))
def test_blocks_around_disagreeing_characters_split_as_the_whole_spelled_out_pattern(text):
    for name in ("gpt2", "gpt4", "o200k"):
        found = exact(pattern_regex(name))
        want = found.spelled.findall(text)  # tiktoken's classes everywhere (checked above, code point by code point)
        assert found.findall(text) == [m.group() for m in found.finditer(text)] == want
        assert Splitter(pattern_regex(name))(text) == want


# -- (b) the engines equal tiktoken around every character that differs ------------------------------------------
CONTEXTS = (
    "{c}'s", "a{c}'S", "{c}'ll", " {c}{c}x", "{c}1", "1{c}", "A{c}a", "{c}A", "a{c}", "{c}Ab", "AB{c}",
    "{c}\u0301", "\u0301{c}", "x {c} y", "{c}\n", "  {c}", "{c}/", "{c}!", "Ab{c}cD'VE",
)  # fmt: skip


def around(code_points: list[int]) -> list[str]:
    """Texts with each code point in every context, about 600 code points a text."""
    lines = ["".join(ctx.format(c=chr(c)) for ctx in CONTEXTS) for c in code_points]
    return ["\n".join(lines[i : i + 600]) for i in range(0, len(lines), 600)]


@pytest.fixture(scope="module")
def around_disagreeing() -> list[str]:
    return around(sorted(points(disagreeing())))


def assert_same_ids(encode, ref: tiktoken.Encoding, texts: list[str]) -> None:
    for text in texts:
        if encode(text) != ref.encode_ordinary(text):
            bad = next(line for line in text.split("\n") if encode(line) != ref.encode_ordinary(line))
            pytest.fail(f"differs from tiktoken on {bad!r} ({[hex(ord(ch)) for ch in bad if ord(ch) > 0x7F][:2]})")


@pytest.mark.parametrize("name", list(ENCODINGS))
def test_native_engines_equal_tiktoken_around_every_disagreeing_code_point(name, around_disagreeing):
    native = registry.get(f"native-{name}")
    assert_same_ids(native.encode, tiktoken_reference(name), around_disagreeing)
    assert native.encode("\u0558's") == tiktoken_reference(name).encode_ordinary("\u0558's") == [145, 246, 6, 82]


def test_custom_bpe_equals_tiktoken_on_its_ranks_and_pattern(around_disagreeing):
    model = registry.get("custom-bpe")
    ref = tiktoken.Encoding("custom-ref", pat_str=model.pattern, mergeable_ranks=dict(model.ranks), special_tokens={})
    assert_same_ids(model.encode, ref, around_disagreeing)


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", "o200k"])
def test_trained_byte_level_models_equal_tiktoken(pattern, around_disagreeing):
    # what the lab's byte-level runs and custom-bpe are: merges trained here, run with a shipped pattern
    text = around_disagreeing[0][:3000] + " the cat's hat, THE CAT'S HAT 日本語 1234 "
    model, _ = BPETokenizer.train(text, 256 + 200, pattern)
    ref = tiktoken.Encoding("trained-ref", pat_str=model.pattern, mergeable_ranks=dict(model.ranks), special_tokens={})
    assert_same_ids(model.encode, ref, around_disagreeing[:4])
    assert words_from_text("\u0558's", pattern) == [("\u0558'".encode(), 1), (b"s", 1)]


@pytest.mark.parametrize("name", ["gpt2", "gpt4", "o200k"])
def test_fast_split_training_split_and_lab_spans_agree_with_the_spelled_out_pattern(name, around_disagreeing):
    pattern = pattern_regex(name)
    for text in around_disagreeing[:2] + ["𝐀\u0558's 𠀀\U000323b0 x", "\U00016ea0\U00016ebb 𝐀 abc \u0295A"]:
        want = exact(pattern).spelled.findall(text)
        assert Splitter(pattern)(text) == splitter(pattern)(text) == want
        assert [text[a:b] for a, b in chunk_spans(text, name)] == want


# -- (c) explain names the rule tiktoken's pattern applied ---------------------------------------------------------
@pytest.mark.parametrize(
    "name, rule, letters",
    [
        ("gpt2", "punctuation and symbols, with one space before", "letters, with one space before"),
        (
            "cl100k_base",
            "punctuation and symbols, with one space before and the line breaks after",
            "letters, with one space or punctuation mark before",
        ),
        (
            "o200k_base",
            "punctuation and symbols, with one space before and line breaks or slashes after",
            "a word ending in lower case (capitals first), with one space or punctuation mark before",
        ),
    ],
)
def test_explain_names_the_rule_of_a_character_new_in_unicode_17(name, rule, letters):
    explainer = Explainer(registry.get(name), "\u0558's")
    assert explainer.result.ids == tiktoken_reference(name).encode_ordinary("\u0558's")
    assert [u.text for u in explainer.units] == ["\u0558'", "s"]
    e = explainer.explain(0).to_dict()
    assert e["pretoken"]["text"] == "\u0558'" and e["pretoken"]["rule"] == rule
    assert explainer.explain(3).to_dict()["pretoken"]["rule"] == letters


def test_explain_cuts_a_recategorised_letter_as_tiktoken_does():
    text = "\u0295Ab a\u0295B \u0295\u0295A"  # ʕ: a lower-case letter for tiktoken, "other letter" for regex
    explainer = Explainer(registry.get("o200k_base"), text)
    assert explainer.result.ids == tiktoken_reference("o200k_base").encode_ordinary(text)
    assert [u.text for u in explainer.units] == exact(ENCODINGS["o200k_base"].pattern).spelled.findall(text)


@pytest.mark.parametrize("name", ["cl100k_base", "native-o200k_base", "custom-bpe"])
def test_explain_api_answers_for_a_character_new_in_unicode_17(client, name):
    text = "It\u0558's \U000323b0 fine"
    tokens = client.post("/api/tokenize", json={"text": text, "tokenizer": name}).json()["tokens"]
    r = client.post("/api/explain", json={"text": text, "tokenizer": name, "index": 1})
    assert r.status_code == 200, r.text
    pre = r.json()["pretoken"]
    assert pre["text"] == "\u0558'" and pre["rule"].startswith("punctuation and symbols")
    assert r.json()["token"] == tokens[1]
