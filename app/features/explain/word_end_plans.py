"""Explaining BPE ``tokenizer.json`` models whose words end with a suffix (openai-gpt's ``</w>``): the file's
normalizer and pre-tokenizer cut the text into words, each word starts as its characters with the suffix on the last
one (``c o o l</w>``), and the file's merges join them, the listed pair of lowest rank first
(:class:`~app.engines.bpe.word_end_model.WordEndBPETokenizer`). Steps and trees show the pieces as the vocabulary
writes them, suffix included; a character the vocabulary lacks is the unknown token and merges with nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from app.engines.bpe.word_end_model import WordEndBPETokenizer
from app.engines.pipeline.added_tokens import Piece, input_spans
from app.engines.merging import Ranking, pair

from .normalization import Normalization, tokenizer_json_normalization
from .split_rules import Rule
from .units import Plan, Unit, added_token_units


class WordEndPlan(Plan):
    symbol_name = "characters"
    special_off = "special tokens were not allowed, so its text was encoded as ordinary text"
    whole_rule = "ignore_merges"

    def __init__(self, tokenizer: WordEndBPETokenizer):
        super().__init__(tokenizer, Ranking(tokenizer.ranks.get, pair, str.__add__))
        self.unk = next((t for t, i in tokenizer.vocab.items() if i == tokenizer.unk_id), "<unk>")

    def _text(self, part) -> str:
        return self.unk if part[0] is None else part[0]

    def units(self, text: str, allow_special: bool) -> Iterator[Unit]:
        return added_token_units(self.tokenizer.added, text, allow_special, self._words)

    def _words(self, piece: Piece, first: int) -> Iterator[Unit]:
        tok = self.tokenizer
        spans = input_spans(piece)
        for word, positions in tok.words(piece):
            if not word:
                continue
            parts = tok.word_parts(word)
            ids = [tok._part_id(p) for p in parts]
            whole = tok.whole_words and len(parts) == 1 and parts[0][0] == word
            start, end = spans[positions[0]][0], spans[positions[-1]][1]
            yield Unit(start, end, word, first, ids, parts=[self._text(p) for p in parts], whole=whole, context=word)
            first += len(ids)

    def rule(self, unit: Unit) -> Rule:
        return Rule("a word", None, f"the pre-tokenizer's words, each ending with {self.tokenizer.suffix}")

    def notes(self, unit: Unit) -> list[str]:
        return [
            f"Each word starts as its characters with {self.tokenizer.suffix} on the last one, so a piece that ends a "
            "word is another token than the same letters inside a word."
        ]

    def symbols(self, unit: Unit) -> list[str]:
        return [self._text(p) for p in self.tokenizer.initial_parts(unit.context)]

    def data(self, symbol: str) -> bytes:
        return symbol.encode("utf-8")

    def size(self, part: str) -> int:
        suffix = self.tokenizer.suffix
        return max(1, len(part) - (len(suffix) if part.endswith(suffix) and part != suffix else 0))

    def unknown(self, unit: Unit, part: int) -> str | None:
        return "unknown" if self.tokenizer.unk_id is not None and unit.parts[part] == self.unk else None

    def normalization(self, text: str, allow_special: bool) -> Normalization:
        return tokenizer_json_normalization(self.tokenizer.added, text, allow_special)
