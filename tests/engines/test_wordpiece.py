"""Our WordPiece engine against Hugging Face ``tokenizers``: BERT's character tables on every code point, models the
library trains (BERT's pipeline cased and uncased, a Whitespace pipeline), BERT's shipped vocabulary, vocab.txt
files, on slices of every corpus, hard strings and any text."""

from __future__ import annotations

import pytest
from helpers import realtext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from tokenizers.implementations import BertWordPieceTokenizer

from app.engines import registry
from app.engines.pipeline.bert_text import bert_normalizer
from app.engines.registry.loaders import detect_format, load_tokenizer
from app.engines.pipeline.tokenizer_json import TokenizerFileError
from app.engines.wordpiece.model import WordPieceTokenizer, wordpiece_walk

CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
HARD = [
    "", " ", "Hello, World!", "unaffable UNAFFABLE", "Héllo Wörld naïve café", "北京欢迎你 東京", "日本語のテキスト",
    "a" * 150, "x" + "é" * 99, "\x00\x01\ufffd\u200b\u00ad tab\there", "😀👍🏽 👩‍👩‍👧‍👦", "don't I'm we've they're",
    "[CLS] hi [SEP] [MASK]", "1,234.56 $%&", "e\u0301\u0327 ①② ＡＢＣ ｶﾞ", "Σίσυφος ΣΊΣΥΦΟΣ", "İstanbul ǅ ß",
]


def _train(kind: str) -> str:
    realtext.require()
    texts = [t for n in realtext.NAMES for t in realtext.slices(n, 60, 2000, seed=21)]
    if kind in ("uncased", "cased"):
        tok = BertWordPieceTokenizer(lowercase=kind == "uncased", strip_accents=None)
        tok.train_from_iterator(texts, vocab_size=2500)
        return tok._tokenizer.to_str()
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=12))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=1500, special_tokens=["[UNK]", "<b>"]))
    return tok.to_str()


@pytest.fixture(scope="module", params=["uncased", "cased", "whitespace"])
def pair(request) -> tuple[WordPieceTokenizer, Tokenizer]:
    data = _train(request.param)
    return load_tokenizer(data.encode()), Tokenizer.from_str(data)


def _ref_encoding(ref: Tokenizer, text: str, allow_special: bool = False):
    ref.encode_special_tokens = not allow_special
    return ref.encode(text, add_special_tokens=False)


def _ref_ids(ref: Tokenizer, text: str, allow_special: bool = False) -> list[int]:
    return _ref_encoding(ref, text, allow_special).ids


def _check_same(ours: WordPieceTokenizer, ref: Tokenizer, text: str) -> None:
    ids = _ref_ids(ref, text)
    assert ours.encode(text) == ids, text
    assert ours.encode(text, allow_special=True) == _ref_ids(ref, text, True)
    assert ours.decode(ids) == ref.decode(ids, skip_special_tokens=False)
    result = ours.tokenize(text)
    assert result.ids == ids
    assert "".join(s.text for s in result.segments()) == text
    if isinstance(ref.normalizer, normalizers.BertNormalizer):  # one input character per output one: same offsets
        offsets = _ref_encoding(ref, text).offsets
        assert [(t.start, t.end) for t in result.tokens] == [(a, b) for a, b in offsets]


@pytest.mark.parametrize("corpus", realtext.NAMES)
def test_wordpiece_ids_equal_tokenizers_on_real_text(pair, corpus):
    ours, ref = pair
    for text in realtext.slices(corpus, 8, 3000, seed=6):
        assert ours.encode(text) == _ref_ids(ref, text)


def test_wordpiece_matches_tokenizers_on_hard_strings(pair):
    for text in HARD:
        _check_same(*pair, text)


FIXTURE_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_wordpiece_matches_tokenizers_on_any_text(pair, text):
    _check_same(*pair, text)


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_OK)
@given(data=st.data())
def test_wordpiece_decodes_any_ids_like_tokenizers(pair, data):
    ours, ref = pair
    ids = data.draw(st.lists(st.integers(0, ours.n_vocab - 1), max_size=20))
    assert ours.decode(ids) == ref.decode(ids, skip_special_tokens=False)


@pytest.mark.parametrize(
    "options",
    [dict(), dict(lowercase=False), dict(strip_accents=False), dict(strip_accents=True, lowercase=False),
     dict(clean_text=False, handle_chinese_chars=False)],
)
def test_bert_normalizer_equals_tokenizers_on_every_code_point(options):
    ours, theirs = bert_normalizer(**options), normalizers.BertNormalizer(**options)
    for i in range(0, len(CODE_POINTS), 16384):
        block = "x".join(map(chr, CODE_POINTS[i : i + 16384]))
        assert ours(block) == theirs.normalize_str(block), hex(CODE_POINTS[i])


@pytest.mark.parametrize("kind", ["BertPreTokenizer", "Whitespace", "WhitespaceSplit"])
def test_pre_tokenizers_cut_every_code_point_like_tokenizers(kind):
    from app.engines.pipeline.pretokenizers import PreTokenizer

    ours, theirs = PreTokenizer({"type": kind}), getattr(pre_tokenizers, kind)()
    for i in range(0, len(CODE_POINTS), 16384):
        block = "a".join(map(chr, CODE_POINTS[i : i + 16384]))
        assert [block[a:b] for a, b in ours(block)] == [p for p, _ in theirs.pre_tokenize_str(block)], hex(CODE_POINTS[i])


# -- BERT's shipped vocabulary and vocab.txt files ----------------------------------------------------------------

@pytest.fixture(scope="module")
def bert() -> tuple[WordPieceTokenizer, BertWordPieceTokenizer]:
    ours = registry.get("bert-base-uncased")
    vocab = {ours.id_to_token(i): i for i in range(ours.n_vocab)}
    ref = BertWordPieceTokenizer(vocab, lowercase=True)
    ref._tokenizer.encode_special_tokens = True  # special-token text is plain text, as in our encode()
    return ours, ref


@pytest.mark.parametrize("corpus", realtext.NAMES)
def test_shipped_bert_equals_tokenizers_on_real_text(bert, corpus):
    realtext.require()
    ours, ref = bert
    assert ours.n_vocab == registry.spec("bert-base-uncased").n_vocab == ref.get_vocab_size()
    for text in realtext.slices(corpus, 8, 3000, seed=8) + HARD:
        assert ours.encode(text) == ref.encode(text, add_special_tokens=False).ids
    ids = ref.encode(realtext.slices(corpus, 1, 3000, seed=1)[0], add_special_tokens=False).ids
    assert ours.decode(ids) == ref.decode(ids, skip_special_tokens=False)


def test_shipped_bert_on_long_runs_equals_tokenizers(bert):
    ours, ref = bert
    for text in ("a" * 100_000, "\u0301" * 20_000, "\U0001f600" * 20_000, "x" * 30_000 + " " + "y" * 30_000, "a " * 50_000):
        assert ours.encode(text) == ref.encode(text, add_special_tokens=False).ids


def test_bert_ids_are_bert_base_uncased(bert):
    ours, _ = bert
    assert [ours.id_to_token(i) for i in (0, 100, 101, 102, 103)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert ours.encode("[CLS] hello", allow_special=True)[0] == 101


def test_vocab_txt_loads_like_tokenizers(tmp_path):
    ours = registry.get("bert-base-uncased")
    vocab_txt = "".join(ours.id_to_token(i) + "\n" for i in range(ours.n_vocab)).encode()
    assert detect_format(vocab_txt) == "vocab.txt"
    loaded = load_tokenizer(vocab_txt)
    path = tmp_path / "vocab.txt"
    path.write_bytes(vocab_txt)
    ref = BertWordPieceTokenizer(str(path), lowercase=True)
    ref._tokenizer.encode_special_tokens = True
    for text in HARD:
        assert loaded.encode(text) == ref.encode(text, add_special_tokens=False).ids
    cased = vocab_txt.replace(b"\nhello\n", b"\nHello\n")
    assert load_tokenizer(cased).encode("hello") != loaded.encode("hello")  # upper-case tokens: a cased model, not lowered


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"[PAD]\n[UNK]\nab cd\n", "one token"), (b"[PAD]\n[UNK]\n[UNK]\n", "collide"), (b"[PAD]\n\xff[UNK]\n", "UTF-8")],
)
def test_bad_vocab_txt_is_refused(data, message):
    with pytest.raises(TokenizerFileError, match=message):
        WordPieceTokenizer.from_vocab_txt(data)


def test_walk_is_greedy_longest_match_first():
    vocab = {"un": 0, "una": 1, "##ff": 2, "##able": 3, "##a": 4, "##f": 5, "##fa": 6, "##ble": 7}
    pieces, tries = wordpiece_walk("unaffable", vocab)
    assert [p for _, _, p in pieces] == ["una", "##ff", "##able"]
    assert tries[0].candidate == "unaffable" and not tries[0].found
    assert [t.candidate for t in tries if t.found] == ["una", "##ff", "##able"]
    assert wordpiece_walk("unx", vocab)[0] == []  # "##x" is no piece: the word is [UNK]


# -- the fast paths: forward longest-match walk, BERT's pipeline as translate + re, tokens placed when asked for ----

def _ref_offsets(ref: BertWordPieceTokenizer, text: str) -> list[tuple[int, int]]:
    return [tuple(o) for o in ref.encode(text, add_special_tokens=False).offsets]


def _placed(tokens) -> list[tuple[int, int]]:
    return [(t.start, t.end) for t in tokens]


def test_shipped_bert_places_every_code_point_like_tokenizers(bert):
    """Each code point alone between spaces: dropped ones, CJK spaced out, accents stripped, case folded into
    several characters, punctuation and whitespace as the pattern of BERT's words sees them."""
    ours, ref = bert
    for i in range(0, len(CODE_POINTS), 65536):
        text = " ".join(map(chr, CODE_POINTS[i : i + 65536]))
        result = ours.tokenize(text)
        assert result.ids == ours.encode(text) == ref.encode(text, add_special_tokens=False).ids, hex(CODE_POINTS[i])
        assert _placed(result.tokens) == _ref_offsets(ref, text), hex(CODE_POINTS[i])


def test_shipped_bert_on_unspaced_text_places_any_window_like_tokenizers(bert):
    """Texts without whitespace (long words, many of them between 64 and 100 characters or longer, so [UNK]),
    with accents and CJK that change lengths, placed whole and a window at a time."""
    realtext.require()
    ours, ref = bert
    for name in realtext.NAMES:
        text = realtext.unspaced(name, 20_000, seed=3) + "Ünïcödé北京" * 50
        offsets = _ref_offsets(ref, text)
        result = ours.tokenize(text)
        assert result.ids == ref.encode(text, add_special_tokens=False).ids
        assert _placed(result.tokens) == offsets
        fresh = ours.tokenize(text)  # a window placed without placing the rest
        for offset in (0, 1, 777, len(offsets) // 2, len(offsets) - 3):
            assert _placed(fresh.window(offset, 500)) == offsets[offset : offset + 500], (name, offset)


def test_shipped_bert_with_special_tokens_in_text_places_them_like_tokenizers(bert):
    ours, ref = bert
    text = "[CLS] Héllo [MASK]北京[SEP]x[UNK][PAD] done" * 3
    ref._tokenizer.encode_special_tokens = False
    try:
        encoding = ref.encode(text, add_special_tokens=False)
    finally:
        ref._tokenizer.encode_special_tokens = True
    result = ours.tokenize(text, allow_special=True)
    assert result.ids == ours.encode(text, allow_special=True) == encoding.ids
    assert _placed(result.tokens) == [tuple(o) for o in encoding.offsets]
    assert [t.special for t in result.tokens] == [t in ours.special_tokens for t in encoding.tokens]
    assert _placed(ours.tokenize(text, allow_special=True).window(5, 4)) == _placed(result.tokens[5:9])


def test_normalized_added_tokens_are_placed_like_tokenizers():
    """Added tokens matched in BERT-normalized text (``normalized`` true), between raw ones."""
    from tokenizers import AddedToken

    ref = Tokenizer.from_str(_train("uncased"))
    ref.add_tokens([AddedToken("Crème-Brûlée", normalized=True), AddedToken("<raw>", normalized=False)])
    ref.add_special_tokens([AddedToken("[WOW]", normalized=True)])
    ours = load_tokenizer(ref.to_str().encode())
    text = "a CRÈME-BRÛLÉE, crème-brûlée<raw>北 [WOW] [wow]Crème-Brûlée<raw>x" * 2
    for allow in (False, True):
        encoding = _ref_encoding(ref, text, allow)
        result = ours.tokenize(text, allow_special=allow)
        assert result.ids == ours.encode(text, allow_special=allow) == encoding.ids
        assert _placed(result.tokens) == [tuple(o) for o in encoding.offsets]
        assert _placed(ours.tokenize(text, allow_special=allow).window(3, 7)) == _placed(result.tokens[3:10])


_PIECE = st.text("abc", min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(
    vocab=st.sets(_PIECE | _PIECE.map("##".__add__), min_size=1, max_size=40),
    words=st.lists(st.text("abc", min_size=1, max_size=14), min_size=1, max_size=8),
)
def test_forward_walk_cuts_like_tokenizers(vocab, words):
    """The forward walk (every prefix of a piece a key) finds what ``tokenizers``' longest-match-first walk finds,
    [UNK] included, on small vocabularies where pieces are prefixes of one another."""
    tokens = ["[UNK]", *sorted(vocab)]
    ref = Tokenizer(models.WordPiece({t: i for i, t in enumerate(tokens)}, unk_token="[UNK]", max_input_chars_per_word=12))
    ref.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    ref.decoder = decoders.WordPiece()
    ours = load_tokenizer(ref.to_str().encode())
    text = " ".join(words)
    assert ours.encode(text) == ref.encode(text, add_special_tokens=False).ids
    assert ours.tokenize(text).ids == ref.encode(text, add_special_tokens=False).ids
