"""Train a WordPiece vocabulary the way it is taught: merge the pair with the highest score, not the most frequent.

Words are cut into characters, the first as it is and the others as continuation pieces (``hug`` -> ``h ##u ##g``);
each step merges, everywhere, the adjacent pair ``(a, b)`` with the highest score

    score(a, b) = count(ab) / (count(a) * count(b))

(the pair's occurrences over the product of its parts' occurrences, all counted in the corpus as it is now), and
the merged piece drops the ``##`` of its right part (``h`` + ``##u`` -> ``hu``; ``##u`` + ``##g`` -> ``##ug``).
A pair whose merged text is already a piece is never merged (a vocabulary holds each text once). Ties (equal
scores, compared as exact fractions would be: an equal fraction gives an equal float) are broken by the run's
tie rule, as in BPE: ``first`` (the pair seen first in the corpus) or ``lexical``.

The merging, counting and recording is the shared training core (:class:`app.engines.training.MergeState`); this module
only swaps the count order for the score order. Scores of every pair that shares a part with the merged pair change at
each step, so they are kept in a heap: each such pair is pushed again with its new score (a loop with a compiled twin in
``app/engines/training/_train.c``), each pair has one valid entry and the others are dropped when they come up, and the
best entries wait off the heap between steps (:class:`ScoredPairs`). Every step is a :class:`WordPieceStep`: a
``MergeStep`` with the winner's ``score`` and the scored pair table (count, the two part counts, the score).

Words are the BERT pipeline's (:mod:`..pipeline.bert_text`: text cleaned, CJK ideographs alone, cut at whitespace and
punctuation; case and accents kept), so the trained vocabulary exports as a ``tokenizer.json`` that Hugging Face
``tokenizers`` encodes like our :class:`.model.WordPieceTokenizer` (greedy longest match, which is how
WordPiece *encodes*, whatever merge order trained it). Nothing here prints.
"""

from __future__ import annotations

import heapq
import json
from bisect import insort
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter

from ..pipeline.bert_text import bert_normalizer, bert_words
from ..compiled import twin
from ..training.steps import MergeStep
from ..training import MergeState, TrainingError
from ..training.driver import run_merges

PREFIX = "##"
UNK = "[UNK]"
#: BERT's normalizer without lower-casing or accent stripping, and BERT's pre-tokenizer.
NORMALIZER = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": False, "lowercase": False}
PRE_TOKENIZER = {"type": "BertPreTokenizer"}
_normalize = bert_normalizer(True, True, False, False)
_WORDS = bert_words()  # BertPreTokenizer's words (stdlib ``re``: several times faster on these classes)
Pair = tuple[int, int]
Entry = tuple[float, str]  # a pair's negated score, and the pair


def word_counts(text: str) -> Counter:
    """The words a WordPiece run sees in ``text`` (normalized and cut as its exported tokenizer.json does), counted
    the fast way: normalized text has no whitespace but the space, so ``str.split`` cuts it as the pre-tokenizer
    does, and the punctuation regex runs once per distinct chunk.

    >>> word_counts("a, a, b")
    Counter({'a': 2, ',': 2, 'b': 1})
    """
    counts: Counter = Counter()
    for chunk, n in Counter(_normalize(text).split()).items():
        for word in _WORDS.findall(chunk):
            counts[word] += n
    return counts


def word_spans(text: str) -> list[tuple[int, int]]:
    """Where the words of :func:`word_counts` are in ``text`` (character spans of the input).

    >>> word_spans("北京 ok!")
    [(0, 1), (1, 2), (3, 5), (5, 6)]
    """
    normalized = _normalize(text)
    if normalized == text:
        return [m.span() for m in _WORDS.finditer(text)]
    char_map = _normalize.char_map
    source = [i for i, ch in enumerate(text) for _ in char_map[ord(ch)]]
    return [(source[a], source[b - 1] + 1) for a, b in (m.span() for m in _WORDS.finditer(normalized))]


def normalize_word(chunk: str) -> str:
    """A word of the input as the trainer sees it (what :func:`word_spans` cut, normalized)."""
    return _normalize(chunk).strip(" ")


def join(left: str, right: str) -> str:
    """The piece two pieces merge into: the right part loses its ``##``.

    >>> join("h", "##u"), join("##u", "##g")
    ('hu', '##ug')
    """
    return left + (right[len(PREFIX) :] if right.startswith(PREFIX) else right)


@dataclass(slots=True)
class WordPieceStep(MergeStep):
    """A merge record with WordPiece's score: ``score`` of the winner, and ``scored`` rows
    ``(pair, count, left count, right count, score)`` of the best pairs before the merge."""

    score: float = 0.0
    left_count: int = 0
    right_count: int = 0
    scored: list[tuple[Pair, int, int, int, float]] = field(default_factory=list)

    @property
    def token(self) -> bytes:
        return join(self.left.decode(), self.right.decode()).encode()

    def to_dict(self) -> dict:
        return MergeStep.to_dict(self) | {
            "token": join(self.left.decode(), self.right.decode()),
            "score": self.score,
            "left_count": self.left_count,
            "right_count": self.right_count,
            "scored_pairs": [[a, b, c, ca, cb, s] for (a, b), c, ca, cb, s in self.scored],
        }


def rescore_python(
    keys: Iterable[str],
    counts: dict[str, int],
    parts: Sequence[int] | Mapping[int, int],
    live: dict[str, Entry],
    heap: list[Entry],
) -> None:
    """:meth:`ScoredPairs.rescore`'s loop: each pair of ``keys`` that occurs gets the entry ``(-score, pair)`` in
    ``live`` and on ``heap``, unless its entry has that score already; a pair that does not occur leaves ``live``.

    >>> live, heap = {}, []
    >>> rescore_python(["ab", "bc"], {"ab": 2, "bc": 0}, {97: 4, 98: 2, 99: 1}, live, heap)
    >>> live, heap
    ({'ab': (-0.25, 'ab')}, [(-0.25, 'ab')])
    """
    push = heapq.heappush
    for key in keys:
        count = counts.get(key)
        if not count:
            live.pop(key, None)
            continue
        score = -count / (parts[ord(key[0])] * parts[ord(key[1])])  # a key is chr(a) + chr(b)
        old = live.get(key)
        if old is None or old[0] != score:  # an unchanged score keeps its entry, wherever it is
            entry = live[key] = (score, key)
            push(heap, entry)


_rescore = twin("_train", "rescore")
#: Whether scoring runs compiled (``app/engines/training/_train.c``).
COMPILED = _rescore is not None
rescore = _rescore or rescore_python


class ScoredPairs:
    """Pairs ordered by score, highest first, ties by ``tie_key``: a heap of ``(-score, key)`` entries.

    The trainer calls :meth:`rescore` for every pair whose score may have changed (a merge changes the scores of
    the pairs holding its parts, and only those). ``live`` holds each pair's one valid entry, so an entry that comes
    up is checked by identity, not by counting again. The best entries taken off the heap stay in ``front`` between
    steps (checked again, not pushed and popped again). Tie keys are asked for only among equal scores, when a table
    is taken: among pairs whose score did not change, tie order never changes.
    """

    #: Stale heap entries tolerated beyond twice the valid ones before the heap is rebuilt from ``live``.
    slack = 4096

    def __init__(self, state: WordPieceTrainerState):
        self.state = state
        self.live: dict[str, Entry] = {}  # pair -> its one valid entry (on the heap or in ``front``)
        self.text_of: dict[str, str] = {}  # pair -> the piece it would merge into (ids never change their text)
        self.front: list[Entry] = []  # valid entries taken off the heap, sorted
        self.heap: list[Entry] = []
        self.checked = False  # whether ``front`` holds only valid entries (no rescoring since it was checked)
        self.rescore(state.pairs.counts)
        heapq.heapify(self.heap)

    def score(self, key: str) -> float:
        """The negated score of ``key`` now (a pair that occurs)."""
        parts = self.state.token_counts
        return -self.state.pairs.counts[key] / (parts[ord(key[0])] * parts[ord(key[1])])  # a key is chr(a) + chr(b)

    def rescore(self, keys: Iterable[str]) -> None:
        """Give each of ``keys`` an entry with its score now (none when it no longer occurs)."""
        live, heap = self.live, self.heap
        rescore(keys, self.state.pairs.counts, self.state.token_counts, live, heap)
        self.checked = False
        if len(heap) > 2 * len(live) + self.slack:  # mostly stale entries: keep the valid ones (a smaller heap pops faster)
            in_front = set(map(id, self.front))
            heap[:] = [e for e in live.values() if id(e) not in in_front]  # a valid entry not in front is on the heap
            heapq.heapify(heap)

    def _refused(self, key: str) -> bool:
        """Whether ``key`` merges into a piece the vocabulary has (a second spelling: never merged); such a pair
        is forgotten."""
        state = self.state
        text = self.text_of.get(key)
        if text is None:
            text = self.text_of[key] = state.text_of_pair(state._pairs[key])
        if text in state.texts:
            del self.live[key]
            state.pairs.remove(key)
            return True
        return False

    def _check_front(self) -> list[Entry]:
        """``front`` without the entries a merge made stale or refused since it was last checked."""
        front = self.front
        if not self.checked:  # every entry here had its text asked for (``text_of``) when it left the heap
            live, text_of, texts = self.live, self.text_of, self.state.texts
            kept = [e for e in front if live.get(e[1]) is e]
            front = self.front = [e for e in kept if text_of[e[1]] not in texts]
            if len(front) < len(kept):
                for e in kept:
                    if text_of[e[1]] in texts:
                        self._refused(e[1])  # forgets it
            self.checked = True
        return front

    def _pull(self, front: list[Entry], k: int) -> None:
        """Move valid heap entries to ``front`` until it holds the ``k`` best and every pair tied with the k-th."""
        live, heap = self.live, self.heap
        while heap:
            top = heap[0]
            if len(front) >= k and top[0] > front[k - 1][0]:
                break
            heapq.heappop(heap)
            if live.get(top[1]) is top and not self._refused(top[1]):
                insort(front, top)

    def any(self) -> bool:
        """Whether some pair may still merge."""
        front = self._check_front()
        if not front:
            self._pull(front, 1)
        return bool(front)

    def best(self, k: int) -> list[Entry]:
        """The ``k`` best entries in winner order (score, then tie key)."""
        front = self._check_front()
        self._pull(front, k)
        if len(front) > 4 * k + 64:  # keep the front short: the tail goes back (still valid)
            for entry in front[2 * k + 32 :]:
                heapq.heappush(self.heap, entry)
            del front[2 * k + 32 :]
        tie_key = self.state.tie_key
        ranked: list[Entry] = []
        for _, group in groupby(front, key=itemgetter(0)):
            if len(ranked) >= k:
                break
            tied = list(group)
            ranked.extend(sorted(tied, key=lambda entry: tie_key(entry[1])) if len(tied) > 1 else tied)
        return ranked[:k]


class WordPieceTrainerState(MergeState):
    """A WordPiece training in progress on the shared core: :meth:`step` merges the best-scoring pair."""

    record_type = WordPieceStep

    def __init__(self, words: Iterable[tuple[list[int], int]], base_vocab: dict[int, bytes], *, tie_break: str = "first"):
        words = list(words)
        super().__init__(words, base_vocab, tie_break=tie_break)
        self.token_counts = [0] * self.next_id  # id -> occurrences now (a list: the scoring loop indexes it)
        for ids, freq in words:
            for i in ids:
                self.token_counts[i] += freq
        self.texts = {b.decode() for b in base_vocab.values()}
        self.by_token: dict[int, set[str]] = {}
        for key in self.pairs.counts:
            a, b = self._pairs[key]
            self.by_token.setdefault(a, set()).add(key)
            self.by_token.setdefault(b, set()).add(key)
        self.scores = ScoredPairs(self)
        self._changes: list = []
        self.pairs.apply = _noting(self.pairs.apply, self._changes)

    def text_of_pair(self, pair: Pair) -> str:
        return join(self.vocab[pair[0]].decode(), self.vocab[pair[1]].decode())

    @property
    def done(self) -> bool:
        return not self.scores.any()

    def current_top_pairs(self, k: int) -> list[tuple[Pair, int]]:
        return [(self._pairs[key], self.pairs.counts[key]) for _, key in self.scores.best(k)]

    def step(self, force_pair: Pair | None = None, *, top_k: int = 0, max_ties: int | None = None) -> WordPieceStep:
        """Merge the best-scoring pair (or ``force_pair``) everywhere; the record has the scored pair table."""
        table = self.scores.best(max(top_k, 1) + (max_ties if max_ties is not None else 24))
        if force_pair is None:
            if not table:
                raise self.error("no pair is left to merge; training is complete")
            win_score, key = table[0]
            pair = self._pairs[key]
        else:
            pair = (int(force_pair[0]), int(force_pair[1]))
            key = self._key(pair)
            if key is None or not self.pairs.counts.get(key) or self.text_of_pair(pair) in self.texts:
                raise self.error(f"pair {pair} does not occur in the corpus now (or cannot be merged); pick one from the table")
            win_score = self.scores.score(key)
        tied = [self._pairs[k] for s, k in table if s == win_score and k != key]
        left_count, right_count = self.token_counts[pair[0]], self.token_counts[pair[1]]
        scored = [(self._pairs[k], self.pairs.counts[k], self.token_counts[self._pairs[k][0]],
                   self.token_counts[self._pairs[k][1]], -s) for s, k in table[:top_k]]
        text = self.text_of_pair(pair)
        record = super().step(force_pair=pair, max_ties=0)
        self.vocab[record.new_id] = text.encode()
        self.texts.add(text)
        record.ties = tied if max_ties is None else tied[:max_ties]
        record.forced = force_pair is not None
        record.top_pairs = [(p, c) for p, c, *_ in scored]
        record.score, record.left_count, record.right_count, record.scored = -win_score, left_count, right_count, scored
        self.tie_counts[-1] = len(tied)
        self._rescore(pair, record.new_id, record.replaced)
        return record

    def _rescore(self, pair: Pair, new_id: int, replaced: int) -> None:
        """After a merge: the parts lost ``replaced`` occurrences to the new piece; every pair holding a part or
        the new piece has a new score."""
        a, b = pair
        counts = self.token_counts
        counts[a] -= replaced
        counts[b] -= replaced
        counts.extend([0] * (new_id + 1 - len(counts)))
        counts[new_id] += replaced
        live = self.pairs.counts
        touched: set[str] = set()
        for token in {a, b}:
            keys = self.by_token.get(token, ())
            touched.update(keys)  # those merged away or refused too: rescoring drops their entries
            self.by_token[token] = {k for k in keys if k in live}
        for _, came, _ in self._changes:  # the pairs the merge made hold the new piece
            if came in live:
                x, y = self._pairs[came]
                self.by_token.setdefault(x, set()).add(came)
                self.by_token.setdefault(y, set()).add(came)
                touched.add(came)
        self._changes.clear()
        self.scores.rescore(touched)


def _noting(apply, note: list):
    """``PairCounts.apply`` that also keeps the changes in ``note`` (the state reads which pairs a merge made);
    the closure holds the list, not the state, so no reference cycle keeps a finished run alive."""

    def noted(merged, changes):
        note.extend(changes)
        apply(merged, note)

    return noted


def train_wordpiece(
    text: str, vocab_size: int, *, tie_break: str = "first", top_k: int = 0, max_ties: int | None = None
) -> tuple[WordPieceTrainerState, str]:
    """Train on ``text`` to ``vocab_size`` pieces (``[UNK]`` and the alphabet included); returns the state and
    its stop reason. ``top_k`` and ``max_ties`` size each step's scored table and tie list (as the lab asks)."""
    state = WordPieceTrainerState(*corpus_words(text), tie_break=tie_break)
    return state, run_merges(state, vocab_size - len(state.base_vocab), top_k=top_k, max_ties=max_ties)


def corpus_words(text: str) -> tuple[list[tuple[list[int], int]], dict[int, bytes]]:
    """The corpus's words as base ids (``[UNK]`` is 0; then each first character, then each ``##`` character, in
    code-point order), and the base vocabulary."""
    counts = word_counts(text)
    if not counts:
        raise TrainingError("the corpus has no words: WordPiece training needs some text")
    firsts = sorted({w[0] for w in counts})
    rest = sorted({c for w in counts for c in w[1:]})
    texts = [UNK] + firsts + [PREFIX + c for c in rest]
    ids = {t: i for i, t in enumerate(texts)}
    words = [([ids[w[0]]] + [ids[PREFIX + c] for c in w[1:]], n) for w, n in counts.items()]
    return words, {i: t.encode() for i, t in enumerate(texts)}


def tokenizer_json(vocab: dict[int, bytes]) -> str:
    """A Hugging Face ``tokenizer.json`` of the vocabulary (ids as given), with the pipeline the words came from."""
    return json.dumps(
        {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [{"id": 0, "content": UNK, "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True}],
            "normalizer": NORMALIZER,
            "pre_tokenizer": PRE_TOKENIZER,
            "post_processor": None,
            "decoder": {"type": "WordPiece", "prefix": PREFIX, "cleanup": True},
            "model": {"type": "WordPiece", "unk_token": UNK, "continuing_subword_prefix": PREFIX,
                      "max_input_chars_per_word": 100, "vocab": {b.decode(): i for i, b in sorted(vocab.items())}},
        },
        ensure_ascii=False,
    )
