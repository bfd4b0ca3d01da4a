"""Page data computed ahead (app/features/precomputed.py): the UDHR corpus and the languages page's default counts
read back from their files exactly as computed; a damaged file, another code's file or an unwritable directory is
never trusted nor a failure."""

from __future__ import annotations

import json

import pytest
from helpers.oracles import tiktoken_reference

from app.engines import registry
from app.features import languages, precomputed, udhr


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENPLAY_PRECOMPUTED_DIR", str(tmp_path))
    return tmp_path


def test_the_corpus_file_reads_back_as_the_parsed_corpus(folder):
    name = udhr.precompute()
    assert (folder / name).is_file()
    parsed, read = udhr.load(), udhr._from_file()
    assert read is not None and read.digest == parsed.digest and read.declarations == parsed.declarations


def test_a_damaged_or_altered_corpus_file_is_not_read(folder):
    name = udhr.precompute()
    obj = json.loads((folder / name).read_text())
    obj["declarations"][0]["text"] += " altered"
    (folder / name).write_text(json.dumps(obj))
    assert udhr._from_file() is None  # its texts no longer have the digest it claims
    (folder / name).write_text('{"declarations": [')
    assert udhr._from_file() is None


def test_counts_computed_ahead_are_tiktokens_counts(folder):
    [name] = languages.precompute(["gpt2"])
    kept = json.loads((folder / name).read_text())
    data = udhr.corpus()
    referee = tiktoken_reference("gpt2")
    for d in data.declarations[:40]:
        assert kept[d.code] == len(referee.encode_ordinary(d.text)), d.code
    languages.CACHE.clear()
    assert languages._kept_counts(registry.get("gpt2"), "registry:gpt2", data) == kept


def test_only_a_shipped_tokenizers_counts_are_kept(folder):
    data = udhr.corpus()
    assert languages._counts_file("upload:abc", data) is None and languages._counts_file("lab:abc", data) is None
    assert languages._counts_file("registry:gpt2", data) == languages._counts_file("gpt2", data)


def test_an_unwritable_directory_only_means_nothing_is_kept(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("TOKENPLAY_PRECOMPUTED_DIR", str(blocked / "sub"))
    assert precomputed.write("x.json", {"a": 1}) is False and precomputed.read("x.json") is None
