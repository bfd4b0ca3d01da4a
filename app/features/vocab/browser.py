"""The vocabulary browser's two answers: a page of tokens, and one token with its place in the merge tree.

:func:`page` is ``{"total", "tokens"}``: the tokens that match a query, ordered by id, each ``{"id", "text",
"bytes_hex", "kind", "rank"}`` (``script`` for a word, ``piece`` where the vocabulary writes it otherwise: ``Ġthe``,
``▁the``, ``##ing``, ``ing</w>``, ``<0x41>``). :func:`token` adds, for a merge-based tokenizer, ``parents`` (the
two tokens whose merge made it) and ``children`` (the tokens one more merge makes from it), each as such a record,
so a page can walk the tree. ``rank`` is None for a tokenizer that has no merges, and for tokens outside them
(special tokens, added tokens).
"""

from __future__ import annotations

from app.engines.base import Tokenizer
from app.engines.errors import TokenplayError

from .merges import MergeModel, NotMergeBasedError, merge_model
from .store import JSONStore
from .tokens import browse, vocabulary

#: The most children one token's record lists (a byte can start thousands of tokens); ``children_total`` says all.
MAX_CHILDREN = 200


class TokenNotFoundError(TokenplayError, LookupError):
    """An id the tokenizer has no token for."""


def _model(tok: Tokenizer) -> MergeModel | None:
    try:
        return merge_model(tok)
    except NotMergeBasedError:
        return None


def rank_index(tok: Tokenizer) -> dict:
    """``{"merge_based", "base", "ranks", "rank"}``: whether ``tok`` has merges, its base tokens and ranks, and each
    id's rank (-1: none), as a document a store keeps (the browser reads it instead of building the merges)."""
    model = _model(tok)
    if model is None:
        return {"merge_based": False, "base": None, "ranks": None, "rank": []}
    rank = [-1] * tok.id_bound
    for r, tid in enumerate(model.ids):
        if 0 <= tid < len(rank) and rank[tid] < 0:
            rank[tid] = r
    return {"merge_based": True, "base": model.n_base, "ranks": model.size, "rank": rank}


def tree_index(tok: Tokenizer) -> list[list[int]]:
    """Every merged token's parents as ``[id, left, right]`` (``[id]``: none below its rank), a document a store
    keeps: a tiktoken encoding's are found by a BPE per token, seconds for 200,000 tokens."""
    model = _model(tok)
    if model is None:
        return []
    return [[tid, *found] if found is not None else [tid] for tid, found in model.all_parents().items()]


class VocabIndex:
    """One tokenizer's browser: its vocabulary, and its ranks and merge tree read from ``store`` (computed once and
    kept there; without a store, computed in this process)."""

    def __init__(self, tok: Tokenizer, store: JSONStore | None = None):
        self.tok = tok
        self.vocab = vocabulary(tok)
        self.store = store
        self._ranks: dict | None = None
        self._parents: dict[int, tuple[int, int] | None] | None = None
        self._children: dict[int, list[int]] | None = None

    def _doc(self, kind: str, compute):
        if self.store is None:
            return compute(self.tok)
        return self.store.get_or_compute(f"{kind}-{self.vocab.fingerprint}", lambda: compute(self.tok))

    @property
    def ranks(self) -> dict:
        if self._ranks is None:
            self._ranks = self._doc("ranks", rank_index)
        return self._ranks

    def rank(self, token_id: int) -> int | None:
        table = self.ranks["rank"]
        r = table[token_id] if 0 <= token_id < len(table) else -1
        return None if r < 0 else r

    def record(self, token_id: int) -> dict:
        """One token as the browser lists it."""
        return {**self.vocab.entry(token_id), "rank": self.rank(token_id)}

    def _tree(self) -> None:
        if self._parents is None:
            rows = self._doc("parents", tree_index)
            parents = {row[0]: (row[1], row[2]) if len(row) == 3 else None for row in rows}
            children: dict[int, list[int]] = {}
            for tid in sorted(parents, key=lambda t: self.rank(t) or 0):
                for parent in dict.fromkeys(parents[tid] or ()):
                    children.setdefault(parent, []).append(tid)
            self._parents, self._children = parents, children

    def page(self, *, offset: int = 0, limit: int = 100, q: str = "", kind: str = "") -> dict:
        """``{"total", "tokens"}``: the page ``offset`` .. ``offset + limit`` of the tokens matching ``q`` and
        ``kind`` (see :func:`.tokens.browse`), by id."""
        total, ids = browse(self.vocab, offset=offset, limit=limit, q=q, kind=kind)
        return {"total": total, "tokens": [self.record(tid) for tid in ids]}

    def token(self, token_id: int) -> dict:
        """One token with ``rank``, ``parents`` and ``children`` (both None for a tokenizer without merges)."""
        if token_id not in self.vocab.position:
            raise TokenNotFoundError(
                f"{self.tok.name} has no token with id {token_id}; its ids are 0 to {self.tok.id_bound - 1:,}"
            )
        out = self.record(token_id)
        out["merge_based"] = self.ranks["merge_based"]
        if not out["merge_based"]:
            out["parents"] = out["children"] = None
            return out
        self._tree()
        found = self._parents.get(token_id)
        out["parents"] = None if found is None else [self.record(p) for p in found]
        children = self._children.get(token_id, [])
        out["children"] = [self.record(c) for c in children[:MAX_CHILDREN]]
        out["children_total"] = len(children)
        return out


def page(tok: Tokenizer, **query) -> dict:
    """:meth:`VocabIndex.page` of ``tok`` without a store."""
    return VocabIndex(tok).page(**query)


def token(tok: Tokenizer, token_id: int) -> dict:
    """:meth:`VocabIndex.token` of ``tok`` without a store."""
    return VocabIndex(tok).token(token_id)
