"""How a merge-based vocabulary was learned: every token's rank, its parents and children, and the tokenizer cut down
to its first k ranks.

A :class:`MergeModel` is the learned order of one BPE vocabulary, whatever engine runs it:

- **ranks**: the base tokens first (those no merge makes: the 256 bytes of a byte-level BPE, the characters of a
  SentencePiece-style one, its byte pieces and special pieces), then each token a merge makes, in the order the
  merges were learned. For a tiktoken encoding the rank is tiktoken's own (``mergeable_ranks``), so "size k" is
  exactly ``tiktoken.Encoding`` with the ranks below k; for a ``tokenizer.json`` it is the base tokens by id, then
  the file's merges in order; for a SentencePiece ``.model`` the pieces by score, best first.
- **parents**: the two tokens whose merge made a token. A ``tokenizer.json`` lists them; a tiktoken encoding or a
  ``.model`` does not, so they are found as tiktoken's educational module finds them: merge the token's own bytes
  (or characters) with only the ranks below its own; the last merge joins its parents. **children**: the tokens
  one more merge makes from it, with either side.
- **the ladder**: :meth:`MergeModel.ladder` counts the tokens of a text with only the first k ranks, for several k,
  each pre-token merged once per k (a text's pre-tokens repeat a lot).

:func:`merge_model` builds the model of a tokenizer (a model served by a reference library is read from our engine
on the same data), or answers None for one that is not merge-based (WordPiece, Unigram, WordLevel).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import regex

from app.engines.base import Tokenizer
from app.engines.bpe.json_model import ByteLevelJSONTokenizer
from app.engines.bpe.model import RankTokenizer
from app.engines.bpe.word_end_model import WordEndBPETokenizer
from app.engines.errors import TokenplayError
from app.engines.huggingface.library import HuggingFaceTokenizer
from app.engines.merging import merge, pair
from app.engines.openai.encodings import ENCODINGS, TiktokenTokenizer, mergeable_ranks
from app.engines.sentencepiece.json_model import SentencePieceJSONTokenizer
from app.engines.sentencepiece.model import SentencePieceTokenizer
from app.engines.sentencepiece.proto import NORMAL
from app.engines.sentencepiece.unigram import UnigramTokenizer

from .store import PerTokenizer

#: The most sizes one ladder may ask for.
MAX_SIZES = 16


class NotMergeBasedError(TokenplayError, LookupError):
    """A tokenizer that has no merges (WordPiece, Unigram, WordLevel): no ranks, parents or ladder."""


class LadderSizeError(TokenplayError, ValueError):
    """A ladder size out of range (the message gives the range)."""


def _join_bytes(a: bytes, b: bytes) -> bytes:
    return a + b


@dataclass
class MergeModel:
    """The learned order of one BPE vocabulary (see the module docstring)."""

    symbols: str  # "bytes", "chars" or "ids" (a lab run's merges join ids): what a token is merged from
    rule: str  # "join" (a pair ranks as its joined token: tiktoken, SentencePiece) or "pairs" (a merges list)
    keys: list  # by rank: each token's key (its bytes, or its string)
    ids: list[int]  # by rank: each token's id
    n_base: int
    #: "pairs": (left key, right key) -> merge index; "join": key -> rank
    table: dict
    #: "pairs": by merge index, the rank of the token it makes (so a ladder knows which merges are below k)
    makes: list[int] = field(default_factory=list)
    #: "pairs": by merge index, its (left key, right key)
    merges: list[tuple] = field(default_factory=list)
    units: Callable[[str], Iterable[tuple[object, int]]] | None = None  # set by merge_model: a text's pre-tokens
    #: a tokenizer that counts a text with its first k merges itself (a lab run over ids): (text, k merges) -> tokens
    count_with_merges: Callable[[str, int], int] | None = None
    count_parts: Callable[[list], int] | None = None  # how many ids the merged parts of a pre-token are
    whole: bool = False  # a pre-token that is a token is taken whole (tiktoken's rule, ignore_merges)
    #: what a key starts as, when it is not its bytes or characters one by one (a word's last character and its suffix)
    split_key: Callable[[object], list] | None = None
    _rank_of_id: dict[int, int] | None = None
    _rank_of_key: dict | None = None
    _parents: dict[int, tuple[int, int] | None] = field(default_factory=dict)
    _children: dict[int, list[int]] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- ranks -------------------------------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self.keys)

    def rank_of_id(self, token_id: int) -> int | None:
        if self._rank_of_id is None:
            self._rank_of_id = {tid: r for r, tid in enumerate(self.ids)}
        return self._rank_of_id.get(token_id)

    def rank_of_key(self, key) -> int | None:
        if self._rank_of_key is None:
            self._rank_of_key = {k: r for r, k in enumerate(self.keys)}
        return self._rank_of_key.get(key)

    def _symbols_of(self, key) -> list:
        if self.split_key is not None:
            return self.split_key(key)
        if self.symbols == "ids":  # the base ids a merged id is made of
            found = self.parents(key)
            return [key] if found is None else self._symbols_of(found[0]) + self._symbols_of(found[1])
        if self.symbols == "bytes":
            return [key[i : i + 1] for i in range(len(key))]
        return list(key)

    def _getter(self, limit: int):
        """The rank lookup of the vocabulary cut down to its first ``limit`` ranks, for :func:`merge`."""
        table = self.table
        if self.rule == "join":
            def get(key, none=None):
                r = table.get(key)
                return r if r is not None and r < limit else none
        else:
            makes = self.makes

            def get(key, none=None):
                m = table.get(key)
                return m if m is not None and makes[m] < limit else none
        return get

    def merge_parts(self, key, limit: int | None = None) -> list:
        """The parts a token's own symbols merge into with the ranks below ``limit`` (all of them: None)."""
        get = self._getter(self.size if limit is None else limit)
        if self.symbols == "ids":
            made = {p: self.keys[r] for p, r in zip(self.merges, self.makes)}
            return merge(self._symbols_of(key), get, key=pair, join=lambda a, b: made[(a, b)])
        join = _join_bytes if self.symbols == "bytes" else str.__add__
        return merge(self._symbols_of(key), get, key=join if self.rule == "join" else pair, join=join)

    # -- parents and children ----------------------------------------------------------------------------------------
    def parents(self, token_id: int) -> tuple[int, int] | None:
        """The ids of the two tokens whose merge made ``token_id`` (None for a base token)."""
        rank = self.rank_of_id(token_id)
        if rank is None or rank < self.n_base:
            return None
        if rank in self._parents:
            return self._parents[rank]
        found = self._find_parents(rank)
        self._parents[rank] = found
        return found

    def _find_parents(self, rank: int) -> tuple[int, int] | None:
        if self.rule == "pairs":
            m = self._first_merge[rank]
            a, b = self.merges[m]
            ra, rb = self.rank_of_key(a), self.rank_of_key(b)
            return None if ra is None or rb is None else (self.ids[ra], self.ids[rb])
        parts = self.merge_parts(self.keys[rank], rank)
        if len(parts) != 2:
            return None  # its own symbols never merge into two tokens below its rank
        ra, rb = self.rank_of_key(parts[0]), self.rank_of_key(parts[1])
        return None if ra is None or rb is None else (self.ids[ra], self.ids[rb])

    @property
    def _first_merge(self) -> dict[int, int]:
        found = getattr(self, "_first", None)
        if found is None:
            found = {}
            for m, r in enumerate(self.makes):
                found.setdefault(r, m)
            self._first = found
        return found

    def children(self, token_id: int) -> list[int]:
        """The ids of the tokens one merge makes from ``token_id`` (on either side), by rank."""
        with self._lock:
            if self._children is None:
                self._children = self._all_children()
        return self._children.get(token_id, [])

    def _all_children(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for rank in range(self.n_base, self.size):
            found = self.parents(self.ids[rank])
            if found is not None:
                for parent in dict.fromkeys(found):
                    out.setdefault(parent, []).append(self.ids[rank])
        return out

    def all_parents(self) -> dict[int, tuple[int, int] | None]:
        """Every merged token's parents (computed once)."""
        return {self.ids[r]: self.parents(self.ids[r]) for r in range(self.n_base, self.size)}

    def load_parents(self, parents: dict[int, tuple[int, int] | None]) -> None:
        """Parents computed before (a cache on disk), by id."""
        for tid, found in parents.items():
            rank = self.rank_of_id(tid)
            if rank is not None:
                self._parents[rank] = found

    # -- the ladder --------------------------------------------------------------------------------------------------
    def check_sizes(self, sizes: Sequence[int]) -> list[int]:
        if not sizes:
            raise LadderSizeError("give at least one size")
        if len(sizes) > MAX_SIZES:
            raise LadderSizeError(f"{len(sizes)} sizes; give at most {MAX_SIZES}")
        bad = [k for k in sizes if not isinstance(k, int) or isinstance(k, bool) or not self.n_base <= k <= self.size]
        if bad:
            raise LadderSizeError(
                f"size {bad[0]} is out of range: this vocabulary has {self.n_base:,} base tokens and "
                f"{self.size:,} ranks, so a size is from {self.n_base:,} to {self.size:,}"
            )
        return list(sizes)

    def ladder(self, text: str, sizes: Sequence[int]) -> list[tuple[int, int]]:
        """``(size, tokens)`` for each size: how many tokens ``text`` takes with only the first ``size`` ranks."""
        sizes = self.check_sizes(sizes)
        if self.count_with_merges is not None:
            return [(k, self.count_with_merges(text, k - self.n_base)) for k in sizes]
        units = Counter()
        fixed = 0
        for unit, n in self.units(text):
            if unit is None:
                fixed += n  # an added token: one token whatever the size
            else:
                units[unit] += n
        out = []
        for k in sizes:
            get = self._getter(k)
            join = _join_bytes if self.symbols == "bytes" else str.__add__
            keyf = join if self.rule == "join" else pair
            total = fixed
            for unit, n in units.items():
                if self.whole:
                    r = self.rank_of_key(unit)
                    if r is not None and r < k:
                        total += n
                        continue
                parts = merge(self._symbols_of(unit), get, key=keyf, join=join)
                total += n * (len(parts) if self.count_parts is None else self.count_parts(parts))
            out.append((k, total))
        return out


# -- building the model of a tokenizer ----------------------------------------------------------------------------------
def merge_model(tok: Tokenizer) -> MergeModel:
    """The :class:`MergeModel` of ``tok`` (built once per tokenizer object); :class:`NotMergeBasedError` if it has
    no merges."""
    return _MODELS(tok)


def _engine(tok: Tokenizer) -> Tokenizer:
    """Our engine on the same data for a model served by Hugging Face ``tokenizers`` (it keeps the merges)."""
    if isinstance(tok, HuggingFaceTokenizer):
        from app.features.explain.explainer import retracing_engine

        return retracing_engine(tok)
    return tok


def _build(tok: Tokenizer) -> MergeModel:
    engine = _engine(tok)
    if isinstance(engine, TiktokenTokenizer):
        spec = ENCODINGS[engine.name] if engine.name in ENCODINGS else engine._spec
        return _rank_model(mergeable_ranks(spec.name), spec.pattern)
    if isinstance(engine, RankTokenizer):
        return _rank_model(engine.encoder.ranks, engine.pattern)
    if isinstance(engine, ByteLevelJSONTokenizer):
        return _byte_level_json_model(engine)
    if isinstance(engine, WordEndBPETokenizer):
        return _word_end_model(engine)
    if isinstance(engine, SentencePieceJSONTokenizer):
        return _sentencepiece_json_model(engine)
    if isinstance(engine, SentencePieceTokenizer) and not isinstance(engine, UnigramTokenizer):
        return _sentencepiece_model(engine)
    if hasattr(engine, "merge_order") and hasattr(engine, "count_with_merges"):
        return _id_model(engine)
    raise NotMergeBasedError(
        f"{tok.name or 'this tokenizer'} is not a BPE tokenizer: it has no merges, so no ranks, parents or ladder"
    )


def _rank_model(ranks, pattern: str | None) -> MergeModel:
    """tiktoken's rule: a token's rank is its rank; a pair ranks as the token it joins into."""
    by_rank = sorted(ranks.items(), key=lambda kv: kv[1])
    keys = [k for k, _ in by_rank]
    table = dict(by_rank)
    model = MergeModel(
        symbols="bytes", rule="join", keys=keys, ids=[r for _, r in by_rank], table=table,
        n_base=sum(1 for k in keys if len(k) == 1), whole=True,
    )
    split = regex.compile(pattern).findall if pattern else (lambda text: [text] if text else [])

    def units(text: str):
        return ((piece.encode("utf-8"), 1) for piece in split(text))

    model.units = units
    return model


def _pairs_model(symbols: str, vocab: dict, merges: Sequence[tuple], extra_base: Iterable[int] = ()) -> MergeModel:
    """A merges list's model: the base tokens (made by no merge) by id, then each merge's token in merge order."""
    joined = [a + b for a, b in merges]
    made = set(joined)
    base = sorted({tid for key, tid in vocab.items() if key not in made} | set(extra_base))
    id_key = {tid: key for key, tid in vocab.items()}
    keys = [id_key.get(tid) for tid in base]
    ids = list(base)
    rank_of: dict = {k: r for r, k in enumerate(keys) if k is not None}
    makes = []
    for key in joined:
        r = rank_of.get(key)
        if r is None:
            r = rank_of[key] = len(keys)
            keys.append(key)
            ids.append(vocab[key])
        makes.append(r)
    table = {}
    for m, p in enumerate(merges):
        table[tuple(p)] = m  # a later repeat wins, as in the library's map
    model = MergeModel(symbols=symbols, rule="pairs", keys=keys, ids=ids, n_base=len(base), table=table,
                       makes=makes, merges=[tuple(p) for p in merges])
    model._rank_of_key = rank_of
    return model


def _byte_level_json_model(tok: ByteLevelJSONTokenizer) -> MergeModel:
    enc = tok.encoder
    by_merge = sorted(enc.pairs.items(), key=lambda kv: kv[1])
    vocab = dict(enc.ranks.items())
    model = _pairs_model("bytes", vocab, [p for p, _ in by_merge])
    model.whole = bool(enc.whole)

    def units(text: str):
        for piece in tok.added.split(text, False):
            if piece.token is not None:
                yield None, 1
            elif tok.pre.transforms:
                yield from ((data, 1) for data in tok._pretoken_bytes(piece))
            else:
                yield from ((t.encode("utf-8"), 1) for t in tok.pre.texts(piece.text))

    model.units = units
    return model


def _sentencepiece_json_model(tok: SentencePieceJSONTokenizer) -> MergeModel:
    _, ranking = tok.ranking()  # the merges list as a dict (pair -> index)
    by_merge = sorted(tok._rank.items(), key=lambda kv: kv[1])
    vocab = dict(tok._lookup.items())
    model = _pairs_model("chars", vocab, [p for p, _ in by_merge])
    model.whole = bool(tok.whole_words)
    model.count_parts = lambda parts: len(tok._piece_ids(parts))

    def units(text: str):
        for piece in tok.added.split(text, False):
            if piece.token is not None:
                yield None, 1
            else:
                yield from ((word, 1) for word, _ in tok.pretoken_texts(piece))

    model.units = units
    return model


def _word_end_model(tok: WordEndBPETokenizer) -> MergeModel:
    by_merge = sorted(tok.ranks.items(), key=lambda kv: kv[1])
    model = _pairs_model("chars", dict(tok.vocab), [p for p, _ in by_merge])
    model.whole = bool(tok.whole_words)
    suffix = tok.suffix
    vocab, unk, fuse = tok.vocab, tok.unk_id, tok.fuse_unk

    def symbols_of(key: str) -> list:
        # a word's pre-token ends with the suffix: its last character starts as one symbol with it
        if key.endswith(suffix) and len(key) > len(suffix):
            body = key[: -len(suffix)]
            return list(body[:-1]) + [body[-1] + suffix]
        return list(key)

    model.split_key = symbols_of

    def count_parts(parts: list) -> int:
        n, prev_unknown = 0, False
        for part in parts:
            known = part in vocab
            if known or (unk is not None and not (fuse and prev_unknown)):
                n += 1
            prev_unknown = not known and unk is not None
        return n

    model.count_parts = count_parts

    def units(text: str):
        for piece in tok.added.split(text, False):
            if piece.token is not None:
                yield None, 1
            else:
                yield from ((word + suffix, 1) for word, _ in tok.words(piece) if word)

    model.units = units
    return model


def _sentencepiece_model(tok: SentencePieceTokenizer) -> MergeModel:
    """A ``.model`` BPE: pieces merge by score (best first), so its merged pieces rank by score; its base is every
    other piece (characters, byte pieces, control and unknown pieces)."""
    merged = [i for i, (p, t) in enumerate(zip(tok.pieces, tok.types)) if t == NORMAL and len(p) > 1]
    scores = getattr(tok, "_rank", {})
    merged.sort(key=lambda i: (scores.get(tok.pieces[i], 0.0), i))  # the rank dict holds minus the score
    merged_set = set(merged)
    base = [i for i in range(len(tok.pieces)) if i not in merged_set]
    keys = [tok.pieces[i] for i in base] + [tok.pieces[i] for i in merged]
    ids = base + merged
    table = {tok.pieces[i]: len(base) + r for r, i in enumerate(merged)}
    model = MergeModel(symbols="chars", rule="join", keys=keys, ids=ids, n_base=len(base), table=table)
    model.count_parts = lambda parts: len(tok._piece_ids(parts))

    def units(text: str):
        normalized = tok.normalizer.normalize_text(text)
        if not normalized:
            return
        if tok._chunk_re is None:
            yield normalized, 1
        else:
            yield from ((chunk, 1) for chunk in tok._chunks(normalized))

    model.units = units
    return model


def _id_model(tok) -> MergeModel:
    """A tokenizer whose merges join ids (a lab run over characters): ``merge_order()`` gives its base ids and its
    merges as ``(left, right, new)`` ids; it counts a text with its first k merges itself."""
    base, merges = tok.merge_order()
    ids = list(base) + [new for _, _, new in merges]
    model = _pairs_model("ids", {tid: tid for tid in ids}, [])
    model.keys, model.ids, model.n_base = ids, ids, len(base)
    model.merges = [(a, b) for a, b, _ in merges]
    model.makes = [len(base) + m for m in range(len(merges))]
    model.table = {(a, b): m for m, (a, b, _) in enumerate(merges)}
    model._rank_of_key = {tid: r for r, tid in enumerate(ids)}
    model.count_with_merges = tok.count_with_merges
    return model


_MODELS = PerTokenizer(_build)


def is_merge_based(tok: Tokenizer) -> bool:
    try:
        merge_model(tok)
    except NotMergeBasedError:
        return False
    return True
