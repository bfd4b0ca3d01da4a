"""The npm models (Llama 3 and 3.1, Llama 2, Qwen3 and 2.5, DeepSeek V3 and V4, Gemma 3 and 2, Mistral Nemo,
Claude's early vocabulary), served by both engines, against Hugging Face ``tokenizers``.

The referee is a ``tokenizers.Tokenizer`` loaded here from the same hash-checked file, encoding with
``add_special_tokens=False`` and, for special-token text as plain text, ``encode_special_tokens = True``. Both
registry entries of each model (the library-served one and ``native-*``, our engine) must give its ids, on slices
of every real-text corpus, on hard strings and on any text; decode must give its text.
"""

from __future__ import annotations

import random

import pytest
from helpers import realtext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from helpers.samples import ALL
from tokenizers import Tokenizer as HFTokenizer

from app.engines import registry
from app.engines import datafiles
from app.engines.huggingface.npm_models import NPM_MODELS

MODELS = list(NPM_MODELS)
HARD = {
    "zwj": "👨‍👩‍👧‍👦 👩🏽‍💻 🏳️‍🌈 🧑‍🤝‍🧑" * 3,
    "flags_keycaps": "🇯🇵🇫🇷🇺🇸 1️⃣#️⃣ ☺︎☺️",
    "cjk": "東京スカイツリーは634メートルです。我能吞下玻璃而不伤身体。한국어 텍스트",
    "combining": "e\u0301 n\u0303 a\u0308\u0304 Z\u0351\u0352\u0353 \u1100\u1161\u11a8 o\u0328\u0304 \u0915\u094d\u0937",
    "nfd_text": "Cafe\u0301 na\u0308ive re\u0301sume\u0301 A\u030a Å",
    "unicode17": "new \u0558 letters \U00016ea0 and \u0295 old",
    "whitespace": "a  b\t\tc\n\n\n d \r\n\u3000e\u00a0f \u2003 ",
    "digits": "1234567890 ١٢٣ 一二三 ①② 3.14159",
    "markup_lookalikes": "<|im_start|> <think> </think> <start_of_turn> <unused0> <｜User｜> <|eot_id|> ▁▁",
    "bytes": "\x00\x01\x7f \ufeff \U0010fffd \ue000",
}


def reference(name: str) -> HFTokenizer:
    tok = HFTokenizer.from_file(str(datafiles.data_path(NPM_MODELS[name].tokenizer_file)))
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module", params=MODELS)
def model(request):
    name = request.param
    return name, reference(name), [registry.get(name), registry.get(f"native-{name}")]


def ref_ids(ref: HFTokenizer, text: str, allow_special: bool = False) -> list[int]:
    ref.encode_special_tokens = not allow_special
    return ref.encode(text, add_special_tokens=False).ids


def corpus_slices() -> list[str]:
    realtext.require()
    return [piece for name in realtext.NAMES for piece in realtext.slices(name, 6, 3_000)]


def test_ids_equal_the_reference_on_slices_of_every_corpus(model):
    name, ref, ours = model
    for text in corpus_slices():
        for allow in (False, True):
            want = ref_ids(ref, text, allow)
            for tok in ours:
                assert tok.encode(text, allow_special=allow) == want, (tok.name, allow, text[:80])


def test_ids_equal_the_reference_on_long_single_chunks(model):
    """One character 20,000 times and corpus slices without whitespace: a single long pre-token, merged whole."""
    name, ref, ours = model
    for label, text in realtext.long_runs().items():
        want = ref_ids(ref, text)
        for tok in ours:
            assert tok.encode(text) == want, (tok.name, label)
        result = ours[1].tokenize(text)
        assert result.ids == want, label
        assert "".join(s.text for s in result.segments()) == text, label


@pytest.mark.parametrize("label", list(HARD) + list(ALL))
def test_ids_equal_the_reference_on_hard_strings(model, label):
    name, ref, ours = model
    text = HARD.get(label) or ALL[label]
    for allow in (False, True):
        want = ref_ids(ref, text, allow)
        for tok in ours:
            assert tok.encode(text, allow_special=allow) == want, (tok.name, allow)


def test_special_tokens_are_text_unless_allowed_and_match_when_allowed(model):
    name, ref, ours = model
    specials = ours[0].special_tokens
    assert specials and specials == ours[1].special_tokens
    picked = random.Random(name).sample(sorted(specials), min(40, len(specials)))
    text = " x".join(picked) + "y"
    for allow in (False, True):
        want = ref_ids(ref, text, allow)
        for tok in ours:
            assert tok.encode(text, allow_special=allow) == want, (tok.name, allow)
    assert all(specials[s] in want for s in picked)


def test_vocabulary_size_and_specials_match_the_reference(model):
    name, ref, ours = model
    for tok in ours:
        assert tok.n_vocab == ref.get_vocab_size(with_added_tokens=True) == registry.spec(tok.name).n_vocab
    added = ref.get_added_tokens_decoder()
    assert ours[1].special_tokens == {t.content: i for i, t in added.items() if t.special}


def test_decode_equals_the_reference(model):
    name, ref, ours = model
    rng = random.Random(7)
    text = " ".join(HARD.values())
    id_lists = [ref_ids(ref, text, True), [rng.randrange(ours[0].n_vocab) for _ in range(300)]]
    id_lists += [ids[a:b] for ids in id_lists[:1] for a, b in ((0, 7), (3, 11), (5, 6))]  # cut inside characters
    for ids in id_lists:
        want = ref.decode(ids, skip_special_tokens=False)
        for tok in ours:
            assert tok.decode(ids) == want, tok.name


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=120))
def test_ids_equal_the_reference_on_any_text(model, text):
    name, ref, ours = model
    want = ref_ids(ref, text)
    for tok in ours:
        assert tok.encode(text) == want, tok.name


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ids=st.lists(st.integers(0, 128_000), max_size=40))
def test_decode_equals_the_reference_on_any_ids(model, ids):
    name, ref, ours = model
    ids = [i % ours[0].n_vocab for i in ids]  # Llama 2 has 32,000 ids
    want = ref.decode(ids, skip_special_tokens=False)
    for tok in ours:
        assert tok.decode(ids) == want, tok.name


@pytest.mark.parametrize("label", ["nfd_text", "combining", "zwj", "markup_lookalikes", "whitespace"])
def test_tokens_are_placed_in_the_text(model, label):
    """Segments join back to the text; byte-level tokens' bytes join to its UTF-8 unless normalization changed
    it; each token's span holds the text it came from (for a piece that is the input itself)."""
    name, ref, ours = model
    text = HARD[label]
    for tok in ours:
        result = tok.tokenize(text, allow_special=True)
        assert result.ids == ref_ids(ref, text, True)
        assert [t.id for t in result.tokens] == result.ids
        assert "".join(s.text for s in result.segments()) == text
        assert all(0 <= t.start < t.end <= len(text) for t in result.tokens), tok.name
        assert [t.start for t in result.tokens] == sorted(t.start for t in result.tokens)
        if result.byte_table is not None:
            assert b"".join(t.bytes for t in result.tokens) == text.encode()
        for t in result.tokens:
            if t.valid_utf8 and not t.byte_fallback and t.text == text[t.start : t.end]:
                assert t.bytes == text[t.start : t.end].encode()


def test_normalized_text_places_tokens_on_the_input_characters():
    """Qwen3 normalizes to NFC: a decomposed é is one character for the model, two in the input."""
    text = "Cafe\u0301 au lait"
    for name in ("qwen3", "native-qwen3"):
        result = registry.get(name).tokenize(text)
        assert result.byte_table is None  # the tokens' bytes are those of the NFC text, not of the input
        accent = next(t for t in result.tokens if t.bytes == "é".encode())
        assert accent.start == 3  # the library's offsets cover the e; ours the e and its accent
        assert "".join(s.text for s in result.segments()) == text
    accent = next(t for t in registry.get("native-qwen3").tokenize(text).tokens if t.bytes == "é".encode())
    assert (accent.start, accent.end) == (3, 5)


def test_windows_of_tokens_equal_slices_of_all_of_them():
    text = "Cafe\u0301 👨‍👩‍👧 <start_of_turn>日本語\n\n\tx " * 30
    for name in ("qwen3", "native-qwen3", "gemma-3", "native-gemma-3"):
        full = registry.get(name).tokenize(text, allow_special=True)
        for offset, limit in ((0, 5), (17, 40), (len(full.ids) - 3, 10)):
            fresh = registry.get(name).tokenize(text, allow_special=True)
            assert fresh.window(offset, limit) == full.tokens[offset : offset + limit], name


def test_gemma_byte_fallback_pieces_are_marked_and_share_their_character():
    result = registry.get("native-gemma-3").tokenize("ok \U000E0100")
    fallback = [t for t in result.tokens if t.byte_fallback]
    assert len(fallback) == 4 and {(t.start, t.end) for t in fallback} == {(3, 4)}
    assert [t.text for t in fallback] == ["<0xF3>", "<0xA0>", "<0x84>", "<0x80>"]


def test_gemma_2_has_no_0x09_piece_and_a_tab_is_a_piece_of_its_own():
    """Gemma 2 has 255 byte pieces: a tab is the piece "\\t" (id 226, where <0x09> would be), never a fallback."""
    ref = reference("gemma-2")
    assert ref.token_to_id("<0x09>") is None and ref.token_to_id("\t") == 226
    text = "a\tb\t\tc \t日本\U00016ea0\tend"  # U+16EA0 (Unicode 14) is no piece: four byte pieces
    for tok in (registry.get("gemma-2"), registry.get("native-gemma-2")):
        result = tok.tokenize(text)
        assert result.ids == ref_ids(ref, text)
        assert 226 in result.ids
        assert not any(t.byte_fallback for t in result.tokens if t.id == 226)
        assert sum(t.byte_fallback for t in result.tokens) == 4
    assert registry.get("native-gemma-2").count_byte_fallback(registry.get("native-gemma-2").encode(text)) == 4


def _piece_file(missing: set[int], pieces: tuple[str, ...] = ("a", "b", "\t", "▁")) -> str:
    """A SentencePiece-style tokenizer.json with byte fallback and every byte piece but ``missing``."""
    import json

    vocab = {"<unk>": 0, **{p: i + 1 for i, p in enumerate(pieces)}}
    for b in range(256):
        if b not in missing:
            vocab[f"<0x{b:02X}>"] = len(vocab)
    vocab["ab"] = len(vocab)
    return json.dumps({
        "version": "1.0", "added_tokens": [], "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        "pre_tokenizer": None, "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                                                     {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "vocab": vocab,
                  "merges": [["a", "b"]]},
    })


def test_a_missing_ascii_byte_piece_whose_character_is_a_piece_runs_as_the_library_runs_it():
    from app.engines.registry.loaders import tokenizer_from_json

    data = _piece_file({0x09})
    ref = HFTokenizer.from_str(data)
    ours = tokenizer_from_json(data)
    for text in ("ab\tab", "\t\t", "x\ty", "日本 ab\t", "\x00\x7f\U0001F600"):
        assert ours.encode(text) == ref.encode(text, add_special_tokens=False).ids, repr(text)
        assert ours.decode(ours.encode(text)) == ref.decode(ours.encode(text), skip_special_tokens=False)


@pytest.mark.parametrize("missing", [{0xE3}, {0x41}, {0x09, 0x80, 0x81, 0x82, 0x83, 0x84}])
def test_byte_pieces_some_character_would_need_are_refused_in_words(missing):
    """<0xE3> is needed by あ; <0x41> by "A", which is no piece: our engine refuses, naming the pieces."""
    from app.engines.pipeline.tokenizer_json import TokenizerFileError
    from app.engines.registry.loaders import tokenizer_from_json

    with pytest.raises(TokenizerFileError) as caught:
        tokenizer_from_json(_piece_file(missing))
    message = str(caught.value)
    assert "byte_fallback is on but the model lacks the byte pieces" in message
    assert f"<0x{min(missing - {0x09}):02X}>" in message and "<0x09>" not in message


def test_llama_3_1_has_llama_3s_ids_and_special_tokens_and_its_own_chat_settings():
    """What the README says of llama-3.1's files: the vocabulary and special tokens are llama-3's (Llama 3.0 names),
    so their ids agree on any text; the tokenizer_config.json differs (end of turn, chat template): an entry of its
    own, not an alias."""
    import json

    three, three_one = reference("llama-3"), reference("llama-3.1")
    assert three.get_vocab(with_added_tokens=True) == three_one.get_vocab(with_added_tokens=True)
    assert three_one.id_to_token(128004) == "<|reserved_special_token_2|>"  # Meta's 3.1: <|finetune_right_pad_id|>
    text = " ".join(HARD.values()) + "<|eot_id|><|begin_of_text|>"
    for allow in (False, True):
        assert ref_ids(three, text, allow) == ref_ids(three_one, text, allow)
    configs = [json.loads(datafiles.verified_bytes(NPM_MODELS[n].config_file)) for n in ("llama-3", "llama-3.1")]
    assert (configs[0]["eos_token"], configs[1]["eos_token"]) == ("<|end_of_text|>", "<|eot_id|>")
    assert configs[0]["chat_template"] != configs[1]["chat_template"]


def test_an_empty_token_in_a_sentencepiece_style_tokenizer_json_is_refused_as_a_tokenizer_json():
    """The library loads a vocabulary with the empty text as a token (no text has one); our engine does not run
    it, and says so of this file, never calling it a damaged .model file."""
    import json

    from app.engines.pipeline.tokenizer_json import TokenizerFileError
    from app.engines.registry.loaders import tokenizer_from_json

    spec = json.loads(_piece_file(set()))
    spec["model"]["vocab"][""] = len(spec["model"]["vocab"])
    HFTokenizer.from_str(json.dumps(spec))
    with pytest.raises(TokenizerFileError) as caught:
        tokenizer_from_json(json.dumps(spec))
    assert str(caught.value) == "token 262 is the empty text; Tokenplay's engine does not run such a file yet"
