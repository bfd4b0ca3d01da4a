"""``tokenplay measure --conformance MODEL``: each runtime of a model against its reference library, document by
document, and what is said where two differ (the first differing token, where it starts, the text around it)."""

from __future__ import annotations

import json
import sys

import pytest

from app.cli import main
from app.features.measure import conformance
from app.features.measure.conformance import ConformanceError, Runtime, check, runtimes
from app.features.measure.sources import ReadOptions
from helpers import measure_corpus
from helpers.oracles import tiktoken_reference

docs, corpus = measure_corpus.fixtures()


@pytest.mark.parametrize(
    ("model", "reference", "others"),
    [
        ("gpt-4", "tiktoken", ["tokenplay"]),
        ("o200k_base", "tiktoken", ["tokenplay"]),
        ("llama-3", "tokenizers", ["tokenplay"]),
        ("native-gemma-3", "tokenizers", ["tokenplay"]),
        ("mistral-7b", "sentencepiece", ["tokenplay"]),
        ("jurassic-2", "sentencepiece", ["tokenplay"]),
        ("bert-base-uncased", "tokenizers", ["tokenplay"]),
        ("custom-bpe", "tiktoken", ["tokenplay"]),
    ],
)
def test_every_runtime_of_shipped_models_agrees(corpus, docs, model, reference, others):
    report = check(model, [str(corpus)])
    assert report.reference == reference
    assert [c.runtime for c in report.comparisons] == others
    assert report.documents == len(docs)
    for c in report.comparisons:
        assert (c.documents, c.differing, c.failed, c.differences) == (len(docs), 0, 0, [])


def test_a_difference_is_placed_in_the_text(corpus, docs, monkeypatch):
    reference = tiktoken_reference("cl100k_base").encode_ordinary
    marked = [k for k, d in enumerate(docs) if "Debian" in d["text"]]
    assert marked

    def drifting(text: str) -> list[int]:  # a runtime that cuts the first "Debian" of a document differently
        ids = reference(text)
        if "Debian" not in text:
            return ids
        k = next(i for i in range(len(ids)) if "Debian" in tiktoken_reference("cl100k_base").decode(ids[: i + 1]))
        return ids[:k] + [99999, 99998] + ids[k + 1 :]

    real = runtimes("cl100k_base")
    monkeypatch.setattr(conformance, "runtimes", lambda model: (real[0], [real[1][0], Runtime("other", drifting), real[1][1]], {}))
    report = check("cl100k_base", [str(corpus)], context=10)
    other = report.comparisons[0]
    assert (other.documents, other.differing) == (len(docs), len(marked))
    first = other.differences[0]
    text = docs[marked[0]]["text"]
    ids = reference(text)
    assert first.where == f"{corpus} line {marked[0] + 1}"
    assert first.reference_ids == ids[first.position : first.position + 8]
    assert first.ids[:2] == [99999, 99998] and first.count == len(ids) + 1
    # the token starts where the decoded ids before it end
    assert first.offset == len(tiktoken_reference("cl100k_base").decode(ids[: first.position]))
    assert "Debian" in text[first.offset : first.offset + 8]
    assert first.context == text[max(0, first.offset - 10) : first.offset + 10]
    assert report.comparisons[1].differing == 0  # Tokenplay's engine still agrees
    assert "differs on" in report.text() and f"line {marked[0] + 1}" in report.csv()


def test_one_runtime_is_not_a_comparison(corpus, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # as if the package were not installed
    with pytest.raises(ConformanceError, match=r"only one runtime here \(tokenplay\).*sentencepiece: pip install"):
        check("mistral-7b", [str(corpus)])


def test_a_tokenizer_file_is_compared_too(tmp_path, corpus, docs):
    from app.engines.datafiles import data_path

    model = tmp_path / "m.model"
    model.write_bytes(data_path("sentencepiece/mistral-7b-v0.1.model").read_bytes())
    report = check(str(model), [str(corpus)], read=ReadOptions())
    assert report.reference == "sentencepiece" and report.comparisons[0].differing == 0


def test_conformance_from_the_cli(corpus, docs, capsys):
    assert main(["measure", str(corpus), "--conformance", "llama-3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reference"] == "tokenizers" and out["runtimes"][0]["differing"] == 0
    assert out["documents"] == len(docs)
    assert main(["measure", str(corpus), "--conformance", "gpt2", "--format", "text"]) == 0
    assert "tokenplay (Tokenplay's engine, native-gpt2): agrees on every document" in capsys.readouterr().out
    assert main(["measure", str(corpus), "--conformance", "gpt2", "--format", "html"]) == 2
    assert "--conformance answers --format json, csv or text" in capsys.readouterr().err
