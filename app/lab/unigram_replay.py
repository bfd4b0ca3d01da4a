"""A finished unigram run at round k, for its pages and API: never trained again, only its stored rounds replayed.

Round k's model (:func:`.unigram_runs.round_model`) segments the corpus window and any new text by Viterbi, as
the saved ``.model`` does; "encoding a word" shows its lattice (every piece that could cover part of it, with its
log-probability, the best path marked) and its n-best segmentations. The surface matches :class:`.replay.RunReplay`
where the pages share it (chips, token texts, the vocabulary list, ``state``).
"""

from __future__ import annotations

import math

from app.engines.sentencepiece.proto import BYTE, NORMAL, USER_DEFINED
from app.engines.sentencepiece.unigram_trainer import WHY
from app.engines.sentencepiece.unigram import UnigramTokenizer

from .display import MAX_ENCODE_CHARS, WINDOW_CHARS, ReplayView
from .model_steps import ModelSteps
from .runs import Run
from .unigram_runs import round_model

__all__ = ["NBEST", "WHY", "WHY_SHORT", "UnigramReplay"]

NBEST = 5
#: Why a piece was removed, in a word or two (the pages' "Why" column; the full sentence is ``WHY``).
WHY_SHORT = {"em": "EM: < ½ use", "free": "unused", "loss": "pruned", "unreachable": "unreachable",
             "final": "final choice"}
LATTICE_CHARS = 40  # "encoding a word": the lattice of the first this many characters


class UnigramReplay(ModelSteps, ReplayView):
    """A finished unigram run replayed from its records (built once per run)."""

    def __init__(self, run: Run, window_chars: int = WINDOW_CHARS):
        super().__init__(run, window_chars)
        self.algorithm = "unigram"
        self.removed_at = {piece: r.round for r in run.steps for piece, _, _ in r.removed}

    def make_model(self, k: int) -> UnigramTokenizer:
        return round_model(self.run, k)

    def removed(self, k: int) -> list[dict]:
        """Round ``k``'s removed pieces in the order they went (by EM, free of cost, by loss smallest first, then
        unreachable and at the final choice), each with its loss (``None`` unless pruned by loss) and why
        (:data:`~app.engines.sentencepiece.unigram_trainer.WHY`)."""
        if k == 0:
            return []
        ids = {self.vocab[i].decode(): i for i in self.vocab}
        return [{"piece": p, "loss": None if math.isnan(loss) else loss, "why": why, "id": ids[p]}
                for p, loss, why in self.run.steps[k - 1].removed]

    def state(self, k: int, *, max_tokens: int | None = None) -> dict:
        run = self.run
        rec = run.steps[k - 1] if k > 0 else None
        tokens = [self.token_text(t) for t in self.corpus_at(k).ids]
        return {
            "step": k,
            "steps": run.n_steps,
            "round": k,
            "removed": [{"piece": r["piece"], "loss": r["loss"], "why": r["why"]} for r in self.removed(k)],
            "restored": list(rec.restored) if rec else [],
            "em": [{"log_likelihood": ll, "vocab_size": size} for ll, size in rec.em] if rec else [],
            "vocab_size": run.vocab_size_at(k),
            "log_likelihood": rec.log_likelihood if rec else None,
            "corpus_tokens": run.tokens_at(k),
            "text_tokens": self.text_tokens(k),
            "base_units": run.base_units,
            "compression": round(run.bytes_per_token(self.text_tokens(k)), 4),  # bytes per token of text_tokens
            "training_compression": round(run.compression_at(k), 4),  # base_units per token of corpus_tokens
            "window_chars": len(self.window),
            "window_truncated": self.truncated,
            "tokens": tokens if max_tokens is None else tokens[:max_tokens],
        }

    def encode_trace(self, text: str, k: int) -> dict:
        """The ids of ``text`` with round ``k``'s model, the lattice of its start and its n-best segmentations."""
        model = self.model(k)
        text = text[:MAX_ENCODE_CHARS]
        ids = model.encode(text)
        word = text[:LATTICE_CHARS]
        normalized, nodes = model.lattice(word)
        return {
            "text": text,
            "step": k,
            "ids": ids,
            "tokens": [self.token_text(t) for t in ids],
            "unknown": sum(1 for t in ids if model.types[t] == BYTE),
            "lattice": {
                "text": normalized,
                "truncated": len(text) > LATTICE_CHARS,
                "nodes": [{"start": n.start, "end": n.end, "id": n.id, "piece": n.piece, "logp": n.score, "best": n.best}
                          for n in nodes],
            },
            "nbest": [{"ids": seg, "pieces": [self.token_text(t) for t in seg], "log_prob": score}
                      for seg, score in model.nbest(word, NBEST)],
        }

    def vocab_entries(self, k: int, query: str = "", limit: int = 200) -> tuple[list[dict], int]:
        """Pieces of round ``k``'s model, most probable first, filtered by a substring of their text."""
        model = self.model(k)
        q = query.lower()
        alive = [i for i, t in enumerate(model.types) if t in (NORMAL, USER_DEFINED) and not math.isnan(model.scores[i])]
        alive.sort(key=lambda i: -model.scores[i])
        matches = [i for i in alive if not q or q in self.text[i].lower()]
        return [{"id": i, "text": self.text[i], "step": 0, "parts": [], "score": round(model.scores[i], 3)}
                for i in matches[:limit]], len(matches)

    def merge_tree(self, tid: int, k: int | None = None) -> dict:
        """Unigram pieces are not built from others: the tree is the piece alone (and the round it went, if any)."""
        return {"id": tid, "text": self.token_text(tid), "step": 0, "children": [],
                "removed_at": self.removed_at.get(self.vocab.get(tid, b"").decode("utf-8", "replace"))}
