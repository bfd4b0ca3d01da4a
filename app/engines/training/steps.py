"""Training steps as data: the records both trainers emit and the UI, CLI, ``save()`` and tests read.

A trainer never prints. It returns a :class:`TrainResult` whose ``steps`` list holds one :class:`MergeStep`
per merge, in order. Token surfaces are kept as bytes (UTF-8 for character-level and SentencePiece trainers, raw
bytes for byte-level ones) so that one format serves every algorithm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from ..result import escape_bytes

TIE_BREAKS = ("first", "lexical")


@dataclass(slots=True)
class MergeStep:
    step: int  # 1-based merge number
    pair: tuple[int, int]  # (left id, right id)
    left: bytes  # the left token's surface
    right: bytes  # the right token's surface
    new_id: int
    count: int  # occurrences of the pair (overlaps counted) when it won
    replaced: int  # occurrences actually merged (fewer than count for runs like "aaa")
    ties: list[tuple[int, int]] = field(default_factory=list)  # other pairs that had the same count
    corpus_tokens: int = 0  # corpus length in tokens after this merge
    tie_break: str = "first"
    forced: bool = False  # chosen by the user (lab manual mode) instead of the automatic winner
    top_pairs: list[tuple[tuple[int, int], int]] = field(default_factory=list)  # most frequent pairs before it

    @property
    def token(self) -> bytes:
        return self.left + self.right

    def to_dict(self) -> dict:
        """The record as JSON-ready data (pairs in ``ties`` stay tuples: JSON arrays all the same)."""
        return {
            "step": self.step,
            "pair": [self.pair[0], self.pair[1]],
            "left": escape_bytes(self.left),
            "right": escape_bytes(self.right),
            "token": escape_bytes(self.token),
            "new_id": self.new_id,
            "count": self.count,
            "replaced": self.replaced,
            "ties": list(self.ties),  # copied, not converted: hundreds per late step on a large corpus
            "corpus_tokens": self.corpus_tokens,
            "tie_break": self.tie_break,
            "forced": self.forced,
            "top_pairs": [[a, b, c] for (a, b), c in self.top_pairs],
        }


@dataclass(slots=True)
class TrainResult:
    merges: list[tuple[int, int]]  # in rank order; merge i creates id base_size + i
    vocab: dict[int, bytes]  # derived from merges; never edited by hand
    steps: list[MergeStep]
    stop_reason: str  # "vocab_size reached", "no pair occurs twice", ...
    initial_tokens: int  # corpus length in tokens before any merge

    def to_dict(self) -> dict:
        return {
            "merges": [list(m) for m in self.merges],
            "stop_reason": self.stop_reason,
            "initial_tokens": self.initial_tokens,
            "steps": [s.to_dict() for s in self.steps],
        }

    def to_json(self) -> bytes:
        """The trace file: :meth:`to_dict` as UTF-8 JSON (non-ASCII text as itself, no indentation)."""
        return orjson.dumps(self.to_dict())
