"""A finished SentencePiece BPE run at step k, for its pages and API: the run's own ``.model`` cut to its first k
merges, never trained again.

Step k's model (:func:`step_proto`) is the run's ``.model`` in which the merged pieces of later merges take no part:
what sentencepiece trains on the same corpus with k merges (training is deterministic, so its merges are the first
k), in the run's ids. It segments the corpus window and any new text as sentencepiece does, normalization included
(our engine, :class:`~app.engines.sentencepiece.model.SentencePieceTokenizer`, equals the library); "encoding a new
text" shows sentencepiece's merges as they happen on it: the pair whose joined piece has the best score first (the
earliest merge), the leftmost of equals. The pair tables, counts and merge trees are the step records, as for the
lab's other BPE runs (:class:`~.replay.RunReplay`).
"""

from __future__ import annotations

from collections import Counter
from app.engines.merging import merge
from app.engines.sentencepiece.model import SentencePieceTokenizer
from app.engines.sentencepiece.proto import BYTE, CONTROL, NORMAL, UNKNOWN, USER_DEFINED, ModelProto, Piece

from .display import MAX_ENCODE_CHARS, WINDOW_CHARS, ReplayView
from .model_steps import ModelSteps
from .runs import Run
from .spm_runs import TIE_RULE

MAX_TRACE_STAGES = 400

#: What each kind of piece is called in the vocabulary view, in the order a ``.model`` holds them.
KIND_NAMES = {"special": "special", "user-defined": "user-defined symbol", "byte": "byte piece",
              "merged": "merged piece", "character": "character"}


def step_proto(run: Run, k: int) -> ModelProto:
    """The run's ``.model`` after ``k`` merges: the merged pieces of merges after ``k`` become control pieces (never
    merged into, never read from text), so the ids stay the run's; sentencepiece runs it as our engine does."""
    proto = ModelProto.parse(run.model)
    later = {s.new_id for s in run.steps[k:]}
    proto.pieces = [Piece(p.piece, p.score, CONTROL) if i in later else p for i, p in enumerate(proto.pieces)]
    return proto


class SentencePieceSteps(ModelSteps):
    """What a finished SentencePiece BPE run shows that other BPE runs do not: its corpus, counts, encode traces and
    vocabulary from its step's ``.model``. Mixed before :class:`~.replay.RunReplay` (whose step records, pair tables
    and states it shares) into :class:`~.replay.SpmReplay`; this module does not import that one."""

    def __init__(self, run: Run, window_chars: int = WINDOW_CHARS):
        ReplayView.__init__(self, run, window_chars)
        self.algorithm = run.options.algorithm
        new_ids = getattr(run.steps, "new_ids", None) or [s.new_id for s in run.steps]
        self.made_at = {i: k for k, i in enumerate(new_ids, start=1)}
        self.base_ids = set(run.base)
        types = [p.type for p in ModelProto.parse(run.model).pieces]
        self.kinds = [self._kind(i, t) for i, t in enumerate(types)]

    def _kind(self, i: int, piece_type: int) -> str:
        if piece_type in (CONTROL, UNKNOWN):
            return "special"
        if piece_type == BYTE:
            return "byte"
        if piece_type == USER_DEFINED:
            return "user-defined"
        return "merged" if i in self.made_at else "character" if piece_type == NORMAL else "special"

    def make_model(self, k: int) -> SentencePieceTokenizer:
        return SentencePieceTokenizer(step_proto(self.run, k), name=f"lab-{self.run.id}")

    def text_tokens(self, k: int) -> int:
        """The tokens of the whole corpus as step ``k``'s model cuts it, for every ``k`` from one encoding with the
        run's own model (:meth:`_counts`)."""
        with self._lock:
            counts = self.__dict__.get("_all_counts")
        if counts is None:
            counts = self._counts()
            with self._lock:
                self._all_counts = counts
        return counts[k]

    def _counts(self) -> list[int]:
        """The corpus's tokens after each step. sentencepiece merges, in each stretch that no piece spans, the pair
        whose piece has the best score (the earliest merge) first; with the first ``k`` merges only, it makes the
        same merges as with all of them up to the first one of a later merge, where it stops (nothing earlier was
        left, or the full model would have taken that). So merge ``j`` of a stretch is made by every step past the
        latest merge among the first ``j``: counting each stretch's merges at that step gives every step's count.
        Unknown characters, byte pieces and user-defined symbols never merge, so they count alike at every step."""
        model = self.model(self.run.n_steps)
        corpus = self.run.corpus
        stretches = Counter(stretch for stretch, _ in model.merge_chunks(model.normalizer.normalize_text(corpus)))
        symbols_of, ranking = model.ranking()
        made_by = [0] * (self.run.n_steps + 2)  # merges first made by each step
        for stretch, times in stretches.items():
            steps: list[tuple] = []
            merge(symbols_of(stretch), ranking.get, key=ranking.key, join=ranking.join, steps=steps)
            latest = -1
            for rank, *_ in steps:
                latest = max(latest, int(rank))
                made_by[latest + 1] += times
        out, left = [], sum(made_by)
        final = len(model.encode(corpus))
        for k in range(self.run.n_steps + 1):
            left -= made_by[k]
            out.append(final + left)
        return out

    def state(self, k: int, *, max_tokens: int | None = None) -> dict:
        return super().state(k, max_tokens=max_tokens) | {"tie_break": TIE_RULE}

    # -- encode a new text -------------------------------------------------------------------------------
    def encode_trace(self, text: str, k: int) -> dict:
        """``text`` normalized and merged by step ``k``'s model, one stage per merge of the run as sentencepiece
        makes them (in a stretch no piece spans the edges of, a "word"; every stretch at once); the ids are the
        model's, which are sentencepiece's."""
        model = self.model(k)
        text = text[:MAX_ENCODE_CHARS]
        normalized, _ = model.normalizer.normalize(text)
        symbols_of, ranking = model.ranking()
        words: list[list[str]] = []
        merged: list[list[tuple]] = []
        for stretch, _pieces in model.merge_chunks(normalized):
            parts = symbols_of(stretch)
            words.append(list(parts))
            steps: list[tuple] = []
            merge(parts, ranking.get, key=ranking.key, join=ranking.join, steps=steps)
            merged.append(steps)

        def snapshot() -> tuple[list[list[str]], list[list[int]]]:
            """Each word's pieces as ids, as the model gives them: a character it lacks as its byte pieces (byte
            fallback), or one <unk> for a run of them, across words too."""
            ids: list[list[int]] = []
            after_unk = False
            for w in words:
                ids.append([])
                for piece in w:
                    pid = model.piece_to_id(piece)
                    if pid == model.unk_id and model.byte_fallback:
                        ids[-1] += [model.piece_to_id(f"<0x{b:02X}>") for b in piece.encode("utf-8")]
                    elif not (pid == model.unk_id and after_unk and model.fuse_unk):
                        ids[-1].append(pid)
                    after_unk = pid == model.unk_id
            return [[self.token_text(i) for i in w] for w in ids], ids

        texts, ids = snapshot()
        stages = [{"step": 0, "pair": None, "token": None, "words": texts, "word_ids": ids, "pair_ids": None,
                   "new_id": None}]
        at = [0] * len(words)
        while len(stages) <= MAX_TRACE_STAGES:
            waiting = [steps[at[w]][0] for w, steps in enumerate(merged) if at[w] < len(steps)]
            if not waiting:
                break
            rank = min(waiting)  # the best-scored merge any stretch makes next
            pair = None
            for w, steps in enumerate(merged):
                while at[w] < len(steps) and steps[at[w]][0] == rank:
                    _, i, left, right = steps[at[w]]
                    pair = (left, right)
                    words[w][i : i + 2] = [left + right]
                    at[w] += 1
            left, right = pair
            new_id = model.piece_to_id(left + right)
            texts, ids = snapshot()
            stages.append({"step": int(rank) + 1, "pair": [self.token_text(model.piece_to_id(left)),
                                                           self.token_text(model.piece_to_id(right))],
                           "token": self.token_text(new_id), "words": texts, "word_ids": ids,
                           "pair_ids": [model.piece_to_id(left), model.piece_to_id(right)], "new_id": new_id})
        final = model.encode(text)
        unknown = sum(1 for w in words for piece in w if model.piece_to_id(piece) == model.unk_id)
        return {
            "text": text,
            "step": k,
            "normalized": normalized,
            "stages": stages,
            "ids": final,
            "tokens": [self.token_text(t) for t in final],
            "unknown": unknown,  # characters the vocabulary lacks: byte pieces (byte fallback), or <unk>
            "byte_fallback": model.byte_fallback,
        }

    # -- vocabulary --------------------------------------------------------------------------------------
    def merge_tree(self, tid: int, k: int | None = None) -> dict:
        """How piece ``tid`` was built: ``{"id", "text", "step", "children": [left, right]}`` down to base pieces
        (each merge record read when it is reached)."""

        def node(t: int, depth: int) -> dict:
            step = self.made_at.get(t, 0)
            d = {"id": t, "text": self.token_text(t), "step": step, "children": []}
            if step and depth < 64:
                left, right = self.run.steps[step - 1].pair
                d["children"] = [node(left, depth + 1), node(right, depth + 1)]
            return d

        return node(tid, 0)

    def vocab_entries(self, k: int, query: str = "", limit: int = 200) -> tuple[list[dict], int]:
        """The pieces of step ``k``'s model in id order, as its ``.model`` holds them: the special pieces, the
        user-defined symbols and the byte pieces, the pieces merged so far in merge order, then the characters;
        filtered by a substring of their text."""
        out = []
        total = 0
        q = query.lower()
        for i, kind in enumerate(self.kinds):
            step = self.made_at.get(i, 0)
            if step > k:
                continue
            t = self.text[i]
            if q and q not in t.lower():
                continue
            total += 1
            if len(out) < limit:
                rec = self.run.steps[step - 1] if step else None
                out.append({"id": i, "text": t, "step": step, "parts": self.pair_text(rec.pair) if rec else [],
                            "kind": kind})
        return out, total

