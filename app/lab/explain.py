"""The explain view's plan for the lab's character-level tokenizers (:class:`~app.lab.tokenizers.LabTokenizer`).

A run's words (its pre-tokenizer's matches, or SentencePiece-style words with their ``▁``) start as base ids,
characters and ``</w>`` when the run has one; the run's merges apply by rank, the rank of a merge being its place
in the run (0 for the first merge). Text between words is never merged; a character the run never saw falls back
to its bytes. Steps and trees show the run's own token text (``</w>`` and ``▁`` included). Byte-level and
SentencePiece runs are explained by the engines' own plans; this one is for :class:`LabTokenizer` only.
"""

from __future__ import annotations

from collections.abc import Iterator

from app.engines.explain.split_rules import Rule
from app.engines.explain.units import Plan, Unit
from app.engines.merging import Ranking, pair

from .tokenizers import LabTokenizer

_UNSEEN = "\ufffd".encode()


class LabPlan(Plan):
    symbol_name = "characters"

    def __init__(self, tokenizer: LabTokenizer):
        merges = tokenizer.merges
        super().__init__(tokenizer, Ranking(merges.rank.get, pair, lambda a, b: merges.new_id[(a, b)]))
        self.sizes = {i: 1 for i in tokenizer.vocab}
        for (a, b), new_id in merges.new_id.items():  # in merge order: a merge's parts are older than it
            self.sizes[new_id] = self.sizes[a] + self.sizes[b]
        opts = tokenizer.run.options
        self.source = "the run's SentencePiece-style words" if tokenizer.sp else f"the run's {opts.pattern} split"

    def units(self, text: str, allow_special: bool) -> Iterator[Unit]:
        tok = self.tokenizer
        first = 0
        for a, b, base in tok.words(text):
            word = text[a:b]
            if base is None:
                ids = tok.plain_ids(word)
                yield Unit(a, b, word, first, ids, "plain")
            else:
                merged = tok.merges.apply(base)
                groups = tok.word_tokens(word, merged)
                ids = [i for group in groups for i in group]
                if not ids:
                    continue
                yield Unit(a, b, word, first, ids, parts=merged, per_part=list(map(len, groups)), context=base)
            first += len(ids)

    def rule(self, unit: Unit) -> Rule:
        if unit.kind == "plain":
            return Rule("text between words, never merged", None, self.source)
        return Rule("a word", None, self.source)

    def symbols(self, unit: Unit) -> list[int]:
        return list(unit.context)

    def data(self, symbol: int) -> bytes:
        return self.tokenizer.vocab.get(symbol, _UNSEEN)

    def size(self, part: int) -> int:
        return self.sizes.get(part, 1)

    def unknown(self, unit: Unit, part: int) -> str | None:
        return "byte_fallback" if unit.parts[part] < 0 else None
