"""A broken SentencePiece ``.model`` is refused in words, wherever it comes in (issue 21: uploads say what is wrong
in words, no protobuf jargon): uploaded (``POST /api/tokenizers``, the "Add a tokenizer…" form), read by
``tokenplay encode --file`` or shared by ``tokenplay serve --tokenizer``.

The broken files are made from real models (the shipped Mistral 7B and Jurassic-2 files, and a BPE and a unigram
model trained here), cut short, with bits flipped, bytes changed, put in or taken out, by a seeded random
generator, so every run tries the same files. Each one either still loads and tokenizes, or is refused with a
sentence that says what the file is and what is wrong with it: no format or Python jargon, nothing unprintable,
no phrase said twice.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers.serving import free_port

from app.engines.datafiles import data_path
from app.engines.errors import TokenplayError
from app.engines.registry.loaders import load_tokenizer
from app.engines.sentencepiece.bpe_trainer import train_bpe
from app.engines.sentencepiece.unigram_trainer import train_unigram
from app.engines.sentencepiece.trainer_options import TrainerOptions
from app.lab.examples import SAMPLE_CORPUS
from app.settings import Settings
from app.web.app import create_app

BIN = Path(sys.executable).parent
#: Words of the file format, the parser or Python that a user should never read.
JARGON = re.compile(
    r"proto|wire|varint|fixed32|fixed64|sub-?message|field|packed|enum|struct|unpack|buffer|byte_fallback|"
    r"NaN|\bSpec\b|TrainerSpec|NormalizerSpec|Error\b|Exception|Traceback|NoneType|codec|index out of range|"
    r"\bkey\b|surrogate",
    re.IGNORECASE,
)
#: How a refusal of a .model file begins: what the file is, then what is wrong.
OPENINGS = ("this SentencePiece .model file is damaged: ", "this SentencePiece .model file is cut short: ",
            "this is not a tokenizer file; ", "this is a word SentencePiece model", "this is a char SentencePiece model")
TEXT = "Hello world  東京 é 👩\u200d💻\n\ttab"


def said_twice(message: str, n: int = 3) -> set[tuple[str, ...]]:
    words = re.findall(r"[\w.']+", message.lower())
    runs = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return {run for run in runs if runs.count(run) > 1}


def check_refusal(message: str) -> None:
    assert message.startswith(OPENINGS), message
    assert not JARGON.search(message), message
    assert message.isprintable(), message
    assert not said_twice(message), message


def broken(data: bytes, rng: random.Random) -> bytes:
    """``data`` damaged one way, chosen by ``rng``."""
    d = bytearray(data)
    kind = rng.choice(["cut", "flip", "scribble", "insert", "delete", "tail", "head"])
    if kind == "cut":
        return bytes(d[: rng.randrange(1, len(d))])
    if kind == "flip":
        d[rng.randrange(len(d))] ^= 1 << rng.randrange(8)
    elif kind == "scribble":
        for _ in range(rng.randrange(2, 20)):
            d[rng.randrange(len(d))] = rng.randrange(256)
    elif kind == "insert":
        at = rng.randrange(len(d))
        d[at:at] = rng.randbytes(rng.randrange(1, 8))
    elif kind == "delete":
        at = rng.randrange(len(d))
        del d[at : at + rng.randrange(1, 8)]
    elif kind == "tail":
        d += rng.randbytes(rng.randrange(1, 50))
    else:  # the first pieces and their lengths
        d[rng.randrange(min(200, len(d)))] = rng.randrange(256)
    return bytes(d)


@pytest.fixture(scope="module")
def models() -> dict[str, bytes]:
    return {
        "bpe": train_bpe(SAMPLE_CORPUS, 400, TrainerOptions(byte_fallback=True)).serialize(),
        "unigram": train_unigram(SAMPLE_CORPUS, 400, TrainerOptions(byte_fallback=True)).model,
        "mistral-7b": data_path("sentencepiece/mistral-7b-v0.1.model").read_bytes(),
        "jurassic-2": data_path("sentencepiece/jurassic-2.model").read_bytes(),
    }


@pytest.mark.parametrize("model, tries", [("bpe", 250), ("unigram", 250), ("mistral-7b", 12), ("jurassic-2", 12)])
def test_a_broken_model_loads_or_is_refused_in_words(models, model, tries):
    rng = random.Random(f"tokenplay-{model}")
    refused = set()
    for _ in range(tries):
        data = broken(models[model], rng)
        try:
            tokenizer = load_tokenizer(data, filename=f"{model}.model")
        except TokenplayError as exc:
            check_refusal(str(exc))
            refused.add(str(exc).split(":")[0])
            continue
        result = tokenizer.tokenize(TEXT)  # what still loads, works
        assert result.count == len(tokenizer.encode(TEXT))
    assert "this SentencePiece .model file is damaged" in refused or model in ("mistral-7b", "jurassic-2")


def test_a_model_missing_a_byte_piece_is_refused_in_words(models):
    """Mistral's file with its byte piece <0x41> made a normal piece: byte fallback lacks one of its 256 bytes,
    which ``sentencepiece`` refuses too; the refusal says so without naming the option."""
    data = models["mistral-7b"]
    no_byte = data.replace(b"<0x41>\x15\x00\x00\x00\x00\x18\x06", b"<0x41>\x15\x00\x00\x00\x00\x18\x01", 1)
    assert no_byte != data
    with pytest.raises(TokenplayError) as refused:
        load_tokenizer(no_byte, filename="mistral.model")
    check_refusal(str(refused.value))
    assert "lacks some of the 256 byte pieces" in str(refused.value)


def damaged_models(models) -> dict[str, bytes]:
    """A few broken files, one of each kind the fuzz above finds, for the slower checks."""
    bpe, unigram = models["bpe"], models["unigram"]
    no_unk = bpe.replace(b"<unk>\x15\x00\x00\x00\x00\x18\x02", b"<unk>\x15\x00\x00\x00\x00\x18\x01", 1)
    bad_byte = unigram.replace(b"<0x41>", b"<0xG1>", 1)
    assert no_unk != bpe and bad_byte != unigram
    return {
        "cut.model": models["mistral-7b"][:5000],
        "no-unk.model": no_unk,
        "bad-byte.model": bad_byte,
        "unknown-kind.model": bpe + b"\x0f\x00",  # a record of the kind no file has (wire type 7)
    }


def test_an_upload_of_a_broken_model_says_what_is_wrong_in_words(models, tmp_path):
    settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread")
    with TestClient(create_app(settings)) as c:
        for filename, data in damaged_models(models).items():
            r = c.post("/api/tokenizers", files={"file": (filename, data)})
            assert r.status_code == 422, (filename, r.text)
            check_refusal(r.json()["detail"])
            page = c.post("/tokenizers", files={"file": (filename, data)}, data={"name": "mine"})
            assert page.status_code == 422 and r.json()["detail"].split(":")[0] in page.text


def test_the_command_line_refuses_a_broken_model_in_words(models, tmp_path):
    """``tokenplay serve --tokenizer`` checks every file before the server starts: a broken one stops it with the
    sentence (exit status 2, no traceback); ``tokenplay encode --file`` says the same."""
    for filename, data in damaged_models(models).items():
        with pytest.raises(TokenplayError):  # refused here first: a file that loaded would start the server
            load_tokenizer(data)
        path = tmp_path / filename
        path.write_bytes(data)
        serve = ["serve", "--tokenizer", str(path), "--host", "127.0.0.1", "--port", str(free_port())]
        for command in (serve, ["encode", "--file", str(path), "hi"]):
            done = subprocess.run([str(BIN / "tokenplay"), *command], capture_output=True, text=True, timeout=120)
            assert done.returncode == 2, (command, done.stderr)
            assert "Traceback" not in done.stderr and done.stdout == ""
            message = done.stderr.strip().removeprefix("tokenplay: error: ")
            check_refusal(message)
