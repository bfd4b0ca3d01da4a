"""Measuring tokenizers on a corpus (app/features/measure): every figure against the reference libraries, the
Rényi efficiency and the bootstrap by hand on small tables, every input format, and parts that merge the same.

Referees: tiktoken's ``encode_ordinary``, Hugging Face ``tokenizers``' ``encode(..., add_special_tokens=False)``
(special-token text as plain text, as Tokenplay encodes everywhere), sentencepiece's ``encode``; words are the
``regex`` module's ``\\w+`` itself.
"""

from __future__ import annotations

import gzip
import math
from collections import Counter
from functools import cache

import numpy as np
import orjson
import pytest
import regex
import sentencepiece as spm
import tokenizers
from hypothesis import given, settings, strategies as st
from tokenizers.implementations import BertWordPieceTokenizer

from app.engines import registry
from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS
from app.features.measure import FigureOptions, ReadOptions, ReferenceError, measure, registry_ref
from app.features.measure.figures import interval, renyi_efficiency, resampled_sums
from app.features.measure.sources import Problems, decode, find_files, plan, read_part
from app.features.measure.tally import IdCounts
from helpers import measure_corpus
from helpers.oracles import tiktoken_reference

SENTENCEPIECE_FILES = {"mistral-7b": "sentencepiece/mistral-7b-v0.1.model", "jurassic-2": "sentencepiece/jurassic-2.model"}

docs, corpus = measure_corpus.fixtures()


@cache
def referee(name: str):
    """The reference library's ids for a shipped tokenizer: a function of the text."""
    if name in ("gpt2", "cl100k_base", "o200k_base", "p50k_base"):
        return tiktoken_reference(name).encode_ordinary
    if name in NPM_MODELS:
        lib = tokenizers.Tokenizer.from_file(str(data_path(NPM_MODELS[name].tokenizer_file)))
        lib.encode_special_tokens = True  # special-token text is plain text, as Tokenplay encodes it everywhere
        return lambda text: lib.encode(text, add_special_tokens=False).ids
    if name in SENTENCEPIECE_FILES:
        sp = spm.SentencePieceProcessor(model_file=str(data_path(SENTENCEPIECE_FILES[name])))
        return sp.encode
    if name == "bert-base-uncased":
        ours = registry.get(name)
        ref = BertWordPieceTokenizer({ours.id_to_token(i): i for i in range(ours.n_vocab)}, lowercase=True)
        ref._tokenizer.encode_special_tokens = True
        return lambda text: ref.encode(text, add_special_tokens=False).ids
    raise KeyError(name)


WORD = regex.compile(r"\w+")


def expected_figures(name: str, texts: list[str]) -> dict:
    """The figures of ``texts`` for tokenizer ``name``, from its reference library, written out plainly."""
    ref = referee(name)
    ids = [ref(t) for t in texts]
    tokens = sum(map(len, ids))
    counts = Counter(i for doc in ids for i in doc)
    words = [w for t in texts for w in WORD.findall(t)]
    continued = sum(1 for w in words if len(ref(w)) >= 2)
    n_vocab = registry.get(name).n_vocab
    total = sum(counts.values())
    power = sum((c / total) ** 2.5 for c in counts.values())
    return {
        "documents": len(texts),
        "bytes": sum(len(t.encode()) for t in texts),
        "chars": sum(map(len, texts)),
        "words": len(words),
        "tokens": tokens,
        "continued_words": continued / len(words),
        "vocab_used": len(counts),
        "renyi_efficiency": math.log(power) / (1 - 2.5) / math.log(n_vocab),
    }


def assert_figures(got: dict, want: dict) -> None:
    for key, value in want.items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert got[key] == value, key


# -- every tokens figure, refereed ---------------------------------------------------------------------------------

REFEREED = ["cl100k_base", "o200k_base", "gpt2", "llama-3", "qwen3", "gemma-3", "mistral-7b", "jurassic-2",
            "bert-base-uncased", "native-cl100k_base", "native-llama-3", "native-gemma-3"]


@pytest.mark.parametrize("name", REFEREED)
def test_figures_equal_the_reference_library_per_document(corpus, docs, name):
    referee_name = registry.spec(name).model or name
    report = measure([str(corpus)], [registry_ref(name)], read=ReadOptions(group_by="field:lang"))
    figures = report.tokenizers[name]
    assert_figures(figures, expected_figures(referee_name, [d["text"] for d in docs]))
    for lang in ("en", "ja", "c"):
        texts = [d["text"] for d in docs if d["lang"] == lang]
        assert_figures(figures["groups"][lang], expected_figures(referee_name, texts))
    assert figures["bytes_per_token"] == figures["bytes"] / figures["tokens"]
    assert figures["tokens_per_word"] == figures["tokens"] / figures["words"]
    assert figures["vocab_used_share"] == figures["vocab_used"] / figures["n_vocab"]
    assert report.problems == []


def test_byte_fallback_and_unknown_shares_by_the_reference_libraries(corpus, docs):
    texts = [d["text"] for d in docs] + ["ꙮ 𓀀 emoji 🦜 and a rare ⁂ sign"]
    path = corpus.parent / "with-rare.jsonl"
    measure_corpus.write_jsonl(path, [{"text": t} for t in texts])
    report = measure([str(path)], [registry_ref(n) for n in ("mistral-7b", "bert-base-uncased", "cl100k_base", "llama-2")])
    sp = spm.SentencePieceProcessor(model_file=str(data_path(SENTENCEPIECE_FILES["mistral-7b"])))
    ids = [i for t in texts for i in sp.encode(t)]
    assert report.tokenizers["mistral-7b"]["byte_fallback"] == sum(map(sp.is_byte, ids)) / len(ids) > 0
    bert = [i for t in texts for i in referee("bert-base-uncased")(t)]
    assert report.tokenizers["bert-base-uncased"]["unknown"] == bert.count(100) / len(bert) > 0
    assert report.tokenizers["bert-base-uncased"]["byte_fallback"] is None
    assert report.tokenizers["cl100k_base"]["byte_fallback"] is None and report.tokenizers["cl100k_base"]["unknown"] is None
    lib = tokenizers.Tokenizer.from_file(str(data_path(NPM_MODELS["llama-2"].tokenizer_file)))
    pieces = [lib.id_to_token(i) for t in texts for i in referee("llama-2")(t)]
    fallback = sum(1 for p in pieces if regex.fullmatch(r"<0x[0-9A-F]{2}>", p))
    assert report.tokenizers["llama-2"]["byte_fallback"] == fallback / len(pieces) > 0
    assert report.tokenizers["llama-2"]["unknown"] == 0


# -- hand-computed figures on small tables ------------------------------------------------------------------------


def test_renyi_efficiency_by_hand():
    # ids seen 2, 1 and 1 times out of a vocabulary of 8: p = (1/2, 1/4, 1/4)
    # sum p^2.5 = 0.5^2.5 + 2 * 0.25^2.5 = 0.17677669529663687 + 0.0625 = 0.23927669529663687
    # H_2.5 = ln(0.23927669529663687) / (1 - 2.5) = -1.43013468 / -1.5 = 0.95342312
    # efficiency = H_2.5 / ln 8 = 0.95342312 / 2.07944154 = 0.45849960
    assert renyi_efficiency(np.array([2, 1, 1]), 8) == pytest.approx(0.45849960, abs=1e-8)
    # one id only: no uncertainty at all
    assert renyi_efficiency(np.array([5]), 8) == 0.0
    # every id of the vocabulary equally often: the highest efficiency, 1
    assert renyi_efficiency(np.array([3, 3, 3, 3]), 4) == pytest.approx(1.0)
    assert renyi_efficiency(np.array([], dtype=np.int64), 8) is None


def test_bootstrap_interval_by_hand():
    # Group G has two documents of 1 and 3 tokens, the reference one of 2. A resample of G is {1,1}, {1,3}, {3,1}
    # or {3,3}, each with probability 1/4: sums 2, 4, 4, 6, premiums 1, 2, 2, 3. With 1,000 resamples about 250
    # are 1 and 250 are 3, so the 2.5% and 97.5% percentiles are exactly 1 and 3; the premium itself is 4/2 = 2.
    rng = np.random.default_rng(0)
    g = resampled_sums([np.array([1, 3])], 1000, rng)[:, 0]
    r = resampled_sums([np.array([2])], 1000, rng)[:, 0]
    assert set(g.tolist()) == {2, 4, 6} and set(r.tolist()) == {2}
    assert interval(g / r) == (1.0, 3.0)
    assert 200 < (g == 2).sum() < 300 and 200 < (g == 6).sum() < 300
    # every document twice as many tokens as the reference's: every resample's ratio is 2
    a, b = np.array([2, 4, 10, 6]), np.array([1, 2, 5, 3])
    both = resampled_sums([a, b], 1000, np.random.default_rng(7))
    assert interval(both[:, 0] / both[:, 1]) == (2.0, 2.0)


def test_premium_with_its_interval_from_the_measure(tmp_path):
    # the hand-computed table above, as a corpus: tokens of "a" documents with gpt2 (one token per word "x")
    rows = [{"text": "x", "lang": "g"}, {"text": "x x x", "lang": "g"}, {"text": "x x", "lang": "r"}]
    path = measure_corpus.write_jsonl(tmp_path / "small.jsonl", rows)
    assert [len(referee("gpt2")(r["text"])) for r in rows] == [1, 3, 2]
    report = measure([str(path)], [registry_ref("gpt2")], read=ReadOptions(group_by="field:lang"),
                     options=FigureOptions(reference_group="r"))
    g = report.tokenizers["gpt2"]["groups"]["g"]
    assert (g["premium"], g["premium_low"], g["premium_high"]) == (2.0, 1.0, 3.0)
    r = report.tokenizers["gpt2"]["groups"]["r"]
    assert (r["premium"], r["premium_low"], r["premium_high"]) == (1.0, 1.0, 1.0)


def test_tokenizer_premium_and_a_fixed_seed(corpus):
    refs = [registry_ref("cl100k_base"), registry_ref("mistral-7b")]
    options = FigureOptions(reference_tokenizer="cl100k_base")
    first = measure([str(corpus)], refs, read=ReadOptions(group_by="field:lang"), options=options)
    again = measure([str(corpus)], refs, read=ReadOptions(group_by="field:lang"), options=options)
    assert first.tokenizers == again.tokenizers  # the default seed is fixed
    m = first.tokenizers["mistral-7b"]
    assert m["tokenizer_premium"] == m["tokens"] / first.tokenizers["cl100k_base"]["tokens"]
    assert m["tokenizer_premium_low"] < m["tokenizer_premium"] < m["tokenizer_premium_high"]
    assert first.tokenizers["cl100k_base"]["tokenizer_premium_low"] == 1.0
    other = measure([str(corpus)], refs, read=ReadOptions(group_by="field:lang"),
                    options=FigureOptions(reference_tokenizer="cl100k_base", seed=1))
    assert other.tokenizers["mistral-7b"]["tokenizer_premium"] == m["tokenizer_premium"]
    assert other.tokenizers["mistral-7b"]["tokenizer_premium_low"] != m["tokenizer_premium_low"]


def test_unknown_references_are_refused_in_words(corpus):
    with pytest.raises(ReferenceError, match="'gpt2' is not measured"):
        measure([str(corpus)], [registry_ref("cl100k_base")], options=FigureOptions(reference_tokenizer="gpt2"))
    with pytest.raises(ReferenceError, match="no group 'xx'.*en"):
        measure([str(corpus)], [registry_ref("cl100k_base")], read=ReadOptions(group_by="field:lang"),
                options=FigureOptions(reference_group="xx"))


# -- frequency tables merge, never average ----------------------------------------------------------------------


@settings(max_examples=60)
@given(st.lists(st.lists(st.integers(0, 999), max_size=300), max_size=12), st.integers(1, 6))
def test_id_counts_merged_equal_one_table(chunks, ways):
    whole = Counter(i for chunk in chunks for i in chunk)
    tables = [IdCounts(1000) for _ in range(ways)]
    for k, chunk in enumerate(chunks):
        tables[k % ways].add(np.array(chunk, dtype=np.uint32))
    merged = tables[0]
    for t in tables[1:]:
        merged.merge(t)
    ids, counts = merged.arrays()
    assert dict(zip(ids.tolist(), counts.tolist())) == dict(whole)
    assert ids.tolist() == sorted(whole)


# -- reading: formats, parts, bad input ---------------------------------------------------------------------------


def _read_all(paths, part_bytes=1 << 20, options=ReadOptions()):
    problems = Problems()
    files = find_files([str(p) for p in paths], problems)
    out = []
    for part in plan(files, part_bytes, problems):
        out.extend(read_part(part, options, problems))
    return out, problems


@settings(max_examples=40)
@given(st.integers(1, 4000))
def test_byte_ranges_give_every_line_once(tmp_path_factory, part_bytes):
    docs = measure_corpus.documents(per_language=4, chars=300)
    path = measure_corpus.write_jsonl(tmp_path_factory.mktemp("ranges") / "d.jsonl", docs)
    read, problems = _read_all([path], part_bytes)
    assert [d.text for d in read] == [d["text"] for d in docs]
    assert len(problems) == 0


@pytest.mark.parametrize("name", ["d.jsonl", "d.jsonl.gz", "d.jsonl.zst", "d.parquet", "d.parquet.gz", "texts"])
def test_every_format_gives_the_same_figures(tmp_path, docs, name):
    if name == "texts":
        measure_corpus.write_texts(tmp_path / name, docs)
        read = ReadOptions()
    elif "parquet" in name:
        plain = measure_corpus.write_parquet(tmp_path / "d.parquet", docs)
        if name.endswith(".gz"):
            (tmp_path / name).write_bytes(gzip.compress(plain.read_bytes()))
            plain.unlink()
        read = ReadOptions(group_by="field:lang")
    else:
        measure_corpus.write_jsonl(tmp_path / name, docs)
        read = ReadOptions(group_by="field:lang")
    report = measure([str(tmp_path / name)], [registry_ref("cl100k_base")], read=read)
    want = expected_figures("cl100k_base", [d["text"] for d in docs])
    assert_figures(report.tokenizers["cl100k_base"], want)
    assert report.problems == []
    if read.group_by:
        ja = [d["text"] for d in docs if d["lang"] == "ja"]
        assert report.tokenizers["cl100k_base"]["groups"]["ja"]["tokens"] == sum(len(referee("cl100k_base")(t)) for t in ja)


def test_group_by_file_names_files_inside_the_folder(tmp_path, docs):
    measure_corpus.write_texts(tmp_path / "t", docs[:3])
    report = measure([str(tmp_path / "t")], [registry_ref("gpt2")], read=ReadOptions(group_by="file"))
    assert list(report.tokenizers["gpt2"]["groups"]) == ["000-en.txt", "001-es.txt", "002-ja.txt"]


def test_invalid_utf8_is_counted_and_read_as_the_libraries_receive_it(tmp_path):
    bad = b"caf\xc3 ok \xff\xfe end \xe2\x82"
    (tmp_path / "bad.txt").write_bytes(bad)
    (tmp_path / "bad.jsonl").write_bytes(b'{"text": "a\xffb"}\n{"text": "fine"}\n{"text": "half \\ud800 a char"}\n')
    report = measure([str(tmp_path)], [registry_ref("cl100k_base")])
    text = bad.decode("utf-8", errors="replace")
    texts = [text, "a\ufffdb", "fine", "half \ufffd a char"]
    assert report.tokenizers["cl100k_base"]["tokens"] == sum(len(referee("cl100k_base")(t)) for t in texts)
    assert report.corpus["invalid_utf8_documents"] == 3
    messages = {(p.label, p.kind): p for p in report.problems}
    assert messages[("bad.jsonl", "invalid_utf8")].count == 2
    assert "U+FFFD" in messages[("bad.txt", "invalid_utf8")].message
    assert decode(bad) == (text, 4)


def test_bad_inputs_are_reported_and_the_rest_measured(tmp_path, docs):
    good = measure_corpus.write_jsonl(tmp_path / "good.jsonl", docs[:5])
    (tmp_path / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0IHDR")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "mixed.jsonl").write_bytes(
        b'{"text": "one"}\n{"body": "no text field"}\nnot json at all\n{"text": 42}\n\n[1, 2]\n{"text": "two"}\n')
    (tmp_path / "big.jsonl").write_bytes(b'{"text": "' + b"a" * 5000 + b'"}\n{"text": "small"}\n')
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(measure_corpus.jsonl_bytes(docs[:5]))[:-30])
    (tmp_path / "notes.md").write_text("a file of another kind")
    report = measure([str(tmp_path), str(tmp_path / "missing.jsonl")], [registry_ref("cl100k_base")],
                     read=ReadOptions(max_document_bytes=1000))
    kinds = {(p.label.rsplit("/", 1)[-1], p.kind): p for p in report.problems}
    assert kinds[("binary.txt", "binary")].count == 1
    assert kinds[("empty.txt", "empty")]
    assert kinds[("mixed.jsonl", "missing_field")].first[1] == "line 2"
    assert "--field" in kinds[("mixed.jsonl", "missing_field")].message
    assert kinds[("mixed.jsonl", "not_json")].count == 2
    assert kinds[("mixed.jsonl", "not_text")].count == 1
    assert kinds[("big.jsonl", "too_large")].first[1] == "line 1"
    assert kinds[("cut.jsonl.gz", "corrupt")]
    assert kinds[("missing.jsonl", "not_found")]
    assert kinds[(str(tmp_path).rsplit("/", 1)[-1], "skipped_files")].count == 1
    measured = [d["text"] for d in docs[:5]] * 1 + ["one", "two", "small"]
    cut_docs = report.corpus["documents"] - len(measured)
    assert 0 <= cut_docs < 5  # the damaged gzip file's documents before the damage
    assert report.tokenizers["cl100k_base"]["tokens"] >= sum(len(referee("cl100k_base")(t)) for t in measured)
    alone = measure([str(good)], [registry_ref("cl100k_base")])
    assert alone.corpus["documents"] == 5


def test_a_jsonl_line_over_the_limit_is_skipped_without_being_read_whole(tmp_path):
    # 3 MB on one line, a limit of 64 KB: the line is read past in chunks and the next one is measured
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"text": "' + b"ab " * (1 << 20) + b'"}\n{"text": "after"}\n')
    read, problems = _read_all([path], options=ReadOptions(max_document_bytes=64 << 10))
    assert [d.text for d in read] == ["after"]
    assert problems.sorted()[0].kind == "too_large"


def test_parquet_without_the_column_says_which_it_has(tmp_path, docs):
    path = measure_corpus.write_parquet(tmp_path / "d.parquet", docs[:3])
    report = measure([str(path)], [registry_ref("gpt2")], read=ReadOptions(field="body"))
    assert not report.measured
    assert "no column 'body' (it has 'text', 'lang')" in report.problems[0].message


def test_a_document_a_tokenizer_cannot_encode_is_left_out_for_all(tmp_path, monkeypatch):
    from app.engines.errors import InvalidTextError
    from app.features.measure import encoders

    rows = [{"text": "fine"}, {"text": "refused here"}, {"text": "also fine"}]
    path = measure_corpus.write_jsonl(tmp_path / "d.jsonl", rows)
    original = encoders.Encoder.ids

    def ids(self, text):
        if "refused" in text and self.name == "mistral-7b":
            raise InvalidTextError("this tokenizer cannot encode this text")
        return original(self, text)

    monkeypatch.setattr(encoders.Encoder, "ids", ids)
    report = measure([str(path)], [registry_ref("cl100k_base"), registry_ref("mistral-7b")])
    assert report.corpus["documents"] == 2
    assert report.tokenizers["cl100k_base"]["tokens"] == len(referee("cl100k_base")("fine")) + len(
        referee("cl100k_base")("also fine"))
    assert report.problems[0].kind == "encode_failed" and report.problems[0].first[1] == "line 2"


def test_csv_has_a_row_per_tokenizer_and_group(corpus):
    report = measure([str(corpus)], [registry_ref("gpt2"), registry_ref("cl100k_base")],
                     read=ReadOptions(group_by="field:lang"))
    lines = report.csv().splitlines()
    header = lines[0].split(",")
    assert header[:4] == ["tokenizer", "group", "documents", "bytes"]
    rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
    assert len(rows) == 2 * 6
    cl = [r for r in rows if r["tokenizer"] == "cl100k_base" and r["group"] == ""][0]
    assert int(cl["tokens"]) == report.tokenizers["cl100k_base"]["tokens"]
    assert float(cl["renyi_efficiency"]) == report.tokenizers["cl100k_base"]["renyi_efficiency"]
    assert orjson.loads(report.json())["tokenizers"]["gpt2"]["groups"]["zh"]["tokens"] > 0


def test_a_pipe_is_never_read_and_odd_names_stay_json(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe.txt")  # reading it would wait for a writer forever
    odd = os.fsencode(tmp_path) + b"/caf\xe9.txt"  # a name that is not UTF-8
    with open(odd, "wb") as f:
        f.write(b"hello there")
    (tmp_path / "g.jsonl").write_text('{"text": "a", "lang": "x\\ud800y"}\n')  # half a character, escaped
    report = measure([str(tmp_path)], [registry_ref("gpt2")], read=ReadOptions(group_by="field:lang"))
    kinds = {p.kind: p for p in report.problems}
    assert kinds["not_a_file"].label == "pipe.txt"
    assert "x\ufffdy" in report.tokenizers["gpt2"]["groups"]
    assert orjson.loads(report.json())["corpus"]["documents"] == 2  # the odd name's file and the JSON line
    by_file = measure([str(tmp_path)], [registry_ref("gpt2")], read=ReadOptions(group_by="file"))
    assert "caf\ufffd.txt" in by_file.tokenizers["gpt2"]["groups"]


def test_too_many_groups_are_refused_in_words(tmp_path):
    from app.features.measure import MeasureError

    rows = [{"text": f"doc {k}", "id": k} for k in range(30)]
    path = measure_corpus.write_jsonl(tmp_path / "ids.jsonl", rows)
    with pytest.raises(MeasureError, match="more than 20 groups .*--group-by field:id"):
        measure([str(path)], [registry_ref("gpt2")], read=ReadOptions(group_by="field:id"), max_groups=20)
