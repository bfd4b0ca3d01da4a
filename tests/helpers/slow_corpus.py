"""A corpus whose lab training takes seconds (random syllable words, so pairs keep occurring until 8192 merges).

``mixed_text`` repeats whole lines, so training on it ends early ("no pair occurs twice"); tests that need a
training that is still running a few seconds later use this instead.
"""

from __future__ import annotations

import functools
import random

SYLLABLES = [a + b for a in "bcdfghjklmnprstvwz" for b in "aeiouy"] + list("áéíóúñçøåæ")
LONG_TRAINING = {"algorithm": "byte", "pattern": "gpt2", "merges": 8192}


@functools.cache
def slow_corpus(n_chars: int = 2_000_000, seed: int = 5) -> str:
    rnd = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < n_chars:
        word = "".join(rnd.choice(SYLLABLES) for _ in range(rnd.randint(1, 5)))
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:n_chars]
