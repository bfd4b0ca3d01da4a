"""Arbitrary and odd Unicode through every registered tokenizer, both trainers and the HTTP endpoints.

Combining marks, right-to-left text and overrides, zero-width joiners, NUL, byte-order marks, lone surrogates,
long runs of one character, 1 MB without a single space: every call gives a correct answer or a clear error
(``InvalidTextError`` / a 4xx with a message), never a 500, a crash or a hang. Each call runs under a generous
time guard (a failure names the input), which is not a speed assertion.
"""

from __future__ import annotations

import multiprocessing
import random
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engines import registry
from app.engines.bpe.trainer import train as bpe_train
from app.engines.errors import InvalidTextError, TokenplayError
from app.engines.sentencepiece.bpe_trainer import train_bpe
from app.engines.sentencepiece.trainer_options import TrainerOptions
from app.engines.sentencepiece.unigram_trainer import train_unigram
from app.lab.options import Options
from app.lab.algorithms import train as lab_train
from app.settings import Settings
from app.web.app import create_app

NAMES = [n for n in registry.names() if not n.startswith("lab-")]
ODD = [
    "\u0301",
    "\u0308",
    "\u20dd",  # combining marks
    "\u200d",
    "\u200c",
    "\u2060",  # ZWJ, ZWNJ, word joiner
    "\u200f",
    "\u202e",
    "\u2067",  # RLM, RLO, RLI
    "\u05e9\u05dc\u05d5\u05dd",
    "\u0645\u0631\u062d\u0628\u0627",  # Hebrew, Arabic
    "\x00",
    "\x01",
    "\x7f",
    "\ufeff",
    "\ufffd",
    "\uffff",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",
    "\U0001f44d\U0001f3fd",
    "\U0001f1ef\U0001f1f5",
    "e\u0301",
    "\u1100\u1161\u11a8",
    "\U00010348",
    "\U0010ffff",
    "<|endoftext|>",
    "<|im_start|>",
    "<s>",
    "</s>",
    "<unk>",
    "\u2581",
    "<0x41>",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\u00a0",
    "\u3000",
    "a",
    "Z",
    "9",
    "\u00e9",
    "\u65e5",
]
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]

odd_text = st.lists(st.sampled_from(ODD + SURROGATES), max_size=40).map("".join)
surrogate = st.one_of(st.sampled_from(SURROGATES), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF))
any_text = st.lists(st.one_of(st.characters(), surrogate), max_size=200).map("".join)  # lone surrogates too
runs = st.tuples(st.sampled_from(ODD + ["a", "\u0301", " "]), st.integers(1, 3000)).map(lambda p: p[0] * p[1])
texts = st.one_of(odd_text, any_text, runs, st.tuples(odd_text, runs, any_text).map("".join))

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fuzz-guard")


def guarded(fn, *args, timeout: float = 60.0, **kwargs):
    """``fn(*args)`` with a time guard: a call that has not answered after ``timeout`` seconds fails the test."""
    future = _POOL.submit(fn, *args, **kwargs)
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        pytest.fail(f"{getattr(fn, '__name__', fn)} did not answer within {timeout} s (a hang?)")


_PROCS = None


def _process_pool():
    global _PROCS
    if _PROCS is None:
        _PROCS = multiprocessing.get_context("forkserver").Pool(1)
    return _PROCS


@pytest.fixture(scope="module", autouse=True)
def _close_process_pool():
    yield
    global _PROCS
    if _PROCS is not None:
        _PROCS.terminate()
        _PROCS.join()
        _PROCS = None


def guarded_process(fn, *args, timeout: float = 60.0):
    """``fn(*args)`` in a separate process that is killed after ``timeout`` seconds (a CPU-bound runaway in a
    thread would hold this process's GIL for the rest of the session)."""
    global _PROCS
    pending = _process_pool().apply_async(fn, args)
    try:
        return pending.get(timeout)
    except multiprocessing.TimeoutError:
        _PROCS.terminate()
        _PROCS = None
        pytest.fail(
            f"{getattr(fn, '__name__', fn)}{tuple(a if len(repr(a)) < 60 else '...' for a in args)} "
            f"did not answer within {timeout} s (a hang?)"
        )


def has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def check_tokenize(name: str, text: str) -> None:
    tok = registry.get(name)
    if has_surrogate(text):
        with pytest.raises(InvalidTextError):
            tok.tokenize(text)
        return
    result = tok.tokenize(text)
    assert result.ids == tok.encode(text)
    assert result.count == len(result.ids) == len(result.tokens)
    assert not any(t.special for t in result.tokens), "special tokens parsed from text without allow_special"
    last = 0
    for t in result.tokens:
        assert 0 <= t.start <= t.end <= len(text)
        assert t.start >= last or t.start == t.end or t.start >= last - 1
        last = max(last, t.start)
    decoded = tok.decode(result.ids)
    if result.byte_table is None:
        # Normalizing tokenizers (SentencePiece's whitespace, Qwen3's NFC, Gemma's ▁) give back a text, not this one.
        assert isinstance(decoded, str)
    else:
        assert decoded == text


# -- engines -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=texts)
def test_every_tokenizer_answers_or_refuses_clearly(name, text):
    guarded(check_tokenize, name, text)


@pytest.mark.parametrize("name", NAMES)
def test_encode_refuses_a_lone_surrogate_like_tokenize(name):
    with pytest.raises(InvalidTextError):
        registry.get(name).encode("a\ud800b")


@pytest.mark.parametrize("name", NAMES)
def test_special_token_text_is_plain_text_unless_asked(name):
    tok = registry.get(name)
    text = "".join(tok.special_tokens) + " <|endoftext|><|im_start|><s></s><unk>"
    result = tok.tokenize(text)
    assert not any(t.special for t in result.tokens)
    assert not set(result.ids) & tok.special_ids


def train_any(kind: str, text: str, size: int):
    """Train with one of the trainers; a TokenplayError (a clear refusal) is an acceptable answer."""
    try:
        if kind == "bpe":
            return bpe_train(text, 256 + size, "gpt4")
        if kind == "bpe-none":
            return bpe_train(text, 256 + size, "none")
        if kind == "sentencepiece":
            return train_bpe(text, options=TrainerOptions(byte_fallback=True), learned=size)
        if kind == "sentencepiece-long":  # lines up to 2 MB
            return train_bpe(text, options=TrainerOptions(max_sentence_length=1 << 21), learned=size)
        if kind == "unigram":
            return train_unigram(text, options=TrainerOptions(byte_fallback=True), learned=size)
        algorithm, pattern = kind.split(":")
        return lab_train(text, Options(algorithm, pattern, size), max_merges=64)
    except TokenplayError as exc:
        assert str(exc), "an error must say what is wrong"
        return exc


TRAINERS = ["bpe", "bpe-none", "sentencepiece", "unigram", "byte:gpt2", "byte:none", "char:whitespace",
            "sentencepiece:gpt2", "unigram:none"]


@pytest.mark.parametrize("kind", TRAINERS)
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=texts, size=st.integers(0, 12))
def test_trainers_answer_or_refuse_clearly(kind, text, size):
    out = guarded_process(train_any, kind, text, size)
    if has_surrogate(text) and not isinstance(out, TokenplayError):
        pytest.fail(f"{kind} trained on text with a lone surrogate instead of refusing it")


@pytest.mark.parametrize("kind", ["byte:gpt2", "char:whitespace", "sentencepiece:gpt2"])
def test_lab_training_refuses_a_lone_surrogate(kind):
    out = train_any(kind, "ab\ud800ab ab", 3)
    assert isinstance(out, InvalidTextError)


# -- HTTP ----------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    settings_ = Settings(lab_runs_dir=tmp_path_factory.mktemp("runs"), lab_pool="thread")
    with TestClient(create_app(settings_)) as c:
        yield c


def no_server_error(r):
    assert r.status_code < 500, (r.status_code, r.text[:300])
    if r.status_code >= 400:
        body = r.text
        assert body.strip(), "an error answer must say what is wrong"
    return r


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=texts, name=st.sampled_from(NAMES), special=st.booleans())
def test_http_endpoints_never_answer_a_server_error(http, text, name, special):
    import json

    body = json.dumps({"text": text, "tokenizer": name, "allow_special": special})  # \ud800 escapes stay
    seen = json.loads(body)["text"]  # what the server gets: "\ud83d\ude00" in JSON is one real character
    r = no_server_error(guarded(http.post, "/api/tokenize", content=body, headers={"content-type": "application/json"}))
    assert (r.status_code == 422) == has_surrogate(seen), r.text[:200]
    if r.status_code == 200 and not special:
        assert not any(t["special"] for t in r.json()["tokens"])
    body = json.dumps({"text": text, "tokenizers": [name, "gpt2"], "allow_special": special})
    no_server_error(guarded(http.post, "/api/compare", content=body, headers={"content-type": "application/json"}))
    body = json.dumps({"messages": [{"role": "user", "content": text}]})
    no_server_error(guarded(http.post, "/api/chat", content=body, headers={"content-type": "application/json"}))
    raw = text.encode("utf-8", "surrogatepass")  # lone surrogates become invalid UTF-8 in the form
    from urllib.parse import quote_from_bytes

    form = f"text={quote_from_bytes(raw)}&tokenizer={name}".encode()
    hdr = {"content-type": "application/x-www-form-urlencoded"}
    no_server_error(guarded(http.post, "/render", content=form, headers=hdr | {"HX-Request": "true"}))
    no_server_error(guarded(http.post, "/render", content=form, headers=hdr))
    no_server_error(guarded(http.post, "/ids", content=form, headers=hdr))
    no_server_error(guarded(http.post, "/compare/results", content=form.replace(b"tokenizer=", b"t="), headers=hdr))
    no_server_error(guarded(http.post, "/decode", content=f"ids={quote_from_bytes(raw)}".encode(), headers=hdr))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=texts)
def test_lab_training_over_http_never_answers_a_server_error(http, text):
    import json

    body = json.dumps({"corpus": text, "algorithm": "byte", "pattern": "gpt2", "merges": 5})
    r = no_server_error(guarded(http.post, "/api/train", content=body, headers={"content-type": "application/json"}))
    if has_surrogate(json.loads(body)["corpus"]):
        assert r.status_code == 422, r.text[:200]


# -- big inputs ----------------------------------------------------------------------------------------------------

_rnd = random.Random(7)
MB_NO_SPACE = "".join(_rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(1_000_000))


def test_one_megabyte_without_a_space_through_the_api(http):
    r = guarded(http.post, "/api/tokenize", json={"text": MB_NO_SPACE, "tokenizer": "cl100k_base"}, timeout=120)
    assert r.status_code == 200
    out = r.json()
    assert out["chars"] == 1_000_000 and out["count"] > 100_000
    too_big = MB_NO_SPACE + "x" * (Settings().max_chars - len(MB_NO_SPACE) + 1)
    r = guarded(http.post, "/api/tokenize", json={"text": too_big}, timeout=120)
    assert r.status_code == 413 and "limit" in r.json()["detail"]


@pytest.mark.parametrize("name", NAMES)
def test_long_runs_of_one_character(name):
    tok = registry.get(name)
    lossy = registry.spec(name).family == "wordpiece"  # BERT lower-cases, strips accents, has [UNK] for long words
    for text in ("a" * 100_000, "\u0301" * 20_000, "\U0001f600" * 20_000, "x" * 30_000 + " " + "y" * 30_000):
        ids = guarded(tok.encode, text, timeout=120)
        if lossy:  # what it keeps is checked against tokenizers in test_wordpiece.py
            assert isinstance(guarded(tok.decode, ids), str)
            continue
        assert ids and guarded(tok.decode, ids) in (text, " " + text, text.lstrip())


@pytest.mark.parametrize("kind", ["bpe", "sentencepiece-long", "byte:none", "char:gpt4"])
def test_trainers_on_one_megabyte_without_a_space(kind):
    out = guarded_process(train_any, kind, MB_NO_SPACE, 10, timeout=90)
    assert not isinstance(out, TokenplayError), out


@pytest.mark.parametrize("kind", ["sentencepiece", "unigram", "sentencepiece:gpt2"])
def test_sentencepiece_refuses_one_megabyte_line_in_words(kind):
    """sentencepiece's trainers skip a line longer than max_sentence_length (4,192 bytes), which leaves nothing here
    (sentencepiece itself stops on an empty corpus): the refusal says so and what to do."""
    out = guarded_process(train_any, kind, MB_NO_SPACE, 10, timeout=90)
    assert isinstance(out, TokenplayError) and "max_sentence_length (4,192 bytes)" in str(out), out
    assert "the corpus is one such line: cut the text into lines" in str(out)
