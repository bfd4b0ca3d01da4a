"""Tokenizers stored as table files (app/engines/registry/table_files.py) and the frozen containers they are read through
(app/engines/compiled/_frozen.c): a table serves the reference libraries' ids for every family, is built once however many
processes ask, and is built again when its source changes or the file is damaged, cut short or foreign."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sentencepiece as spm
import tiktoken
from hypothesis import given, settings, strategies as st
from tokenizers import Tokenizer as HFTokenizer
from tokenizers.implementations import BertWordPieceTokenizer

from app.engines import datafiles, merging, registry
from app.engines.compiled import twin
from app.engines.bpe.model import CUSTOM_BPE_FILE, BPETokenizer
from app.engines.errors import TokenplayError
from app.engines.huggingface.npm_models import NPM_MODELS
from app.engines.pipeline.tokenizer_json import UnsupportedTokenizerError
from app.engines.openai.encodings import ENCODINGS
from app.engines.registry import builder, table_files
from app.engines.registry.loaders import LoaderError, load_tokenizer
from helpers import hf_pipelines, realtext
from helpers.oracles import tiktoken_reference

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    table_files.FrozenMap is None, reason="the compiled twins are off here (TOKENPLAY_PURE_PYTHON=1 or not built): no tables"
)
HARD = ["", " ", "a" * 5000, "東京" * 700, "  \n\n\t x", "ꙮ\U0001F469\u200d\U0001F4BB", "<|endoftext|> <s> [CLS]"]


# -- the frozen containers --------------------------------------------------------------------------------------------

short_bytes = st.binary(min_size=0, max_size=6)
short_text = st.text(st.characters(codec="utf-8") | st.sampled_from(["\ud800", "\udfff", "▁"]), max_size=5)
values = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.dictionaries(short_bytes, values, max_size=60),
        st.dictionaries(short_text, st.floats(allow_nan=False), max_size=60),
        st.dictionaries(st.tuples(short_bytes, short_bytes), values, max_size=60),
        st.dictionaries(st.tuples(short_text, short_text), st.integers(0, 10**6), max_size=60),
    )
)
def test_a_frozen_map_answers_as_the_dict_it_was_built_from(d):
    m = table_files.FrozenMap(table_files.FrozenMap.build(d))
    assert len(m) == len(d)
    assert list(m) == list(d) and list(m.keys()) == list(d) and list(m.values()) == list(d.values())
    assert list(m.items()) == list(d.items())
    for key, value in d.items():
        assert m[key] == value and m.get(key) == value and key in m
    assert ["a"] not in m  # not a key of any map (a dict would say it is unhashable)
    for missing in (b"\xff" * 7, "q" * 7, (b"z", b"\xfe" * 9), ("z", "q" * 9), 42, None):
        if missing not in d:
            assert missing not in m and m.get(missing, "none") == "none"
            with pytest.raises(KeyError):
                m[missing]
    assert pickle.loads(pickle.dumps(m)) == d


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.lists(st.none() | short_bytes, max_size=80), st.lists(st.none() | short_text, max_size=80)))
def test_a_frozen_list_and_id_map_answer_as_what_they_were_built_from(items):
    frozen = table_files.FrozenList(table_files.FrozenList.build(items))
    assert len(frozen) == len(items) and list(frozen) == items
    assert [frozen[i] for i in range(-len(items), len(items))] == items + items
    assert frozen[1:7:2] == items[1:7:2]
    with pytest.raises(IndexError):
        frozen[len(items)]
    ids = {i: item for i, item in enumerate(items) if item is not None}
    idmap = table_files.FrozenIdMap(table_files.FrozenIdMap.build(ids))
    assert len(idmap) == len(ids) and dict(idmap.items()) == ids and list(idmap) == list(ids)
    assert all(idmap.get(i) == ids.get(i) and (i in idmap) == (i in ids) for i in range(-2, len(items) + 2))
    assert pickle.loads(pickle.dumps(frozen)) == items


def test_build_refuses_what_a_frozen_container_cannot_hold():
    for bad in ({b"a": 1, "b": 2}, {b"a": "x"}, {(b"a",): 1}, {b"a": 2**64}, {("a", b"b"): 1}):
        with pytest.raises(TypeError):
            table_files.FrozenMap.build(bad)
    for bad in ([b"a", "b"], [1, 2]):
        with pytest.raises(TypeError):
            table_files.FrozenList.build(bad)
    with pytest.raises(TypeError):
        table_files.FrozenIdMap.build({10**6: b"sparse"})


def test_a_section_that_does_not_fit_its_size_is_refused():
    section = table_files.FrozenMap.build({b"ab": 1, b"c": 2})
    for bad in (section[:-1], section + b"\0", b"XXXXXXXX" + section[8:], section[:40]):
        with pytest.raises(ValueError):
            table_files.FrozenMap(bad)
    misaligned = bytearray(len(section) + 1)
    misaligned[1:] = section
    with pytest.raises(ValueError):
        table_files.FrozenMap(memoryview(misaligned)[1:])
    listed = table_files.FrozenList.build(["a", "bc"])
    with pytest.raises(ValueError):
        table_files.FrozenList(listed[:-1])
    with pytest.raises(ValueError):
        table_files.FrozenMap(listed)  # a list's section is no map's


@pytest.mark.parametrize("seed", range(40))
def test_the_merge_reads_a_frozen_map_as_it_reads_a_dict(seed):
    rng = random.Random(seed)
    alphabet = "ab▁é"
    vocab = {c: i for i, c in enumerate(alphabet)}
    for _ in range(rng.randrange(1, 40)):
        vocab.setdefault("".join(rng.choice(alphabet) for _ in range(rng.randrange(2, 7))), len(vocab))
    text = "".join(rng.choice(alphabet) for _ in range(rng.choice([3, 40, 127, 129, 600])))  # list scan and heap
    byte_vocab = {k.encode(): v for k, v in vocab.items()} | {bytes([b]): 1000 + b for b in range(256)}
    pairs = {}
    for k in byte_vocab:
        if len(k) > 1:
            cut = rng.randrange(1, len(k))
            pairs[(k[:cut], k[cut:])] = rng.randrange(500)
    scores = {k: -rng.random() for k in vocab}
    frozen = {id(d): table_files.FrozenMap(table_files.FrozenMap.build(d)) for d in (vocab, byte_vocab, pairs, scores)}
    data = text.encode()
    for table, ids, source, pair_keys in (
        (byte_vocab, byte_vocab, data, False),
        (pairs, byte_vocab, data, True),
        (scores, vocab, text, False),
        (byte_vocab, None, data, False),
        (vocab, byte_vocab, text, False),  # str parts, bytes ids: no part is an id, as with dicts
    ):
        want = merging.merge_text_python(source, table, ids, pair_keys)
        assert merging.merge_text(source, table, ids, pair_keys) == want
        got = merging.merge_text(source, frozen[id(table)], None if ids is None else frozen[id(ids)], pair_keys)
        assert got == want


def test_a_pair_table_pickles_as_its_slots_and_reads_them_in_place():
    table = merging.merge_table([("a", "b"), ("ab", "c"), ("c", "c")], {"ab": 7}, pair_keys=True, adjacent={"ab", "bc"})
    back = pickle.loads(pickle.dumps(table))
    for text in ("xabcab", "abccc" * 50, "", "cabab"):
        assert back.merge(text) == table.merge(text) and back.cut(text) == table.cut(text)
    assert back.nbytes == table.nbytes
    from_slots = twin("_merge", "pair_table_from_slots")
    with pytest.raises(ValueError):
        from_slots(b"\0" * 24, b"\0" * 16, b"\0" * 16)


# -- every stored tokenizer, from its table, with the reference library's ids ------------------------------------------


def _reference(name: str):
    """The reference library's encode for the stored shipped tokenizer ``name`` (special-token text as text)."""
    base = name.removeprefix("native-")
    if name.startswith("native-") and base in ENCODINGS:
        return tiktoken_reference(base).encode_ordinary
    if name.startswith("native-") and base in NPM_MODELS:
        ref = HFTokenizer.from_file(str(datafiles.data_path(NPM_MODELS[base].tokenizer_file)))
        ref.encode_special_tokens = True
        return lambda text: ref.encode(text, add_special_tokens=False).ids
    if name in ("mistral-7b", "jurassic-2"):
        rel = {"mistral-7b": "mistral-7b-v0.1", "jurassic-2": "jurassic-2"}[name]
        return spm.SentencePieceProcessor(model_file=str(datafiles.data_path(f"sentencepiece/{rel}.model"))).encode
    if name == "bert-base-uncased":
        ours = registry.get(name)
        ref = BertWordPieceTokenizer({ours.id_to_token(i): i for i in range(ours.n_vocab)}, lowercase=True)
        ref._tokenizer.encode_special_tokens = True
        return lambda text: ref.encode(text, add_special_tokens=False).ids
    if name == "custom-bpe":
        model = BPETokenizer.from_json(datafiles.verified_bytes(CUSTOM_BPE_FILE).decode())
        ranks = {data: i for i, data in model.vocab.items()}
        return tiktoken.Encoding("custom", pat_str=model.pattern, mergeable_ranks=ranks, special_tokens={}).encode_ordinary
    pytest.fail(f"no reference library named for the stored tokenizer {name!r}: add it here")


@pytest.mark.parametrize("name", builder.stored_names())
def test_every_stored_tokenizer_loads_from_its_table_with_the_reference_ids(name):
    realtext.require()
    tok = registry.get(name)
    assert Path(tok.table_file).parent == table_files.tables_dir() and Path(tok.table_file).exists()
    reference = _reference(name)
    for text in [piece for corpus in realtext.NAMES for piece in realtext.slices(corpus, 3, 3_000, seed=5)] + HARD:
        assert tok.encode(text) == reference(text)


@pytest.mark.parametrize("name", ["native-cl100k_base", "native-llama-3.1", "native-gemma-2", "mistral-7b"])
def test_a_stored_tokenizer_runs_the_compiled_loops_on_its_mapped_tables(name):
    """encode-speed's compiled loops (bpe/_pieces.c over pre-tokens, _merge.c's merge, sentencepiece/_chunks.c) read a
    table's maps in place: a loaded table does not fall back to the Python loops."""
    from app.engines.bpe.encoder import RankEncoder
    from app.engines.sentencepiece.model import SentencePieceTokenizer

    tok = registry.get(name)
    assert tok.table_file
    encoders = [v for v in vars(tok).values() if isinstance(v, RankEncoder)]
    for enc in encoders:
        assert type(enc.ranks) is table_files.FrozenMap and enc._compiled and enc._merge is twin("_merge", "merge")
    if isinstance(tok, SentencePieceTokenizer):
        assert type(tok._lookup) is table_files.FrozenMap and type(tok._chunker_c).__name__ == "Chunker"
    else:
        assert encoders
    text = "東京の天気は晴れ。 def f(x): return x * 42  ꙮ"
    assert tok.encode(text) == _reference(name)(text)


def test_a_splitter_keeps_its_kind_through_a_table():
    from app.engines.bpe.patterns import Splitter
    from app.engines.openai.encodings import CL100K_PATTERN

    for compiled in (True, False):
        again = pickle.loads(pickle.dumps(Splitter(CL100K_PATTERN, compiled=compiled)))
        assert (again._compiled is not None) is compiled
        assert again("Hello  world's 123") == Splitter(CL100K_PATTERN)("Hello  world's 123")


# -- building, checking, building again -------------------------------------------------------------------------------


@pytest.fixture()
def table_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENPLAY_TABLES_DIR", str(tmp_path / "tables"))
    return tmp_path / "tables"


def _custom_bpe():
    return BPETokenizer.from_json(datafiles.verified_bytes(CUSTOM_BPE_FILE).decode(), name="custom-bpe")


def test_a_table_is_built_once_then_read_by_every_later_load(table_dir):
    builds = table_files.BUILDS
    first = table_files.load_registered("custom-bpe", _custom_bpe)
    assert table_files.BUILDS == builds + 1 and Path(first.table_file).parent == table_dir
    again = table_files.load_registered("custom-bpe", _custom_bpe)
    assert table_files.BUILDS == builds + 1 and again.table_file == first.table_file
    text = realtext.excerpt("en", 0, 5_000) if realtext.available() else "Hello world, again and again."
    assert again.encode(text) == first.encode(text) == _reference("custom-bpe")(text)
    assert sorted(p.name for p in table_dir.iterdir()) == [Path(first.table_file).name, Path(first.table_file).name + ".lock"]


def test_a_table_is_built_again_when_its_source_changes(tmp_path, table_dir, monkeypatch):
    data = tmp_path / "data"
    (data / "custom-bpe").mkdir(parents=True)
    shutil.copy(datafiles.data_path(CUSTOM_BPE_FILE), data / CUSTOM_BPE_FILE)
    manifest = json.loads((datafiles.data_dir() / "manifest.json").read_text())
    (data / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("TOKENPLAY_DATA_DIR", str(data))
    datafiles.manifest.cache_clear()
    try:
        text = "Tokenizers cut text into tokens, again and again: def f(x): return x"
        builds = table_files.BUILDS
        before = table_files.load_registered("custom-bpe", _custom_bpe)
        assert table_files.BUILDS == builds + 1 and before.encode(text) == _reference("custom-bpe")(text)
        # the source changes: a model with its first 300 merges only, pinned by its new sha256
        model = BPETokenizer.from_json((data / CUSTOM_BPE_FILE).read_text())
        smaller = BPETokenizer(model.merges[:300], model.pattern, name="custom-bpe")
        smaller.save(data / CUSTOM_BPE_FILE)
        manifest["files"][CUSTOM_BPE_FILE]["sha256"] = hashlib.sha256((data / CUSTOM_BPE_FILE).read_bytes()).hexdigest()
        (data / "manifest.json").write_text(json.dumps(manifest))
        datafiles.manifest.cache_clear()
        after = table_files.load_registered("custom-bpe", _custom_bpe)
        assert table_files.BUILDS == builds + 2
        ranks = {data: i for i, data in smaller.vocab.items()}
        referee = tiktoken.Encoding("smaller", pat_str=smaller.pattern, mergeable_ranks=ranks, special_tokens={})
        assert after.encode(text) == referee.encode_ordinary(text) != before.encode(text)
        assert table_files.load_registered("custom-bpe", _custom_bpe).encode(text) == after.encode(text)
        assert table_files.BUILDS == builds + 2
    finally:
        datafiles.manifest.cache_clear()


def _damage(path: Path, how: str, other: Path) -> None:
    data = path.read_bytes()
    if how == "cut short":
        path.write_bytes(data[:-100])
    elif how == "a flipped byte":
        flipped = bytearray(data)
        flipped[-len(data) // 3] ^= 0x40
        path.write_bytes(bytes(flipped))
    elif how == "another tokenizer's table":
        shutil.copy(other, path)
    elif how == "not a table":
        path.write_bytes(b"hello, I am not a table\n" * 100)
    elif how == "built by other code":
        head_len = int.from_bytes(data[8:16], "little")
        header = json.loads(data[16 : 16 + head_len])
        header["code"] = "0" * 64
        new = json.dumps(header, sort_keys=True).encode()
        path.write_bytes(data[:8] + len(new).to_bytes(8, "little") + new + data[16 + head_len :])
    elif how == "empty":
        path.write_bytes(b"")


@pytest.mark.parametrize(
    "how", ["cut short", "a flipped byte", "another tokenizer's table", "not a table", "built by other code", "empty"]
)
def test_a_damaged_cut_short_or_foreign_table_is_refused_and_built_again(table_dir, how):
    text = "Hello world: tables are never trusted without their key."
    good = table_files.load_registered("custom-bpe", _custom_bpe)
    other = table_files.load_bytes(datafiles.verified_bytes("sentencepiece/mistral-7b-v0.1.model"))
    path = Path(good.table_file)
    _damage(path, how, Path(other.table_file))
    with pytest.raises(table_files._Refused):
        table_files.open_table(path, table_files._sources_match("custom-bpe"))
    builds = table_files.BUILDS
    again = table_files.load_registered("custom-bpe", _custom_bpe)
    assert table_files.BUILDS == builds + 1
    assert again.encode(text) == _reference("custom-bpe")(text)
    assert table_files.open_table(path, table_files._sources_match("custom-bpe")).encode(text) == again.encode(text)


def test_a_build_removes_the_lock_files_of_tables_that_are_gone(table_dir):
    table_dir.mkdir(parents=True)
    gone, kept, fresh = (table_dir / f"{n}.table.lock" for n in ("custom-bpe-0000000000000000", "other-1", "new-2"))
    (table_dir / "other-1.table").write_bytes(b"")
    for lock in (gone, kept, fresh):
        lock.write_bytes(b"")
    two_hours_ago = os.path.getmtime(gone) - 7200
    for lock in (gone, kept):
        os.utime(lock, (two_hours_ago, two_hours_ago))
    table_files.load_registered("custom-bpe", _custom_bpe)
    assert not gone.exists() and kept.exists() and fresh.exists()


def test_concurrent_builders_make_one_good_file(table_dir):
    """Four processes load one upload's tokenizer at once into an empty directory: one builds the table (under the
    lock file), the others wait for it and map it; no temporary file is left."""
    data = datafiles.verified_bytes("sentencepiece/mistral-7b-v0.1.model")
    script = (
        "import json, sys; from app.engines.registry import table_files;"
        "tok = table_files.load_bytes(sys.stdin.buffer.read());"
        "print(json.dumps({'builds': table_files.BUILDS, 'file': tok.table_file, 'ids': tok.encode('Hello 世界 ꙮ')}))"
    )
    path = table_files.bytes_path(table_files.bytes_key(data, table_files.file_options(None, (), "tokenplay")))
    lock = table_files._Lock(path)  # the table's own lock, held while the processes start: they all find no table
    lock.__enter__()
    procs = [subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              cwd=ROOT, env=dict(os.environ)) for _ in range(4)]
    for proc in procs:
        proc.stdin.write(data)
        proc.stdin.close()
    lock.__exit__()
    answers = [json.loads(proc.stdout.read()) for proc in procs]
    assert [proc.wait() for proc in procs] == [0] * 4
    assert sum(a["builds"] for a in answers) == 1
    assert len({a["file"] for a in answers}) == 1
    assert all(a["ids"] == spm.SentencePieceProcessor(model_proto=data).encode("Hello 世界 ꙮ") for a in answers)
    assert [p.name for p in table_dir.iterdir() if p.suffix == ".table"] == [Path(answers[0]["file"]).name]
    assert not [p for p in table_dir.iterdir() if p.suffix == ".tmp"]


# -- tokenizer files: uploads and files named on the command line ---------------------------------------------------


def _small_byte_level_json() -> str:
    """A small byte-level BPE trained by Hugging Face tokenizers itself."""
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|end|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["Hello world, tokens and more tokens.", "def f(x): return x * 42", "東京の天気"] * 5, trainer=trainer)
    return tok.to_str()


def test_uploaded_files_are_built_once_into_tables_keyed_by_their_bytes_and_options(table_dir):
    text = "Hello world: def f(x): return x * 42 東京 🙂"
    json_data = _small_byte_level_json().encode()
    model = datafiles.verified_bytes("sentencepiece/jurassic-2.model")
    ranks = datafiles.verified_bytes("openai/gpt2.tiktoken")
    builds = table_files.BUILDS
    loaded = {
        "json": table_files.load_bytes(json_data, name="mine"),
        "model": table_files.load_bytes(model, name="mine-too"),
        "tiktoken gpt2": table_files.load_bytes(ranks, pattern="gpt2"),
        "tiktoken gpt4": table_files.load_bytes(ranks, pattern="gpt4", special_tokens=["<|x|>"]),
    }
    assert table_files.BUILDS == builds + 4 and len({tok.table_file for tok in loaded.values()}) == 4
    assert loaded["json"].name == "mine" and loaded["model"].name == "mine-too"
    hf = HFTokenizer.from_str(json_data.decode())
    assert loaded["json"].encode(text) == hf.encode(text, add_special_tokens=False).ids
    assert loaded["model"].encode(text) == spm.SentencePieceProcessor(model_proto=model).encode(text)
    assert loaded["tiktoken gpt2"].encode(text) == tiktoken_reference("gpt2").encode_ordinary(text)
    cl100k_pattern = tiktoken_reference("cl100k_base")._pat_str
    gpt4 = tiktoken.Encoding("gpt4", pat_str=cl100k_pattern, mergeable_ranks=tiktoken_reference("gpt2")._mergeable_ranks,
                             special_tokens={"<|x|>": 50256})
    assert loaded["tiktoken gpt4"].encode("a <|x|> b", allow_special=True) == gpt4.encode("a <|x|> b", allowed_special="all")
    assert table_files.load_bytes(model, name="again").encode(text) == loaded["model"].encode(text)
    assert table_files.BUILDS == builds + 4


def test_a_unigram_tokenizer_json_built_in_a_child_process_gives_the_librarys_ids(table_dir):
    """Its Viterbi walk stops at a bitmap of Python hash() values, which the builder process computes with another
    seed: the table leaves the bitmap out and the loading process makes it again (it was kept, and the ids were
    wrong in every process but the builder)."""
    realtext.require()
    data = hf_pipelines.tokenizer_json("Unigram", "Precompiled", "Metaspace-first", "Metaspace", vocab_size=900, size=4_000)
    data = data.encode() if isinstance(data, str) else data
    hf = HFTokenizer.from_str(data.decode())
    builds = table_files.BUILDS
    tok = table_files.load_bytes(data, name="mine")
    assert table_files.BUILDS == builds + 1 and Path(tok.table_file).parent == table_dir
    for corpus in realtext.NAMES:
        for text in realtext.slices(corpus, 2, 3_000, seed=4):
            assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids, corpus


@pytest.mark.parametrize(
    "data, error, words",
    [
        (b'{"model": {"type": "Lattice", "vocab": {}}}', UnsupportedTokenizerError, "Lattice tokenizers are not supported yet"),
        (b"", LoaderError, "the file is empty"),
        (b"# a README\n", LoaderError, "this is not a tokenizer file"),
        (b"IQ== 0\nIg== 0\n", LoaderError, "ids collide"),
    ],
)
def test_a_file_that_does_not_build_gives_the_loaders_error_and_leaves_no_table(table_dir, data, error, words):
    with pytest.raises(error, match=words) as got:
        table_files.load_bytes(data)
    with pytest.raises(TokenplayError) as direct:
        load_tokenizer(data)
    assert type(got.value) is type(direct.value) and str(got.value) == str(direct.value)
    assert not table_dir.exists() or not [p for p in table_dir.iterdir() if p.suffix in (".table", ".tmp")]


def test_a_cut_short_model_says_so_through_its_table_builder(table_dir):
    model = datafiles.verified_bytes("sentencepiece/mistral-7b-v0.1.model")
    with pytest.raises(LoaderError, match="cut short"):
        table_files.load_bytes(model[: len(model) // 2])


def test_with_tables_off_tokenizers_are_built_in_the_process(table_dir, monkeypatch):
    monkeypatch.setenv("TOKENPLAY_TABLES", "off")
    assert not table_files.enabled()
    tok = table_files.load_registered("custom-bpe", _custom_bpe)
    assert not hasattr(tok, "table_file") and not table_dir.exists()
    upload = table_files.load_bytes(datafiles.verified_bytes("sentencepiece/mistral-7b-v0.1.model"), name="x")
    assert not hasattr(upload, "table_file") and upload.name == "x"
