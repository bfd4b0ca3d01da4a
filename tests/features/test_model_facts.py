"""Context windows and list prices (app/features/model_facts.py, tokenizers/model-facts.json): found by the name a
user gives, dated, sourced, and a missing or malformed file leaves them out with a note instead of failing."""

from __future__ import annotations

import json
import shutil

import pytest

from app.engines import registry
from app.engines.datafiles import data_path
from app.features import model_facts
from app.features.model_facts import ModelFacts, load, shipped


def test_the_shipped_file_is_read_with_its_date_and_the_issues_example():
    table = shipped()
    assert table.note == "" and table.prices_date == "2026-11-29" and table.currency == "USD"
    gpt4o = table.lookup("gpt-4o")
    assert gpt4o.context_window == 128_000 and gpt4o.price_per_million_input == 2.5
    assert "BerriAI/litellm" in gpt4o.source and "00035b69f416be24e2e323c13198d9b7d2d1bdf9" in gpt4o.source


@pytest.mark.parametrize(
    ("name", "model", "window"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1", 131_072),
        ("Qwen/Qwen3-8B", "qwen3", 32_768),
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3", 131_072),
        ("google/gemma-3-27b-it", "gemma-3", 131_072),
        ("google/gemma-3-1b-it", "google/gemma-3-1b-it", 32_768),  # a repository listed itself: its own window
        ("native-gemma-3", "gemma-3", 131_072),  # the same model run by our engine
        ("openai/gpt-oss-120b", "openai/gpt-oss-120b", 131_072),
    ],
)
def test_models_are_found_by_repository_id_and_engine_name(name, model, window):
    found = shipped().lookup(name)
    assert (found.model, found.context_window) == (model, window)
    assert found.price_per_million_input is None  # open weights: no maker's list price


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "gpt-4o-2024-05-13", "custom-bpe", "no-such-model"])
def test_encodings_snapshots_and_unknown_names_have_no_facts(name):
    assert shipped().lookup(name) is None


def test_every_model_of_the_file_is_a_name_tokenplay_resolves():
    for facts in shipped().models.values():
        registry.resolve(facts.model)  # raises for a name no page, API call or CLI command would take


def test_share_and_cost_of_a_count():
    facts = shipped().lookup("gpt-4o")
    assert facts.share(64_000) == 0.5 and facts.cost(2_000_000) == 5.0
    assert ModelFacts("m", None, None, "s").share(10) is None and ModelFacts("m", None, None, "s").cost(10) is None


def write(tmp_path, obj) -> object:
    path = tmp_path / "facts.json"
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


GOOD = {"prices_date": "2026-01-01", "sources": {"s": "a source"},
        "models": {"gpt-4o": {"context_window": 10, "price_per_million_input": 1, "source": "s"}}}


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        ("{not json", "not JSON"),
        ({"models": {}}, '"sources"'),
        ({**GOOD, "prices_date": ""}, "prices_date"),
        ({**GOOD, "models": {"gpt-4o": {"context_window": -1, "source": "s"}}}, "context_window"),
        ({**GOOD, "models": {"gpt-4o": {"price_per_million_input": "cheap", "source": "s"}}}, "price_per_million_input"),
        ({**GOOD, "models": {"gpt-4o": {"context_window": 10, "source": "elsewhere"}}}, "source"),
    ],
)
def test_a_malformed_file_leaves_the_facts_out_with_a_note(tmp_path, broken, said):
    table = load(write(tmp_path, broken))
    assert table.models == {} and table.lookup("gpt-4o") is None
    assert "cannot be read" in table.note and said in table.note


def test_a_missing_file_leaves_the_facts_out_with_a_note(tmp_path):
    table = load(tmp_path / "gone.json")
    assert table.models == {} and "cannot be read" in table.note
    assert load(write(tmp_path, GOOD)).lookup("GPT-4o").context_window == 10


def test_a_shipped_file_changed_after_its_hash_was_pinned_is_not_trusted(tmp_path, monkeypatch):
    data_dir = tmp_path / "tokenizers"
    data_dir.mkdir()
    shutil.copy(data_path("model-facts.json").parent / "manifest.json", data_dir / "manifest.json")
    facts = json.loads(data_path("model-facts.json").read_text())
    facts["models"]["gpt-4o"]["price_per_million_input"] = 0.01
    (data_dir / "model-facts.json").write_text(json.dumps(facts))
    monkeypatch.setenv("TOKENPLAY_DATA_DIR", str(data_dir))
    table = model_facts.load()
    assert table.models == {} and "sha256" in table.note
