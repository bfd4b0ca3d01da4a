"""The plain, obviously correct BPE trainer the fast one is held to: recount every pair at every step.

This is the specification. Each step counts all adjacent pairs chunk by chunk into an insertion-ordered dict
(so "first seen" is dict order), picks the most frequent pair (ties: dict order for ``first``, byte strings
left then right for ``lexical``), and merges it in every chunk, left to right. It is slow on purpose and
shares nothing with ``app.engines.bpe.trainer`` except the pre-tokenizer and the record types.
(``bench/bench_bpe.py`` times :func:`reference_step` to compare speeds.)
"""

from __future__ import annotations

from itertools import pairwise

from app.engines.bpe.patterns import pattern_regex, pretokenize
from app.engines.training.steps import MergeStep, TrainResult

Pair = tuple[int, int]


def count_pairs(chunks: list[list[int]]) -> dict[Pair, int]:
    """Every adjacent pair's count, in the order pairs are first met."""
    stats: dict[Pair, int] = {}
    for ids in chunks:
        for pair in pairwise(ids):
            stats[pair] = stats.get(pair, 0) + 1
    return stats


def rank_pairs(stats: dict[Pair, int], vocab: dict[int, bytes], tie_break: str) -> list[Pair]:
    """All pairs, most frequent first; equal counts in tie-break order."""
    if tie_break == "first":
        order = {pair: i for i, pair in enumerate(stats)}
        return sorted(stats, key=lambda p: (-stats[p], order[p]))
    return sorted(stats, key=lambda p: (-stats[p], vocab[p[0]], vocab[p[1]]))


def merge_chunks(chunks: list[list[int]], pair: Pair, new_id: int) -> int:
    """Replace ``pair`` left to right in every chunk (in place); return how many were replaced."""
    replaced = 0
    for c, ids in enumerate(chunks):
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                out.append(new_id)
                replaced += 1
                i += 2
            else:
                out.append(ids[i])
                i += 1
        chunks[c] = out
    return replaced


def reference_step(chunks, vocab, new_id, tie_break="first", top_k=0, max_ties=None) -> MergeStep | None:
    """One full recount-and-merge step on ``chunks`` (changed in place), or ``None`` if no pair occurs twice."""
    stats = count_pairs(chunks)
    if not stats or max(stats.values()) < 2:
        return None
    ranked = rank_pairs(stats, vocab, tie_break)
    pair = ranked[0]
    count = stats[pair]
    ties = [p for p in ranked[1:] if stats[p] == count]
    if max_ties is not None:
        ties = ties[:max_ties]
    top = [(p, stats[p]) for p in ranked[:top_k]]
    replaced = merge_chunks(chunks, pair, new_id)
    vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
    return MergeStep(
        step=new_id - 255,
        pair=pair,
        left=vocab[pair[0]],
        right=vocab[pair[1]],
        new_id=new_id,
        count=count,
        replaced=replaced,
        ties=ties,
        corpus_tokens=sum(len(c) for c in chunks),
        tie_break=tie_break,
        forced=False,
        top_pairs=top,
    )


def reference_train(
    text: str,
    vocab_size: int,
    pattern: str = "gpt4",
    special_tokens=(),
    tie_break: str = "first",
    top_k: int = 0,
    max_ties: int | None = None,
) -> TrainResult:
    chunks = [list(c.encode("utf-8")) for c in pretokenize(text, pattern_regex(pattern), special_tokens)]
    vocab = {i: bytes([i]) for i in range(256)}
    steps = []
    initial = sum(len(c) for c in chunks)
    stop = "vocab_size reached"
    for new_id in range(256, vocab_size):
        step = reference_step(chunks, vocab, new_id, tie_break, top_k, max_ties)
        if step is None:
            stop = "no pair occurs twice"
            break
        steps.append(step)
    merges = [s.pair for s in steps]
    return TrainResult(merges=merges, vocab=dict(vocab), steps=steps, stop_reason=stop, initial_tokens=initial)
