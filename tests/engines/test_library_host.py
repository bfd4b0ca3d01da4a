"""A tokenizer.json a user brought is read and run by Hugging Face ``tokenizers`` in a process of its own, its host
(app/engines/huggingface/host.py; issue 38: heavy parses never run on the thread that serves other users). The
referee is the library itself, run here in the test's process: the host answers what it answers. Time limits are
reached by work no machine finishes (a regex that backtracks without end), or by a budget already cancelled, so
nothing here depends on the machine's speed."""

from __future__ import annotations

import gc
import json
import os
from types import SimpleNamespace

import pytest
import tokenizers
from tokenizers import Regex, pre_tokenizers

from app.engines import budget
from app.engines.budget import Budget, OverBudget
from app.engines.huggingface import library as library_module
from app.engines.huggingface.library import PIECES_BLOCK, HuggingFaceTokenizer
from app.engines.pipeline.tokenizer_json import TokenizerFileError

#: Each match of ``a*b|a`` scans to the end of the text: on 200,000 a's, 200,000 matches of up to 200,000 steps,
#: in Rust, where only killing its process stops it.
SLOW = r"a*b|a"
TEXTS = ("ab", "xa b!", "aab aaab", "héllo wörld 123", "")


def wordlevel(pattern: str = r"[\w']+|[^\w\s]+", n: int = 50) -> bytes:
    vocab = {"[UNK]": 0} | {c: i + 1 for i, c in enumerate("abxhélowörd!123")}
    vocab |= {f"w{k}": len(vocab) + k for k in range(n)}
    model = tokenizers.models.WordLevel(vocab, unk_token="[UNK]")
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), "isolated")
    tok.add_special_tokens(["<s>"])
    tok.add_tokens(["<think>"])
    return tok.to_str().encode()


def bpe_with_chars(pattern: str) -> bytes:
    """A BPE whose vocabulary holds every character of TEXTS and a few merges, split by ``pattern``."""
    chars = sorted(set("".join(TEXTS)) | {"a", "b"})
    vocab = {c: i for i, c in enumerate(chars)}
    vocab |= {"ab": len(vocab), "aa": len(vocab) + 1}
    model = tokenizers.models.BPE(vocab, [("a", "b"), ("a", "a")])
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), "isolated")
    return tok.to_str().encode()


def test_the_host_answers_what_the_library_answers_from_another_process():
    data = bpe_with_chars(SLOW)
    reference = tokenizers.Tokenizer.from_str(data.decode())
    hosted = HuggingFaceTokenizer(data, name="mine", untrusted=True)
    assert hosted.isolated and hosted.library is None
    assert hosted.host._proc.pid != os.getpid() and hosted.host.alive()
    for text in TEXTS:
        want = reference.encode(text, add_special_tokens=False)
        assert hosted.encode(text) == want.ids
        assert [(t.start, t.end) for t in hosted.tokenize(text).tokens] == want.offsets
        assert hosted.decode(want.ids) == reference.decode(want.ids, skip_special_tokens=False)
    assert hosted.count_batch(list(TEXTS)) == [len(reference.encode(t, add_special_tokens=False)) for t in TEXTS]
    assert hosted.n_vocab == reference.get_vocab_size(with_added_tokens=True)
    pieces = hosted.pieces_by_id()
    assert pieces == [reference.id_to_token(i) for i in range(len(pieces))]


def test_a_hosted_file_is_never_read_by_the_server_process(monkeypatch):
    def refuse(text):
        raise AssertionError("the server's process read the file")

    # the library as this process sees it refuses every file; the host, a process of its own, has its own
    monkeypatch.setattr(library_module, "tokenizers", SimpleNamespace(Tokenizer=SimpleNamespace(from_str=refuse)))
    hosted = HuggingFaceTokenizer(wordlevel(), name="mine", untrusted=True)  # the host reads it, elsewhere
    reference = tokenizers.Tokenizer.from_str(wordlevel().decode())
    assert hosted.encode("ab <think> x") == reference.encode("ab <think> x", add_special_tokens=False).ids
    with pytest.raises(TokenizerFileError, match="server's process read"):
        HuggingFaceTokenizer(wordlevel(), name="ours")  # a shipped file is read here, as before


def test_the_library_refusing_a_file_is_said_in_words_from_the_host():
    with pytest.raises(TokenizerFileError, match="line 1"):
        HuggingFaceTokenizer(b'{"model": ', name="broken", untrusted=True)
    with pytest.raises(TokenizerFileError, match="Hugging Face tokenizers cannot read"):
        HuggingFaceTokenizer(json.dumps({"model": {"type": "BPE", "vocab": 3}}).encode(), name="bad", untrusted=True)


def test_a_call_over_its_budget_kills_the_host_and_the_next_call_starts_another():
    hosted = HuggingFaceTokenizer(bpe_with_chars(SLOW), name="mine", untrusted=True)
    first = hosted.host._proc.pid
    with budget.use(Budget(0.3)), pytest.raises(OverBudget, match="regex .*took more than 0.3 s"):
        hosted.encode("a" * 200_000)
    assert not hosted.host.alive()
    assert hosted.encode("aab") == tokenizers.Tokenizer.from_str(bpe_with_chars(SLOW).decode()).encode(
        "aab", add_special_tokens=False).ids
    assert hosted.host.starts == 2 and hosted.host._proc.pid != first


def test_a_cancelled_request_stops_before_the_host_works():
    hosted = HuggingFaceTokenizer(bpe_with_chars(SLOW), name="mine", untrusted=True)
    gone = Budget(600)
    gone.cancel()  # the client left
    with budget.use(gone), pytest.raises(OverBudget, match="stopped: the request was cancelled"):
        hosted.encode("a" * 200_000)


def test_a_walk_through_the_vocabulary_asks_the_host_once_per_block(monkeypatch):
    hosted = HuggingFaceTokenizer(wordlevel(n=2 * PIECES_BLOCK), name="mine", untrusted=True)
    calls = []
    real = hosted.host.call
    monkeypatch.setattr(hosted.host, "call", lambda method, *args: calls.append(method) or real(method, *args))
    reference = tokenizers.Tokenizer.from_str(wordlevel(n=2 * PIECES_BLOCK).decode())
    n = reference.get_vocab_size(with_added_tokens=True)
    assert [hosted.token_bytes(i) for i in range(n)] == [reference.id_to_token(i).encode() for i in range(n)]
    assert calls == ["pieces"] * -(-n // PIECES_BLOCK)


def test_the_pre_tokenizer_counts_come_from_the_library():
    data = wordlevel(r"\w|\s+")
    reference = tokenizers.Tokenizer.from_str(data.decode())
    texts = ["ab", "a", "<think>", "x y"]
    want = [1 if t == "<think>" else len(reference.pre_tokenizer.pre_tokenize_str(t)) for t in texts]
    assert want == [2, 1, 1, 3]
    assert HuggingFaceTokenizer(data, untrusted=True).pretoken_counts(texts) == want
    assert HuggingFaceTokenizer(data).pretoken_counts(texts) == want


def test_the_host_ends_with_its_tokenizer():
    hosted = HuggingFaceTokenizer(wordlevel(), name="mine", untrusted=True)
    proc = hosted.host._proc
    del hosted
    gc.collect()
    proc.join(30)
    assert not proc.is_alive()
