"""``tokenplay measure``: the report in each format, every kind of tokenizer name (shipped, alias, a file, a lab run
from the server's run store, an uploaded tokenizer from the uploads store), exit statuses and messages in words."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest
import tiktoken
import tokenizers
from helpers import measure_corpus
from helpers.lab_helpers import wait_done
from helpers.oracles import tiktoken_reference
from tiktoken.load import load_tiktoken_bpe

from app.cli import main
from app.settings import Settings

docs, corpus = measure_corpus.fixtures()


def cl100k_tokens(texts) -> int:
    ref = tiktoken_reference("cl100k_base")
    return sum(len(ref.encode_ordinary(t)) for t in texts)


def test_json_report_with_groups_and_premium(corpus, docs, capsys):
    code = main(["measure", str(corpus), "--tokenizers", "gpt-4,gpt2", "--group-by", "field:lang",
                 "--reference-group", "en", "--reference-tokenizer", "gpt-4"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    cl = report["tokenizers"]["cl100k_base"]  # gpt-4 is an alias: the report names the encoding
    assert cl["tokens"] == cl100k_tokens(d["text"] for d in docs)
    assert set(cl["groups"]) == {"en", "es", "ja", "zh", "c"}
    assert cl["groups"]["en"]["premium"] == 1.0
    assert cl["groups"]["ja"]["premium"] == cl["groups"]["ja"]["tokens"] / cl["groups"]["en"]["tokens"]
    assert report["tokenizers"]["gpt2"]["tokenizer_premium"] > 1
    assert report["options"]["resamples"] == 1000 and report["problems"] == []


def test_csv_and_html_to_a_file(corpus, docs, tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["measure", str(corpus), "-t", "cl100k_base", "--format", "csv", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().err
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert rows[0]["tokenizer"] == "cl100k_base" and int(rows[0]["tokens"]) == cl100k_tokens(d["text"] for d in docs)
    html = tmp_path / "r.html"
    assert main(["measure", str(corpus), "-t", "cl100k_base", "--group-by", "field:lang", "--reference-group", "es",
                 "--format", "html", "--out", str(html)]) == 0
    page = html.read_text()
    assert "<table" in page and "Bytes per token" in page and "Premium per group" in page
    assert f"{cl100k_tokens(d['text'] for d in docs):,}" in page


def test_group_names_are_escaped_in_the_html(tmp_path, capsys):
    rows = [{"text": "hello", "lang": "<img src=x onerror=alert(1)>"}, {"text": "world", "lang": "en"}]
    path = measure_corpus.write_jsonl(tmp_path / "x.jsonl", rows)
    assert main(["measure", str(path), "-t", "gpt2", "--group-by", "field:lang", "--format", "html"]) == 0
    page = capsys.readouterr().out
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_a_tokenizer_file_by_path(tmp_path, corpus, docs, capsys):
    from app.engines.datafiles import data_path
    from app.engines.huggingface.npm_models import NPM_MODELS

    source = tmp_path / "my-qwen" / "tokenizer.json"
    source.parent.mkdir()
    source.write_bytes(data_path(NPM_MODELS["qwen3"].tokenizer_file).read_bytes())
    assert main(["measure", str(corpus), "-t", str(source)]) == 0
    report = json.loads(capsys.readouterr().out)
    lib = tokenizers.Tokenizer.from_file(str(source))
    lib.encode_special_tokens = True
    want = sum(len(lib.encode(d["text"], add_special_tokens=False).ids) for d in docs)
    assert report["tokenizers"]["my-qwen"]["tokens"] == want  # named after its folder, as `serve --tokenizer` names it


def test_a_lab_run_from_the_servers_run_store(client, settings, corpus, docs, monkeypatch, capsys):
    text = "\n".join(d["text"] for d in docs[:10])
    r = client.post("/api/train", json={"corpus": text, "algorithm": "byte", "pattern": "gpt4", "merges": 120})
    run = wait_done(client, r.json()["id"])
    assert run["status"] == "done"
    monkeypatch.setenv("TOKENPLAY_LAB_RUNS_DIR", str(settings.lab_runs_dir))
    assert main(["measure", str(corpus), "-t", f"lab-{run['id']},cl100k_base"]) == 0
    report = json.loads(capsys.readouterr().out)
    ranks = client.get(f"/api/train/{run['id']}/export", params={"format": "tiktoken"}).content
    path = settings.lab_runs_dir / "export.tiktoken"
    path.write_bytes(ranks)
    from app.engines.openai.encodings import CL100K_PATTERN

    encoding = tiktoken.Encoding("lab", pat_str=CL100K_PATTERN, mergeable_ranks=load_tiktoken_bpe(str(path)),
                                 special_tokens={})
    want = sum(len(encoding.encode_ordinary(d["text"])) for d in docs)
    assert report["tokenizers"][f"lab-{run['id']}"]["tokens"] == want


def test_an_uploaded_tokenizer_from_the_uploads_store(tmp_path, corpus, docs, monkeypatch, capsys):
    from app.services.uploads import Uploads

    trained = tmp_path / "wp.json"
    text = tmp_path / "t.txt"
    text.write_text("\n".join(d["text"] for d in docs[:12]), encoding="utf-8")
    assert main(["train", str(text), "--algorithm", "wordpiece", "--vocab-size", "600", "--out", str(trained),
                 "--quiet"]) == 0
    uploads = Uploads.from_settings(Settings(uploads_dir=tmp_path / "uploads"))
    upload = uploads.add(trained.read_bytes(), name="my-wp", taken=set())
    monkeypatch.setenv("TOKENPLAY_UPLOADS_DIR", str(tmp_path / "uploads"))
    capsys.readouterr()
    assert main(["measure", str(corpus), "-t", f"upload:{upload.id}"]) == 0
    report = json.loads(capsys.readouterr().out)
    lib = tokenizers.Tokenizer.from_str(trained.read_text())
    lib.encode_special_tokens = True
    want = sum(len(lib.encode(d["text"], add_special_tokens=False).ids) for d in docs)
    assert report["tokenizers"]["my-wp"]["tokens"] == want
    assert report["tokenizers"]["my-wp"]["unknown"] is not None  # WordPiece has [UNK]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-t", "no-such-tokenizer"], "unknown tokenizer 'no-such-tokenizer'; valid names are: "),
        (["-t", "lab-0123abcd"], "no finished lab run '0123abcd'"),
        (["-t", "upload:0123abcd"], "no uploaded tokenizer '0123abcd'"),
        (["-t", "gpt2", "--group-by", "language"], "--group-by takes 'file' or 'field:NAME'"),
        (["-t", "gpt2", "--reference-tokenizer", "qwen3"], "the reference tokenizer 'qwen3' is not measured"),
        (["-t", "gpt2", "--group-by", "field:lang", "--reference-group", "tlh"], "no group 'tlh' in the corpus"),
        ([], "name the tokenizers to measure with"),
    ],
)
def test_mistakes_are_said_in_words(corpus, tmp_path, monkeypatch, capsys, args, said):
    monkeypatch.setenv("TOKENPLAY_LAB_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("TOKENPLAY_UPLOADS_DIR", str(tmp_path / "uploads"))
    assert main(["measure", str(corpus), *args]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_nothing_measurable_exits_one_with_the_reasons(tmp_path, capsys):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "bin.txt").write_bytes(b"\0\1\2")
    assert main(["measure", str(tmp_path), "-t", "gpt2"]) == 1
    captured = capsys.readouterr()
    assert "empty.txt: is empty" in captured.err and "bin.txt: is a binary file" in captured.err
    assert "nothing could be measured" in captured.err
    assert json.loads(captured.out)["corpus"]["documents"] == 0
    assert main(["measure", str(tmp_path / "nowhere"), "-t", "gpt2"]) == 2
    assert "nothing to measure: " in capsys.readouterr().err


def test_some_bad_files_still_exit_zero(tmp_path, corpus, capsys):
    (tmp_path / "bin.txt").write_bytes(b"\0\1\2")
    assert main(["measure", str(corpus), str(tmp_path / "bin.txt"), "-t", "gpt2"]) == 0
    assert "bin.txt: is a binary file" in capsys.readouterr().err


def test_a_dask_address_that_does_not_answer(corpus, capsys):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from app.features.measure import executors

    executors.DASK_TIMEOUT, old = 1.0, executors.DASK_TIMEOUT
    try:
        assert main(["measure", str(corpus), "-t", "gpt2", "--dask", f"127.0.0.1:{port}"]) == 2
    finally:
        executors.DASK_TIMEOUT = old
    err = capsys.readouterr().err
    assert "cannot reach a Dask scheduler" in err and "Traceback" not in err


def test_progress_bar_shows_rate_and_time_left(corpus):
    # a subprocess, as a user runs it: --progress draws the bar on stderr even when it is not a terminal
    done = subprocess.run([sys.executable, "-m", "app.cli", "measure", str(corpus), "-t", "gpt2", "--progress"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "measuring: 100%" in done.stderr and "B/s]" in done.stderr and "<00:" in done.stderr
    json.loads(done.stdout)
    quiet = subprocess.run([sys.executable, "-m", "app.cli", "measure", str(corpus), "-t", "gpt2"],
                           capture_output=True, text=True, timeout=300)
    assert quiet.stderr == ""  # not a terminal: no bar
