"""The fast byte-level BPE trainer: one merge per step, every step recorded as data.

Training works on *words*: the distinct pre-tokens with how often each occurs, as sequences of integer ids
(stored as strings with one character per id, so finding and replacing a pair runs in C). A pair's count is
the sum over words of its occurrences (overlaps counted: ``aaa`` has two ``(a, a)``) times the word's
frequency. Each step merges the most frequent pair in every word that holds it, left to right, and updates
only what changed:

- ``where``: pair -> ids of words that may hold it (a superset; stale entries are dropped when met);
- ``buckets``: count -> pairs with that count; the top count never grows, so a pointer walks it down.

A merge costs Python work per occurrence and C work per character of the words it touches. With pattern
``none`` the whole corpus is one word, so every merge scans it in C (1 MB to 4096 tokens: about 10 s).

Ties (pairs with the same count) are broken by a rule the user picks, recorded in every step:

- ``first``: the pair seen first in corpus order, which is what the minimal Python implementations do
  (``max(stats, key=stats.get)`` over a dict filled chunk by chunk). Precisely, the key of a pair is
  (index of the first pre-token in the corpus that holds it now, position of its first occurrence there).
- ``lexical``: the smallest pair compared as byte strings, left then right.

Worked example, ``"ba ab ba ab"`` with pattern ``none``: ``(b, a)``, ``(a, " ")``, ``(" ", a)`` and ``(a, b)``
each occur twice. ``first`` merges ``(b, a)`` (it starts the text); ``lexical`` merges ``(" ", a)``, because
``b" " < b"a" < b"b"`` (left bytes first, right bytes only between equal lefts: ``(a, " ") < (a, b)``).

:class:`BPETrainerState` is the incremental trainer (the BPE lab's manual mode uses it directly, one
``step()`` at a time, possibly forcing a pair); :func:`train` runs it to a vocabulary size. The core works on
id sequences with a base vocabulary passed in, so a character-level variant only needs to map code points to
base ids. Nothing here prints or encodes new text; the reference implementation the tests hold this to is
``tests/bpe_reference.py``.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import pairwise

from ..base import check_text
from ..errors import TokenplayError
from ..steps import TIE_BREAKS, MergeStep, TrainResult
from .patterns import pattern_regex, pretokenize

Pair = tuple[int, int]

#: Default upper bound on ``vocab_size`` (``train(..., max_vocab_size=...)`` changes it).
MAX_VOCAB_SIZE = 100_000

#: Ids are stored as characters (``chr(id)``), so no id can pass the largest code point.
MAX_ID = 0x10FFFF

#: The byte-level base vocabulary: id ``i`` is the byte ``i``.
BYTE_VOCAB: dict[int, bytes] = {i: bytes([i]) for i in range(256)}

STOP_VOCAB_SIZE = "vocab_size reached"
STOP_NO_PAIR = "no pair occurs twice"


class BPETrainingError(TokenplayError):
    """A training request that cannot run (bad vocab size, unknown tie-break, a pair that is not there)."""


def check_tie_break(tie_break: str) -> str:
    """Return ``tie_break`` if it is a known rule, else raise: ``check_tie_break("first") == "first"``."""
    if tie_break not in TIE_BREAKS:
        raise BPETrainingError(f"unknown tie-break {tie_break!r}; choose one of: {', '.join(TIE_BREAKS)}")
    return tie_break


def check_vocab_size(vocab_size: int, base_size: int = 256, max_vocab_size: int = MAX_VOCAB_SIZE) -> int:
    """Return the number of merges for ``vocab_size``: ``check_vocab_size(300) == 44``; raise when out of range."""
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise BPETrainingError(f"vocab_size must be a whole number, got {vocab_size!r}")
    if vocab_size < base_size:
        raise BPETrainingError(
            f"vocab_size {vocab_size} is below the {base_size} base tokens (one per byte); "
            f"pass a vocab_size of at least {base_size}"
        )
    if vocab_size > min(max_vocab_size, MAX_ID + 1):
        raise BPETrainingError(
            f"vocab_size {vocab_size} is above the limit of {min(max_vocab_size, MAX_ID + 1)}; pass a smaller vocab_size "
            "or raise max_vocab_size"
        )
    return vocab_size - base_size


def vocab_from_merges(merges: Sequence[Pair], base: Mapping[int, bytes] = BYTE_VOCAB) -> dict[int, bytes]:
    """Id -> bytes, derived from the merges in order: ``vocab_from_merges([(97, 97)])[256] == b"aa"``."""
    vocab = dict(base)
    next_id = max(vocab) + 1 if vocab else 0
    for i, (a, b) in enumerate(merges):
        try:
            vocab[next_id + i] = vocab[a] + vocab[b]
        except KeyError:
            raise BPETrainingError(f"merge {i + 1} ({a}, {b}) uses an id that does not exist yet") from None
    return vocab


def words_from_text(
    text: str, pattern: str = "gpt4", special_tokens: Iterable[str] = ()
) -> list[tuple[list[int], int]]:
    """Distinct pre-tokens as byte-id lists with counts, in first-seen order.

    >>> words_from_text("ab ab", "gpt2")
    [([97, 98], 1), ([32, 97, 98], 1)]
    """
    check_text(text)
    counts = Counter(pretokenize(text, pattern_regex(pattern), special_tokens))
    return [(list(chunk.encode("utf-8")), n) for chunk, n in counts.items()]


def find_pair(ids: Sequence[int], a: int, b: int, start: int = 0) -> int:
    """Index of the first ``(a, b)`` at or after ``start``, or -1: ``find_pair([1, 2, 1, 3], 1, 3) == 2``."""
    n = len(ids) - 1
    i = start - 1
    index = ids.index
    try:
        while True:
            i = index(a, i + 1, n)
            if ids[i + 1] == b:
                return i
    except ValueError:
        return -1


def merge_ids(ids: Sequence[int], pair: Pair, new_id: int) -> list[int]:
    """Replace every ``pair`` left to right, without overlaps: ``merge_ids([1, 1, 1], (1, 1), 9) == [9, 1]``."""
    a, b = pair
    out: list[int] = []
    i, n = 0, len(ids)
    while i < n:
        if i + 1 < n and ids[i] == a and ids[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


class BPETrainerState:
    """A BPE training run in progress: call :meth:`step` to merge once (the lab's manual mode).

    ``words`` is a list of ``(ids, count)`` in corpus order (first-seen order decides ``first`` ties);
    ``base_vocab`` maps every id the words use to its bytes (default: the 256 bytes). New ids follow the
    largest base id.
    """

    def __init__(
        self,
        words: Iterable[tuple[Sequence[int], int]],
        base_vocab: Mapping[int, bytes] = BYTE_VOCAB,
        *,
        tie_break: str = "first",
    ):
        self.tie_break = check_tie_break(tie_break)
        self.base_vocab = dict(base_vocab)
        self.vocab: dict[int, bytes] = dict(base_vocab)
        self.next_id = max(self.vocab) + 1 if self.vocab else 0
        self.merges: list[Pair] = []
        self.steps: list[MergeStep] = []
        self._words: list[str] = []  # one character per id: chr(id)
        self.freqs: list[int] = []
        counts: Counter[Pair] = Counter()
        where: defaultdict[Pair, set[int]] = defaultdict(set)
        n_tokens = 0
        vocab_keys = self.vocab.keys()
        for w, (ids, freq) in enumerate(words):
            ids = list(ids)
            if freq < 1:
                raise BPETrainingError(f"word {w} has count {freq}; counts must be at least 1")
            if not vocab_keys >= set(ids):
                unknown = sorted(set(ids) - vocab_keys)
                raise BPETrainingError(f"word {w} uses ids {unknown[:5]} that the base vocabulary lacks")
            try:
                self._words.append(bytes(ids).decode("latin-1"))  # ids < 256: the fast way to chr() each
            except ValueError:
                self._words.append("".join(map(chr, ids)))
            self.freqs.append(freq)
            n_tokens += len(ids) * freq
            pairs = list(pairwise(ids))
            if freq == 1:
                counts.update(pairs)
            else:
                for p, c in Counter(pairs).items():
                    counts[p] += c * freq
            for p in set(pairs):
                where[p].add(w)
        counts = dict(counts)
        self.counts = counts
        self.where = where
        self._version = [0] * len(self._words)  # bumped when a word is rewritten
        self._key_cache: dict[Pair, tuple[int, int, int, tuple[int, int]]] = {}  # w, pos, version, key
        self.buckets: dict[int, set[Pair]] = {}
        for p, c in counts.items():
            self.buckets.setdefault(c, set()).add(p)
        self.max_count = max(counts.values(), default=0)
        self.initial_tokens = n_tokens
        self.n_tokens = n_tokens

    @classmethod
    def from_text(
        cls, text: str, pattern: str = "gpt4", *, special_tokens: Iterable[str] = (), tie_break: str = "first"
    ) -> BPETrainerState:
        """A byte-level run on ``text`` cut by the named pre-tokenizer (special-token text left out)."""
        return cls(words_from_text(text, pattern, special_tokens), BYTE_VOCAB, tie_break=tie_break)

    @property
    def words(self) -> list[list[int]]:
        """The current words as id lists (built on demand: for inspection and tests)."""
        return [list(map(ord, w)) for w in self._words]

    def word(self, w: int) -> list[int]:
        return list(map(ord, self._words[w]))

    # -- ordering ----------------------------------------------------------------------------------------
    def _first_key(self, pair: Pair) -> tuple[int, int]:
        """(first word holding ``pair``, position there): smaller means seen earlier in the corpus.

        Cached: a pair only ever leaves words (new pairs always hold the newest id), so the cached first
        word stays first for as long as that word is not rewritten (tracked by ``_version``).
        """
        cached = self._key_cache.get(pair)
        if cached is not None and self._version[cached[0]] == cached[2]:
            return cached[3]
        a, b = pair
        cands = self.where.get(pair)
        while cands:
            w = min(cands)
            i = self._words[w].find(chr(a) + chr(b))
            if i >= 0:
                key = (w, i)
                self._key_cache[pair] = (w, i, self._version[w], key)
                return key
            cands.discard(w)  # stale entry
        raise AssertionError(f"pair {pair} has a count but no word holds it")

    def tie_key(self, pair: Pair):
        """Sort key among pairs with equal counts under the run's tie-break rule (smaller wins)."""
        if self.tie_break == "lexical":
            return (self.vocab[pair[0]], self.vocab[pair[1]])
        return self._first_key(pair)

    def _ranked(self, pairs: Iterable[Pair]) -> list[Pair]:
        """``pairs`` in tie-break order (the same order :meth:`tie_key` gives, with the cache inlined)."""
        pairs = list(pairs)
        if len(pairs) > 1:
            if self.tie_break == "lexical":
                pairs.sort(key=self.tie_key)
            else:
                cache_get, version, slow = self._key_cache.get, self._version, self._first_key

                def key(pair: Pair) -> tuple[int, int]:
                    cached = cache_get(pair)
                    if cached is not None and version[cached[0]] == cached[2]:
                        return cached[3]
                    return slow(pair)

                pairs.sort(key=key)
        return pairs

    def _first_ranked(self, pairs, limit: int | None) -> list[Pair]:
        """The first ``limit + 1`` of ``pairs`` in tie-break order (all of them when ``limit`` is None)."""
        if limit is None or len(pairs) <= limit + 1:
            return self._ranked(pairs)
        return heapq.nsmallest(limit + 1, pairs, key=self.tie_key)

    def _top_count(self) -> int:
        c, buckets = self.max_count, self.buckets
        while c > 0 and not buckets.get(c):
            c -= 1
        self.max_count = c
        return c

    # -- queries -----------------------------------------------------------------------------------------
    def pair_count(self, pair: Pair) -> int:
        return self.counts.get(tuple(pair), 0)

    def best_pair(self) -> Pair | None:
        """The pair the next automatic step merges, or ``None`` when no pair occurs twice."""
        c = self._top_count()
        if c < 2:
            return None
        return self._ranked(self.buckets[c])[0]

    @property
    def done(self) -> bool:
        return self._top_count() < 2

    def current_top_pairs(self, k: int) -> list[tuple[Pair, int]]:
        """The ``k`` most frequent pairs with their counts, in the order the winner is chosen."""
        out: list[tuple[Pair, int]] = []
        c = self._top_count()
        while c >= 1 and len(out) < k:
            bucket = self.buckets.get(c)
            if bucket:
                need = k - len(out)
                chosen = (
                    self._ranked(bucket) if len(bucket) <= need else heapq.nsmallest(need, bucket, key=self.tie_key)
                )
                out.extend((p, c) for p in chosen)
            c -= 1
        return out

    # -- one merge ---------------------------------------------------------------------------------------
    def step(self, force_pair: Pair | None = None, *, top_k: int = 0, max_ties: int | None = None) -> MergeStep:
        """Merge the winning pair (or ``force_pair``) everywhere and return the step's record.

        ``top_k`` > 0 records the k most frequent pairs before the merge; ``max_ties`` keeps only the first
        ties (in tie-break order) in the record, which bounds memory on large corpora (default: all).
        """
        if force_pair is None:
            count = self._top_count()
            if count < 2:
                raise BPETrainingError("no pair occurs twice; training is complete (pass force_pair to merge anyway)")
            tied = self._first_ranked(self.buckets[count], max_ties)
            pair, ties = tied[0], tied[1:]
        else:
            pair = (int(force_pair[0]), int(force_pair[1]))
            count = self.counts.get(pair, 0)
            if count < 1:
                raise BPETrainingError(
                    f"pair {pair} does not occur in the corpus now; pick one from current_top_pairs()"
                )
            others = [p for p in self.buckets[count] if p != pair]
            ties = self._first_ranked(others, max_ties) if others else []
            if max_ties is not None:
                ties = ties[:max_ties]
        top = self.current_top_pairs(top_k) if top_k > 0 else []
        new_id = self.next_id
        if new_id > MAX_ID:
            raise BPETrainingError(f"no more ids: the trainer stores ids as characters, at most {MAX_ID}")
        replaced = self._merge(pair, new_id)
        self.next_id += 1
        self.vocab[new_id] = self.vocab[pair[0]] + self.vocab[pair[1]]
        self.merges.append(pair)
        record = MergeStep(
            step=len(self.merges),
            pair=pair,
            left=self.vocab[pair[0]],
            right=self.vocab[pair[1]],
            new_id=new_id,
            count=count,
            replaced=replaced,
            ties=ties,
            corpus_tokens=self.n_tokens,
            tie_break=self.tie_break,
            forced=force_pair is not None,
            top_pairs=top,
        )
        self.steps.append(record)
        return record

    def _merge(self, pair: Pair, new_id: int) -> int:
        """Apply one merge to every word holding ``pair``; update counts, buckets and ``where``.

        Words are strings with one character per id, so finding and replacing a pair runs in C
        (``str.find``/``str.replace`` go left to right without overlaps, as BPE does); Python only loops over
        the occurrences. For each occurrence ``.. L a b R ..`` becoming ``.. L X R ..``, ``(L, a)`` and
        ``(b, R)`` lose and ``(L, X)`` and ``(X, R)`` gain; between two occurrences (``a b a b``) the old
        ``(b, a)`` goes once and ``(X, X)`` comes once.
        """
        a, b = pair
        X = new_id
        ab, x = chr(a) + chr(b), chr(X)
        words, freqs, where, version = self._words, self.freqs, self.where, self._version
        delta: defaultdict[Pair, int] = defaultdict(int)
        replaced = 0
        for w in where.pop(pair, ()):
            t = words[w]
            i = t.find(ab)
            if i < 0:
                continue  # stale entry
            f = freqs[w]
            j = t.find(ab, i + 2)
            if j < 0:  # the common case: one occurrence
                words[w] = t[:i] + x + t[i + 2 :]
                version[w] += 1
                replaced += f
                if i:
                    left = ord(t[i - 1])
                    delta[(left, a)] -= f
                    p = (left, X)
                    delta[p] += f
                    where[p].add(w)
                if i + 2 < len(t):
                    right = ord(t[i + 2])
                    delta[(b, right)] -= f
                    p = (X, right)
                    delta[p] += f
                    where[p].add(w)
                continue
            found = [i, j]
            find = t.find
            while True:
                j = find(ab, j + 2)
                if j < 0:
                    break
                found.append(j)
            out = t.replace(ab, x)
            words[w] = out
            version[w] += 1
            n_found = len(found)
            replaced += f * n_found
            m = len(out)
            for shift, i in enumerate(found):
                k = i - shift  # position of X in the new word
                if k:
                    left_c = out[k - 1]
                    left = ord(left_c)
                    if left_c != x:  # else (b, a) was removed by the previous occurrence
                        delta[(left, a)] -= f
                    p = (left, X)
                    delta[p] += f
                    where[p].add(w)
                if k + 1 < m:
                    right_c = out[k + 1]
                    if right_c != x:
                        right = ord(right_c)
                        delta[(b, right)] -= f
                        p = (X, right)
                        delta[p] += f
                        where[p].add(w)
                    else:  # the old pair between two occurrences; (X, X) is added by the next one
                        delta[(b, a)] -= f
        delta[pair] -= replaced
        counts, buckets, key_cache = self.counts, self.buckets, self._key_cache
        for p, d in delta.items():
            if not d:
                continue
            old = counts.get(p, 0)
            new = old + d
            if old:
                buckets[old].discard(p)
            if new > 0:
                counts[p] = new
                bucket = buckets.get(new)
                if bucket is None:
                    buckets[new] = {p}
                else:
                    bucket.add(p)
                self.max_count = max(self.max_count, new)
            else:
                counts.pop(p, None)
                where.pop(p, None)
                key_cache.pop(p, None)
        self.n_tokens -= replaced
        return replaced

    def result(self, stop_reason: str) -> TrainResult:
        return TrainResult(
            merges=list(self.merges),
            vocab=vocab_from_merges(self.merges, self.base_vocab),
            steps=list(self.steps),
            stop_reason=stop_reason,
            initial_tokens=self.initial_tokens,
        )


ProgressFn = Callable[[int, int, MergeStep], None]


def run(
    state: BPETrainerState,
    n_merges: int,
    *,
    top_k: int = 0,
    max_ties: int | None = None,
    progress: ProgressFn | None = None,
) -> TrainResult:
    """Step ``state`` until it has ``n_merges`` merges or no pair occurs twice."""
    while len(state.merges) < n_merges:
        if state.done:
            return state.result(STOP_NO_PAIR)
        record = state.step(top_k=top_k, max_ties=max_ties)
        if progress is not None:
            progress(record.step, n_merges, record)
    return state.result(STOP_VOCAB_SIZE)


def train(
    text: str,
    vocab_size: int,
    pattern: str = "gpt4",
    special_tokens: Iterable[str] = (),
    tie_break: str = "first",
    *,
    top_k: int = 0,
    max_ties: int | None = None,
    max_vocab_size: int = MAX_VOCAB_SIZE,
    progress: ProgressFn | None = None,
) -> TrainResult:
    """Train byte-level BPE on ``text`` up to ``vocab_size`` (256 bytes + merges; special tokens come after).

    ``pattern`` is ``none``, ``gpt2``, ``gpt4`` or ``o200k``; special-token text is cut out of the corpus so
    no merge learns it. ``top_k`` > 0 records the k most frequent pairs before each merge; ``max_ties`` keeps
    only that many ties per record (all by default: on corpora of many MB the tie lists of late, low-count
    steps hold hundreds of pairs each). ``progress`` is called after each merge with
    ``(step, total_merges, record)``.
    """
    n_merges = check_vocab_size(vocab_size, 256, max_vocab_size)
    state = BPETrainerState.from_text(text, pattern, special_tokens=special_tokens, tie_break=tie_break)
    return run(state, n_merges, top_k=top_k, max_ties=max_ties, progress=progress)


def train_words(
    words: Iterable[tuple[Sequence[int], int]],
    vocab_size: int,
    base_vocab: Mapping[int, bytes] = BYTE_VOCAB,
    tie_break: str = "first",
    *,
    top_k: int = 0,
    max_ties: int | None = None,
    max_vocab_size: int = MAX_VOCAB_SIZE,
    progress: ProgressFn | None = None,
) -> TrainResult:
    """Train on words given as id sequences with counts over ``base_vocab`` (e.g. one id per character)."""
    n_merges = check_vocab_size(vocab_size, len(base_vocab), max_vocab_size)
    state = BPETrainerState(words, base_vocab, tie_break=tie_break)
    return run(state, n_merges, top_k=top_k, max_ties=max_ties, progress=progress)
