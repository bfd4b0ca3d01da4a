"""Two vocabularies side by side, compared by their tokens' bytes (special tokens apart): what they share, what each
has alone, their Jaccard index, and the same per script (a word token's script, else its kind: digits, punctuation,
space, byte...), with examples.

Tokens are the same when their bytes are: o200k_base's `` the`` and Llama 3's ``Ġthe`` are one token here. A
vocabulary's duplicates (two ids, one string) count once.
"""

from __future__ import annotations

from app.engines.base import Tokenizer

from .tokens import Vocabulary, kind_of, vocabulary

EXAMPLES = 12


def _by_bytes(vocab: Vocabulary) -> dict[bytes, int]:
    """Each string of the vocabulary (special tokens apart) -> its first id."""
    out: dict[bytes, int] = {}
    for tid, data in zip(vocab.ids, vocab.data):
        if tid not in vocab.special:
            out.setdefault(data, tid)
    return out


def group_of(data: bytes) -> str:
    """Where a token is listed per script: its letters' script for a word, else its kind.

    >>> group_of(b" the"), group_of("の".encode()), group_of(b"2024"), group_of(b"\\xe3")
    ('Latin', 'Hiragana', 'digits', 'byte')
    """
    kind, script = kind_of(data)
    return script or kind


def _spread(items: list, n: int = EXAMPLES) -> list:
    """Up to ``n`` items evenly spread over ``items`` (the first, the last and between)."""
    if len(items) <= n:
        return list(items)
    step = (len(items) - 1) / (n - 1)
    return [items[round(k * step)] for k in range(n)]


def _example(data: bytes, ids: dict[str, int]) -> dict:
    from app.engines.result import escape_bytes

    return {"text": escape_bytes(data), "bytes_hex": data.hex(), **ids}


def overlap(a: Tokenizer, b: Tokenizer) -> dict:
    """``{"a", "b", "shared", "only_a", "only_b", "jaccard", "examples", "scripts"}`` for two tokenizers."""
    in_a, in_b = _by_bytes(vocabulary(a)), _by_bytes(vocabulary(b))
    shared = [d for d in in_a if d in in_b]
    only_a = [d for d in in_a if d not in in_b]
    only_b = [d for d in in_b if d not in in_a]
    union = len(in_a) + len(only_b)
    groups: dict[str, dict] = {}
    for side, items in (("shared", shared), ("only_a", only_a), ("only_b", only_b)):
        for data in items:
            g = groups.setdefault(group_of(data), {"shared": [], "only_a": [], "only_b": []})
            g[side].append(data)

    def ids_of(data: bytes) -> dict[str, int]:
        out = {}
        if data in in_a:
            out["id_a"] = in_a[data]
        if data in in_b:
            out["id_b"] = in_b[data]
        return out

    def examples(items: list[bytes], n: int = EXAMPLES) -> list[dict]:
        return [_example(d, ids_of(d)) for d in _spread(items, n)]

    scripts = [
        {
            "script": name,
            "shared": len(g["shared"]),
            "only_a": len(g["only_a"]),
            "only_b": len(g["only_b"]),
            "examples": {side: examples(g[side], 6) for side in ("shared", "only_a", "only_b")},
        }
        for name, g in sorted(groups.items(), key=lambda kv: -sum(map(len, kv[1].values())))
    ]
    return {
        "a": a.name,
        "b": b.name,
        "shared": len(shared),
        "only_a": len(only_a),
        "only_b": len(only_b),
        "jaccard": round(len(shared) / union, 6) if union else 0.0,
        "examples": {"shared": examples(shared), "only_a": examples(only_a), "only_b": examples(only_b)},
        "scripts": scripts,
    }
