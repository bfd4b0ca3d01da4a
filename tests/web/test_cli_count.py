"""``tokenplay count TEXT --tokenizer NAME`` prints just the number: the reference library's count (tiktoken, Hugging
Face tokenizers), with ``--with-specials`` the count of ``encode(text)`` with the library's defaults."""

from __future__ import annotations

import os
import subprocess
import sys

import tokenizers
from helpers.oracles import tiktoken_reference
from helpers.samples import ALL as SAMPLES
from helpers.serving import ROOT

from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS


def count(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", "count", *args], cwd=ROOT, input=stdin,
                          capture_output=True, text=True, timeout=600, env={**os.environ})


def test_count_prints_just_the_number_tiktoken_counts():
    text = SAMPLES["english"]
    done = count("--tokenizer", "cl100k_base", text)
    assert done.returncode == 0 and done.stdout == f"{len(tiktoken_reference('cl100k_base').encode(text))}\n"
    assert count("-t", "gpt-4o", text).stdout == f"{len(tiktoken_reference('o200k_base').encode(text))}\n"


def test_count_reads_stdin_and_adds_the_models_own_tokens_on_request():
    lib = tokenizers.Tokenizer.from_file(str(data_path(NPM_MODELS["gemma-3"].tokenizer_file)))
    text = "Hello world"
    assert count("-t", "gemma-3", stdin=text).stdout.strip() == str(len(lib.encode(text, add_special_tokens=False)))
    assert count("-t", "google/gemma-3-27b-it", "--with-specials", text).stdout.strip() == str(len(lib.encode(text)))
    assert count("-t", "gemma-3", "--with-specials", text).stdout.strip() == "3"  # 2 tokens + <bos>


def test_count_of_an_unknown_tokenizer_says_so_and_fails():
    done = count("-t", "gpt-4q", "x")
    assert done.returncode == 2 and done.stdout == ""
    assert "unknown tokenizer 'gpt-4q'; the closest are: gpt-4" in done.stderr
