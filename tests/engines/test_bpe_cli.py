"""``tokenplay train``: model, trace and .tiktoken files; clear errors; progress on stderr."""

from __future__ import annotations

import json

from app.cli import main
from app.engines.bpe.model import BPETokenizer


def test_train_writes_model_trace_and_tiktoken(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("aaabdaaabac " * 20 + "<|endoftext|>hello hello", encoding="utf-8")
    out, trace, tk = tmp_path / "m.json", tmp_path / "trace.json", tmp_path / "m.tiktoken"
    code = main(
        [
            "train",
            str(corpus),
            "--vocab-size",
            "266",
            "--pattern",
            "gpt2",
            "--tie-break",
            "lexical",
            "--special",
            "<|endoftext|>",
            "--out",
            str(out),
            "--trace",
            str(trace),
            "--export-tiktoken",
            str(tk),
            "--top-k",
            "2",
        ]
    )
    assert code == 0
    model = BPETokenizer.load(out)
    assert len(model.merges) == 10 and model.special_tokens == {"<|endoftext|>": 266}
    data = json.loads(trace.read_text())
    assert data["merges"] == [list(m) for m in model.merges]
    assert data["steps"][0]["tie_break"] == "lexical" and len(data["steps"][0]["top_pairs"]) == 2
    assert tk.read_text().count("\n") == 266
    err = capsys.readouterr().err
    assert "10 merges (vocab_size reached)" in err and str(out) in err


def test_train_errors_exit_2_with_a_message(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello", encoding="utf-8")
    assert main(["train", str(corpus), "--vocab-size", "100", "--out", str(tmp_path / "m.json")]) == 2
    assert "at least 256" in capsys.readouterr().err
    assert main(["train", str(tmp_path / "missing.txt"), "--vocab-size", "300", "--out", str(tmp_path / "m.json")]) == 2
    assert "cannot read corpus" in capsys.readouterr().err
