"""What a lab page shows at step k, computed from the stored records: never by training again.

The corpus view is the first :data:`WINDOW_CHARS` characters of the corpus, encoded with the merges of rank
below k (a heap-based BPE encode, so a 2,000-character word costs milliseconds, not seconds); the occurrences
made by merge k are flagged. Applying merges by rank gives exactly the corpus the trainer had after k merges:
a token made by merge r only takes part in merges after r, and equal pairs merge left to right in both.
Counts, compression and vocab size come from the step records.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass

from app.engines.bpe.trainer import merge_ids
from app.engines.result import escape_bytes

from .algorithms import Encoder
from .runs import Run

WINDOW_CHARS = 2_000
MAX_ENCODE_CHARS = 1_000
MAX_TRACE_STAGES = 400


def bpe_encode(ids: list[int], ranks: dict[tuple[int, int], tuple[int, int]], limit: int) -> list[int]:
    """Apply the merges of rank < ``limit`` to ``ids``: lowest rank first, equal pairs left to right.

    ``ranks`` maps a pair to ``(rank, new_id)``.
    """
    n = len(ids)
    if n < 2 or limit <= 0:
        return list(ids)
    tok = list(ids)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    alive = [True] * n
    get = ranks.get
    heap = []
    for i in range(n - 1):
        r = get((tok[i], tok[i + 1]))
        if r is not None and r[0] < limit:
            heap.append((r[0], i))
    if not heap:
        return tok
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        rank, i = pop(heap)
        if not alive[i]:
            continue
        j = nxt[i]
        if j >= n:
            continue
        r = get((tok[i], tok[j]))
        if r is None or r[0] != rank:
            continue
        tok[i] = r[1]
        alive[j] = False
        k = nxt[j]
        nxt[i] = k
        if k < n:
            prv[k] = i
            r2 = get((tok[i], tok[k]))
            if r2 is not None and r2[0] < limit:
                push(heap, (r2[0], i))
        p = prv[i]
        if p >= 0:
            r2 = get((tok[p], tok[i]))
            if r2 is not None and r2[0] < limit:
                push(heap, (r2[0], p))
    return [tok[i] for i in range(n) if alive[i]]


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(32), 127] if chr(c) not in "\n\t"}


def display_text(data: bytes) -> str:
    r"""A token as text: its UTF-8, or ``\xNN`` escapes when it is not valid UTF-8 on its own; control
    characters other than newline and tab are escaped too (``b"\x00"`` shows as ``\x00``, not as nothing)."""
    return escape_bytes(data).translate(_CONTROL)


@dataclass(slots=True)
class Piece:
    """One item of the corpus view: a token (``id`` >= 0), an unknown character (-1) or text between words (-2)."""

    id: int
    text: str
    new: bool = False  # made by the merge of the step shown
    colour: int = 0  # 0..9, keyed to the id, never the same as the previous token's
    ws: bool = False  # holds a space or newline (the view draws them visibly)

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "new": self.new}


PALETTE = 10


def colour_of(token_id: int) -> int:
    return ((token_id * 2654435761) % 4294967296) * PALETTE // 4294967296


class RunView:
    """Per-run tables the step views need, built once per run (and cached)."""

    def __init__(self, run: Run, window_chars: int = WINDOW_CHARS):
        self.run = run
        self.vocab = run.vocab()
        self.text = {i: display_text(b) for i, b in self.vocab.items()}
        self.has_ws = {i for i, t in self.text.items() if " " in t or "\n" in t}
        self.ranks = {s.pair: (r, s.new_id) for r, s in enumerate(run.steps)}
        self.made_at = {s.new_id: s.step for s in run.steps}
        self.base_ids = set(run.base)
        self.encoder = Encoder(run.options.algorithm, run.options.pattern, run.base, run.options.end_of_word)
        self.window = run.corpus[:window_chars]
        self.truncated = len(run.corpus) > window_chars
        items: list[tuple[str, str, bool]] = []  # ("gap", text, False) or ("word", text, lead)
        pos = 0
        for a, b, lead in self.encoder.spans(self.window):
            if a > pos:
                items.append(("gap", self.window[pos:a], False))
            items.append(("word", self.window[a:b], lead))
            pos = b
        if pos < len(self.window):
            items.append(("gap", self.window[pos:], False))
        self.items = items
        self.word_ids = {(w, lead): self.encoder.word_ids(w, lead) for kind, w, lead in items if kind == "word"}
        self._cache: OrderedDict[int, list[Piece]] = OrderedDict()
        self._lock = threading.Lock()

    def token_text(self, tid: int) -> str:
        return self.text.get(tid, "?")

    def pair_text(self, pair) -> list[str]:
        return [self.token_text(pair[0]), self.token_text(pair[1])]

    def corpus_at(self, k: int) -> list[Piece]:
        """The corpus window after ``k`` merges; tokens made by merge ``k`` have ``new=True``."""
        with self._lock:
            hit = self._cache.get(k)
            if hit is not None:
                self._cache.move_to_end(k)
                return hit
        new_id = self.run.steps[k - 1].new_id if k > 0 else None
        encoded: dict[tuple[str, bool], list[int]] = {}
        out: list[Piece] = []
        prev = -1
        for kind, text, lead in self.items:
            if kind == "gap":
                out.append(Piece(-2, text))
                continue
            ids = encoded.get((text, lead))
            if ids is None:
                ids = encoded[(text, lead)] = bpe_encode(self.word_ids[(text, lead)], self.ranks, k)
            for tid in ids:
                if tid < 0:
                    out.append(Piece(-1, "?"))
                else:
                    c = colour_of(tid)
                    if c == prev:
                        c = (c + 1) % PALETTE
                    prev = c
                    t = self.text[tid]
                    out.append(Piece(tid, t, tid == new_id, c, tid in self.has_ws))
        with self._lock:
            self._cache[k] = out
            while len(self._cache) > 32:
                self._cache.popitem(last=False)
        return out

    # -- one step ----------------------------------------------------------------------------------------
    def table(self, k: int) -> dict:
        """The pair table shown at step ``k``: the counts before merge ``k`` (before merge 1 at step 0)."""
        steps = self.run.steps
        if k == 0:
            rec = steps[0] if steps else None
            top = rec.top_pairs if rec else self.run.top0
        else:
            rec = steps[k - 1]
            top = rec.top_pairs
        chosen = rec.pair if rec else None
        win_count = rec.count if rec else None
        tied = set(rec.ties) | {rec.pair} if rec and rec.ties else set()
        rows = []
        for pair, count in top:
            rows.append(
                {
                    "pair": list(pair),
                    "text": self.pair_text(pair),
                    "count": count,
                    "winner": pair == chosen,
                    "tie": pair in tied or (bool(tied) and count == win_count),
                }
            )
        if rec is not None and chosen not in {tuple(r["pair"]) for r in rows}:  # a forced pair outside the top
            rows.append({"pair": list(chosen), "text": self.pair_text(chosen), "count": rec.count, "winner": True, "tie": False})
        return {"rows": rows, "for_step": k if k > 0 else 1, "record": rec}

    def state(self, k: int, *, max_tokens: int | None = None) -> dict:
        run = self.run
        steps = run.steps
        rec = steps[k - 1] if k > 0 else None
        pieces = self.corpus_at(k)
        tokens = [p.text for p in pieces if p.id != -2]
        if max_tokens is not None:
            tokens = tokens[:max_tokens]
        table = self.table(k)
        n_ties = run.n_ties[k - 1] if k > 0 and k - 1 < len(run.n_ties) else 0
        return {
            "step": k,
            "steps": len(steps),
            "pair": self.pair_text(rec.pair) if rec else None,
            "pair_ids": list(rec.pair) if rec else None,
            "token": self.token_text(rec.new_id) if rec else None,
            "new_id": rec.new_id if rec else None,
            "count": rec.count if rec else None,
            "replaced": rec.replaced if rec else None,
            "forced": rec.forced if rec else False,
            "ties": [self.pair_text(p) for p in rec.ties] if rec else [],
            "n_ties": n_ties,
            "tie_break": run.options.tie_break,
            "top_pairs": [{"pair": r["text"], "ids": r["pair"], "count": r["count"], "winner": r["winner"], "tie": r["tie"]} for r in table["rows"]],
            "corpus_tokens": run.tokens_at(k),
            "base_units": run.base_units,
            "compression": round(run.compression_at(k), 4),
            "vocab_size": len(run.base) + k,
            "window_chars": len(self.window),
            "window_truncated": self.truncated,
            "tokens": tokens,
        }

    # -- encode a new text -------------------------------------------------------------------------------
    def encode_trace(self, text: str, k: int) -> dict:
        """Apply merges of rank < ``k`` to ``text`` one merge at a time (every occurrence at once), in rank order."""
        words = [self.encoder.word_ids(text[a:b], lead) for a, b, lead in self.encoder.spans(text)]
        ranks = {p: v for p, v in self.ranks.items() if v[0] < k}

        def snapshot() -> list[list[str]]:
            return [[self.token_text(t) if t >= 0 else "?" for t in w] for w in words]

        stages = [{"step": 0, "pair": None, "token": None, "words": snapshot()}]
        while len(stages) <= MAX_TRACE_STAGES:
            best = None
            for w in words:
                for p in itertools.pairwise(w):
                    r = ranks.get(p)
                    if r is not None and (best is None or r[0] < best[0]):
                        best = (r[0], p, r[1])
            if best is None:
                break
            rank, pair, new_id = best
            words = [merge_ids(w, pair, new_id) for w in words]
            stages.append({"step": rank + 1, "pair": self.pair_text(pair), "token": self.token_text(new_id), "words": snapshot()})
        final = [t for w in words for t in w]
        unknown = sum(1 for t in final if t < 0)
        return {
            "text": text,
            "step": k,
            "stages": stages,
            "ids": final,
            "tokens": [self.token_text(t) if t >= 0 else "?" for t in final],
            "unknown": unknown,
        }

    # -- vocabulary --------------------------------------------------------------------------------------
    def merge_tree(self, tid: int, k: int | None = None) -> dict:
        """How token ``tid`` was built: ``{"id", "text", "step", "children": [left, right]}`` down to base tokens."""
        by_id = {s.new_id: s for s in self.run.steps}

        def node(t: int, depth: int) -> dict:
            s = by_id.get(t)
            d = {"id": t, "text": self.token_text(t), "step": s.step if s else 0, "children": []}
            if s is not None and depth < 64:
                d["children"] = [node(s.pair[0], depth + 1), node(s.pair[1], depth + 1)]
            return d

        return node(tid, 0)

    def vocab_entries(self, k: int, query: str = "", limit: int = 200) -> tuple[list[dict], int]:
        """Tokens known after ``k`` merges, newest merges first, filtered by a substring of their text."""
        out = []
        total = 0
        q = query.lower()
        for s in reversed(self.run.steps[:k]):
            t = self.text[s.new_id]
            if q and q not in t.lower():
                continue
            total += 1
            if len(out) < limit:
                out.append({"id": s.new_id, "text": t, "step": s.step, "parts": self.pair_text(s.pair)})
        for i in sorted(self.run.base):
            t = self.text[i]
            if q and q not in t.lower():
                continue
            total += 1
            if len(out) < limit:
                out.append({"id": i, "text": t, "step": 0, "parts": []})
        return out, total


_VIEWS: OrderedDict[tuple[str, int], RunView] = OrderedDict()
_VIEWS_LOCK = threading.Lock()


def view_for(run: Run) -> RunView:
    """The cached :class:`RunView` of a finished run (a few recent runs are kept)."""
    key = (run.id, id(run))
    with _VIEWS_LOCK:
        v = _VIEWS.get(key)
        if v is not None:
            _VIEWS.move_to_end(key)
            return v
    v = RunView(run)
    with _VIEWS_LOCK:
        _VIEWS[key] = v
        while len(_VIEWS) > 16:
            _VIEWS.popitem(last=False)
    return v
