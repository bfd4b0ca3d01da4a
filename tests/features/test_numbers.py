"""How tokenizers cut numbers (issue 35, part 6), every count held to the reference library's own encoding."""

from __future__ import annotations

import pytest
from helpers.oracles import tiktoken_reference

from app.engines import registry
from app.features.numbers import SAMPLES, grouping_of, number_facts, number_table


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_number_facts_are_tiktokens_encoding(name):
    ref = tiktoken_reference(name)
    single = [n for n in range(10_000) if len(ref.encode_ordinary(str(n))) == 1]
    for engine in (name, f"native-{name}"):
        facts = number_facts(registry.get(engine))
        assert facts["single_tokens_0_9999"] == len(single)
        assert facts["largest_single_token"] == single[-1]
        any_size = facts["largest_single_token_any"]
        assert len(ref.encode_ordinary(str(any_size))) == 1 and any_size >= single[-1]
        digit_tokens = [int(b) for b in ref._mergeable_ranks if b.isdigit() and not (len(b) > 1 and b.startswith(b"0"))]
        assert not [n for n in digit_tokens if n > any_size and len(ref.encode_ordinary(str(n))) == 1]


def test_groupings_read_from_the_cut():
    assert number_facts(registry.get("cl100k_base"))["grouping"] == "threes from the left"
    assert number_facts(registry.get("qwen3"))["grouping"] == "one digit"
    assert number_facts(registry.get("gpt2"))["grouping"] == "learned"
    assert grouping_of([1, 3, 3, 3]) == "threes from the right"


def test_number_table_is_each_tokenizers_encoding():
    names = ["cl100k_base", "llama-3", "mistral-7b"]
    toks = [registry.get(n) for n in names]
    table = number_table(toks)
    assert [g["group"] for g in table["groups"]] == list(SAMPLES)
    rows = [row for g in table["groups"] for row in g["rows"]]
    assert "12345+67890=80235" in [r["text"] for r in rows]
    ref = tiktoken_reference("cl100k_base")
    for row in rows:
        assert row["cuts"]["cl100k_base"]["tokens"] == len(ref.encode_ordinary(row["text"]))
        lib = registry.get("llama-3").library
        assert row["cuts"]["llama-3"]["tokens"] == len(lib.encode(row["text"], add_special_tokens=False).ids)
