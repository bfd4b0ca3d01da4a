"""A finished lab run replayed from its stored records: what its pages show at step k, never by training again.

The corpus view is the first :data:`~.display.WINDOW_CHARS` characters of the corpus, encoded with the merges of rank
below k by the merge loop every engine shares (:mod:`app.engines.merging`); the occurrences made by merge k are flagged.
Applying merges by rank gives exactly the corpus the trainer had after k merges: a token made by merge r only takes part
in merges after r, and equal pairs merge left to right in both. Counts, compression and vocab size come from the step
records.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import cached_property

import regex

from app.engines.merging import merge
from app.engines.merging import pair as _pair  # "pair" names the loop variables below
from app.engines.result import ByteTable, Token, TokenizeResult, tokens_after
from app.engines.training.steps import MergeStep

from app.engines.registry.loaders import load_tokenizer
from app.engines.wordpiece.model import wordpiece_walk
from app.engines.wordpiece.trainer import PREFIX as WP_PREFIX
from app.engines.wordpiece.trainer import normalize_word, tokenizer_json

from .algorithms import END_OF_WORD, Encoder, encoders, transition_of
from .byte_hints import ByteHint, CorpusBytes, byte_hint
from .pair_tables import PairTables
from .display import UNKNOWN, WINDOW_CHARS, Chip, ReplayView, chip_of, display_text
from .runs import Run
from .spm_replay import SentencePieceSteps
from .text_counts import merge_text_tokens

MAX_TRACE_STAGES = 400
_SPACE_INSIDE = regex.compile(r"\S\s+\S")


class Merges:
    """A run's merges as ranks: ``apply(ids, k)`` applies the first ``k`` of them (all by default) to a word."""

    def __init__(self, steps: Sequence[MergeStep]):
        self.rank = {s.pair: r for r, s in enumerate(steps)}
        self.new_id = {s.pair: s.new_id for s in steps}
        self._below: dict[int, dict] = {len(steps): self.rank}

    def ranks_below(self, k: int) -> dict[tuple[int, int], int]:
        """The ranks of the first ``k`` merges (kept for a few ``k``: each view of a step asks again)."""
        found = self._below.get(k)
        if found is None:
            if len(self._below) > 32:
                self._below = {len(self.rank): self.rank}
            found = self._below[k] = {p: r for p, r in self.rank.items() if r < k}
        return found

    def apply(self, ids: Sequence[int], k: int | None = None, steps: list | None = None) -> list[int]:
        """``ids`` after the merges of rank below ``k``: lowest rank first, equal pairs left to right (the merge
        loop of :mod:`app.engines.merging`). ``steps`` receives each merge as that loop records it."""
        ranks = self.rank if k is None else self.ranks_below(k)
        return merge(list(ids), ranks.get, key=_pair, join=lambda a, b: self.new_id[(a, b)], steps=steps)

    def ranks_in(self, ids: Sequence[int]) -> list[int]:
        """The ranks of the merges that applying them all to ``ids`` makes, one per merge: after the first ``k``
        merges, ``ids`` is as many tokens shorter as there are ranks below ``k`` here (a merge only makes pairs
        of higher rank, so the first ``k`` merges make exactly these)."""
        made: list[int] = []

        def join(a: int, b: int) -> int:
            made.append(self.rank[(a, b)])
            return self.new_id[(a, b)]

        merge(list(ids), self.rank.get, key=_pair, join=join)
        return made


def _surface(token: bytes, algorithm: str) -> bytes:
    if algorithm == "wordpiece":
        return token[2:] if token.startswith(b"##") and len(token) > 2 else token
    return token.replace(END_OF_WORD.encode(), b"")


class RunReplay(ReplayView):
    """A finished run replayed from its stored records: what its pages show at any step (built once per run)."""

    def __init__(self, run: Run, window_chars: int = WINDOW_CHARS):
        super().__init__(run, window_chars)
        self.merges = Merges(run.steps)
        self.algorithm = run.options.algorithm
        # what each token stands for in the text: ``</w>`` stands for nothing, ``##`` for nothing
        self.surface = {i: _surface(b, self.algorithm) for i, b in self.vocab.items()}
        self.byte_table = ByteTable(self.vocab.__getitem__, frozenset())
        self.made_at = {s.new_id: s.step for s in run.steps}
        self.base_ids = set(run.base)
        # a character-level run's tokenizer gives a character the corpus lacks its UTF-8 bytes, as ids after the
        # vocabulary (app.lab.run_tokenizers.LabTokenizer)
        fallback = max(self.vocab) + 1 if self.algorithm == "char" and self.vocab else None
        if fallback is not None:
            for b in range(256):
                data = bytes([b])
                self.chips[fallback + b] = chip_of(fallback + b, data, display_text(data))
                self.text[fallback + b] = self.chips[fallback + b].text
        # the run's encoder, and a superword run's stage two, which cuts the text after the transition
        self.encoder, self.encoder_two = encoders(run.options, run.base, fallback)
        self.transition = transition_of(run.options)
        self._window_words: dict[int, tuple[list, dict]] = {}
        self.words, self.word_ids = self.window_words(0)
        self._cache: OrderedDict[int, TokenizeResult] = OrderedDict()
        self._wordpiece: dict[int, object] = {}
        self._hints: dict[bytes, ByteHint | None] = {}
        self._corpus_bytes: CorpusBytes | None = None
        self._text_tokens: list[int] | None = None
        self.pair_tables = PairTables(run)

    def stage(self, k: int) -> int:
        """Which stage's pre-tokenizer the run's tokenizer has after ``k`` merges: 1, or 2 past a superword run's
        transition."""
        return 2 if self.transition is not None and k > self.transition else 1

    def encoder_at(self, k: int) -> Encoder:
        """The encoder that cuts a text as the run's tokenizer does after ``k`` merges."""
        return self.encoder_two if self.stage(k) == 2 else self.encoder

    def window_words(self, k: int) -> tuple[list, dict]:
        """The words of the corpus window after ``k`` merges, ``(start, end, lead)`` (the text between them makes no
        token), and each one's base ids."""
        stage = self.stage(k)
        found = self._window_words.get(stage)
        if found is None:
            encoder = self.encoder_at(k)
            words = encoder.spans(self.window)
            found = self._window_words[stage] = (words, {w: encoder.word_ids(self.window[w[0]:w[1]], w[2]) for w in words})
        return found

    def text_tokens(self, k: int) -> int:
        """The tokens of the whole corpus as the run's tokenizer cuts it after ``k`` merges: after the last, what
        ``/api/tokenize`` counts with it ("use in playground"; :mod:`.text_counts`)."""
        if self._text_tokens is None:
            counts = merge_text_tokens(self.run, self.encoder, self.merges.ranks_in)
            with self._lock:
                self._text_tokens = counts
        return self._text_tokens[k]

    def chip(self, tid: int) -> Chip:
        """Token ``tid`` as a chip; a piece of a character knows which characters of the corpus it is part of."""
        c = self.chips.get(tid, UNKNOWN)
        if c.partial and c.hint is None and tid in self.vocab:  # not a character-level run's byte fallback
            hint = self.byte_hint(self.vocab[tid])
            if hint is not None:
                c = self.chips[tid] = Chip(c.id, c.text, c.partial, c.hex, hint)
        return c

    def byte_hint(self, data: bytes) -> ByteHint | None:
        """Which characters of the corpus the bytes ``data`` are part of (None when they are text on their own)."""
        with self._lock:
            if data in self._hints:
                return self._hints[data]
        if self._corpus_bytes is None:
            self._corpus_bytes = CorpusBytes(self.run.corpus)
        hint = byte_hint(data, self._corpus_bytes)
        with self._lock:
            self._hints[data] = hint
        return hint

    def merge_note(self, rec: MergeStep | None) -> str | None:
        """What a byte-level merge did to characters: the new token's place in them when it is a piece of a
        character, or which character it completes when its parts were pieces."""
        if rec is None or self.algorithm != "byte":
            return None
        new = self.chip(rec.new_id)
        if new.partial:
            return new.hint.sentence if new.hint is not None else None
        if self.chip(rec.pair[0]).partial or self.chip(rec.pair[1]).partial:
            return f"the {len(self.vocab[rec.new_id])} UTF-8 bytes of 「{new.text}」 are one token now"
        return None

    def pair_hint(self, pair) -> tuple[str, str] | None:
        """A pair table row's hint when a part is a piece of a character: which characters the pair's bytes are
        part of, or the characters it completes (short, and in a sentence)."""
        if self.algorithm != "byte":
            return None
        left, right = self.chip(pair[0]), self.chip(pair[1])
        if not (left.partial or right.partial):
            return None
        data = self.vocab[pair[0]] + self.vocab[pair[1]]
        hint = self.byte_hint(data)
        if hint is None:
            text = display_text(data)
            return f"→ 「{text}」", f"together the {len(data)} UTF-8 bytes of 「{text}」"
        return hint.short, hint.sentence

    def corpus_at(self, k: int) -> TokenizeResult:
        """The corpus window after ``k`` merges, as the token views draw it: each word's tokens placed in the
        window's text (the bytes of one character share its span, as in the playground), no token for the text
        between words, and id -1 for a character the base vocabulary lacks."""
        with self._lock:
            hit = self._cache.get(k)
            if hit is not None:
                self._cache.move_to_end(k)
                return hit
        encoded: dict[tuple, list[int]] = {}
        ids: list[int] = []
        tokens: list[Token] = []
        words, word_ids = self.window_words(k)
        for a, b, lead in words:
            key = (self.window[a:b], lead)
            merged = encoded.get(key)
            if merged is None:
                merged = encoded[key] = self.merges.apply(word_ids[(a, b, lead)], k)
            ids += merged
            tokens += self._place(merged, a, lead)
        out = TokenizeResult(f"lab-{self.run.id}", self.window, ids, tokens)
        with self._lock:
            self._cache[k] = out
            while len(self._cache) > 32:
                self._cache.popitem(last=False)
        return out

    def _place(self, ids: list[int], start: int, lead: bool) -> list[Token]:
        """Token records for one word's ids, the word starting at character ``start`` of the window."""
        if self.algorithm == "byte":
            return tokens_after(ids, start, self.byte_table)
        out: list[Token] = []
        pos = start
        for n, tid in enumerate(ids):
            surface = self.surface[tid] if tid >= 0 else b""
            width = len(surface.decode("utf-8")) if tid >= 0 else 1  # an unknown character is one
            out.append(Token(tid, surface, pos, pos + width, self.token_text(tid)))
            pos += width
        return out

    @cached_property
    def superwords(self) -> dict[int, int]:
        """A superword run's superword tokens, id -> the step that made it: made past the transition, and cut in two
        or more by stage one's pattern, or holding a space between two other characters (``of the``, ``it's``, a
        sentence end and the next word)."""
        if self.transition is None:
            return {}
        split = self.encoder.split
        out = {}
        for step in self.run.steps[self.transition :]:
            text = self.vocab[step.new_id].decode("utf-8", errors="replace").replace(END_OF_WORD, "")
            if _SPACE_INSIDE.search(text) is not None or len(split.pieces(text)) > 1:
                out[step.new_id] = step.step
        return out

    def superword_list(self, k: int, limit: int = 200) -> tuple[list[dict], int]:
        """The superword tokens made by merges 1..``k``, newest first (at most ``limit``), and how many there are."""
        made = [(tid, step) for tid, step in self.superwords.items() if step <= k]
        made.sort(key=lambda item: -item[1])
        return [{"id": tid, "text": self.token_text(tid), "step": step} for tid, step in made[:limit]], len(made)

    def pairs(self, k: int, offset: int = 0, limit: int = 100, q: str = "") -> dict:
        """The whole pair table after ``k`` merges, a page of it (:mod:`.pair_tables`)."""
        return self.pair_tables.page(k, self.pair_text, offset, limit, q)

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
        scored = {row[0]: row for row in getattr(rec, "scored", ())}  # WordPiece: part counts and score
        for pair, count in top:
            row = {
                "pair": list(pair),
                "text": self.pair_text(pair),
                "count": count,
                "winner": pair == chosen,
                "tie": pair in tied or (bool(tied) and count == win_count),
                "hint": self.pair_hint(pair),
            }
            if pair in scored:
                _, _, left, right, score = scored[pair]
                row |= {"left_count": left, "right_count": right, "score": score,
                        "tie": pair in tied or (bool(tied) and score == rec.score)}
            rows.append(row)
        if rec is not None and chosen not in {tuple(r["pair"]) for r in rows}:  # a forced pair outside the top
            rows.append({"pair": list(chosen), "text": self.pair_text(chosen), "count": rec.count, "winner": True, "tie": False,
                         "hint": self.pair_hint(chosen)})
        return {"rows": rows, "for_step": k if k > 0 else 1, "record": rec}

    def state(self, k: int, *, max_tokens: int | None = None) -> dict:
        run = self.run
        steps = run.steps
        rec = steps[k - 1] if k > 0 else None
        tokens = [self.token_text(t) for t in self.corpus_at(k).ids]
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
            "top_pairs": [{"pair": r["text"], "ids": r["pair"], "count": r["count"], "winner": r["winner"], "tie": r["tie"]}
                          | {k: r[k] for k in ("left_count", "right_count", "score") if k in r} for r in table["rows"]],
            "corpus_tokens": run.tokens_at(k),
            "text_tokens": self.text_tokens(k),
            "base_units": run.base_units,
            "compression": round(run.bytes_per_token(self.text_tokens(k)), 4),  # bytes per token of text_tokens
            "training_compression": round(run.compression_at(k), 4),  # base_units per token of corpus_tokens
            "vocab_size": len(run.base) + k,
            **({"score": rec.score, "left_count": rec.left_count, "right_count": rec.right_count} if hasattr(rec, "score") else {}),
            "window_chars": len(self.window),
            "window_truncated": self.truncated,
            "tokens": tokens,
            # superword runs: the transition, the stage whose pre-tokenizer cuts text after k merges, and the
            # superword tokens made so far
            "transition": self.transition,
            "stage": self.stage(k),
            "superwords": sum(1 for step in self.superwords.values() if step <= k),
        }

    # -- encode a new text -------------------------------------------------------------------------------
    def encode_trace(self, text: str, k: int) -> dict:
        """Apply the merges of rank below ``k`` to ``text`` in rank order, one merge (every occurrence at once) per
        stage. Each word is merged on its own by the merge loop; a merge only makes pairs of higher rank, so
        grouping every word's merges by rank gives the stages. The text is cut as the run's tokenizer cuts it
        (:meth:`~.algorithms.Encoder.text_spans`): the text between words is words too, and a character the
        corpus lacks is its bytes, so after the last merge the ids are those ``/api/tokenize`` gives with it."""
        encoder = self.encoder_at(k)
        spans = encoder.text_spans(text)
        words = [encoder.text_ids(text[a:b], lead) for a, b, lead in spans]
        missing = sum(1 for a, b, lead in spans for c in encoder.word_ids(text[a:b], bool(lead)) if c < 0)
        merged: list[list[tuple]] = []
        for w in words:
            steps: list[tuple] = []
            self.merges.apply(w, k, steps)
            merged.append(steps)

        def snapshot() -> list[list[str]]:
            return [[self.token_text(t) for t in w] for w in words]

        stages = [{"step": 0, "pair": None, "token": None, "words": snapshot(), "word_ids": [list(w) for w in words],
                   "pair_ids": None, "new_id": None}]
        ranks = sorted({step[0] for steps in merged for step in steps})[:MAX_TRACE_STAGES]
        at = [0] * len(words)
        for rank in ranks:
            pair = None
            for w, steps in enumerate(merged):
                while at[w] < len(steps) and steps[at[w]][0] == rank:
                    _, i, left, right = steps[at[w]]
                    pair = (left, right)
                    words[w][i : i + 2] = [self.merges.new_id[pair]]
                    at[w] += 1
            new_id = self.merges.new_id[pair]
            stages.append(
                {"step": rank + 1, "pair": self.pair_text(pair), "token": self.token_text(new_id), "words": snapshot(),
                 "word_ids": [list(w) for w in words], "pair_ids": list(pair), "new_id": new_id,
                 "superword": new_id in self.superwords}
            )
        final = [t for w in words for t in w]
        out = {
            "text": text,
            "step": k,
            "stages": stages,
            "ids": final,
            "tokens": [self.token_text(t) for t in final],
            "unknown": missing,  # characters the corpus lacks (their bytes, or WordPiece's [UNK] below)
        }
        if self.algorithm == "wordpiece":
            out |= self._wordpiece_walk(text, k)
        return out

    def _wordpiece_walk(self, text: str, k: int) -> dict:
        """WordPiece encodes greedily, longest match first, with the vocabulary after ``k`` merges: the ids (those
        of the exported tokenizer.json at the last step) and each word's walk."""
        tokenizer = self.wordpiece_at(k)
        walks = []
        for a, b, _ in self.encoder.spans(text):
            word = normalize_word(text[a:b])
            pieces, tries = wordpiece_walk(word, tokenizer.vocab, WP_PREFIX, tokenizer.longest)
            walks.append({"word": word, "pieces": [tokenizer.vocab[p] for _, _, p in pieces] or [tokenizer.unk_id],
                          "tries": [{"candidate": t.candidate, "found": t.found} for t in tries]})
        ids = tokenizer.encode(text)
        return {"ids": ids, "tokens": [self.token_text(t) for t in ids], "walks": walks, "unknown": ids.count(tokenizer.unk_id)}

    def wordpiece_at(self, k: int):
        """The WordPiece tokenizer of the vocabulary after ``k`` merges (what the export holds at the last step)."""
        with self._lock:
            cached = self._wordpiece.get(k)
        if cached is None:
            vocab = dict(self.run.base) | {s.new_id: s.token for s in self.run.steps[:k]}
            cached = load_tokenizer(tokenizer_json(vocab).encode())
            with self._lock:
                self._wordpiece[k] = cached
                while len(self._wordpiece) > 8:
                    self._wordpiece.pop(next(iter(self._wordpiece)))
        return cached

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


class SpmReplay(SentencePieceSteps, RunReplay):
    """A finished SentencePiece BPE run: its merge records as :class:`RunReplay` shows them, its corpus window, counts,
    encode traces and vocabulary from the step's own ``.model`` (:class:`~.spm_replay.SentencePieceSteps`). It has
    no superword stage: sentencepiece's trainer cuts its own words."""

    transition = None


_VIEWS: OrderedDict[tuple[str, int], RunReplay] = OrderedDict()
_VIEWS_LOCK = threading.Lock()


def replay_for(run: Run):
    """The cached :class:`RunReplay` of a finished run (a few recent runs are kept)."""
    key = (run.id, id(run))
    with _VIEWS_LOCK:
        v = _VIEWS.get(key)
        if v is not None:
            _VIEWS.move_to_end(key)
            return v
    if run.unigram:
        from .unigram_replay import UnigramReplay

        v = UnigramReplay(run)
    elif run.options.algorithm == "sentencepiece":
        v = SpmReplay(run)
    else:
        v = RunReplay(run)
    with _VIEWS_LOCK:
        _VIEWS[key] = v
        while len(_VIEWS) > 16:
            _VIEWS.popitem(last=False)
    return v
