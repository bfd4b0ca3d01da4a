"""A merge retraced step by step: every merge with the candidate pairs it won against, and the merge tree of a token.

:func:`retrace` runs the merge loop every engine shares (:func:`app.engines.merging.merge`, with ``steps`` and
``candidates``) on the symbols of one pre-token, and turns its records into :class:`Step` s and :class:`Tree` s:
each part is followed from its symbols, so the tree of every final part is known, and the steps that built a
given part are marked. :func:`split_tree` builds the tree of a token that was taken whole (no merge ran).

Symbols are whatever the engine merges (bytes, characters, token ids); ``data`` gives the bytes each stands for,
``rank`` the model's own rank of a merge as a whole number. This module does not know tokenizers or pre-tokenizers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.engines.merging import NO_RANK, Ranking, merge
from app.engines.result import escape_bytes


@dataclass(frozen=True, slots=True)
class Tree:
    """A part and how it was made: a leaf (a symbol, ``rank`` None) or the merge of two parts with its rank."""

    data: bytes
    rank: int | None = None
    children: tuple[Tree, ...] = ()
    step: int = -1  # the index of the step that made it (-1: a leaf, or a merge no traced step made)

    def to_dict(self) -> dict:
        return {"bytes": self.data.hex(), "rank": self.rank, "children": [c.to_dict() for c in self.children]}

    @property
    def text(self) -> str:
        return shown(self.data)

    def steps(self) -> set[int]:
        """The indexes of the traced steps that built this part."""
        found = {self.step} if self.step >= 0 else set()
        for child in self.children:
            found |= child.steps()
        return found

    def lines(self, indent: str = "") -> list[str]:
        """The tree as indented text lines, one node a line (the CLI's ``--tree``)."""
        head = f"{indent}{self.text}" + (f"  (rank {self.rank})" if self.rank is not None else "")
        return [head, *(line for child in self.children for line in child.lines(indent + "  "))]


@dataclass(frozen=True, slots=True)
class Candidate:
    left: bytes
    right: bytes
    rank: int
    index: int = -1  # position of the left part among the parts at that moment

    def to_dict(self) -> dict:
        return {"left": self.left.hex(), "right": self.right.hex(), "rank": self.rank}


@dataclass(slots=True)
class Step:
    """One merge: the pair, the merged part, its rank, whether it built the explained token, and the pairs that
    could have merged at that moment (the winner among them has the lowest rank, leftmost on ties)."""

    left: bytes
    right: bytes
    rank: int
    index: int  # position of the left part among the parts at that moment
    candidates: list[Candidate] = field(default_factory=list)
    in_token: bool = False

    @property
    def merged(self) -> bytes:
        return self.left + self.right

    def to_dict(self) -> dict:
        return {
            "left": self.left.hex(),
            "right": self.right.hex(),
            "merged": self.merged.hex(),
            "rank": self.rank,
            "in_token": self.in_token,
            "candidates": [c.to_dict() for c in self.candidates],
        }


@dataclass(slots=True)
class Retrace:
    """The merge of some symbols: its steps, the final parts, and the tree of each final part."""

    steps: list[Step]
    parts: list[Any]
    trees: list[Tree]


def shown(data: bytes) -> str:
    r"""Bytes as a person reads them in a tree or a step: the text where they are UTF-8 (spaces, tabs and line
    breaks made visible), else ``\xNN`` escapes.

    >>> shown(b" a\n"), shown("あ".encode()[:1])
    ('␣a↵', '\\xe3')
    """
    return escape_bytes(data).translate(_VISIBLE)


_VISIBLE = str.maketrans({" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"})


def retrace(
    symbols: Sequence[Any], ranking: Ranking, data: Callable[[Any], bytes], rank: Callable[[Any], int]
) -> Retrace:
    """Merge ``symbols`` as ``ranking`` says, recording every step, its candidates and the tree of every part."""
    records: list[tuple] = []
    candidates: list[list[tuple]] = []
    parts = merge(list(symbols), ranking.get, key=ranking.key, join=ranking.join, steps=records, candidates=candidates)
    trees = [Tree(data(s)) for s in symbols]
    steps: list[Step] = []
    for k, ((raw, i, left, right), present) in enumerate(zip(records, candidates)):
        step = Step(
            data(left), data(right), rank(raw), i, [Candidate(data(a), data(b), rank(r), j) for r, j, a, b in present]
        )
        steps.append(step)
        trees[i] = Tree(trees[i].data + trees[i + 1].data, step.rank, (trees[i], trees[i + 1]), k)
        del trees[i + 1]
    return Retrace(steps, parts, trees)


def mark(steps: list[Step], tree: Tree) -> None:
    """Mark the steps that built ``tree`` as ``in_token``."""
    built = tree.steps()
    for k, step in enumerate(steps):
        step.in_token = k in built


def split_tree(data: bytes, rank_of: Callable[[bytes, bytes], int | None], limit: int = 256) -> Tree:
    """The tree of a token taken whole (no merge ran), from its own pieces: at each node the cut into two parts
    that merge (``rank_of(left, right)`` is that merge's rank, ``None`` when they do not) whose parts are oldest
    (the later-made of the two has the lowest rank); a part with no such cut is a leaf.

    >>> ranks = {b"ab": 256, b"bc": 257, b"abc": 300}
    >>> tree = split_tree(b"abc", lambda a, b: ranks.get(a + b) if all(len(p) == 1 or p in ranks for p in (a, b)) else None)
    >>> [child.data for child in tree.children], tree.rank
    ([b'ab', b'c'], 300)
    """
    made_at: dict[bytes, int] = {}

    def age(part: bytes) -> int:  # the lowest rank of a merge that makes ``part`` (a single symbol: -1)
        if len(part) == 1:
            return -1
        found = made_at.get(part)
        if found is None:
            ranks = [r for cut in range(1, len(part)) if (r := rank_of(part[:cut], part[cut:])) is not None]
            found = made_at[part] = min(ranks, default=NO_RANK)
        return found

    def build(part: bytes) -> Tree:
        if len(part) < 2 or len(part) > limit:
            return Tree(part)
        cuts = [
            (max(age(part[:c]), age(part[c:])), c, r)
            for c in range(1, len(part))
            if (r := rank_of(part[:c], part[c:])) is not None
        ]
        if not cuts:
            return Tree(part)
        _, cut, r = min(cuts)
        return Tree(part, r, (build(part[:cut]), build(part[cut:])))

    return build(data)
