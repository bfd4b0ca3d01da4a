"""The whole pair table of a byte- or character-level run at a step: every adjacent pair of tokens inside the
pre-tokens after ``k`` merges (before merge ``k + 1``), with its count, in the order the trainer ranks them (the
highest count first, equal counts by the run's tie rule), filtered by text and cut into pages.

A step's records keep only its ten most frequent pairs; the rest comes from the trainer itself, brought to step
``k`` by merging the run's first ``k`` pairs again (:func:`~.algorithms.state_at`, stage two past a superword
run's transition), so the order is the trainer's own. A few tables are kept per run (a class pages through one).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from app.engines.errors import TokenplayError

from .algorithms import state_at
from .options import PLAIN_BPE
from .runs import Run

Pair = tuple[int, int]
#: Tables kept per run (each at one step).
KEPT = 4
#: The most rows one page may ask for.
MAX_LIMIT = 1_000


class PairTableError(TokenplayError):
    """A pair table the lab cannot give (an algorithm without one, a bad page)."""


class PairTables:
    """The pair tables of one finished run, computed when first asked for and kept (:data:`KEPT`)."""

    def __init__(self, run: Run):
        self.run = run
        self._tables: OrderedDict[int, list[tuple[Pair, int]]] = OrderedDict()
        self._lock = threading.Lock()

    def rows(self, k: int) -> list[tuple[Pair, int]]:
        """Every pair after ``k`` merges with its count, in the trainer's order."""
        if self.run.options.algorithm not in PLAIN_BPE:
            raise PairTableError(
                "the whole pair table is for byte- and character-level BPE runs; this run's steps show their "
                "ten most frequent pairs"
            )
        with self._lock:
            found = self._tables.get(k)
            if found is not None:
                self._tables.move_to_end(k)
                return found
        found = state_at(self.run.corpus, self.run.options, self.run.steps, k).ranked_pairs()
        with self._lock:
            self._tables[k] = found
            while len(self._tables) > KEPT:
                self._tables.popitem(last=False)
        return found

    def page(self, k: int, text: Callable[[Pair], list[str]], offset: int = 0, limit: int = 100, q: str = "") -> dict:
        """``{"total", "pairs": [{"pair": [left, right], "ids": [a, b], "count"}]}``: the rows after ``k`` merges
        whose text (the two tokens' texts joined) holds ``q`` (any case), ``limit`` of them from ``offset``."""
        if offset < 0 or not 0 < limit <= MAX_LIMIT:
            raise PairTableError(f"offset must be 0 or more and limit from 1 to {MAX_LIMIT:,}; got {offset} and {limit}")
        rows = self.rows(k)
        needle = q.lower()
        if needle:
            rows = [row for row in rows if needle in "".join(text(row[0])).lower()]
        return {
            "total": len(rows),
            "offset": offset,
            "limit": limit,
            "pairs": [{"pair": text(pair), "ids": list(pair), "count": count} for pair, count in rows[offset : offset + limit]],
        }
