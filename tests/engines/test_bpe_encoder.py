"""The native BPE encoder: ids equal tiktoken's for every OpenAI encoding, and its exact fast paths."""

from __future__ import annotations


import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers import realtext
from helpers.mixed_text import mixed_text
from helpers.samples import ALL

from app.engines import registry
from helpers.sample_text import english_text, japanese_text

from app.engines.bpe.encoder import RankEncoder, merge_piece
from app.engines.bpe.model import NativeOpenAITokenizer
from app.engines.bpe.patterns import PATTERNS, Splitter, compiled, compiled_split, exact
from app.engines.openai.encodings import ENCODINGS, TiktokenTokenizer

NAMES = list(ENCODINGS)


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    return NativeOpenAITokenizer(request.param), TiktokenTokenizer(request.param)


EXTRA = {
    "zwj_and_flags": "👩‍💻 👨‍👩‍👧 🏳️‍⚧️ 🇺🇦🇯🇵🇧🇷 👍🏻👍🏿 #️⃣",
    "whitespace_runs": " " * 300 + "x" + "\n" * 50 + "\t" * 40 + "y \u3000\u00a0 \r\n\r\n  z   ",
    "contractions": "I'M sure it's FINE, they'LL see we'VE done IT'S job'S",
    "mixed_scripts": "Ünïcödé Ελληνικά русский текст עברית العربية हिन्दी ไทย 中文漢字 カタカナ ひらがな",
    "japanese_no_spaces": "日本語の文章には空白がありません" * 200,
    "chinese_no_spaces": "今天天气很好我们一起去公园散步看见许多孩子在草地上放风筝老人们坐在树下聊天" * 50,
    "japanese_long_clause": "東京都の人口は約千四百万人でありますが、しかしながら大阪府とはまた違った雰囲気がありますね。"
    + "カタカナのコンピューターソフトウェアエンジニアリング" * 3,
    "digits": "1234567890" * 50 + " 3.14159265358979 1e10 0b1010",
    "control_chars": "a\x00b\x1cc\x1fd\x7fe\x85f\u2028g",
}


@pytest.mark.parametrize("label", list(ALL) + list(EXTRA))
def test_ids_equal_tiktoken_on_varied_texts(pair, label):
    native, ref = pair
    text = ALL.get(label) or EXTRA[label]
    assert native.encode(text) == ref.encode(text)
    assert native.encode(text, allow_special=True) == ref.encode(text, allow_special=True)
    assert native.decode(native.encode(text)) == text


def _mixed_text(n_chars: int) -> str:
    """Every sample (prose, code, Japanese, Korean, emoji, whitespace runs...) shuffled line by line."""
    lines = [ln + "\n" for text in list(ALL.values()) + list(EXTRA.values()) for ln in text.splitlines()]
    return mixed_text(n_chars, seed=3, lines=lines)


@pytest.mark.slow
def test_ids_equal_tiktoken_on_large_texts(pair):
    native, ref = pair
    for text in (english_text(400_000), japanese_text(200_000), _mixed_text(300_000)):
        assert native.encode(text) == ref.encode(text)
        assert native.encode(text, allow_special=True) == ref.encode(text, allow_special=True)


@pytest.mark.slow
def test_long_run_of_one_letter_equals_tiktoken(pair):
    # How long it takes is measured against tiktoken by bench/bench_api.py (1 MB of one letter), not here.
    native, ref = pair
    text = "a" * 100_000
    assert native.encode(text) == ref.encode(text)


ALPHABET = list("aZk sS'tdlLvVrReEmM09 \t\n\r\x0b\x0c\x1c\x85\u00a0é日本ſK/.,!?-ー") + [
    "  ",
    "\n\n",
    "'s",
    "'LL",
    "👍",
    "\u3000",
    # letters, numbers and marks above U+FFFF (the fast split cuts a block around them for the regex module)
    "𝐀",
    "𠀀",
    "𝟘",
    "\U0001d165",
    # letters of every case class, and characters that case-insensitive contractions must not confuse
    "İ",
    "ǅ",
    "ʰ",
    "Ω",
    "“",
    "’",
    "—",
    "…",
    "€",
    "\u200d",  # zero-width joiner (a format character)
    "\ufe0f",  # variation selector (a mark)
    "\u0301",  # combining acute accent (a mark)
    "½",  # a number
    "\u2028",  # line separator (whitespace)
    "\x9f",  # a C1 control character
    # new or recategorised in Unicode 17: the regex module's letters, tiktoken's unassigned or lower case (ʕ)
    "\u0558",
    "\u0295",
    "\U000323b0",
    "\U00016ea0",
]
texts = st.lists(st.sampled_from(ALPHABET), max_size=80).map("".join)
# splitting never encodes, so it also sees lone surrogates (the tokenizers refuse them before that)
split_texts = st.lists(st.sampled_from([*ALPHABET, "\ud800"]), max_size=80).map("".join)


#: The fast splits: compiled (bpe/_pieces.c, where it is built) and with ``re`` (the pattern's BMP pattern).
FAST_SPLITS = [True, False] if compiled_split(PATTERNS["gpt4"]) is not None else [False]


@settings(max_examples=300, deadline=None)
@given(text=split_texts)
def test_fast_split_equals_regex(text):
    for pattern in PATTERNS.values():
        if pattern is None:
            continue
        want = exact(pattern).spelled.findall(text)  # the regex module with tiktoken's classes
        ascii_only = text.encode("ascii", "ignore").decode()
        for fast in FAST_SPLITS:
            assert Splitter(pattern, compiled=fast)(text) == want
            assert Splitter(pattern, compiled=fast)(ascii_only) == compiled(pattern).findall(ascii_only)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=40))
def test_fast_split_equals_regex_on_any_code_points(text):
    """Every code point, astral letters and numbers included (which the ``re`` split hands to the regex module)."""
    for pattern in PATTERNS.values():
        if pattern is not None:
            for fast in FAST_SPLITS:
                assert Splitter(pattern, compiled=fast)(text) == exact(pattern).spelled.findall(text)


def test_fast_split_equals_regex_on_real_text():
    realtext.require()
    texts = [realtext.read(name) for name in realtext.NAMES]
    for text in (*texts, realtext.mixed_en_c_ja(300_000), realtext.ja_technical(150_000)):
        for pattern in PATTERNS.values():
            if pattern is not None:
                want = exact(pattern).findall(text)
                for fast in FAST_SPLITS:
                    assert Splitter(pattern, compiled=fast)(text) == want, (text[:20], pattern[:20], fast)


def test_fast_split_equals_regex_on_long_mixed_text():
    text = _mixed_text(60_000) + english_text(20_000) + "é" + "word " * 50 + "\u00a0end"
    for pattern in PATTERNS.values():
        if pattern is not None:
            for fast in FAST_SPLITS:
                assert Splitter(pattern, compiled=fast)(text) == exact(pattern).findall(text)


@settings(max_examples=200, deadline=None)
@given(text=texts)
def test_native_equals_tiktoken_on_random_text(text):
    for name in ("gpt2", "o200k_base"):
        assert registry.get(f"native-{name}").encode(text) == registry.get(name).encode(text)


# -- wide pre-tokens (CJK, emoji): merges across characters, of whole characters and of partial bytes -------
WIDE = list("あいうかきくアイウカ日本語中文😀👍ー")


@st.composite
def wide_cases(draw):
    """A piece of 3- and 4-byte characters and a rank table whose extra tokens are drawn from the piece's own
    bytes, so merges across characters (whole characters, partial bytes, equal ranks) are common."""
    text = draw(st.lists(st.sampled_from(WIDE), min_size=1, max_size=60).map("".join))
    data = text.encode("utf-8")
    ranks = {bytes([i]): i for i in range(256)}
    for _ in range(draw(st.integers(0, 60))):
        start = draw(st.integers(0, len(data) - 1))
        size = draw(st.integers(2, 9))
        ranks.setdefault(data[start : start + size], draw(st.integers(256, 320)))
    return text, ranks


def textbook_ids(data: bytes, ranks: dict[bytes, int]) -> list[int]:
    """tiktoken's rule written out: join the adjacent pair of lowest rank (leftmost first) until none joins."""
    parts = [data[i : i + 1] for i in range(len(data))]
    while True:
        found = [(ranks[a + b], i) for i, (a, b) in enumerate(zip(parts, parts[1:])) if a + b in ranks]
        if not found:
            return [ranks[p] for p in parts]
        _, i = min(found)
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


@settings(max_examples=400, deadline=None)
@given(case=wide_cases())
def test_wide_pretoken_merge_equals_the_textbook_rule(case):
    text, ranks = case
    want = textbook_ids(text.encode("utf-8"), ranks)
    assert merge_piece(text.encode("utf-8"), ranks) == want
    # through the encoder, with the whole text as one pre-token (tiktoken's whole-piece rule first)
    whole = ranks.get(text.encode("utf-8"))
    assert RankEncoder(ranks, None).encode_ordinary(text) == ([whole] if whole is not None else want)


def test_merge_rule_examples():
    ranks = {bytes([i]): i for i in range(256)} | {b"aa": 256}
    assert merge_piece(b"aaa", ranks) == [256, 97]
    assert merge_piece(b"aaaaa" * 4, ranks) == [256] * 10  # long enough for the heap


def test_native_pattern_is_the_openai_one():
    for name, spec in ENCODINGS.items():
        assert registry.get(f"native-{name}").pattern == spec.pattern
        assert isinstance(compiled(spec.pattern), regex.Pattern)


def test_tiny_caches_that_clear_often_give_the_same_ids(monkeypatch):
    from app.engines.bpe import encoder

    monkeypatch.setattr(encoder, "CACHE_LIMIT", 5)
    native = NativeOpenAITokenizer("cl100k_base")
    fresh = RankEncoder(native.encoder.ranks, native.encoder.pattern)
    text = japanese_text(20_000) + EXTRA["chinese_no_spaces"] + EXTRA["zwj_and_flags"] + english_text(5_000)
    assert fresh.encode_ordinary(text) == TiktokenTokenizer("cl100k_base").encoding.encode_ordinary(text)
