"""The vocabulary facts of a tokenizer that knows them once it is built: its size, special tokens, unused ids.

A mixin for :class:`~.base.Tokenizer` subclasses: put it first among the bases and set ``_n_vocab``, ``_special``
and ``_holes`` in ``__init__``.
"""

from __future__ import annotations


class VocabFacts:
    _n_vocab: int
    _special: dict[str, int]
    _holes: bool  # some ids below n_vocab stand for no token

    @property
    def n_vocab(self) -> int:
        return self._n_vocab

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special)

    def _has_gaps(self) -> bool:
        return self._holes
