"""Train a SentencePiece-style BPE model on a corpus, one merge per step, every step recorded as data.

What it does, in the order SentencePiece does it:

1. Each line of the corpus is a sentence. It is normalized as our saved models say (``identity``: no Unicode
   rewriting, spaces kept as they are): the dummy prefix ``▁`` is put in front if asked, and every space
   becomes ``▁``. Sentences are cut into words before each ``▁`` (``"▁the▁▁cat"`` -> ``▁the``, ``▁``, ``▁cat``),
   so no piece ever holds a ``▁`` after another character.
2. The base vocabulary is code points, not bytes: ``<unk>``, ``<s>``, ``</s>``, then the 256 ``<0xNN>`` pieces
   when byte fallback is on, then the characters, most frequent first, until ``character_coverage`` of all
   character occurrences is covered. Rarer characters (and NUL, which a ``.model`` cannot hold) stay out: they
   never merge, and at encoding time they become byte pieces (byte fallback) or ``<unk>``.
3. Each step merges the most frequent adjacent pair of pieces (counted over distinct words times their
   frequency, overlaps counted) everywhere, left to right, and records a :class:`~app.engines.steps.MergeStep`
   (``left``/``right`` are the UTF-8 of the two pieces). Ties follow the same rules as the byte-level trainer:
   ``first`` (the pair held by the earliest word of the corpus, then leftmost there) or ``lexical``. Pieces are
   at most ``max_piece_length`` characters, and a pair whose text is already a piece is never merged again.
4. Training stops when the vocabulary reaches ``vocab_size`` or when no pair occurs twice. The second case is
   how a small classroom corpus ends: SentencePiece itself fails with "Vocabulary size too high"; we stop at
   the size reached and say so in ``TrainResult.stop_reason``.

The result saves as a real ``.model`` file (BPE ``ModelProto``, ``identity`` normalizer): merge number ``k``
(from 0) gets score ``-k``, so the ``sentencepiece`` library and our engine both encode with it identically.
Ids: specials, bytes, characters, then merges in order, so merge ``i`` creates id ``base_size + i``.

This module does not print, does not split by Unicode script or digits (SentencePiece's trainer does by
default), does not sample sentences and does not train unigram models.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..base import check_text
from ..errors import TokenplayError
from ..steps import TIE_BREAKS, MergeStep, TrainResult
from .model import SentencePieceTokenizer, byte_piece
from .normalizer import SPACE_SYMBOL
from .proto import BPE, BYTE, CONTROL, NORMAL, UNKNOWN, ModelProto, NormalizerSpec, Piece, TrainerSpec

Pair = tuple[int, int]

STOP_VOCAB_SIZE = "vocab_size reached"
STOP_NO_PAIR = "no pair occurs twice"
MAX_VOCAB_SIZE = 100_000
META_PIECES: tuple[tuple[str, int], ...] = (("<unk>", UNKNOWN), ("<s>", CONTROL), ("</s>", CONTROL))

_WORDS = re.compile(f"{SPACE_SYMBOL}[^{SPACE_SYMBOL}\\n]*|[^{SPACE_SYMBOL}\\n]+")


class SentencePieceTrainingError(TokenplayError):
    """A training request that cannot run (empty corpus, vocab size too small or too large, a bad pair)."""


def normalize_corpus(text: str, add_dummy_prefix: bool = True) -> list[str]:
    """The corpus as normalized sentences (one per non-empty line), as the saved model will normalize text.

    >>> normalize_corpus("Hello world\\n\\n  two")
    ['▁Hello▁world', '▁▁▁two']
    """
    prefix = SPACE_SYMBOL if add_dummy_prefix else ""
    return [prefix + line for line in text.replace(" ", SPACE_SYMBOL).split("\n") if line]


def split_words(normalized: str) -> list[str]:
    """Cut a normalized sentence before every ``▁`` (SentencePiece's ``split_by_whitespace``).

    >>> split_words("▁the▁▁cat")
    ['▁the', '▁', '▁cat']
    """
    return _WORDS.findall(normalized)


def count_words(sentences: list[str]) -> Counter:
    """Distinct words (see :func:`split_words`) with their counts, in first-seen order.

    >>> count_words(["▁a▁b", "▁a▁▁c"])
    Counter({'▁a': 2, '▁b': 1, '▁': 1, '▁c': 1})
    """
    return Counter(_WORDS.findall("\n".join(sentences)))


def count_chars(word_counts: Counter) -> Counter:
    """Character occurrences over the corpus, from its distinct words (cheaper than counting the whole text).

    >>> count_chars(Counter({"▁ab": 2, "▁b": 1}))
    Counter({'▁': 3, 'b': 3, 'a': 2})
    """
    chars = Counter("".join(word_counts))
    for w, f in word_counts.items():
        if f > 1:
            for c in w:
                chars[c] += f - 1
    return chars


def required_chars(counts: Counter, coverage: float) -> list[str]:
    """Characters kept in the base vocabulary, most frequent first (ties by code point), until ``coverage`` of
    all occurrences is covered (SentencePiece's rule: add while the covered share is below ``coverage``).

    >>> required_chars(Counter("aaaaaaaaab"), 0.9)
    ['a']
    >>> required_chars(Counter("aaaaaaaaab"), 1.0)
    ['a', 'b']
    """
    total = sum(counts.values())
    kept: list[str] = []
    covered = 0
    for ch, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if total and covered / total >= coverage:
            break
        covered += n
        kept.append(ch)
    return kept


def _find_pair(ids: list[int], a: int, b: int, start: int = 0) -> int:
    """Index of the first ``(a, b)`` at or after ``start``, or -1: ``_find_pair([1, 2, 1, 3], 1, 3) == 2``."""
    n = len(ids) - 1
    i = start
    while i < n:
        try:
            i = ids.index(a, i, n)
        except ValueError:
            return -1
        if ids[i + 1] == b:
            return i
        i += 1
    return -1


@dataclass
class TrainedSentencePiece:
    """A trained vocabulary with the options it was trained with; saves as a real ``.model`` file."""

    pieces: list[Piece]
    byte_fallback: bool = True
    add_dummy_prefix: bool = True
    character_coverage: float = 1.0
    max_piece_length: int = 16
    requested_vocab_size: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def to_proto(self) -> ModelProto:
        trainer = TrainerSpec(
            model_prefix="tokenplay",
            model_type=BPE,
            vocab_size=len(self.pieces),
            character_coverage=self.character_coverage,
            max_sentencepiece_length=self.max_piece_length,
            split_by_unicode_script=False,
            split_by_number=False,
            split_by_whitespace=True,
            treat_whitespace_as_suffix=False,
            byte_fallback=self.byte_fallback,
            num_threads=1,
            unk_id=0,
            bos_id=1,
            eos_id=2,
            pad_id=-1,
            hard_vocab_limit=True,
        )
        normalizer = NormalizerSpec(
            name="identity",
            precompiled_charsmap=b"",
            add_dummy_prefix=self.add_dummy_prefix,
            remove_extra_whitespaces=False,
            escape_whitespaces=True,
        )
        return ModelProto([Piece(p.piece, p.score, p.type) for p in self.pieces], trainer, normalizer)

    def serialize(self) -> bytes:
        return self.to_proto().serialize()

    def save(self, path: str | Path) -> Path:
        """Write the ``.model`` file (``sentencepiece.SentencePieceProcessor(model_file=path)`` loads it)."""
        path = Path(path)
        path.write_bytes(self.serialize())
        return path

    def tokenizer(self, name: str = "") -> SentencePieceTokenizer:
        """Our engine running this model (same ids as ``sentencepiece`` on the saved file)."""
        return SentencePieceTokenizer(self.to_proto(), name=name)


class SentencePieceTrainerState:
    """A SentencePiece-style BPE training run in progress; :meth:`step` merges once (the lab's manual mode).

    >>> state = SentencePieceTrainerState("low lower lowest", 300, byte_fallback=False)
    >>> step = state.step()
    >>> step.left.decode(), step.right.decode(), step.count
    ('▁', 'l', 3)
    """

    def __init__(
        self,
        text: str,
        vocab_size: int,
        *,
        byte_fallback: bool = True,
        add_dummy_prefix: bool = True,
        character_coverage: float = 1.0,
        tie_break: str = "first",
        max_piece_length: int = 16,
    ):
        check_text(text)
        if tie_break not in TIE_BREAKS:
            raise SentencePieceTrainingError(f"unknown tie-break {tie_break!r}; choose one of: {', '.join(TIE_BREAKS)}")
        if not 0.0 < character_coverage <= 1.0:
            raise SentencePieceTrainingError(
                f"character_coverage must be in (0, 1], got {character_coverage}; 1.0 keeps every character"
            )
        if max_piece_length < 2:
            raise SentencePieceTrainingError(f"max_piece_length must be at least 2, got {max_piece_length}")
        if not isinstance(vocab_size, int) or vocab_size > MAX_VOCAB_SIZE:
            raise SentencePieceTrainingError(
                f"vocab_size must be an integer up to {MAX_VOCAB_SIZE}, got {vocab_size!r}"
            )
        self.tie_break = tie_break
        self.byte_fallback = byte_fallback
        self.add_dummy_prefix = add_dummy_prefix
        self.character_coverage = character_coverage
        self.max_piece_length = max_piece_length
        self.requested_vocab_size = vocab_size

        sentences = normalize_corpus(text, add_dummy_prefix)
        if not sentences:
            raise SentencePieceTrainingError("the corpus is empty; give some text to train on")
        word_counts = count_words(sentences)
        char_counts = count_chars(word_counts)
        # NUL can never be a piece (sentencepiece refuses to load one); it is always left to byte fallback/<unk>
        chars = required_chars(Counter({c: n for c, n in char_counts.items() if c != "\x00"}), character_coverage)
        self.unknown_chars = sorted(set(char_counts) - set(chars))

        pieces: list[Piece] = [Piece(p, 0.0, t) for p, t in META_PIECES]
        if byte_fallback:
            pieces.extend(Piece(byte_piece(b), 0.0, BYTE) for b in range(256))
        self.n_special = len(META_PIECES)
        self.char_start = len(pieces)
        pieces.extend(Piece(c, 0.0, NORMAL) for c in chars)
        self.base_size = len(pieces)
        if vocab_size < self.base_size:
            parts = f"{self.n_special} special" + (" + 256 byte" if byte_fallback else "")
            parts += f" + {len(chars)} character"
            raise SentencePieceTrainingError(
                f"vocab_size {vocab_size} is smaller than the base vocabulary ({parts} pieces = {self.base_size}); "
                f"use at least {self.base_size}, or lower character_coverage to leave rare characters out"
            )
        self.pieces = pieces
        self.texts: list[str] = [p.piece for p in pieces]
        self.surfaces: list[bytes] = [t.encode("utf-8") for t in self.texts]
        self.lengths: list[int] = [len(t) for t in self.texts]
        self.known: dict[str, int] = {}
        for i, p in enumerate(pieces):
            self.known.setdefault(p.piece, i)
        char_id = {c: self.char_start + i for i, c in enumerate(chars)}

        self.words: list[list[int]] = []
        self.freqs: list[int] = []
        n_tokens = 0
        char_id.update((c, -1) for c in self.unknown_chars)
        to_id = char_id.__getitem__
        for w, f in word_counts.items():
            ids = list(map(to_id, w))
            self.words.append(ids)
            self.freqs.append(f)
            n_tokens += len(ids) * f
        self.initial_tokens = n_tokens
        self.n_tokens = n_tokens
        self.merges: list[Pair] = []
        self.steps: list[MergeStep] = []
        self.stop_reason: str | None = None

        # pair -> words that hold or held it (appended, so stale or repeated entries are skipped when met);
        # one entry per occurrence, so a pair's count is the sum of its entries' word frequencies
        where: dict[Pair, list[int]] = {}
        wget = where.get
        for w, ids in enumerate(self.words):
            for p in zip(ids, ids[1:]):
                s = wget(p)
                if s is None:
                    where[p] = [w]
                else:
                    s.append(w)
        if self.unknown_chars:  # base pieces are single characters, so only unknown characters make bad pairs
            for p in [p for p in where if p[0] < 0 or p[1] < 0]:
                del where[p]
        freq = self.freqs.__getitem__
        counts: dict[Pair, int] = {p: sum(map(freq, ws)) for p, ws in where.items()}
        self.counts = counts
        self.where = where
        self.buckets: dict[int, set[Pair]] = {}
        for p, c in counts.items():
            self.buckets.setdefault(c, set()).add(p)
        self.max_count = max(counts.values(), default=0)
        self.banned: set[Pair] = set()
        self.versions: list[int] = [0] * len(self.words)
        self._key_cache: dict[Pair, tuple[tuple[int, int], int]] = {}  # pair -> ((word, position), version)
        self._rank_cache: list[Pair] | None = None  # the top bucket ranked, while it is unchanged
        self._rank_count = -1

    # -- facts ---------------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def piece(self, token_id: int) -> str:
        return self.texts[token_id]

    def pair_count(self, pair: Pair) -> int:
        return self.counts.get((int(pair[0]), int(pair[1])), 0)

    def _ban(self, pair: Pair) -> None:
        """A pair whose text is already a piece (a second way to spell it): never merge it."""
        c = self.counts.pop(pair, 0)
        if c:
            self.buckets[c].discard(pair)
            if c == self._rank_count:
                self._rank_cache = None
        self.where.pop(pair, None)
        self.banned.add(pair)

    def _ban_spellings(self, text: str) -> None:
        """Ban the pairs of existing pieces that spell ``text`` (just made a piece). Pairs made later are checked
        when they are ranked."""
        known = self.known
        for k in range(1, len(text)):
            left, right = known.get(text[:k]), known.get(text[k:])
            if left is not None and right is not None and (left, right) in self.counts:
                self._ban((left, right))

    def _top_count(self) -> int:
        c, buckets = self.max_count, self.buckets
        while c > 0 and not buckets.get(c):
            c -= 1
        self.max_count = c
        return c

    def _first_key(self, pair: Pair) -> tuple[int, int]:
        """(first word holding ``pair`` now, position there). Cached per pair until that word changes: a pair
        that already exists never appears in a new word (merges only create pairs with the new piece)."""
        cached = self._key_cache.get(pair)
        if cached is not None and self.versions[cached[0][0]] == cached[1]:
            return cached[0]
        a, b = pair
        cands = self.where.get(pair)
        while cands:
            w = min(cands)
            i = _find_pair(self.words[w], a, b)
            if i >= 0:
                key = (w, i)
                self._key_cache[pair] = (key, self.versions[w])
                return key
            cands[:] = [x for x in cands if x != w]  # a stale entry (the word lost the pair)
        raise AssertionError(f"pair {pair} has a count but no word holds it")

    def tie_key(self, pair: Pair):
        """Sort key among pairs with equal counts under the run's tie-break rule (smaller wins)."""
        if self.tie_break == "lexical":
            return (self.surfaces[pair[0]], self.surfaces[pair[1]])
        return self._first_key(pair)

    def _ranked(self, pairs: Iterable[Pair]) -> list[Pair]:
        pairs = list(pairs)
        if len(pairs) <= 1:
            return pairs
        if self.tie_break == "lexical":
            surfaces = self.surfaces
            pairs.sort(key=lambda p: (surfaces[p[0]], surfaces[p[1]]))
            return pairs
        cache, versions, first_key = self._key_cache, self.versions, self._first_key
        keyed = []
        for p in pairs:
            c = cache.get(p)
            keyed.append((c[0] if c is not None and versions[c[0][0]] == c[1] else first_key(p), p))
        keyed.sort()
        return [p for _, p in keyed]

    def _winner(self) -> tuple[Pair, list[Pair]] | None:
        """The automatic winner and the pairs tied with it, or ``None`` when no pair occurs twice. A pair
        that spells an existing piece (possible once pieces overlap) is banned on the way."""
        while True:
            c = self._top_count()
            if c < 2:
                return None
            if self._rank_cache is not None and self._rank_count == c:
                ranked = self._rank_cache
            else:
                ranked = [p for p in self._ranked(self.buckets[c]) if not self._spells_piece(p)]
                # kept while the bucket only loses its winners (ties keep their order: see _merge)
                self._rank_cache, self._rank_count = ranked, c
            if ranked:
                return ranked[0], ranked[1:]

    def _spells_piece(self, pair: Pair) -> bool:
        """True (and the pair is banned) when the pair's text is already a piece."""
        if self.texts[pair[0]] + self.texts[pair[1]] in self.known:
            self._ban(pair)
            return True
        return False

    def best_pair(self) -> Pair | None:
        """The pair the next automatic step merges, or ``None`` when no pair occurs twice."""
        won = self._winner()
        return won[0] if won else None

    def current_top_pairs(self, k: int) -> list[tuple[Pair, int]]:
        """The ``k`` most frequent pairs with their counts, in the order the winner is chosen."""
        out: list[tuple[Pair, int]] = []
        c = self._top_count()
        while c >= 1 and len(out) < k:
            bucket = [p for p in list(self.buckets.get(c, ())) if not self._spells_piece(p)]
            if bucket:
                need = k - len(out)
                if len(bucket) <= need:
                    ranked = self._ranked(bucket)
                else:
                    ranked = heapq.nsmallest(need, bucket, key=self.tie_key)
                out.extend((p, c) for p in ranked)
            c -= 1
        return out

    @property
    def done(self) -> bool:
        return self.vocab_size >= self.requested_vocab_size or self.best_pair() is None

    def finish_reason(self) -> str:
        """Why training stops here (the text ``TrainResult.stop_reason`` carries)."""
        if self.vocab_size >= self.requested_vocab_size:
            return STOP_VOCAB_SIZE
        return (
            f"{STOP_NO_PAIR}: stopped at {self.vocab_size} of the {self.requested_vocab_size} pieces asked for; "
            "the corpus is too small for that vocab_size (add text or ask for fewer pieces)"
        )

    # -- one merge -------------------------------------------------------------------------------------------
    def step(self, force_pair: Pair | None = None, *, top_k: int = 0) -> MergeStep:
        """Merge the winning pair (or ``force_pair``, the lab's "merge this next") and return the step record."""
        return self._step(force_pair, top_k, None)

    def _step(self, force_pair: Pair | None, top_k: int, won: tuple[Pair, list[Pair]] | None) -> MergeStep:
        if self.vocab_size >= self.requested_vocab_size:
            raise SentencePieceTrainingError(
                f"the vocabulary already has {self.vocab_size} pieces (vocab_size); training is complete"
            )
        top = self.current_top_pairs(top_k) if top_k > 0 else []
        if force_pair is None:
            if won is None:
                won = self._winner()
            if won is None:
                raise SentencePieceTrainingError(
                    "no pair occurs twice; training is complete (pass force_pair to merge a pair anyway)"
                )
            pair, ties = won
            count = self.counts[pair]
        else:
            pair = (int(force_pair[0]), int(force_pair[1]))
            count = self.counts.get(pair, 0)
            if count < 1:
                raise SentencePieceTrainingError(
                    f"pair {pair} does not occur in the corpus now (or cannot be merged); "
                    "pick one from current_top_pairs()"
                )
            text = self.texts[pair[0]] + self.texts[pair[1]]
            if text in self.known:
                raise SentencePieceTrainingError(
                    f"pair {pair} spells {text!r}, which is already piece {self.known[text]}; pick another pair"
                )
            ties = [p for p in self._ranked(self.buckets[count]) if p != pair]
        new_id = len(self.pieces)
        text = self.texts[pair[0]] + self.texts[pair[1]]
        self.pieces.append(Piece(text, 0.0, NORMAL))
        self.texts.append(text)
        self.surfaces.append(text.encode("utf-8"))
        self.lengths.append(len(text))
        self.known[text] = new_id
        replaced = self._merge(pair, new_id)
        self._ban_spellings(text)
        self.merges.append(pair)
        record = MergeStep(
            step=len(self.merges),
            pair=pair,
            left=self.surfaces[pair[0]],
            right=self.surfaces[pair[1]],
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
        """Merge ``pair`` in every word holding it, left to right; only the pairs next to each merge change, so
        counts, buckets and ``where`` are updated from those neighbours alone."""
        a, b = pair
        X = new_id
        words, freqs, where, versions = self.words, self.freqs, self.where, self.versions
        delta: dict[Pair, int] = {}
        get = delta.get
        replaced = 0
        for w in set(where.pop(pair, ())):  # a word is listed once per occurrence; visit it once
            ids = words[w]
            ca = ids.count(a)
            if not ca:
                continue  # a stale entry: the word no longer holds the pair
            n = len(ids)
            last = n - 1
            f = freqs[w]
            if ca == 1:  # the common case: one occurrence at most
                i = ids.index(a)
                if i == last or ids[i + 1] != b:
                    continue
                if i:
                    left = ids[i - 1]
                    q = (left, a)
                    delta[q] = get(q, 0) - f
                    p = (left, X)
                    delta[p] = get(p, 0) + f
                    s = where.get(p)
                    if s is None:
                        where[p] = [w]
                    else:
                        s.append(w)
                if i + 2 < n:
                    r = ids[i + 2]
                    q = (b, r)
                    delta[q] = get(q, 0) - f
                    p = (X, r)
                    delta[p] = get(p, 0) + f
                    s = where.get(p)
                    if s is None:
                        where[p] = [w]
                    else:
                        s.append(w)
                ids[i : i + 2] = (X,)
                versions[w] += 1
                replaced += f
                continue
            # jump from one ``a`` to the next (C-level index); ``seen`` counts them, so no search runs dry
            seen = 0
            i = -1
            j = 0
            while seen < ca:
                j = ids.index(a, j)
                seen += 1
                if j < last and ids[j + 1] == b:
                    i = j
                    break
                j += 1
            if i < 0:
                continue
            new = ids[:i]
            start = i
            rep = 0
            created: list[Pair] = []
            while True:
                if new:
                    if rep and i == start:  # right after another merge: (X, X)
                        p = (X, X)
                    else:
                        q = (ids[i - 1], a)
                        delta[q] = get(q, 0) - f
                        p = (new[-1], X)
                    delta[p] = get(p, 0) + f
                    created.append(p)
                new.append(X)
                rep += 1
                start = i + 2
                if a == b:
                    seen += 1  # the right half of this merge was an ``a`` too
                nxt = -1
                j = start
                while seen < ca:
                    j = ids.index(a, j)
                    seen += 1
                    if j < last and ids[j + 1] == b:
                        nxt = j
                        break
                    j += 1
                if start < n:
                    r = ids[start]
                    q = (b, r)
                    delta[q] = get(q, 0) - f
                    if nxt != start:
                        p = (X, r)
                        delta[p] = get(p, 0) + f
                        created.append(p)
                if nxt < 0:
                    break
                if nxt > start:
                    new.extend(ids[start:nxt])
                i = nxt
            if start < n:
                new.extend(ids[start:])
            replaced += rep * f
            words[w] = new
            versions[w] += 1
            for p in created:
                s = where.get(p)
                if s is None:
                    where[p] = [w]
                else:
                    s.append(w)
        counts, buckets, banned = self.counts, self.buckets, self.banned
        lengths, max_len = self.lengths, self.max_piece_length
        old = counts.pop(pair, 0)
        if old:
            buckets[old].discard(pair)
        rank_count = self._rank_count if self._rank_cache is not None else -1
        if old == rank_count and pair in self._rank_cache:  # type: ignore[operator]
            self._rank_cache.remove(pair)  # type: ignore[union-attr]
        touched = False
        for p, d in delta.items():
            if not d or p == pair:
                continue
            x, y = p
            if x < 0 or y < 0 or p in banned or lengths[x] + lengths[y] > max_len:
                continue
            old = counts.get(p, 0)
            c = old + d
            if old == rank_count or c == rank_count:
                touched = True
            if old:
                buckets[old].discard(p)
            if c > 0:
                counts[p] = c
                s = buckets.get(c)
                if s is None:
                    buckets[c] = {p}
                else:
                    s.add(p)
            else:
                counts.pop(p, None)
                where.pop(p, None)
        if touched:
            self._rank_cache = None
        self.n_tokens -= replaced
        return replaced

    # -- results -------------------------------------------------------------------------------------------
    def run(self, *, top_k: int = 0) -> TrainResult:
        """Step until the vocabulary is full or no pair occurs twice; return the result."""
        while self.vocab_size < self.requested_vocab_size:
            won = self._winner()
            if won is None:
                break
            self._step(None, top_k, won)
        return self.result()

    def result(self) -> TrainResult:
        return TrainResult(
            merges=list(self.merges),
            vocab={i: s for i, s in enumerate(self.surfaces)},
            steps=list(self.steps),
            stop_reason=self.finish_reason() if self.done else "stopped by the user before the end",
            initial_tokens=self.initial_tokens,
        )

    def model(self) -> TrainedSentencePiece:
        """The vocabulary so far as a model: merge ``k`` scores ``-k``; characters score below every merge."""
        n_merges = len(self.merges)
        pieces: list[Piece] = []
        for i, p in enumerate(self.pieces):
            if i < self.char_start:
                score = 0.0
            elif i < self.base_size:
                score = -float(n_merges + i - self.char_start)
            else:
                score = -float(i - self.base_size)
            pieces.append(Piece(p.piece, score, p.type))
        return TrainedSentencePiece(
            pieces,
            byte_fallback=self.byte_fallback,
            add_dummy_prefix=self.add_dummy_prefix,
            character_coverage=self.character_coverage,
            max_piece_length=self.max_piece_length,
            requested_vocab_size=self.requested_vocab_size,
        )


def train_sentencepiece(
    text: str,
    vocab_size: int,
    *,
    byte_fallback: bool = True,
    add_dummy_prefix: bool = True,
    character_coverage: float = 1.0,
    tie_break: str = "first",
    top_k: int = 0,
    max_piece_length: int = 16,
) -> tuple[TrainedSentencePiece, TrainResult]:
    """Train to ``vocab_size`` pieces (or until no pair occurs twice) and return the model and the steps.

    >>> model, result = train_sentencepiece("the cat the hat the bat", 300, byte_fallback=False)
    >>> [s.token.decode() for s in result.steps][:3], result.stop_reason.split(":")[0]
    (['▁t', '▁th', '▁the'], 'no pair occurs twice')
    """
    state = SentencePieceTrainerState(
        text,
        vocab_size,
        byte_fallback=byte_fallback,
        add_dummy_prefix=add_dummy_prefix,
        character_coverage=character_coverage,
        tie_break=tie_break,
        max_piece_length=max_piece_length,
    )
    result = state.run(top_k=top_k)
    return state.model(), result
