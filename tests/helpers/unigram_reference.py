"""A from-scratch unigram trainer for tiny corpora, written to check ours (app/engines/sentencepiece/unigram_trainer.py).

It follows the same definitions — seed pieces by frequency times length, EM with the digamma M-step, the loss of
a piece as the likelihood its words lose when its uses fall to its best other segmentation — but computes
everything by brute force: every segmentation of every word is enumerated (words of a tiny corpus have at most
a few hundred), expectations are sums over them, Viterbi is a max over them. It shares no code with ours.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import cache

SPACE = "\u2581"


def words_of(corpus: str) -> Counter:
    out: Counter = Counter()
    for line in corpus.split("\n"):
        if line:
            for i, part in enumerate((SPACE + line.replace(" ", SPACE)).split(SPACE)):
                if i:
                    out[SPACE + part] += 1
    return out


def psi(x: float) -> float:
    """Digamma by shifting x above 10 and the Bernoulli-number series."""
    acc = 0.0
    while x < 10:
        acc -= 1.0 / x
        x += 1.0
    bernoulli = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66]
    series = sum(b / (2 * (k + 1)) / x ** (2 * (k + 1)) for k, b in enumerate(bernoulli))
    return acc + math.log(x) - 1 / (2 * x) - series


def segmentations(word: str, vocab: frozenset, max_len: int) -> list[tuple[str, ...]]:
    @cache
    def rest(i: int) -> list[tuple[str, ...]]:
        if i == len(word):
            return [()]
        out = []
        for j in range(i + 1, min(len(word), i + max_len) + 1):
            if word[i:j] in vocab:
                out += [(word[i:j],) + tail for tail in rest(j)]
        return out

    return rest(0)


def best(segs: list[tuple[str, ...]], logp: dict[str, float]):
    """Highest total (summed left to right); ties: the longer last piece, then the longer one before it..."""
    def key(seg):
        total = 0.0
        for p in seg:
            total += logp[p]
        return (total, tuple(len(p) for p in reversed(seg)))

    return max(segs, key=key) if segs else None


class ReferenceUnigram:
    def __init__(self, corpus: str, vocab_size: int, max_len: int = 16, seed_size: int = 2000, n_special: int = 259):
        self.words = words_of(corpus)
        self.max_len, self.vocab_size, self.n_special = max_len, vocab_size, n_special
        chars: Counter = Counter()
        subs: Counter = Counter()
        for w, f in self.words.items():
            for i in range(len(w)):
                chars[w[i]] += f
                for j in range(i + 2, min(len(w), i + max_len) + 1):
                    subs[w[i:j]] += f
        ranked = sorted((p for p, f in subs.items() if f >= 2), key=lambda p: (-subs[p] * len(p), p))
        score = {c: float(f) for c, f in chars.items()}
        score.update({p: float(subs[p] * len(p)) for p in ranked[: max(0, seed_size - len(chars))]})
        norm = math.log(sum(score.values()))
        self.logp = {p: math.log(s) - norm for p, s in score.items()}
        self.order = sorted(self.logp, key=lambda p: (-self.logp[p], p))  # ties in pruning: this order
        self.chars = set(chars)

    def em(self) -> None:
        vocab = frozenset(self.logp)
        expected = Counter()
        for w, f in self.words.items():
            segs = segmentations(w, vocab, self.max_len)
            weights = [math.exp(sum(self.logp[p] for p in s)) for s in segs]
            z = sum(weights)
            for s, weight in zip(segs, weights):
                for p in s:
                    expected[p] += f * weight / z
        kept = {p: max(expected[p], 0.5) for p in self.logp if expected[p] >= 0.5 or p in self.chars}
        total = psi(sum(kept.values()))
        self.logp = {p: psi(e) - total for p, e in kept.items()}

    def prune_order(self) -> list[tuple[str, float]]:
        vocab = frozenset(self.logp)
        uses, using = Counter(), Counter()
        for w, f in self.words.items():
            seg = best(segmentations(w, vocab, self.max_len), self.logp)
            for p in seg:
                uses[p] += f
            for p in set(seg):
                using[p] += f
        total_uses, total_words = sum(uses.values()), sum(self.words.values())
        losses = []
        for p in self.logp:
            if p in self.chars:
                continue
            if uses[p] == 0:
                losses.append((0.0, self.order.index(p), p))
                continue
            alt = best([s for s in segmentations(p, vocab, self.max_len) if s != (p,)], self.logp)
            alt_total = math.log(total_uses + uses[p] * (len(alt) - 1))
            lp_piece = math.log(uses[p]) - math.log(total_uses)
            lp_alt = sum(math.log(uses[a] + uses[p]) - alt_total for a in alt)
            losses.append((using[p] / total_words * (lp_piece - lp_alt), self.order.index(p), p))
        return [(p, loss) for loss, _, p in sorted(losses)]

    def rounds(self) -> list[list[str]]:
        """The pieces each round removes, in order."""
        out = []
        while self.n_special + len(self.logp) > self.vocab_size:
            before = set(self.logp)
            self.em()
            self.em()
            removed = [p for p in self.order if p in before and p not in self.logp]
            target = max(self.vocab_size, int(0.75 * (self.n_special + len(self.logp))))
            for p, _ in self.prune_order():
                if self.n_special + len(self.logp) <= target:
                    break
                del self.logp[p]
                removed.append(p)
            out.append(removed)
            if not removed:
                break
        return out
