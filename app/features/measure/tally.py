"""Partial tables: what one part of the corpus adds up to, and how parts merge (sums and frequency tables, never
averages, so the figures are the same however the parts were spread over workers).

- :class:`IdCounts` — how often each token id occurred: sorted ids and their counts, with ids added since kept
  as arrays until there are enough to fold in (a dense count when they are many, a sort when few);
- :class:`Tally` — the integer sums of one group (documents, bytes, characters, words) and per tokenizer (tokens,
  continued words, id counts), plus every document's tokens per tokenizer in corpus order (the bootstrap
  resamples documents);
- :func:`measure_part` — reads one part and tallies it (what a worker runs); :func:`merge` adds tallies up.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.engines.errors import TokenplayError

from .encoders import Encoder
from .sources import Part, Problems, ReadOptions, read_part
from .words import WordCounter

#: Ids kept unfolded per table before they are counted into it.
PENDING_IDS = 1 << 20


class IdCounts:
    """How often each id below ``n_vocab`` occurred.

    >>> c = IdCounts(10); c.add(np.array([3, 1, 3], np.uint32)); c.add(np.array([9], np.uint32))
    >>> ids, counts = c.arrays(); ids.tolist(), counts.tolist()
    ([1, 3, 9], [1, 2, 1])
    """

    __slots__ = ("n_vocab", "ids", "counts", "_pending", "_pending_n")

    def __init__(self, n_vocab: int):
        self.n_vocab = n_vocab
        self.ids = np.empty(0, np.uint32)
        self.counts = np.empty(0, np.int64)
        self._pending: list[np.ndarray] = []
        self._pending_n = 0

    def add(self, ids: np.ndarray) -> None:
        if len(ids):
            self._pending.append(ids)
            self._pending_n += len(ids)
            if self._pending_n >= PENDING_IDS:
                self.fold()

    def fold(self) -> None:
        """Count the pending ids into the table."""
        if not self._pending:
            return
        pending = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending, self._pending_n = [], 0
        if len(pending) * 8 >= self.n_vocab:  # many: one pass over a dense table
            dense = np.bincount(pending, minlength=self.n_vocab)
            dense[self.ids] += self.counts
            ids = np.flatnonzero(dense)
            self.ids, self.counts = ids.astype(np.uint32), dense[ids].astype(np.int64)
        else:
            ids, counts = np.unique(pending, return_counts=True)
            self._union(ids.astype(np.uint32), counts.astype(np.int64))

    def _union(self, ids: np.ndarray, counts: np.ndarray) -> None:
        if not len(self.ids):
            self.ids, self.counts = ids, counts
            return
        if len(self.ids) + len(ids) >= self.n_vocab // 4:
            dense = np.zeros(self.n_vocab, np.int64)
            dense[self.ids] += self.counts
            dense[ids] += counts
            keep = np.flatnonzero(dense)
            self.ids, self.counts = keep.astype(np.uint32), dense[keep]
            return
        all_ids = np.concatenate([self.ids, ids])
        all_counts = np.concatenate([self.counts, counts])
        order = np.argsort(all_ids, kind="stable")
        all_ids, all_counts = all_ids[order], all_counts[order]
        starts = np.flatnonzero(np.concatenate([[True], all_ids[1:] != all_ids[:-1]]))
        self.ids, self.counts = all_ids[starts], np.add.reduceat(all_counts, starts)

    def merge(self, other: IdCounts) -> None:
        other.fold()
        self.fold()
        if len(other.ids):
            self._union(other.ids, other.counts)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        self.fold()
        return self.ids, self.counts

    def total(self) -> int:
        self.fold()
        return int(self.counts.sum())

    def __getstate__(self):
        self.fold()
        return (self.n_vocab, self.ids, self.counts)

    def __setstate__(self, state):
        self.n_vocab, self.ids, self.counts = state
        self._pending, self._pending_n = [], 0


@dataclass
class GroupSums:
    """What a group adds up to, whatever the tokenizer."""

    documents: int = 0
    bytes: int = 0
    chars: int = 0
    words: int = 0
    invalid_utf8: int = 0  # documents with invalid UTF-8 (replaced by U+FFFD)

    def merge(self, other: GroupSums) -> None:
        self.documents += other.documents
        self.bytes += other.bytes
        self.chars += other.chars
        self.words += other.words
        self.invalid_utf8 += other.invalid_utf8


@dataclass
class TokenSums:
    """What a group adds up to through one tokenizer."""

    n_vocab: int
    tokens: int = 0
    continued: int = 0  # word occurrences cut into 2+ tokens when the word is encoded alone
    fallback: int = 0  # byte-fallback pieces
    unknown: int = 0  # unknown tokens
    ids: IdCounts = None  # type: ignore[assignment]

    def __post_init__(self):
        if self.ids is None:
            self.ids = IdCounts(self.n_vocab)

    def merge(self, other: TokenSums) -> None:
        self.tokens += other.tokens
        self.continued += other.continued
        self.fallback += other.fallback
        self.unknown += other.unknown
        self.ids.merge(other.ids)


@dataclass
class Tally:
    """The sums of one part (or, merged, of many) per group, and its documents' tokens in corpus order.

    ``documents[part index] = (group of each document, {tokenizer: tokens of each document})``: the per-document
    counts the bootstrap resamples, kept by part so that merged tallies list documents in corpus order.
    """

    tokenizers: tuple[str, ...]
    n_vocab: dict[str, int]
    kinds: dict[str, tuple[bool, bool]]  # tokenizer -> (has an unknown token, has byte-fallback pieces)
    groups: dict[str, GroupSums] = field(default_factory=dict)
    tokens: dict[str, dict[str, TokenSums]] = field(default_factory=dict)  # tokenizer -> group -> sums
    documents: dict[int, tuple[list[str], np.ndarray, dict[str, np.ndarray]]] = field(default_factory=dict)
    problems: Problems = field(default_factory=Problems)
    parts: int = 0
    weight: int = 0  # input bytes of the parts tallied

    def __post_init__(self):
        for name in self.tokenizers:
            self.tokens.setdefault(name, {})

    def group(self, key: str) -> GroupSums:
        sums = self.groups.get(key)
        if sums is None:
            sums = self.groups[key] = GroupSums()
            for name in self.tokenizers:
                self.tokens[name][key] = TokenSums(self.n_vocab[name])
        return sums

    def merge(self, other: Tally) -> None:
        if other.tokenizers != self.tokenizers or other.n_vocab != self.n_vocab:
            raise ValueError("tallies of different tokenizers cannot be merged")
        for key, sums in other.groups.items():
            self.group(key).merge(sums)
            for name in self.tokenizers:
                self.tokens[name][key].merge(other.tokens[name][key])
        self.documents.update(other.documents)
        self.problems.merge(other.problems)
        self.parts += other.parts
        self.weight += other.weight

    def fold(self) -> None:
        for per_group in self.tokens.values():
            for sums in per_group.values():
                sums.ids.fold()

    def document_arrays(self) -> tuple[list[str], np.ndarray, dict[str, np.ndarray]]:
        """Every document in corpus order: the group keys, each document's group (an index into them), and each
        tokenizer's tokens per document."""
        keys = sorted(self.groups)
        index = {k: i for i, k in enumerate(keys)}
        groups, tokens = [], {name: [] for name in self.tokenizers}
        for part in sorted(self.documents):
            local_keys, local_groups, local_tokens = self.documents[part]
            remap = np.array([index[k] for k in local_keys], dtype=np.int32)
            groups.append(remap[local_groups] if len(local_groups) else np.empty(0, np.int32))
            for name in self.tokenizers:
                tokens[name].append(local_tokens[name])
        group_of = np.concatenate(groups) if groups else np.empty(0, np.int32)
        per_doc = {name: (np.concatenate(t) if t else np.empty(0, np.int64)) for name, t in tokens.items()}
        return keys, group_of, per_doc


def merge(tallies: Iterable[Tally]) -> Tally:
    tallies = iter(tallies)
    total = next(tallies)
    for t in tallies:
        total.merge(t)
    return total


def empty_tally(encoders: Sequence[Encoder]) -> Tally:
    return Tally(tuple(e.name for e in encoders), {e.name: e.n_vocab for e in encoders},
                 {e.name: (e.unk_id is not None, e.fallback_ids is not None) for e in encoders})


#: Characters of documents measured together: each document is encoded on its own, but its group's words, sizes and
#: ids are tallied once per batch (per-document work in Python is what slows down a corpus of short documents).
BATCH_CHARS = 1 << 20


def measure_part(part: Part, encoders: Sequence[Encoder], options: ReadOptions, words: WordCounter | None = None,
                 progress=None) -> Tally:
    """Read and tally one part (``words``: a :class:`WordCounter` to reuse across parts, keeping its cache;
    ``progress(n)``: called after each batch with how many more bytes of text were measured)."""
    tally = empty_tally(encoders)
    batch = _Batch(tally, encoders, words or WordCounter(encoders), part.file.label, progress)
    for doc in read_part(part, options, tally.problems):
        batch.add(doc)
    batch.flush()
    tally.fold()
    for enc in encoders:
        for sums in tally.tokens[enc.name].values():
            ids, counts = sums.ids.arrays()
            if enc.fallback_ids is not None:
                sums.fallback = int(counts[np.isin(ids, enc.fallback_ids)].sum())
            if enc.unk_id is not None:
                sums.unknown = int(counts[ids == enc.unk_id].sum())
    tally.documents[part.index] = batch.documents()
    tally.parts = 1
    tally.weight = part.weight
    return tally


class _Batch:
    """Documents gathered until :data:`BATCH_CHARS`, then tallied by group."""

    def __init__(self, tally: Tally, encoders: Sequence[Encoder], words: WordCounter, label: str, progress):
        self.tally, self.encoders, self.words, self.label, self.progress = tally, list(encoders), words, label, progress
        self.docs: list = []
        self.chars = 0
        self.keys: list[str] = []  # the part's groups, in order of first document
        self.index: dict[str, int] = {}
        self.doc_group = array("i")
        self.doc_tokens = {e.name: array("q") for e in encoders}

    def add(self, doc) -> None:
        self.docs.append(doc)
        self.chars += len(doc.text)
        if self.chars >= BATCH_CHARS:
            self.flush()

    def flush(self) -> None:
        docs, self.docs, self.chars = self.docs, [], 0
        if not docs:
            return
        encoded = []  # per document: the ids of every encoder, or None when one of them cannot encode it
        for doc in docs:
            try:
                encoded.append([enc.ids(doc.text) for enc in self.encoders])
            except TokenplayError as exc:  # a tokenizer that cannot encode this text: left out for every tokenizer
                self.tally.problems.add(self.label, "encode_failed", 0, doc.where or "the file", str(exc)[:200])
                encoded.append(None)
        by_group: dict[str, list[int]] = {}
        for k, (doc, ids) in enumerate(zip(docs, encoded)):
            if ids is None:
                continue
            by_group.setdefault(doc.group, []).append(k)
            g = self.index.get(doc.group)
            if g is None:
                g = self.index[doc.group] = len(self.keys)
                self.keys.append(doc.group)
            self.doc_group.append(g)
            for enc, these in zip(self.encoders, ids):
                self.doc_tokens[enc.name].append(len(these))
        told = 0
        for group, members in by_group.items():
            text = "\n".join(docs[k].text for k in members)  # a newline is no word character: no word spans two
            sums = self.tally.group(group)
            sums.documents += len(members)
            sums.chars += len(text) - (len(members) - 1)
            n_bytes = (len(text) if text.isascii() else len(text.encode("utf-8"))) - (len(members) - 1)
            sums.bytes += n_bytes
            told += n_bytes
            sums.invalid_utf8 += sum(1 for k in members if docs[k].replaced)
            n_words, continued = self.words.count(text)
            sums.words += n_words
            for j, enc in enumerate(self.encoders):
                t = self.tally.tokens[enc.name][group]
                arrays = [encoded[k][j] for k in members]
                t.tokens += sum(map(len, arrays))
                t.continued += continued[j]
                t.ids.add(np.concatenate(arrays) if len(arrays) > 1 else arrays[0])
        if self.progress is not None and told:
            self.progress(told)

    def documents(self):
        return (
            self.keys,
            np.frombuffer(self.doc_group, dtype=np.int32).copy() if len(self.doc_group) else np.empty(0, np.int32),
            {name: (np.frombuffer(a, dtype=np.int64).copy() if len(a) else np.empty(0, np.int64))
             for name, a in self.doc_tokens.items()},
        )
