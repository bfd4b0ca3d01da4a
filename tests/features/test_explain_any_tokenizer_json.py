"""The explain view's words for the normalizer steps an uploaded tokenizer.json may hold (issue 24)."""

from __future__ import annotations

from tokenizers import Regex, normalizers

from app.features.explain.normalization import tokenizer_json_steps


def test_a_replace_step_is_named_by_its_string_or_its_regex():
    import json

    spec = json.loads(normalizers.Sequence([normalizers.Replace(Regex(r"\s{2,}"), " "),
                                            normalizers.Replace("``", '"')]).__getstate__())
    assert tokenizer_json_steps(spec) == ["matches of the regex '\\\\s{2,}' replaced by ' '", "'``' replaced by '\"'"]
