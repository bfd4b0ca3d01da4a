"""One measurement, three ways: this process, two local worker processes, a local Dask cluster of two. Every figure
must be identical (tables are merged, never averaged), and a scheduler that does not answer says so in words."""

from __future__ import annotations

import socket

import pytest

from app.features.measure import (DaskExecutor, FigureOptions, InProcess, MeasureCancelled, MeasureError, ProcessPool,
                                  ReadOptions, measure, registry_ref)
from helpers import measure_corpus

TOKENIZERS = ("cl100k_base", "llama-3", "mistral-7b")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("workers")
    docs = measure_corpus.documents(per_language=20, chars=400)
    measure_corpus.write_jsonl(folder / "a.jsonl", docs[:60])  # in byte ranges of 4 KB: many parts
    measure_corpus.write_jsonl(folder / "b.jsonl.zst", docs[60:80])
    measure_corpus.write_parquet(folder / "c.parquet", docs[80:], row_group_size=5)
    return folder


def _measure(corpus, executor):
    return measure(
        [str(corpus)], [registry_ref(n) for n in TOKENIZERS], read=ReadOptions(group_by="field:lang"),
        options=FigureOptions(reference_group="en", reference_tokenizer="cl100k_base"), executor=executor,
        part_bytes=4096,
    )


@pytest.fixture(scope="module")
def one(corpus):
    return _measure(corpus, InProcess())


@pytest.mark.parametrize("start", [None, "spawn"])
def test_two_worker_processes_give_identical_figures(corpus, one, start):
    two = _measure(corpus, ProcessPool(2, start))
    assert one.corpus["parts"] > 10
    assert two.tokenizers == one.tokenizers
    assert two.corpus == one.corpus and two.problems == one.problems


def test_a_local_dask_cluster_gives_identical_figures(corpus, one):
    with DaskExecutor("local:2") as dask:
        assert dask.workers == 2
        got = _measure(corpus, dask)
    assert got.tokenizers == one.tokenizers
    assert got.corpus == one.corpus
    assert "Dask" in got.executor


def test_a_dask_address_that_does_not_answer_is_said_in_words(corpus):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    executor = DaskExecutor(f"tcp://127.0.0.1:{port}", timeout=1.0)
    with pytest.raises(MeasureError, match=r"cannot reach a Dask scheduler at 'tcp://127\.0\.0\.1:\d+'.*dask scheduler"):
        _measure(corpus, executor)


def test_local_n_must_be_a_number(corpus):
    with pytest.raises(MeasureError, match="local:N takes a number"):
        _measure(corpus, DaskExecutor("local:two"))


@pytest.mark.parametrize("executor", [InProcess, lambda: ProcessPool(2)])
def test_a_cancelled_measurement_stops(corpus, executor):
    asked = []

    def should_stop():
        asked.append(1)
        return len(asked) > 1  # the first question lets one part start; the next stops the job

    with pytest.raises(MeasureCancelled):
        measure([str(corpus)], [registry_ref("gpt2")], executor=executor(), part_bytes=4096, should_stop=should_stop)
