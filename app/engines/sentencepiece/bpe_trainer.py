"""sentencepiece's BPE trainer, step for step: the same pieces, scores and order as
``sentencepiece.SentencePieceTrainer.train(model_type="bpe")`` writes for the same corpus and options.

How it trains (sentencepiece's ``bpe_model_trainer.cc``, followed here, not copied):

1. The corpus is read as sentencepiece reads it (:func:`.training_corpus.load_sentences`: normalization, meta pieces
   as boundaries, required characters by ``character_coverage``, the rest as ``▅``) and, with ``split_by_whitespace``,
   cut into distinct words with their counts.
2. Every pair of adjacent symbols that may form a piece (:class:`.training_corpus.PieceRule`: not too long, one
   script, ``▁`` only in front...) is a *candidate* with its count (occurrences times the word's count, overlaps
   counted). Candidates wait in a priority queue ranked by count, then the shorter piece (in characters), then the
   piece's bytes; a candidate whose count changed is re-queued when it reaches the top, as sentencepiece's lazy queue
   does.
3. Each step takes the best candidate. A piece already made by another pair ("aa"+"a" and "a"+"aa") is dropped,
   not merged twice. Otherwise it is merged at every place it still occurs, left to right; the pairs it broke lose
   those counts and the pairs it made gain them. The count it had when it won is its *frequency*.
4. After ``vocab_size`` minus the meta pieces minus the required characters merges (or when no candidate is
   left, even with count 0: sentencepiece merges those too), the pieces are: the merged pieces in merge order, then
   the required characters, most frequent first, scored ``0, -1, -2...``; ids put the meta pieces (``<unk>``, ``<s>``,
   ``</s>``, user-defined symbols, the 256 byte pieces) at theirs and the pieces after them in order. A corpus that
   runs out of candidates cannot fill ``vocab_size``: sentencepiece refuses it ("Vocabulary size too high"), and so do
   we, with the size it could reach.

The merge loop runs in the compiled twin ``_spm_train.c`` where it is built; the Python loop here gives the same
merges. Each merge is a :class:`SpmMerge` record (the lab shows them step by step). Nothing here prints.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from ..base import check_text
from ..compiled import twin
from ..training import Cancelled
from .proto import BPE, BYTE, CONTROL, NORMAL, UNIGRAM, UNKNOWN, USER_DEFINED, ModelProto, NormalizerSpec, Piece, TrainerSpec
from .trainer_options import TrainerOptions
from .training_corpus import (UNK_CHAR, PieceRule, Sentences, charsmap, load_sized, out_of_reach, script_ranges,
                              word_counts)

KINDS = {"unknown": UNKNOWN, "control": CONTROL, "user_defined": USER_DEFINED, "byte": BYTE}
TOP_K = 10


@dataclass(slots=True)
class SpmMerge:
    """One merge of sentencepiece's BPE trainer: the pieces it joined, the count the pair had when it won, how many
    occurrences it merged (overlaps make fewer), the corpus length in symbols after it, and the best candidates before
    it (``(left, right, count)``, the winner first)."""

    left: str
    right: str
    count: int
    replaced: int
    corpus_tokens: int
    top: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def piece(self) -> str:
        return self.left + self.right


@dataclass
class TrainedBPE:
    """A finished run: its pieces (text, score, type; in id order), its ``.model``, and its merges as the model's ids:
    ``rows`` holds, per merge, (left id, right id, count, replaced, corpus tokens after it), ``tops`` the ``top_k``
    best candidates before it as (left id, right id, count), the winner first, -1 past the last (int64 arrays: a run
    of 8,000 merges is 1.3 MB of them, read by the lab without a Python object per row). :attr:`merges` gives them
    as :class:`SpmMerge` records."""

    pieces: list[Piece]
    model: ModelProto
    initial_tokens: int
    required: list[tuple[str, int]]
    rows: array
    tops: array
    top_k: int

    def serialize(self) -> bytes:
        return self.model.serialize()

    @property
    def n_merges(self) -> int:
        return len(self.rows) // 5

    @cached_property
    def merges(self) -> list[SpmMerge]:
        text = [p.piece for p in self.pieces]
        rows, tops, k = self.rows, self.tops, self.top_k
        out = []
        for n in range(self.n_merges):
            left, right, count, replaced, tokens = rows[5 * n : 5 * n + 5]
            top = [(text[tops[j]], text[tops[j + 1]], tops[j + 2]) for j in range(3 * k * n, 3 * k * (n + 1), 3)
                   if tops[j] >= 0]
            out.append(SpmMerge(text[left], text[right], count, replaced, tokens, top))
        return out


class _Symbol:
    __slots__ = ("piece", "char_len", "left", "right", "freq", "positions", "active", "pending", "recompute", "seq",
                 "key")

    def __init__(self, piece: str, left, right, seq: int, key):
        self.piece = piece
        self.char_len = len(piece)
        self.left = left
        self.right = right
        self.freq = 0
        self.positions: list[tuple[int, int, int]] = []
        self.active = True
        self.pending = False
        self.recompute = True
        self.seq = seq
        self.key = key


def _same(a, b) -> bool:
    """One symbol: the same merged piece (object), or the same character."""
    return a is b or (type(a) is str and a == b)


class _PythonLoop:
    """The merge loop in Python (the twin's twin): symbols are chars (ints) or :class:`_Symbol` objects."""

    def __init__(self, words: list[tuple[str, int]], rule: PieceRule):
        self.rule = rule
        self.freqs = [f for _, f in words]
        self.symbols: list[list] = [list(w) for w, _ in words]  # a char is its str, a merged piece its _Symbol
        self.cache: dict = {}
        self.heap: list = []
        self.pending: list[_Symbol] = []
        self.seq = 0
        self.pushes = 0
        self.valid: dict[str, bool] = {}
        self.tokens = sum(len(w) * f for w, f in words)
        self.initial_tokens = self.tokens
        self.dup: set[str] = set()
        bigrams: dict = {}
        for sid, syms in enumerate(self.symbols):
            f = self.freqs[sid]
            for i in range(1, len(syms)):
                a, b = syms[i - 1], syms[i]
                if a == UNK_CHAR or b == UNK_CHAR:
                    continue
                entry = bigrams.get((a, b))
                if entry is None:
                    bigrams[(a, b)] = [f, [(sid, i - 1, i)]]
                else:
                    entry[0] += f
                    entry[1].append((sid, i - 1, i))
        for (a, b), (f, positions) in bigrams.items():
            s = self.pair_symbol(a, b)
            if s is not None:
                s.freq += f
                s.positions.extend(positions)
                self.mark(s)
        self.flush()

    @staticmethod
    def text(sym) -> str:
        return sym if isinstance(sym, str) else sym.piece

    def pair_symbol(self, a, b) -> _Symbol | None:
        if a is None or b is None or a == UNK_CHAR or b == UNK_CHAR:
            return None
        key = (a if isinstance(a, str) else id(a), b if isinstance(b, str) else id(b))
        s = self.cache.get(key)
        if s is not None:
            return s
        piece = self.text(a) + self.text(b)
        ok = self.valid.get(piece)
        if ok is None:
            ok = self.valid[piece] = self.rule.valid(piece)
        if not ok:
            return None
        self.seq += 1
        s = self.cache[key] = _Symbol(piece, a, b, self.seq, key)
        return s

    def mark(self, s: _Symbol) -> None:
        if not s.pending:
            s.pending = True
            self.pending.append(s)

    def push(self, s: _Symbol) -> None:
        self.pushes += 1
        heapq.heappush(self.heap, (-s.freq, s.char_len, s.piece, s.seq, self.pushes, s))

    def flush(self) -> None:
        for s in self.pending:
            s.pending = False
            if s.active:
                s.recompute = False
                if s.freq == 0:
                    s.positions = []
                self.push(s)
        self.pending = []

    def drop(self, s: _Symbol) -> None:
        self.cache.pop(s.key, None)
        s.active = False
        s.positions = []

    def pop_valid(self) -> _Symbol | None:
        """The best candidate, the queue's stale entries dropped or re-queued on the way (sentencepiece's rules)."""
        heap = self.heap
        while heap:
            negfreq, _, _, _, _, s = heap[0]
            if not s.active:
                heapq.heappop(heap)
                continue
            if s.recompute:
                heapq.heappop(heap)
                s.recompute = False
                if s.freq == 0:
                    s.positions = []
                self.push(s)
                continue
            if -negfreq != s.freq:
                heapq.heappop(heap)
                continue
            heapq.heappop(heap)
            return s
        return None

    def best(self, top_k: int) -> tuple[_Symbol | None, list[_Symbol]]:
        """The winner (pieces made twice skipped) and up to ``top_k`` candidates from it down, left queued."""
        while True:
            s = self.pop_valid()
            if s is None:
                return None, []
            if s.piece in self.dup:
                self.drop(s)
                continue
            break
        top = [s]
        while len(top) < top_k:
            t = self.pop_valid()
            if t is None:
                break
            if t.piece in self.dup:
                self.drop(t)
                continue
            top.append(t)
        for t in top[1:]:
            self.push(t)
        return s, top

    def neighbour(self, syms: list, i: int, step: int) -> int:
        i += step
        while 0 <= i < len(syms) and syms[i] is None:
            i += step
        return i if 0 <= i < len(syms) else -1

    def accept(self, best: _Symbol) -> int:
        """Merge ``best`` everywhere it still occurs; return the occurrences merged (times their word's count)."""
        self.dup.add(best.piece)
        replaced = 0
        symbols, freqs = self.symbols, self.freqs
        for sid, left, right in best.positions:
            syms = symbols[sid]
            if not _same(syms[left], best.left) or not _same(syms[right], best.right):
                continue
            f = freqs[sid]
            nxt = self.neighbour(syms, right, 1)
            prev = self.neighbour(syms, left, -1)
            if prev >= 0:
                s = self.pair_symbol(syms[prev], syms[left])
                if s is not None and s is not best:
                    s.freq -= f
                    s.recompute = True
            if nxt >= 0:
                s = self.pair_symbol(syms[right], syms[nxt])
                if s is not None and s is not best:
                    s.freq -= f
                    s.recompute = True
            syms[left] = best
            syms[right] = None
            replaced += f
            if prev >= 0:
                s = self.pair_symbol(syms[prev], best)
                if s is not None:
                    s.positions.append((sid, prev, left))
                    s.freq += f
                    self.mark(s)
            if nxt >= 0:
                s = self.pair_symbol(best, syms[nxt])
                if s is not None:
                    s.positions.append((sid, left, nxt))
                    s.freq += f
                    self.mark(s)
        self.drop(best)
        self.tokens -= replaced
        self.flush()
        return replaced

    def run(self, n_merges: int, top_k: int, progress, should_stop) -> list[SpmMerge]:
        merges: list[SpmMerge] = []
        text = self.text
        while len(merges) < n_merges:
            if should_stop is not None and len(merges) % 64 == 0 and should_stop():
                raise Cancelled()
            best, top = self.best(top_k)
            if best is None:
                break
            record = [(text(t.left), text(t.right), t.freq) for t in top]
            count = best.freq
            replaced = self.accept(best)
            merges.append(SpmMerge(text(best.left), text(best.right), count, replaced, self.tokens, record))
            if progress is not None:
                progress(len(merges))
        return merges


def _ids(loaded: Sentences, vocab_size: int) -> tuple[list[int], dict[str, int]]:
    """Where the pieces go in the model: the ids of the merged pieces in merge order, and each required character's
    id (after them, most frequent first), the meta pieces keeping theirs."""
    free = [i for i in range(vocab_size) if i not in loaded.meta]
    n_merges = vocab_size - len(loaded.meta) - len(loaded.required)
    return free[:n_merges], {c: free[n_merges + r] for r, (c, _) in enumerate(loaded.required)}


def _compiled_run(words, rule: PieceRule, options: TrainerOptions, n_merges: int, top_k: int, ids, progress,
                  should_stop):
    run = twin("_spm_train", "bpe_train")
    if run is None:
        return None
    merge_ids, char_ids = ids
    joined = "".join(w for w, _ in words)
    chars: dict[str, int] = {UNK_CHAR: 0}
    for c in sorted(set(joined)):
        chars.setdefault(c, len(chars))
    flat = array("i")
    flat.frombytes(joined.translate({ord(c): i for c, i in chars.items()}).encode("utf-32-le", "surrogatepass"))
    lengths = array("i", (len(w) for w, _ in words))
    freqs = array("q", (f for _, f in words))
    cps = array("i", (ord(c) for c in chars))
    flags = (options.split_by_unicode_script | options.split_by_number << 1 | options.split_digits << 2
             | options.split_by_whitespace << 3 | options.treat_whitespace_as_suffix << 4
             | options.allow_whitespace_only_pieces << 5)
    out = run(flat, lengths, freqs, cps, script_ranges(), flags, options.max_sentencepiece_length, n_merges, top_k,
              array("i", (char_ids.get(c, -1) for c in chars)), array("i", merge_ids), progress, should_stop)
    if out is None:
        raise Cancelled()
    merged, rows_raw, tops_raw, initial = out
    rows, tops = array("q"), array("q")
    rows.frombytes(rows_raw)
    tops.frombytes(tops_raw)
    return merged, rows, tops, initial


def _packed(merges: list[SpmMerge], ids, top_k: int) -> tuple[list[str], array, array]:
    """The Python loop's records as the compiled loop gives them (merged pieces, rows, tops; see :class:`TrainedBPE`)."""
    merge_ids, char_ids = ids
    id_of = dict(char_ids) | {m.piece: i for m, i in zip(merges, merge_ids)}
    rows, tops = array("q"), array("q")
    for m in merges:
        rows.extend((id_of[m.left], id_of[m.right], m.count, m.replaced, m.corpus_tokens))
        for a, b, c in m.top[:top_k]:
            tops.extend((id_of[a], id_of[b], c))
        tops.extend([-1] * 3 * (top_k - min(len(m.top), top_k)))
    return [m.piece for m in merges], rows, tops


def train_bpe(
    text: str,
    vocab_size: int | None = None,
    options: TrainerOptions | None = None,
    *,
    learned: int | None = None,
    top_k: int = TOP_K,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> TrainedBPE:
    """Train sentencepiece's BPE on ``text`` (one sentence a line) to ``vocab_size`` pieces, or to ``learned``
    merges (the size is then the meta pieces, the required characters and the merges).

    ``progress(merges done, merges to do)`` is called as it goes; ``should_stop()`` returning true raises
    :class:`~app.engines.training.Cancelled`. Raises :class:`.training_corpus.CorpusError` (naming ``vocab_size``)
    for a size the corpus cannot fill, as sentencepiece refuses it.

    >>> run = train_bpe("the cat sat on the mat\\nthe cat ate\\n", 30)
    >>> [m.piece for m in run.merges][:4], run.merges[0].count
    (['at', 'he', '▁t', '▁the'], 5)
    """
    check_text(text)
    options = options or TrainerOptions()
    loaded, vocab_size = load_sized(text, options, vocab_size, learned)
    words = word_counts(loaded.sentences, options)
    n_merges = vocab_size - len(loaded.meta) - len(loaded.required)
    rule = PieceRule(options)
    top_k = max(1, top_k)
    ids = _ids(loaded, vocab_size)
    report = None if progress is None else (lambda done: progress(done, n_merges))
    compiled = _compiled_run(words, rule, options, n_merges, top_k, ids, report, should_stop)
    if compiled is not None:
        merged, rows, tops, initial = compiled
    else:
        loop = _PythonLoop(words, rule)
        initial = loop.initial_tokens
        records = loop.run(n_merges, top_k, report, should_stop)
        if len(records) == n_merges:
            merged, rows, tops = _packed(records, ids, top_k)
        else:
            merged = [m.piece for m in records]
    if len(merged) < n_merges:
        reached = len(loaded.meta) + len(loaded.required) + len(merged)
        raise out_of_reach("BPE", vocab_size, loaded, reached, f"{len(loaded.meta):,} meta pieces, "
                           f"{len(loaded.required):,} characters and {len(merged):,} merges: no pair is left to merge")
    return _finish(merged, rows, tops, top_k, loaded, options, vocab_size, initial)


def _finish(merged: list[str], rows: array, tops: array, top_k: int, loaded: Sentences, options: TrainerOptions,
            vocab_size: int, initial: int) -> TrainedBPE:
    scored = [(piece, -float(k)) for k, piece in enumerate(merged + [c for c, _ in loaded.required])]
    pieces = model_pieces(loaded, scored, vocab_size)
    proto = ModelProto(pieces, trainer_spec(options, vocab_size, BPE), normalizer_spec(options))
    return TrainedBPE(pieces, proto, initial, loaded.required, rows, tops, top_k)


def model_pieces(loaded: Sentences, scored: list[tuple[str, float]], vocab_size: int) -> list[Piece]:
    """A model's ``vocab_size`` pieces: the meta pieces at their ids, ``scored`` (piece, score) in order in the others."""
    rest = iter(scored)
    out: list[Piece] = []
    for i in range(vocab_size):
        if i in loaded.meta:
            piece, kind = loaded.meta[i]
            out.append(Piece(piece, 0.0, KINDS[kind]))
        else:
            out.append(Piece(*next(rest), NORMAL))
    return out


#: The trainer options a model's trainer spec records under their own names.
SPEC_OPTIONS = ("character_coverage", "max_sentence_length", "max_sentencepiece_length", "shrinking_factor",
                "num_sub_iterations", "split_by_unicode_script", "split_by_number", "split_by_whitespace",
                "treat_whitespace_as_suffix", "allow_whitespace_only_pieces", "split_digits", "byte_fallback", "unk_id",
                "bos_id", "eos_id", "pad_id")


def trainer_spec(options: TrainerOptions, vocab_size: int, model_type: int) -> TrainerSpec:
    """The trainer spec a model trained with ``options`` carries (as sentencepiece writes it, less the file names)."""
    return TrainerSpec(model_prefix="", model_type=model_type, vocab_size=vocab_size, num_threads=1,
                       hard_vocab_limit=True, user_defined_symbols=list(options.user_defined_symbols),
                       **{name: getattr(options, name) for name in SPEC_OPTIONS})


def normalizer_spec(options: TrainerOptions) -> NormalizerSpec:
    """The normalizer spec of a model trained with ``options`` (its rule's charsmap, spaces as ``▁``)."""
    rule = options.normalization_rule_name
    return NormalizerSpec(name=rule, precompiled_charsmap=charsmap(rule), escape_whitespaces=True,
                          **{name: getattr(options, name) for name in ("add_dummy_prefix", "remove_extra_whitespaces")})


__all__ = ["SpmMerge", "TrainedBPE", "train_bpe", "model_pieces", "trainer_spec", "normalizer_spec", "UNIGRAM"]
