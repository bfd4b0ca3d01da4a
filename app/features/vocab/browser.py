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
from .tokens import Vocabulary, browse, vocabulary

#: The most children one token's record lists (a byte can start thousands of tokens); ``children_total`` says all.
MAX_CHILDREN = 200


class TokenNotFoundError(TokenplayError, LookupError):
    """An id the tokenizer has no token for."""


def _model(tok: Tokenizer) -> MergeModel | None:
    try:
        return merge_model(tok)
    except NotMergeBasedError:
        return None


def record(vocab: Vocabulary, model: MergeModel | None, token_id: int) -> dict:
    """One token as the browser lists it."""
    out = vocab.entry(token_id)
    out["rank"] = None if model is None else model.rank_of_id(token_id)
    return out


def page(tok: Tokenizer, *, offset: int = 0, limit: int = 100, q: str = "", kind: str = "") -> dict:
    """``{"total", "tokens"}``: the page ``offset`` .. ``offset + limit`` of the tokens matching ``q`` and ``kind``
    (see :func:`.tokens.browse`), by id."""
    vocab = vocabulary(tok)
    total, ids = browse(vocab, offset=offset, limit=limit, q=q, kind=kind)
    model = _model(tok)
    return {"total": total, "tokens": [record(vocab, model, tid) for tid in ids]}


def token(tok: Tokenizer, token_id: int) -> dict:
    """One token with ``rank``, ``parents`` and ``children`` (both None for a tokenizer without merges)."""
    vocab = vocabulary(tok)
    if token_id not in vocab.position:
        raise TokenNotFoundError(
            f"{tok.name} has no token with id {token_id}; its ids are 0 to {tok.id_bound - 1:,}"
        )
    model = _model(tok)
    out = record(vocab, model, token_id)
    out["merge_based"] = model is not None
    if model is None:
        out["parents"] = out["children"] = None
        return out
    found = model.parents(token_id)
    out["parents"] = None if found is None else [record(vocab, model, p) for p in found]
    children = model.children(token_id)
    out["children"] = [record(vocab, model, c) for c in children[:MAX_CHILDREN]]
    out["children_total"] = len(children)
    return out


def prepare_tree(tok: Tokenizer, store: JSONStore) -> bool:
    """Find every merged token's parents once and keep them in ``store`` (a tiktoken encoding's are found by a BPE
    per token, seconds for 200,000 tokens): later :func:`token` answers, children included, are look-ups. False for
    a tokenizer without merges."""
    model = _model(tok)
    if model is None:
        return False

    def compute() -> list[list[int]]:
        return [[tid, *found] if found is not None else [tid] for tid, found in model.all_parents().items()]

    rows = store.get_or_compute(f"parents-{vocabulary(tok).fingerprint}", compute)
    model.load_parents({row[0]: (row[1], row[2]) if len(row) == 3 else None for row in rows})
    return True
