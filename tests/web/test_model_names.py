"""Find a model by the name people know (issue 21): every OpenAI model name tiktoken maps to an encoding, exact or
by its beginning, resolves to that very encoding in the API, every page and the CLI, and the pickers carry the
names so that typing one finds its entry. The referee is the installed tiktoken itself: its model table
(``tiktoken.model``), ``tiktoken.encoding_name_for_model`` and its own encoding definitions."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
import tiktoken
import tiktoken.model
from helpers.oracles import tiktoken_reference

from app.cli import main
from app.engines import registry
from app.engines.openai import model_names
from app.engines.errors import UnknownTokenizerError
from app.engines.openai.encodings import IM_END, IM_SEP, IM_START
from app.web.rendering.pickers import picker_groups

TEXT = "Hello world 12345, 日本語 <|endoftext|> 🙂"

#: Names tiktoken maps by their beginning only (real model names of each prefix, and made-up dated ones).
PREFIXED = [
    "gpt-4o-2024-05-13", "gpt-4o-mini", "chatgpt-4o-latest", "gpt-4-0314", "gpt-4-32k", "gpt-3.5-turbo-0301",
    "gpt-35-turbo-16k", "gpt-oss-120b", "gpt-oss-20b", "o1-mini", "o3-mini", "o4-mini-2025-04-16", "gpt-5-mini",
    "gpt-5-nano", "gpt-4.1-mini", "gpt-4.5-preview", "ft:gpt-4o-mini-2024-07-18:org::abc", "ft:gpt-4:org",
    "ft:gpt-3.5-turbo-0613:x", "ft:davinci-002:x", "ft:babbage-002:y",
] + [prefix + "2099-01-01" for prefix in tiktoken.model.MODEL_PREFIX_TO_ENCODING]
EXACT = list(tiktoken.model.MODEL_TO_ENCODING)
CHAT_MODELS = {"cl100k_base", "o200k_base", "o200k_harmony"}


def entry_for(model: str) -> str:
    """The registered tokenizer for tiktoken's encoding of ``model`` (tiktoken's r50k_base is our gpt2)."""
    encoding = tiktoken.encoding_name_for_model(model)
    return registry.ENCODING_ENTRIES.get(encoding, encoding)


def test_our_copy_of_the_model_table_is_tiktokens():
    assert model_names.MODEL_TO_ENCODING == tiktoken.model.MODEL_TO_ENCODING
    # the beginnings are tried in order: the order is part of the table
    assert list(model_names.MODEL_PREFIX_TO_ENCODING.items()) == list(tiktoken.model.MODEL_PREFIX_TO_ENCODING.items())


@pytest.mark.parametrize("encoding", sorted(set(tiktoken.model.MODEL_TO_ENCODING.values())))
def test_each_encoding_of_the_table_is_served_as_tiktoken_defines_it(encoding):
    """The tokenizer a model name resolves to is tiktoken's encoding: the same ranks, split pattern and special
    tokens as tiktoken's own definition (cl100k_base and o200k_base add the ChatML markup tokens the chat page
    renders, as the README says), and the same ids."""
    name = registry.resolve(next(m for m, e in tiktoken.model.MODEL_TO_ENCODING.items() if e == encoding))
    ours = registry.get(name).encoding
    reference = tiktoken_reference(name)
    assert ours._pat_str == reference._pat_str
    assert ours._special_tokens.items() >= reference._special_tokens.items()
    assert set(ours._special_tokens) - set(reference._special_tokens) <= {IM_START, IM_END, IM_SEP}
    assert ours._mergeable_ranks == reference._mergeable_ranks
    assert registry.get(name).encode(TEXT, allow_special=True) == reference.encode(TEXT, allowed_special="all")


@pytest.mark.parametrize("model", EXACT + PREFIXED)
def test_every_model_name_resolves_as_tiktoken_maps_it(model):
    assert registry.resolve(model) == entry_for(model)


@pytest.mark.parametrize("model", ["gpt-6", "claude-3", "o2", "gpt-4x", "GPT-4o", "text-davinci-004", "ft:gpt-5"])
def test_names_tiktoken_does_not_know_are_unknown(model):
    with pytest.raises(KeyError):
        tiktoken.encoding_name_for_model(model)
    with pytest.raises(UnknownTokenizerError):
        registry.resolve(model)


def test_the_longest_beginning_is_tiktokens_first():
    """The pickers' search (static/picker.js) resolves a typed name by the longest beginning it starts with;
    tiktoken takes the first in its table's order. For this table they agree: a beginning that starts with another
    comes before it, or means the same encoding."""
    prefixes = list(tiktoken.model.MODEL_PREFIX_TO_ENCODING.items())
    for i, (short, short_encoding) in enumerate(prefixes):
        for j, (long, long_encoding) in enumerate(prefixes):
            if long != short and long.startswith(short) and long_encoding != short_encoding:
                assert j < i, (long, short)


@pytest.mark.parametrize("model", EXACT + PREFIXED)
def test_the_api_tokenizes_with_the_encoding_of_every_model_name(client, model):
    want = entry_for(model)
    r = client.post("/api/tokenize", json={"text": TEXT, "tokenizer": model})
    assert r.status_code == 200, r.text
    assert r.json()["tokenizer"] == want
    assert r.json()["ids"] == tiktoken_reference(want).encode_ordinary(TEXT)


def test_the_api_lists_every_model_name_and_beginning(client):
    body = client.get("/api/tokenizers").json()
    for model in EXACT:
        assert body["aliases"].get(model, model) == entry_for(model)  # gpt2 is a name of its own
    assert list(body["prefixes"].items()) == [
        (prefix, registry.ENCODING_ENTRIES.get(e, e)) for prefix, e in tiktoken.model.MODEL_PREFIX_TO_ENCODING.items()
    ]


def selected(html: str, select_id: str) -> str:
    select = re.search(rf'<select id="{select_id}".*?</select>', html, re.S).group(0)
    return re.search(r'<option value="([^"]+)" selected', select).group(1)


@pytest.mark.parametrize("model", EXACT + PREFIXED)
def test_every_page_takes_every_model_name(client, model):
    want = entry_for(model)
    page = client.get(f"/?tokenizer={quote(model)}&text=hi")
    assert page.status_code == 200
    assert selected(page.text, "tokenizer") == want
    assert "(unknown)" not in page.text
    compare = client.get(f"/compare?t={quote(model)}&t=gpt2&text=hi")
    assert compare.status_code == 200
    assert f'<section class="pane reference" data-tokenizer="{want}"' in compare.text
    chat = client.get(f"/chat?tokenizer={quote(model)}&compare=llama-3")
    assert chat.status_code == (200 if want in CHAT_MODELS else 422)  # GPT-3's encodings have no chat format
    assert selected(chat.text, "chat-tokenizer") == want
    chat = client.get(f"/chat?tokenizer=llama-3&compare={quote(model)}")
    assert selected(chat.text, "chat-compare") == want


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-2024-05-13", "gpt-oss-120b", "text-davinci-edit-001", "davinci"])
def test_the_cli_takes_model_names(capsys, model):
    assert main(["encode", "-t", model, TEXT]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokenizer"] == entry_for(model)
    assert out["ids"] == tiktoken_reference(entry_for(model)).encode_ordinary(TEXT)
    assert main(["encode", "-t", model, "--engine", "native", TEXT]) == 0
    assert json.loads(capsys.readouterr().out)["tokenizer"] == "native-" + entry_for(model)


def test_the_pickers_carry_each_entrys_model_names(client):
    entries = {e.name: e for g in picker_groups(registry.specs()) for e in g.entries}
    for model in EXACT:
        entry = entries[entry_for(model)]
        assert model in entry.models or model == entry.name, model
    for prefix in tiktoken.model.MODEL_PREFIX_TO_ENCODING:
        assert prefix in entries[entry_for(prefix + "x")].prefixes
    page = client.get("/?tokenizer=gpt2&text=hi").text
    option = re.search(r'<option value="o200k_base"[^>]*>', page).group(0)
    assert re.search(r'data-models="[^"]*\bgpt-4o\b[^"]*"', option)
    assert re.search(r'data-prefixes="[^"]*\bgpt-4o-[^"]*"', option)
    compare = client.get("/compare").text
    row = re.search(r'<li class="picker-row" data-entry="o200k_harmony"[^>]*>', compare).group(0)
    # the model's name, then the Hugging Face repositories of its models (issue 37: a search for a repository id)
    assert 'data-models="gpt-oss openai/gpt-oss-20b openai/gpt-oss-120b"' in row and 'data-prefixes="gpt-oss-"' in row


def test_a_model_name_is_not_a_name_for_an_upload(client):
    from app.engines.datafiles import data_path

    for name in ("gpt-4o", "gpt-4o-mine", "gpt-oss-mine", "davinci"):
        r = client.post(
            "/api/tokenizers", files={"file": ("x.tiktoken", data_path("openai/gpt2.tiktoken").read_bytes())},
            data={"name": name, "pattern": "gpt2"},
        )
        assert r.status_code == 422 and "taken" in r.json()["detail"], (name, r.text)


@pytest.mark.parametrize(("filename", "name"), [("gpt-5.json", "my-gpt-5"), ("gpt-4o-mini.tiktoken", "my-gpt-4o-mini"),
                                                ("davinci.tiktoken", "my-davinci"), ("gpt2.tiktoken", "gpt2-2")])
def test_an_upload_named_after_a_model_gets_a_free_name(make_client, filename, name):
    """A file named like a model, uploaded without a name, gets a name that resolves to nothing else (numbering
    gpt-4o-mini would never end: gpt-4o-mini-2 names a model too)."""
    from app.engines.datafiles import data_path

    r = make_client.post("/api/tokenizers", files={"file": (filename, data_path("openai/gpt2.tiktoken").read_bytes())},
                         data={"pattern": "gpt2"})
    assert r.status_code == 201, r.text
    assert r.json()["name"] == name
    assert make_client.post("/api/tokenize", json={"text": "hi", "tokenizer": name}).json()["tokenizer"] == name


@pytest.fixture()
def make_client(tmp_path):
    from fastapi.testclient import TestClient

    from app.settings import Settings
    from app.web.app import create_app

    settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread")
    with TestClient(create_app(settings)) as client:
        yield client


def test_a_served_file_may_not_be_named_after_a_model(tmp_path, monkeypatch, capsys):
    from app.engines.datafiles import data_path
    from app.engines.errors import TokenplayError
    from app.engines.registry.files import ENV, register_file

    monkeypatch.setattr("app.web.server.serve", lambda *a, **k: pytest.fail("the server must not start"))
    monkeypatch.delenv(ENV, raising=False)
    for stem in ("gpt-4o-mine", "gpt-oss-tuned", "o3"):
        path = tmp_path / f"{stem}.model"
        path.write_bytes(data_path("sentencepiece/mistral-7b-v0.1.model").read_bytes())
        assert main(["serve", "--tokenizer", str(path)]) == 2
        assert "already taken" in capsys.readouterr().err
        with pytest.raises(TokenplayError, match="the name of a shipped model"):
            register_file(path)
    assert registry.resolve("gpt-4o-mine") == "o200k_base"  # nothing was registered over it
