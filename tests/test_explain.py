"""Explanations checked against the reference libraries, never against Tokenplay's own output.

For every token of real text (a slice of each corpus) and of hard strings, for each shipped BPE model:

- replaying ``steps`` from the pre-token's symbols, each step merges the adjacent pair of lowest rank among all
  adjacent pairs at that moment (leftmost on ties), ranks read from the reference library's own data; each
  step's ``candidates`` are exactly the pairs that could merge then; when the steps end no pair can merge, and the
  parts left are exactly the reference's tokens for that pre-token (in the whole text, and on its own where the
  library can encode one pre-token);
- the merge tree rebuilds the token with the model's rank at every inner node, and the steps marked
  ``in_token`` are the tree's merges;
- a pre-token taken whole is one token for the reference too; special, added and byte-fallback tokens are what
  the reference made of that text.
"""

from __future__ import annotations

import pytest
import realtext
from explain_referees import referee

from app.engines import registry
from app.engines.explain import Explainer

MODELS = [
    "gpt2",
    "p50k_base",
    "cl100k_base",
    "o200k_base",
    "o200k_harmony",
    "llama-3",
    "qwen3",
    "deepseek-v3",
    "gemma-3",
    "mistral-7b",
]
HARD = [
    "  indented code:\n\tif x == 1:\n\t\treturn 'ok'  \n",
    "👨‍👩‍👧‍👦 and 🏳️‍🌈, ꙮ and 東京スカイツリーは634メートルです。",
    "Numbers 1234567 and 3.14159, naïve Cafe\u0301 <|endoftext|> <|im_start|> <think>",
]


def texts() -> list[str]:
    realtext.require()
    return [piece for name in realtext.NAMES for piece in realtext.slices(name, 1, 700, seed=3)] + HARD


def decoder(ref):
    return (lambda h: bytes.fromhex(h).decode("utf-8")) if ref.chars else bytes.fromhex


def replay(explanation: dict, ref) -> list:
    """The parts left after replaying the steps by the reference's ranks, checking every step on the way."""
    pre = explanation["pretoken"]
    decode = decoder(ref)
    parts = ref.symbols(pre["text"])
    if pre["window"]:
        parts = parts[pre["window"]["start"] : pre["window"]["end"]]
    for step in explanation["steps"]:
        ranks = [ref.rank(a, b) for a, b in zip(parts, parts[1:])]
        present = [(parts[i], parts[i + 1], r) for i, r in enumerate(ranks) if r is not None]
        assert [(decode(c["left"]), decode(c["right"]), c["rank"]) for c in step["candidates"]] == present
        low = min(r for r in ranks if r is not None)
        i = ranks.index(low)
        assert (decode(step["left"]), decode(step["right"]), step["rank"]) == (parts[i], parts[i + 1], low)
        assert decode(step["merged"]) == parts[i] + parts[i + 1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    assert all(ref.rank(a, b) is None for a, b in zip(parts, parts[1:])), "a pair could still merge"
    return parts


def tree_symbols(node: dict, ref, inner: list) -> object:
    """Rebuild a tree bottom-up, checking each inner node's bytes and rank; ``inner`` collects the merged parts."""
    decode = decoder(ref)
    data = decode(node["bytes"])
    if not node["children"]:
        assert node["rank"] is None
        return data
    left, right = (tree_symbols(child, ref, inner) for child in node["children"])
    assert left + right == data
    assert node["rank"] == ref.rank(left, right)
    inner.append(data)
    return data


def window_of(parts: list, window: dict | None, ref) -> list:
    """The reference's parts inside the retraced window (its edges must be part edges)."""
    if window is None:
        return parts
    out, pos = [], 0
    for part in parts:
        size = len(ref.symbols(part) if ref.chars else part)
        if window["start"] <= pos and pos + size <= window["end"]:
            out.append(part)
        else:
            assert pos + size <= window["start"] or pos >= window["end"], "the window cuts a token"
        pos += size
    return out


def check(explanation: dict, ref, ref_ids: list[int]) -> None:
    pre, token, kind = explanation["pretoken"], explanation["token"], explanation["kind"]
    first, end = pre["tokens"]
    ids = ref_ids[first:end]
    assert token["id"] == ref_ids[explanation["index"]]
    if kind in ("special", "added"):
        assert ids == [token["id"]] and explanation["steps"] == []
        return
    if kind == "byte_fallback":
        assert ref.piece(token["id"]).startswith("<0x") and explanation["steps"] == []
        return
    assert kind == "merge"
    single = ref.single(pre["text"])
    if single is not None:
        assert single == ids, "the pre-token on its own encodes as in the text"
    inner: list = []
    built = tree_symbols(explanation["tree"], ref, inner)
    if ref.chars:
        assert built == ref.piece(token["id"])
    else:
        assert built.hex() == token["bytes"]
    if pre["whole"]:
        assert ids == [token["id"]] and explanation["steps"] == []
        assert ref.symbols(pre["text"]) == ref.symbols(built) if ref.chars else pre["text"].encode() == built
        return
    assert replay(explanation, ref) == window_of(ref.parts(ids), pre["window"], ref)
    marked = [bytes.fromhex(s["merged"]) for s in explanation["steps"] if s["in_token"]]
    assert sorted(marked) == sorted(p.encode() if ref.chars else p for p in inner)


@pytest.mark.parametrize("name", MODELS)
def test_explanations_replay_by_the_reference(name):
    ref = referee(name)
    tok = registry.get(name)
    for text in texts():
        explainer = Explainer(tok, text)
        ref_ids = ref.encode(text)
        assert explainer.result.ids == ref_ids
        seen: set[str] = set()
        for unit in explainer.units:
            if unit.text in seen:
                continue
            seen.add(unit.text)
            for index in range(unit.first, unit.first + len(unit.ids)):
                check(explainer.explain(index).to_dict(), ref, ref_ids)
