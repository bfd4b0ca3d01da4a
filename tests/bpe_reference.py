"""The plain, obviously correct BPE trainer the fast one is held to: recount every pair at every step.

This is the specification. Each step counts all adjacent pairs chunk by chunk into an insertion-ordered dict
(so "first seen" is dict order), picks the most frequent pair (ties: dict order for ``first``, byte strings
left then right for ``lexical``), and merges it in every chunk, left to right. It is slow on purpose and
shares nothing with ``app.engines.bpe.trainer`` except the pre-tokenizer and the record types.
"""

from __future__ import annotations

from app.engines.bpe.patterns import pattern_regex, pretokenize
from app.engines.steps import MergeStep, TrainResult


def reference_train(
    text: str,
    vocab_size: int,
    pattern: str = "gpt4",
    special_tokens=(),
    tie_break: str = "first",
    top_k: int = 0,
) -> TrainResult:
    chunks = [list(c.encode("utf-8")) for c in pretokenize(text, pattern_regex(pattern), special_tokens)]
    vocab = {i: bytes([i]) for i in range(256)}
    merges, steps = [], []
    initial = sum(len(c) for c in chunks)
    stop = "vocab_size reached"
    for new_id in range(256, vocab_size):
        stats: dict[tuple[int, int], int] = {}
        for ids in chunks:
            for pair in zip(ids, ids[1:]):
                stats[pair] = stats.get(pair, 0) + 1
        if not stats or max(stats.values()) < 2:
            stop = "no pair occurs twice"
            break
        order = {pair: i for i, pair in enumerate(stats)}
        if tie_break == "first":
            ranked = sorted(stats, key=lambda p: (-stats[p], order[p]))
        else:
            ranked = sorted(stats, key=lambda p: (-stats[p], vocab[p[0]], vocab[p[1]]))
        pair = ranked[0]
        count = stats[pair]
        ties = [p for p in ranked[1:] if stats[p] == count]
        top = [(p, stats[p]) for p in ranked[:top_k]]
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
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
        merges.append(pair)
        steps.append(
            MergeStep(
                step=len(merges),
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
        )
    return TrainResult(merges=merges, vocab=dict(vocab), steps=steps, stop_reason=stop, initial_tokens=initial)
