"""Counting every language fast (issue 26): ``count_batch``, the paths it takes the first time an engine meets a text,
and the shortcuts under them, each against the reference library (tiktoken, Hugging Face ``tokenizers``,
``sentencepiece``) on whole declarations in several scripts."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import regex
import sentencepiece as spm
from helpers.oracles import tiktoken_encoding
from tokenizers import Tokenizer as HFTokenizer

from app.engines import registry
from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS
from app.engines.pipeline.pretokenizers import PreTokenizer, _tiling
from app.engines.sentencepiece.model import SentencePieceTokenizer
from app.engines.sentencepiece.unigram import UnigramTokenizer
from app.features import languages
from app.features.udhr import corpus

#: Latin, Japanese, Arabic, Devanagari, Han, Cyrillic, Myanmar, Hangul, Tagalog in Baybayin, Amharic, Tamil, Greek.
LANGS = ["eng", "jpn", "arb", "hin", "cmn_hans", "rus", "mya", "kor", "tgl_tglg", "amh", "tam", "ell_monotonic"]
SENTENCEPIECE = {"mistral-7b": "sentencepiece/mistral-7b-v0.1.model", "jurassic-2": "sentencepiece/jurassic-2.model"}


def _texts() -> list[str]:
    texts = [corpus().get(code).text for code in LANGS]
    return texts + ["", "<|endoftext|> <s> </s> <think>x</think> [CLS]", "   tabs\t\tand\n\nnewlines  "]


def _reference(name: str):
    """``text -> ids`` of ``name``'s model in its reference library (special-token text plain, no added tokens)."""
    entry = registry.spec(name).entry
    if entry in NPM_MODELS:
        library = HFTokenizer.from_file(str(data_path(NPM_MODELS[entry].tokenizer_file)))
        library.encode_special_tokens = True
        return lambda text: library.encode(text, add_special_tokens=False).ids
    if entry in SENTENCEPIECE:
        return spm.SentencePieceProcessor(model_file=str(data_path(SENTENCEPIECE[entry]))).encode
    return tiktoken_encoding(entry).encode_ordinary


NAMES = [
    "gpt2", "o200k_base", "native-cl100k_base", "native-o200k_base",  # tiktoken and its native engine
    "llama-3", "qwen3", "gemma-3", "native-llama-3", "native-qwen3", "native-gemma-3", "native-deepseek-v3",
    "native-llama-2",  # tokenizers and its native engines (byte-level and SentencePiece-style)
    "mistral-7b", "jurassic-2",  # sentencepiece's BPE and Unigram, in our engines
]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_count_batch_is_the_reference_librarys_token_count(name):
    texts = _texts()
    reference = _reference(name)
    assert registry.get(name).count_batch(texts) == [len(reference(t)) for t in texts]


def test_the_languages_feature_counts_with_count_batch():
    class Counted:
        """A tokenizer whose counts are its own: count_all must give them by code, untouched."""

        calls = 0

        def count_batch(self, texts):
            self.calls += 1
            return [len(t) * 7 for t in texts]

    tok = Counted()
    declarations = [corpus().get(code) for code in LANGS]
    assert languages.count_all(tok, declarations) == {d.code: len(d.text) * 7 for d in declarations}
    assert tok.calls == 1


@pytest.mark.parametrize("name", ["mistral-7b", "jurassic-2"])
def test_a_fresh_sentencepiece_model_counts_as_the_library_the_first_time(name):
    """The first time a chunk is met it is merged without the piece cache (mistral-7b) and a segmentation without
    ``<unk>`` takes its ids in one pass (jurassic-2): a model just read, caches empty, then again with them full."""
    model = UnigramTokenizer if name == "jurassic-2" else SentencePieceTokenizer
    tok = model.from_data_file(SENTENCEPIECE[name])
    reference = _reference(name)
    texts = _texts() + ["ꙮ𝔘nknown ᚠᛇᚻ pieces \U0001f600 𓀀"]  # byte fallback, <unk> runs
    expected = [reference(t) for t in texts]
    assert [tok.encode(t) for t in texts] == expected
    assert [tok.encode(t) for t in texts] == expected  # from the caches


@pytest.mark.parametrize(
    "pattern, text",
    [
        (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+", "It's 42 cats —  ok\n\n  "),
        (r"\p{L}+", "gaps, between words"),  # gaps: not a tiling
        (r"x*", "axxb"),  # empty matches: Oniguruma and regex part, so never the shortcut
        (r"(a)|b", "abab"),  # a group: findall gives the group
        (r"\p{N}{1,3}", "In 1948, 58 states; 12345 digits " * 20),  # gaps, a long piece
        (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+", "It's 42 — ok\n " * 40),
        (r"x*", "axxb" * 100),
    ],
)
def test_a_split_regex_is_cut_the_same_with_or_without_the_tiling_shortcut(pattern, text):
    spec = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}
    pre = PreTokenizer(spec)
    step = pre.steps[0]
    general = [p for p in _general(step, text)]
    assert pre(text) == general
    assert pre.texts(text) == [text[a:b] for a, b in general]
    compiled = regex.compile(pattern)
    tiles = _tiling(compiled, text, 0, len(text))
    tiling = sum(len(m) for m in compiled.findall(text)) == len(text) and not compiled.groups
    assert (tiles is not None) == (tiling and "" not in compiled.findall(text))
    if tiles is not None:
        assert tiles == general


def _general(step, text: str) -> list[tuple[int, int]]:
    """The pieces the general way (one run per match or gap), the shortcut turned off."""
    from app.engines.pipeline.pretokenizers import _merge

    return [p for p in _merge(list(step.find(text, 0, len(text))), step.behavior) if p[0] < p[1]]


@pytest.mark.parametrize("name", ["llama-3", "qwen3", "deepseek-v3"])
def test_the_tiling_shortcut_cuts_whole_declarations_as_the_library(name):
    """Each declaration's pre-tokens by the shortcut (one findall) are the library's own pre-tokenizer's pieces."""
    entry = registry.spec(name).entry
    library = HFTokenizer.from_file(str(data_path(NPM_MODELS[entry].tokenizer_file)))
    tok = registry.get(f"native-{name}")
    for code in LANGS:
        text = corpus().get(code).text
        normalized = library.normalizer.normalize_str(text) if library.normalizer is not None else text
        ours = tok.pre.texts(normalized)
        theirs = [piece for piece, _ in library.pre_tokenizer.pre_tokenize_str(normalized)]
        # the library's pieces are in the byte alphabet; ours are the text: compare the text they stand for
        assert [_byte_level(p) for p in theirs] == ours, code


def _byte_level(piece: str) -> str:
    from app.engines.pipeline.tokenizer_json import byte_level_bytes

    return byte_level_bytes(piece).decode("utf-8", errors="surrogateescape")


# -- the server's workers are forked: counting on every core there, and never a hang ------------------------------


def _count_in_a_fork(tok, texts: list[str]) -> list[int]:
    """``tok.count_batch(texts)`` in a forked child, as in a worker of ``tokenplay serve``; a child that hangs (a
    thread pool lost in the fork) fails the test instead of hanging it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: count, answer, leave without running anything of the parent's
        try:
            os.close(read)
            os.write(write, json.dumps(tok.count_batch(texts)).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 900)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            pytest.fail("the forked child never answered: its batch encoder hangs")
        with os.fdopen(read, "rb") as answer:
            return json.loads(answer.read())
    finally:
        os.waitpid(pid, 0)


def test_a_forked_process_counts_as_the_library_after_the_parent_used_its_threads():
    """The parent has encoded a batch (the library's threads started); a child forked then still counts, exactly."""
    tok = registry.get("llama-3")
    texts = [corpus().get(code).text for code in LANGS[:6]]
    tok.count_batch(texts[:2])
    reference = _reference("llama-3")
    assert _count_in_a_fork(tok, texts) == [len(reference(t)) for t in texts]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: the library runs one thread anyway")
def test_a_worker_forked_after_loading_counts_on_every_core():
    """As ``tokenplay serve`` does: the supervisor loads a tokenizer (never encoding with it) and forks; the worker's
    batch encoder starts its own threads (the library turns them off in a child of a parent that used them)."""
    script = """
import json, os, sys
from app.engines import registry
from app.features.udhr import corpus
tok = registry.get("llama-3")
texts = [d.text for d in corpus().declarations[:40]]
pid = os.fork()
if pid == 0:
    counts = tok.count_batch(texts)
    print(json.dumps({"threads": len(os.listdir("/proc/self/task")), "tokens": sum(counts)}), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""
    env = {k: v for k, v in os.environ.items() if k not in ("TOKENIZERS_PARALLELISM", "RAYON_NUM_THREADS")}
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    reference = _reference("llama-3")
    assert answer["tokens"] == sum(len(reference(d.text)) for d in corpus().declarations[:40])
    assert answer["threads"] > 1  # the library's pool: counting spreads over the cores
