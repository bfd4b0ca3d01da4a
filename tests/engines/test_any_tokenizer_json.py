"""Any tokenizer.json that Hugging Face ``tokenizers`` loads runs id for id in Tokenplay's engine, or is refused naming
what it cannot model (issue 24).

Files are written by ``tokenizers``' own trainers (``BpeTrainer``, ``WordPieceTrainer``, ``UnigramTrainer``,
``WordLevelTrainer``) over the normalizers, pre-tokenizers and decoders its documentation lists
(:mod:`helpers.hf_pipelines`), on slices of the real-text corpora. The referee is the trained ``tokenizers.Tokenizer``
itself: both engines an upload offers (ours, and the library behind our contract) must give its ids on English,
Spanish, Japanese, Chinese and C, with special tokens allowed and not, its decoded text, and tokens placed in the
input. Each pipeline step is also held to the library on its own (normalized text and where each character comes
from, pre-tokens, decoded strings, failures included), the tables asked of the library are checked against it,
and a property test runs random pipelines on random text.
"""

from __future__ import annotations

import json
import random
import unicodedata

import pytest
from helpers import hf_pipelines as H
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from app.engines.errors import InvalidTextError, TokenplayError
from app.engines.pipeline.decoders import DecodeError, decoder
from app.engines.pipeline.normalizers import TextNormalizer
from app.engines.pipeline.pretokenizers import PreTokenizer
from app.engines.pipeline.step_tables import COMBINING_MARKS, NUMERIC
from app.engines.pipeline.tokenizer_json import TokenizerFileError, UnsupportedTokenizerError, serde_float
from app.engines.registry.loaders import tokenizer_from_json

CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]


def _pairs() -> list[tuple[str, str, str, str]]:
    """(model, normalizer, pre-tokenizer, decoder): every listed pre-tokenizer and normalizer with each model,
    paired in turn, with a decoder in turn."""
    out = []
    norms, pres, decs = list(H.NORMALIZERS), list(H.PRE_TOKENIZERS), list(H.DECODERS)
    for model in H.MODELS:
        for i in range(max(len(norms), len(pres))):
            out.append((model, norms[i % len(norms)], pres[i % len(pres)], decs[i % len(decs)]))
    return out


MATRIX = _pairs()


def _ids(make):
    """What a call gives: its value, or that it failed (our engine with a worded TokenplayError; the library with
    its Exception or a Rust panic, which pyo3 raises as a BaseException)."""
    try:
        return make()
    except TokenplayError:
        return ("fails",)
    except BaseException as exc:  # noqa: BLE001 - compared, not hidden: both sides must fail alike
        if isinstance(exc, (KeyboardInterrupt, SystemExit)) or isinstance(exc, AssertionError):
            raise
        return ("fails",)


def _same_failure(want, got) -> bool:
    return want == got == ("fails",)


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return H.texts(seed=24, count=1, chars=900)


@pytest.mark.parametrize(("model", "normalizer", "pre_tokenizer", "decoder_name"), MATRIX,
                         ids=["-".join(case) for case in MATRIX])
def test_trained_files_run_id_for_id_in_both_engines(model, normalizer, pre_tokenizer, decoder_name, texts):
    data = H.tokenizer_json(model, normalizer, pre_tokenizer, decoder_name, vocab_size=700, size=3_000)
    ref = H.reference(data)
    ours = tokenizer_from_json(data, name="ours")
    library = tokenizer_from_json(data, name="library", engine="huggingface")
    assert ours.n_vocab == library.n_vocab == ref.get_vocab_size(with_added_tokens=True)
    assert ours.id_bound == library.id_bound == max(ref.get_vocab(with_added_tokens=True).values()) + 1
    for text in texts:
        for allow in (False, True):
            want = H.reference_ids(ref, text, allow)
            assert ours.encode(text, allow_special=allow) == want, (text[:60], allow)
            assert library.encode(text, allow_special=allow) == want, (text[:60], allow)
        result = ours.tokenize(text, allow_special=True)
        assert result.ids == H.reference_ids(ref, text, True)
        tokens = result.tokens
        assert len(tokens) == len(result.ids)
        assert all(0 <= t.start <= t.end <= len(text) for t in tokens), text[:60]
        assert [t.id for t in tokens] == result.ids
        assert result.window(3, 7) == tokens[3:10]
        expected = _ids(lambda: ref.decode(want, skip_special_tokens=False))
        decoded = _ids(lambda: ours.decode(want))
        assert decoded == expected or _same_failure(expected, decoded), text[:60]


@pytest.mark.parametrize("pre_tokenizer", ["ByteLevel-prefix", "ByteLevel", "Sequence[Split,ByteLevel-prefix]",
                                           "ByteLevel-noregex"])
def test_byte_level_bpe_with_every_byte_runs_on_the_byte_engine(pre_tokenizer, texts):
    """A byte-level BPE trained from all 256 bytes (as ByteLevelBPETokenizer trains it), the prefix space of
    ``add_prefix_space`` included, runs on the byte-level engine and decodes as the library does."""
    from app.engines.bpe.json_model import ByteLevelJSONTokenizer

    data = H.tokenizer_json("BPE", "NFC", pre_tokenizer, "ByteLevel", vocab_size=700, size=3_000, byte_alphabet=True)
    ref = H.reference(data)
    ours = tokenizer_from_json(data)
    assert isinstance(ours, ByteLevelJSONTokenizer)
    for text in texts:
        want = H.reference_ids(ref, text, True)
        assert ours.encode(text, allow_special=True) == want
        assert ours.tokenize(text, allow_special=True).ids == want
        assert ours.decode(want) == ref.decode(want, skip_special_tokens=False)


def test_a_template_post_processor_adds_nothing_to_the_ids(texts):
    """The app asks for ids without the post-processor's tokens ([CLS] ... [SEP]), for shipped and uploaded files
    alike."""
    data = H.tokenizer_json("WordPiece", "Bert", "Bert", "WordPiece", post_processor=True)
    ref = H.reference(data)
    ours = tokenizer_from_json(data)
    for text in texts[:3]:
        assert ours.encode(text) == H.reference_ids(ref, text) == ref.encode(text, add_special_tokens=True).ids[1:-1]


def test_a_model_without_an_unknown_token_fails_where_the_library_fails():
    """A Unigram model trained without an unknown piece, and a WordLevel model whose unknown token is not in its
    vocabulary: text they have pieces for gives the library's ids; text they have none for is refused by both
    engines in words, as the library refuses it."""
    corpus = ["low lower lowest newer newest wider widest"] * 20
    unigram = Tokenizer(models.Unigram())
    unigram.pre_tokenizer = pre_tokenizers.Metaspace()
    unigram.train_from_iterator(corpus, trainers.UnigramTrainer(vocab_size=40, show_progress=False))
    wordlevel = Tokenizer(models.WordLevel(unk_token="<nope>"))
    wordlevel.pre_tokenizer = pre_tokenizers.Whitespace()
    wordlevel.train_from_iterator(corpus, trainers.WordLevelTrainer(show_progress=False))
    for trained in (unigram, wordlevel):
        data = trained.to_str()
        ref = H.reference(data)
        for engine in ("tokenplay", "huggingface"):
            tok = tokenizer_from_json(data, engine=engine)
            assert tok.encode("lower newest") == H.reference_ids(ref, "lower newest")
            with pytest.raises(Exception):
                H.reference_ids(ref, "lower 日本")
            with pytest.raises(InvalidTextError, match="cannot encode this text"):
                tok.encode("lower 日本")


def _wordlevel(**parts) -> str:
    tok = Tokenizer(models.WordLevel({"<unk>": 0, "a": 1, "b": 2}, unk_token="<unk>"))
    for key, value in parts.items():
        setattr(tok, key, value)
    return tok.to_str()


def _unigram_with_empty_piece() -> str:
    obj = json.loads(Tokenizer(models.Unigram([("<unk>", 0.0), ("a", -1.0)], 0)).to_str())
    obj["model"]["vocab"].append(["", -2.0])
    return json.dumps(obj)


#: Files the library loads that Tokenplay refuses, and the words that name what it cannot model.
REFUSED = {
    "UnicodeScripts": (lambda: _wordlevel(pre_tokenizer=pre_tokenizers.UnicodeScripts()), "UnicodeScripts pre-tokenizer"),
    "FixedLength(0)": (lambda: _wordlevel(pre_tokenizer=pre_tokenizers.FixedLength(0)), "FixedLength pre-tokenizer of length 0"),
    "subword prefix": (lambda: Tokenizer(models.BPE({"a": 0, "b": 1, "##b": 2, "ab": 3}, [("a", "##b")],
                                                    continuing_subword_prefix="##")).to_str(), "continuing_subword_prefix"),
    "word suffix and byte fallback": (
        lambda: Tokenizer(models.BPE({"a": 0, "b</w>": 1, "ab</w>": 2}, [("a", "b</w>")], end_of_word_suffix="</w>",
                                     byte_fallback=True)).to_str(),
        "both an end_of_word_suffix and byte_fallback",
    ),
    "dropout": (lambda: Tokenizer(models.BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")], dropout=0.5)).to_str(), "dropout"),
    "merged unknown": (lambda: Tokenizer(models.BPE({"<unk>": 0, "a": 1, "<unk>a": 2}, [("<unk>", "a")],
                                                    unk_token="<unk>")).to_str(), "merge of the unknown token '<unk>'"),
    "empty piece": (_unigram_with_empty_piece, "empty piece"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_files_the_library_loads_but_the_engine_cannot_model_are_refused_naming_it(case):
    make, words = REFUSED[case]
    data = make()
    Tokenizer.from_str(data)  # the library loads it
    with pytest.raises(UnsupportedTokenizerError, match=words.replace("(", r"\(").replace(")", r"\)")):
        tokenizer_from_json(data)


# -- each step on its own, against the library -----------------------------------------------------------------------
def _step_texts() -> list[str]:
    return H.texts(seed=5, count=1, chars=400) + [
        "``hello", "  x  ", "ａｂ ｃ", "e\u0301\u0327a\u0315\u0300 ệ\u0323", "\x01\t\u200b\ufeffa\x7f", "ab  cd   e",
        "İstanbul ß ﬁ ǅ", "가각\u1100\u1161\u11a8", "①②③ ½ ٣ ௰", "\U0001f468\u200d\U0001f469 \U0001f1ef\U0001f1f5",
        "\u2581\u2581x y", "a\u0558b\U00011de9c",
        # runs of plain characters (passed over at once) next to what composes or decomposes
        "abcdefgh\u0301ijklmnop\u0327", "日本語のテキストｶﾞｷﾞ漢字漢字かなカナ\u3099ひらがな", "한국어가나다라\u1100\u1161abcdefg\u11a8",
        "abcdefg\u0b47\u0b3eabcdefg\u0b47abcd\u0b3e", "ﬁﬁﬁplainrunﬁ①②plainrun½", "wxyz" * 30 + "\u0301" + "wxyz" * 30,
    ]


@pytest.mark.parametrize("name", [n for n in H.NORMALIZERS if n != "none"])
def test_each_normalizer_equals_the_library_and_aligns_characters_as_it_does(name):
    """The normalized text, and the input offset each of its characters starts at: one piece per character
    (FixedLength 1) and a WordLevel model whose unknown tokens carry the library's offsets."""
    norm = H.NORMALIZERS[name]()
    ours = TextNormalizer(json.loads(norm.__getstate__()))
    probe = Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>"))
    probe.normalizer = norm
    probe.pre_tokenizer = pre_tokenizers.FixedLength(1)
    for text in _step_texts():
        got, spans = ours(text)
        assert got == norm.normalize_str(text), text[:40]
        starts = [a for a, _ in spans] if spans is not None else list(range(len(got)))
        assert starts == [a for a, _ in probe.encode(text, add_special_tokens=False).offsets], text[:40]


@pytest.mark.parametrize("name", [n for n in H.PRE_TOKENIZERS if n != "none"])
def test_each_pre_tokenizer_equals_the_library(name):
    pre = H.PRE_TOKENIZERS[name]()
    ours = PreTokenizer(json.loads(pre.__getstate__()))
    for text in _step_texts():
        want = [piece for piece, _ in pre.pre_tokenize_str(text)]
        assert [piece for piece, _ in ours.pieces(text)] == want, text[:40]
        if not ours.transforms:
            assert [text[a:b] for a, b in ours(text)] == want


def test_empty_regex_matches_cut_and_replace_as_oniguruma_finds_them():
    """After a match, Oniguruma drops an empty match where the last one ended; Python's finditer reports it."""
    texts = _step_texts() + ["xxaxx", "axb", "x"]
    for pattern in (r"x*", r"x*?", r"|x", r"\b", r"(?=a)", r"a|", r"\s*"):
        replace = normalizers.Replace(Regex(pattern), "-")
        ours = TextNormalizer(json.loads(replace.__getstate__()))
        for behavior in ("isolated", "merged_with_previous", "merged_with_next", "contiguous", "removed"):
            split = pre_tokenizers.Split(Regex(pattern), behavior)
            ours_split = PreTokenizer(json.loads(split.__getstate__()))
            for text in texts:
                assert [text[a:b] for a, b in ours_split(text)] == [p for p, _ in split.pre_tokenize_str(text)]
        for text in texts:
            assert ours(text)[0] == replace.normalize_str(text), (pattern, text[:30])


DECODERS = [
    decoders.ByteLevel(), decoders.WordPiece(), decoders.WordPiece(prefix="__", cleanup=False), decoders.Metaspace(),
    decoders.Metaspace(prepend_scheme="never"), decoders.BPEDecoder(), decoders.BPEDecoder(suffix="_"), decoders.CTC(),
    decoders.CTC(cleanup=False), decoders.Replace("\u2581", " "), decoders.Replace(Regex("a+|x*"), "Z"),
    decoders.Fuse(), decoders.Strip(" ", 1, 0), decoders.Strip("\u2581", 2, 1), decoders.ByteFallback(),
]


@pytest.mark.parametrize("index", range(len(DECODERS)), ids=[type(d).__name__ for d in DECODERS])
def test_each_decoder_equals_the_library_failures_included(index):
    """Random token strings; where the library panics (a Strip past a token's end), ours raises DecodeError."""
    lib = DECODERS[index]
    ours = decoder(json.loads(lib.__getstate__()))
    rng = random.Random(index)
    alphabet = ["a", "b", "\u2581", " ", "##", "</w>", "<0xE3>", "<0x81>", "<0x82>", "<0x41>", "<0x+A>", "<0x-0>",
                "<0xzz>", "|", "<pad>", "Ġ", "Ã", "©", ".", "n't", "日", "<s>", "<0xFF>", "_", "x", ""]
    for _ in range(1_500):
        tokens = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(0, 6))]
        try:
            want = lib.decode(tokens)
        except BaseException as exc:  # noqa: BLE001 - the library panics (pyo3's PanicException is a BaseException)
            assert type(exc).__name__ == "PanicException"
            with pytest.raises(DecodeError):
                ours(tokens)
            continue
        assert ours(tokens) == want, tokens


def test_step_tables_equal_the_library_on_every_code_point():
    """StripAccents removes exactly COMBINING_MARKS; Digits cuts out exactly NUMERIC (Rust's char::is_numeric)."""
    marks = {c for a, b in COMBINING_MARKS for c in range(a, b + 1)}
    numeric = {c for a, b in NUMERIC for c in range(a, b + 1)}
    strip, digits = normalizers.StripAccents(), pre_tokenizers.Digits(individual_digits=True)
    points = [c for c in CODE_POINTS if c not in (ord("|"), ord("a"))]
    for start in range(0, len(points), 8192):
        batch = points[start : start + 8192]
        kept = strip.normalize_str("".join("|" + chr(c) for c in batch) + "|").split("|")[1:-1]
        assert {c for c, k in zip(batch, kept) if k == ""} == marks.intersection(batch)
        alone = {ord(p) for p, _ in digits.pre_tokenize_str("a" + "a".join(map(chr, batch)) + "a") if len(p) == 1 and p != "a"}
        assert alone == numeric.intersection(batch)
    assert marks != {c for c in CODE_POINTS if unicodedata.category(chr(c)).startswith("M")}  # why the table exists


def test_unigram_scores_are_read_as_the_library_reads_them():
    """serde_json without float_roundtrip reads some 17-digit decimals one bit away from the nearest float; a
    Unigram model's scores must be the library's to the last bit (near-ties between paths depend on it)."""
    rng = random.Random(17)
    numbers = []
    for _ in range(2_000):
        digits = str(rng.randint(10**15, 10**19))
        cut = rng.randint(1, 4)
        numbers.append(f"-{digits[:cut]}.{digits[cut:]}" + (f"e{rng.randint(-30, 30)}" if rng.random() < 0.1 else ""))
    numbers += ["-0.0", "0.5", "-1e-400", "-123456789012345678901234.5"]
    vocab = [[f"p{k}", 0.0] for k in range(len(numbers))]
    text = json.dumps({"model": {"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": False}})
    for k, number in enumerate(numbers):  # the numbers exactly as written, not as Python would write them back
        text = text.replace(f'["p{k}", 0.0]', f'["p{k}", {number}]', 1)
    library = json.loads(Tokenizer.from_str(text).to_str())["model"]["vocab"]  # shortest repr: exact doubles
    assert [serde_float(n) for n in numbers] == [score for _, score in library]
    assert any(float(n) != score for n, (_, score) in zip(numbers, library))  # Python's reading would differ


# -- random pipelines on random text -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bases() -> dict[str, dict]:
    """A trained vocabulary of each model, whose pipeline each example replaces."""
    out = {m: json.loads(H.tokenizer_json(m, "NFKC", "Metaspace", vocab_size=600, size=2_500)) for m in H.MODELS}
    out["BPE bytes"] = json.loads(H.tokenizer_json("BPE", "none", "ByteLevel-prefix", vocab_size=600, size=2_500,
                                                   byte_alphabet=True))
    return out


ODD = "\u2581 \t\n\u3000e\u0301ｶﾞ①ﬁ🙂\x00\u200b\ufeffİß<s>[CLS]12 34's`` AaZz日本語\u0558\U00011de9"
TEXT = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=ODD, max_size=40),
    st.lists(st.sampled_from(H.texts(seed=3, count=1, chars=300)), min_size=1, max_size=1).map("".join),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), text=TEXT, allow=st.booleans())
def test_random_pipelines_give_the_library_ids_on_any_text(bases, seed, text, allow):
    """A trained vocabulary under a random pipeline of the listed components (Sequence combinations included): our
    engine gives the library's ids, or both fail on the text; its tokens are placed in the text."""
    rng = random.Random(seed)
    obj = dict(bases[rng.choice(sorted(bases))])
    obj.update(H.random_pipeline(rng))
    data = json.dumps(obj)
    ref = H.reference(data)
    ours = tokenizer_from_json(data)
    want = _ids(lambda: H.reference_ids(ref, text, allow))
    got = _ids(lambda: ours.encode(text, allow_special=allow))
    assert got == want or _same_failure(want, got)
    if isinstance(want, list):
        result = ours.tokenize(text, allow_special=allow)
        assert result.ids == want
        assert all(0 <= t.start <= t.end <= len(text) for t in result.tokens)
        expected = _ids(lambda: ref.decode(want, skip_special_tokens=False))
        decoded = _ids(lambda: ours.decode(want))
        assert decoded == expected or _same_failure(expected, decoded)


@pytest.mark.parametrize("escape", [r"\w", r"\W", r"\h", r"\H"])
def test_escapes_oniguruma_reads_differently_mean_what_it_means_on_every_code_point(escape):
    """``\\w`` (Oniguruma: ² ³ ¹ ¼ ½ ¾ are word characters, the joiners are not) and ``\\h`` (a hex digit) in a
    file's Split regex cut where the library cuts."""
    text = "".join(map(chr, CODE_POINTS))
    theirs = [p for p, _ in pre_tokenizers.Split(Regex(escape), "isolated").pre_tokenize_str(text)]
    ours = PreTokenizer({"type": "Split", "pattern": {"Regex": escape}, "behavior": "Isolated"})
    assert [text[a:b] for a, b in ours(text)] == theirs


def test_word_boundaries_cut_where_oniguruma_puts_them():
    rng = random.Random(8)
    for pattern in (r"\b", r"\B", r"\b\w+\b", r"\W+|\w+"):
        ours = PreTokenizer({"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated"})
        for _ in range(300):
            text = "".join(rng.choice("ab ½\u200d.日\u0301-_²") for _ in range(rng.randint(0, 12)))
            want = [p for p, _ in pre_tokenizers.Split(Regex(pattern), "isolated").pre_tokenize_str(text)]
            assert [text[a:b] for a, b in ours(text)] == want, (pattern, text)


def test_a_class_oniguruma_reads_differently_is_refused_naming_it():
    data = _wordlevel(pre_tokenizer=pre_tokenizers.Split(Regex(r"[\w']+"), "isolated"))
    Tokenizer.from_str(data)
    with pytest.raises(UnsupportedTokenizerError, match=r"\\w inside a character class"):
        tokenizer_from_json(data)


def test_added_tokens_with_every_flag_give_the_library_ids_overlaps_and_failures_included():
    """Added tokens that take the spaces around them (lstrip, rstrip), single words, normalized or not, special or
    not: a match is found where the one before it ended without its spaces, so matches may overlap (the library
    repeats the text) or collide (the library fails: so does our engine, in words)."""
    from tokenizers import AddedToken

    rng = random.Random(24)
    failures = 0
    for _ in range(300):
        tok = Tokenizer(models.WordLevel({"<unk>": 0, "a": 1, "b": 2, "ab": 3}, unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        if rng.random() < 0.5:
            tok.normalizer = normalizers.Lowercase()
        for word in rng.sample([" ", "  ", "   ", "a", " a", "a ", "b\n", "\t", "ab"], rng.randint(1, 4)):
            tok.add_tokens([AddedToken(word, single_word=rng.random() < 0.3, lstrip=rng.random() < 0.5,
                                       rstrip=rng.random() < 0.5, normalized=rng.random() < 0.3,
                                       special=rng.random() < 0.2)])
        ours = tokenizer_from_json(tok.to_str())
        for _ in range(20):
            text = "".join(rng.choice(["a", "b", " ", " ", "\n", "\t", "A"]) for _ in range(rng.randint(0, 12)))
            allow = rng.random() < 0.5
            want = _ids(lambda: H.reference_ids(tok, text, allow))
            got = _ids(lambda: ours.encode(text, allow_special=allow))
            assert got == want, (json.loads(tok.to_str())["added_tokens"], text, allow)
            failures += want == ("fails",)
    assert failures  # the library's failing case was met, and our engine failed on it too


@pytest.mark.parametrize(("words", "message"), [
    (["Hello", "hello"], "both normalize to 'hello'"),
    (["  "], "normalizes to nothing"),
])
def test_normalized_added_tokens_the_library_matches_in_no_defined_way_are_refused(words, message):
    from tokenizers import AddedToken

    tok = Tokenizer(models.WordLevel({"<unk>": 0, "a": 1}, unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.Lowercase(), normalizers.Strip()])
    tok.add_tokens([AddedToken(word, normalized=True) for word in words])
    with pytest.raises(UnsupportedTokenizerError, match=message):
        tokenizer_from_json(tok.to_str())


#: Steps whose values have the wrong type: the library refuses each file, and so does Tokenplay, in words.
MISTYPED = {
    "Replace normalizer, String content a number": ("normalizer", {"type": "Replace", "pattern": {"String": "a"}, "content": 5}),
    "Replace normalizer, pattern a bare string": ("normalizer", {"type": "Replace", "pattern": "a", "content": "b"}),
    "Replace normalizer, Regex content a number": ("normalizer", {"type": "Replace", "pattern": {"Regex": "a"}, "content": 5}),
    "Prepend normalizer, a number": ("normalizer", {"type": "Prepend", "prepend": 5}),
    "Split, pattern a bare string": ("pre_tokenizer", {"type": "Split", "pattern": "a", "behavior": "Isolated", "invert": False}),
    "Split, Regex a number": ("pre_tokenizer", {"type": "Split", "pattern": {"Regex": 5}, "behavior": "Isolated", "invert": False}),
    "Replace decoder, pattern a bare string": ("decoder", {"type": "Replace", "pattern": "a", "content": "b"}),
}


@pytest.mark.parametrize("case", list(MISTYPED))
def test_steps_with_values_of_the_wrong_type_are_refused_in_words_as_the_library_refuses_them(case):
    key, step = MISTYPED[case]
    obj = json.loads(_wordlevel())
    obj[key] = step
    data = json.dumps(obj)
    with pytest.raises(Exception):
        Tokenizer.from_str(data)
    with pytest.raises(TokenizerFileError, match=r"pattern|must be text"):
        tokenizer_from_json(data)
