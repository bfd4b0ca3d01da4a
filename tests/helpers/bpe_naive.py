"""A naive byte-level BPE written from the lab's definitions, the referee of its superword runs, pair tables and
curves: every pair is recounted at every step over every occurrence of every pre-token (no distinct words, no
incremental counts), and text is cut with ``regex.findall`` of patterns that match every character.

:func:`naive_superwords` is issue 34's definition of superword BPE, literally (a plain run is one whose transition
is its merge count); :func:`naive_words` the pre-tokens after some merges; :func:`naive_pairs` the pair table
there, in the trainer's order.
"""

from __future__ import annotations

import regex

Pair = tuple[int, int]


def apply_merge(words: list[list[int]], pair: Pair, new: int) -> list[list[int]]:
    out = []
    for w in words:
        merged, i = [], 0
        while i < len(w):
            if i + 1 < len(w) and (w[i], w[i + 1]) == pair:
                merged.append(new)
                i += 2
            else:
                merged.append(w[i])
                i += 1
        out.append(merged)
    return out


def pick(words: list[list[int]], vocab: dict[int, bytes], tie_break: str, min_count: int) -> Pair | None:
    stats: dict[Pair, int] = {}  # first seen first
    for w in words:
        for pair in zip(w, w[1:]):
            stats[pair] = stats.get(pair, 0) + 1
    if not stats or max(stats.values()) < min_count:
        return None
    best = max(stats.values())
    tied = [p for p, c in stats.items() if c == best]
    return tied[0] if tie_break == "first" else min(tied, key=lambda p: (vocab[p[0]], vocab[p[1]]))


def naive_superwords(text: str, n_merges: int, t: int, one: str, two: str, tie_break: str = "first",
                     min_count: int = 2) -> list[Pair]:
    """The definition, literally: the merges of a byte-level superword run."""
    vocab = {i: bytes([i]) for i in range(256)}
    merges: list[Pair] = []
    words = [list(piece.encode()) for piece in regex.findall(one, text)]
    stage_end = min(t, n_merges)
    while len(merges) < n_merges:
        if len(merges) == stage_end:
            if stage_end == n_merges:
                break
            words = [list(piece.encode()) for piece in regex.findall(two, text)]
            for r, pair in enumerate(merges):  # merges 1..t in order
                words = apply_merge(words, pair, 256 + r)
            stage_end = n_merges
        pair = pick(words, vocab, tie_break, min_count)
        if pair is None:
            break
        new = 256 + len(merges)
        vocab[new] = vocab[pair[0]] + vocab[pair[1]]
        words = apply_merge(words, pair, new)
        merges.append(pair)
    return merges


def naive_encode(text: str, merges: list[Pair], pattern: str) -> list[int]:
    words = [list(piece.encode()) for piece in regex.findall(pattern, text)]
    for r, pair in enumerate(merges):
        words = apply_merge(words, pair, 256 + r)
    return [i for w in words for i in w]


def naive_words(text: str, merges: list[Pair], k: int, one: str, two: str | None = None, t: int | None = None) -> list[list[int]]:
    """Every pre-token (each occurrence) after the first ``k`` of ``merges``: cut by ``one``, or by ``two`` past a
    superword run's transition ``t``."""
    pattern = two if t is not None and k > t else one
    words = [list(piece.encode()) for piece in regex.findall(pattern, text)]
    for r, pair in enumerate(merges[:k]):
        words = apply_merge(words, pair, 256 + r)
    return words


def naive_pairs(words: list[list[int]], vocab: dict[int, bytes], tie_break: str = "first") -> list[tuple[Pair, int]]:
    """Every adjacent pair of ``words`` with its count, the highest count first, equal counts by the tie rule."""
    stats: dict[Pair, int] = {}
    for w in words:
        for pair in zip(w, w[1:]):
            stats[pair] = stats.get(pair, 0) + 1
    order = {pair: i for i, pair in enumerate(stats)}
    if tie_break == "first":
        return sorted(stats.items(), key=lambda item: (-item[1], order[item[0]]))
    return sorted(stats.items(), key=lambda item: (-item[1], vocab[item[0][0]], vocab[item[0][1]], order[item[0]]))


def vocab_of(merges: list[Pair]) -> dict[int, bytes]:
    vocab = {i: bytes([i]) for i in range(256)}
    for r, (a, b) in enumerate(merges):
        vocab[256 + r] = vocab[a] + vocab[b]
    return vocab
