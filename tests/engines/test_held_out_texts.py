"""The two held-out texts of issue 23 (``realtext.mixed_en_c_ja``: English, C and Japanese in 2-4 KB stretches;
``realtext.ja_technical``: a Japanese manual with ASCII terms in it): how they are built, and every engine equal to
its reference library on them, id for id, with its compiled loops and with its Python ones.

bench/bench_bpe.py and bench/bench_sentencepiece.py time the same texts against the same libraries.
"""

from __future__ import annotations

import difflib

import pytest
import sentencepiece as spm
from helpers import realtext
from tokenizers import Tokenizer as HFTokenizer

from app.engines import datafiles, registry
from app.engines.bpe.encoder import RankEncoder
from app.engines.bpe.model import NativeOpenAITokenizer
from app.engines.bpe.patterns import Splitter
from app.engines.huggingface.npm_models import NPM_MODELS
from app.engines.openai.encodings import ENCODINGS, TiktokenTokenizer
from app.engines.sentencepiece import SentencePieceTokenizer
from app.engines.sentencepiece.unigram import UnigramTokenizer


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    realtext.require()
    return {"mixed": realtext.mixed_en_c_ja(), "ja_technical": realtext.ja_technical()}


# -- how they are built ---------------------------------------------------------------------------------------------
def test_mixed_text_is_stretches_of_en_c_and_ja_paragraphs_taken_in_turn():
    realtext.require()
    stretches = realtext.mixed_stretches(120_000, seed=3)
    text = realtext.mixed_en_c_ja(120_000, seed=3)
    assert text == "".join(s for _, s in stretches) != realtext.mixed_en_c_ja(120_000, seed=4)
    assert 120_000 <= len(text.encode()) < 120_000 + 8192
    assert [name for name, _ in stretches] == ["en", "c", "ja"] * (len(stretches) // 3) + ["en", "c"][: len(stretches) % 3]
    for name, stretch in stretches[:-1]:
        blocks = stretch.split("\n\n")[:-1]
        assert all(block in realtext.read(name) for block in blocks)  # its corpus's paragraphs, verbatim
        size = len(stretch.encode())
        assert 2048 <= size and size - len(blocks[-1].encode()) - 2 < 4096  # whole paragraphs up to 2-4 KB


def _insertions(source: str, paragraph: str) -> list[tuple[int, str]] | None:
    """Where and what ``paragraph`` adds to ``source`` (position in ``source``, text), or None if it is not
    ``source`` with insertions."""
    found = []
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(None, source, paragraph, autojunk=False).get_opcodes():
        if op == "insert":
            found.append((a1, paragraph[b1:b2]))
        elif op != "equal":
            return None
    return found


def test_japanese_manual_splices_an_ascii_term_into_its_paragraphs_every_40_to_80_japanese_characters():
    realtext.require()
    text = realtext.ja_technical(60_000, seed=2)
    assert text == realtext.ja_technical(60_000, seed=2) != realtext.ja_technical(60_000, seed=5)
    assert 50_000 < len(text.encode()) <= 60_000
    # the mostly Japanese paragraphs of ja.txt, each reflowed to one line, in order from a drawn one
    sources = [realtext._reflow(p) for p in realtext._paragraphs("ja") if realtext._japanese_share(p) >= 0.5]
    paragraphs = text.split("\n\n")[:-1]
    first = next(k for k, s in enumerate(sources) if paragraphs[0].startswith(s[:4]) and _insertions(s, paragraphs[0]))
    terms = {term for found in realtext.technical_terms().values() for term in found}
    gaps: list[int] = []
    japanese = 0
    for i, para in enumerate(paragraphs):
        source = sources[(first + i) % len(sources)]
        added = _insertions(source, para)
        assert added is not None, (source, para)
        pos = 0
        for at, term in added:
            assert term.strip(" ") in terms and term in (term.strip(" "), f" {term.strip(' ')} ")
            assert not realtext._HIRAGANA.match(source[at - 1]) and realtext._HIRAGANA.match(source[at])
            japanese += len(realtext._JA_CHAR.findall(source[pos:at]))
            gaps.append(japanese)
            japanese, pos = 0, at
        japanese += len(realtext._JA_CHAR.findall(source[pos:]))
    assert len(gaps) > 200
    assert min(gaps) >= 40 and sum(gaps) / len(gaps) < 90, (min(gaps), sum(gaps) / len(gaps))  # a term waits for a word's end


# -- byte-level BPE: our encoder against tiktoken ----------------------------------------------------------------
@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_native_openai_encodings_equal_tiktoken_on_the_held_out_texts(texts, encoding):
    ref = TiktokenTokenizer(encoding).encoding
    for label, text in texts.items():
        want = ref.encode_ordinary(text)
        assert NativeOpenAITokenizer(encoding).encode(text) == want, label  # fresh: every pre-token new
        native = NativeOpenAITokenizer(encoding)
        python = RankEncoder(native.ranks, native.pattern)
        python._compiled = False  # the Python loop over pre-tokens ...
        python.split = Splitter(native.pattern, compiled=False)  # ... and the re split
        assert python.encode_ordinary(text) == want, label
        assert native.encode(text) == native.encode(text) == want, label  # again, from the caches


@pytest.mark.parametrize("name", ["llama-3", "qwen3"])
def test_byte_level_tokenizer_json_models_equal_tokenizers_on_the_held_out_texts(texts, name):
    ref = HFTokenizer.from_file(str(datafiles.data_path(NPM_MODELS[name].tokenizer_file)))
    ref.encode_special_tokens = True
    for label, text in texts.items():
        text = text[:200_000]
        assert registry.get(f"native-{name}").encode(text) == ref.encode(text, add_special_tokens=False).ids, label


# -- SentencePiece: our engines against sentencepiece and tokenizers --------------------------------------------
def _spm(name: str) -> tuple[bytes, spm.SentencePieceProcessor]:
    data = datafiles.verified_bytes(name)
    return data, spm.SentencePieceProcessor(model_proto=data)


def test_sentencepiece_bpe_equals_sentencepiece_on_the_held_out_texts(texts):
    data, ref = _spm("sentencepiece/mistral-7b-v0.1.model")
    for label, text in texts.items():
        want = ref.encode(text)
        fresh = SentencePieceTokenizer(data)
        assert fresh.encode(text) == want, label
        assert fresh.encode(text) == want, label  # from the caches
        python = SentencePieceTokenizer(data)
        python._chunker_c = None  # the Python loop over chunks
        assert python.encode(text) == want, label
        assert fresh.tokenize(text[:50_000]).ids == ref.encode(text[:50_000]), label


def test_compiled_chunks_equal_the_chunk_regex_on_the_held_out_texts(texts):
    for name in ("mistral-7b", "native-gemma-3"):
        tok = registry.get(name)
        if tok._chunker_c is None:
            pytest.skip("sentencepiece/_chunks.c is not built here")
        for label, text in texts.items():
            normalized = tok.normalizer.normalize_text(text)
            assert tok._chunker_c.chunks(normalized) == tok._chunk_re.findall(normalized), (name, label)


def test_sentencepiece_unigram_equals_sentencepiece_on_the_held_out_texts(texts):
    data, ref = _spm("sentencepiece/jurassic-2.model")
    for label, text in texts.items():
        assert UnigramTokenizer(data).encode(text) == ref.encode(text), label


def test_sentencepiece_style_tokenizer_json_equals_tokenizers_on_the_held_out_texts(texts):
    ref = HFTokenizer.from_file(str(datafiles.data_path(NPM_MODELS["gemma-3"].tokenizer_file)))
    ref.encode_special_tokens = True
    for label, text in texts.items():
        text = text[:200_000]
        assert registry.get("native-gemma-3").encode(text) == ref.encode(text, add_special_tokens=False).ids, label
