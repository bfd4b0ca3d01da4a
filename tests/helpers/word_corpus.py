"""A corpus of random syllable words, in which new pairs keep occurring until thousands of merges (``mixed_text``
repeats whole lines, so training on it ends early: "no pair occurs twice"). For tests that need a training whose
memory grows with its corpus; tests that need a training still running when they look use the lab's hold
(``lab_hold.Hold``), never a corpus chosen to be slow.
"""

from __future__ import annotations

import functools
import random

SYLLABLES = [a + b for a in "bcdfghjklmnprstvwz" for b in "aeiouy"] + list("áéíóúñçøåæ")


@functools.cache
def random_words(n_chars: int = 2_000_000, seed: int = 5) -> str:
    rnd = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < n_chars:
        word = "".join(rnd.choice(SYLLABLES) for _ in range(rnd.randint(1, 5)))
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:n_chars]
