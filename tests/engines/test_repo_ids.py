"""Hugging Face repository ids resolve to the shipped entry whose tokenizer their model publishes
(app/engines/registry/repo_ids.py); an unknown one is an unknown tokenizer whose error names the closest ids."""

from __future__ import annotations

import pytest

from app.engines import registry
from app.engines.errors import UnknownTokenizerError

ISSUE = {  # the ids issue 37 names
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1",
    "Qwen/Qwen3-8B": "qwen3",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "google/gemma-3-27b-it": "gemma-3",
}


@pytest.mark.parametrize("repo", list(ISSUE))
def test_the_issues_repository_ids_resolve_to_their_entries(repo):
    assert registry.resolve(repo) == ISSUE[repo]
    assert registry.resolve(repo.upper()) == ISSUE[repo]  # the Hub matches ids without regard to case
    assert registry.resolve(f"https://huggingface.co/{repo}") == ISSUE[repo]
    assert registry.get(repo) is registry.get(ISSUE[repo])


def test_every_listed_repository_id_names_a_registered_model_entry():
    for repo, entry in registry.REPO_IDS.items():
        assert registry.resolve(repo) == entry
        assert registry.spec(entry).entry == entry, repo  # a model's reference entry, never a native-* engine


def test_an_unknown_repository_id_is_an_unknown_tokenizer_that_names_the_closest():
    with pytest.raises(UnknownTokenizerError) as caught:
        registry.resolve("meta-llama/Llama-3.3-70B-Instruct")
    assert caught.value.closest[0] == "meta-llama/Llama-3.1-70B-Instruct"
    assert "the closest are: meta-llama/Llama-3.1-70B-Instruct" in str(caught.value)
    with pytest.raises(UnknownTokenizerError) as caught:
        registry.resolve("Qwen/Qwen3.5-8B")
    assert "Qwen/Qwen3-8B" in caught.value.closest


def test_an_unknown_name_names_the_closest_names_and_aliases():
    with pytest.raises(UnknownTokenizerError) as caught:
        registry.resolve("gpt-4q")
    assert {"gpt-4o", "gpt-4"} <= set(caught.value.closest)
    with pytest.raises(UnknownTokenizerError) as caught:
        registry.resolve("qwen-3")
    assert "qwen3" in caught.value.closest


def test_a_path_with_a_slash_is_not_taken_for_a_listed_model():
    assert registry.repo_entry("models/tokenizer.json") is None
    with pytest.raises(UnknownTokenizerError):
        registry.resolve("models/tokenizer.json")
