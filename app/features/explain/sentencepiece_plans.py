"""Explaining SentencePiece-style BPE: ``.model`` files such as Mistral 7B's (:class:`SentencePiecePlan`) and
SentencePiece-style ``tokenizer.json`` files such as Gemma 3's (:class:`SentencePieceJSONPlan`).

SentencePiece has no split regex: it normalizes the text (spaces become ``▁``, and a ``.model`` usually puts a
dummy-prefix ``▁`` before the text) and merges the whole of it, characters as symbols. Our engine merges it in
stretches that no piece of the vocabulary can span (checked when the model is loaded, so the pieces are the
same); each stretch, a word with the ``▁`` before it in practice, is a unit here. A piece that is no vocabulary
entry becomes its ``<0xNN>`` bytes (byte fallback) or ``<unk>``. Pieces merge by score (a ``.model``: the rank
shown is minus the score) or by a merges list (a tokenizer.json). Steps and trees show a piece's own text, ``▁``
included, as UTF-8. Models with ``UNUSED`` pieces (split back after merging) are not explained.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from app.engines.pipeline.pieces import byte_piece
from app.engines.pipeline.tokenizer_json import byte_level_bytes
from app.engines.sentencepiece.model import SentencePieceTokenizer

from .errors import NotExplainableError
from .normalization import Normalization, from_offsets, sentencepiece_steps, tokenizer_json_normalization
from .split_rules import Rule
from .units import Plan, Unit, added_token_units

_SPACES = ("\u2581", " ")
SpanOf = Callable[[int, int], tuple[int, int]]


class SentencePiecePlan(Plan):
    """A SentencePiece BPE ``.model`` run by our engine (:class:`~app.engines.sentencepiece.model.SentencePieceTokenizer`)."""

    symbol_name = "characters"
    special_off = "SentencePiece never reads control pieces such as <s> from text"

    def __init__(self, tokenizer: SentencePieceTokenizer):
        if tokenizer.has_unused:
            raise NotExplainableError(
                f"{tokenizer.name} has UNUSED pieces, which SentencePiece splits back after merging; explaining "
                "such models is not supported"
            )
        self.symbols_of, ranking = tokenizer.ranking()
        super().__init__(tokenizer, ranking)
        self._dense: dict[float, int] | None = None

    def units(self, text: str, allow_special: bool) -> Iterator[Unit]:
        normalized, n2o = self.tokenizer.normalizer.normalize(text)
        return self._units(normalized, 0, lambda i, j: (n2o[i], n2o[j]))

    def _units(self, normalized: str, first: int, span_of: SpanOf) -> Iterator[Unit]:
        """The stretches of a normalized text as units from token ``first`` on, with the ids of their pieces (byte
        fallback, or one ``<unk>`` for a run of unknown pieces, as the engine turns pieces into ids)."""
        tok = self.tokenizer
        to_id, unk = tok.piece_to_id, tok.unk_id
        prev_unk = False
        pos = 0
        for chunk, pieces in tok.merge_chunks(normalized):
            ids = list(map(to_id, pieces))
            per_part = None
            if unk in ids:
                ids, per_part, prev_unk = self._unknown_ids(pieces, ids, prev_unk)
            else:
                prev_unk = False
            start, end = span_of(pos, pos + len(chunk))
            yield Unit(start, end, chunk, first, ids, parts=pieces, per_part=per_part, context=pos == 0)
            pos += len(chunk)
            first += len(ids)

    def _unknown_ids(self, pieces, ids: list[int], prev_unk: bool) -> tuple[list[int], list[int], bool]:
        """The ids of pieces some of which are unknown: byte fallback, or one ``<unk>`` for a run of them; also how
        many ids each piece became, and whether the last piece was unknown."""
        tok = self.tokenizer
        out: list[int] = []
        per_part: list[int] = []
        for piece, pid in zip(pieces, ids):
            is_unk = pid == tok.unk_id
            if is_unk and tok.byte_fallback:
                got = [tok.piece_to_id(byte_piece(b)) for b in piece.encode("utf-8")]
            elif is_unk and getattr(tok, "drops_unknown", False):  # no unknown token: the character gives no id
                got = []
            else:
                got = [] if is_unk and prev_unk and tok.fuse_unk else [pid]
            out.extend(got)
            per_part.append(len(got))
            prev_unk = is_unk
        return out, per_part, prev_unk

    def rule(self, unit: Unit) -> Rule:
        text = unit.text
        if all(c in _SPACES for c in text):
            name = "a run of spaces (▁)"
        elif text[0] in _SPACES:
            name = "a word with the ▁ (its space) before it"
        elif len(text) == 1:
            name = "one character"
        else:
            name = "a word"
        return Rule(name, None, "SentencePiece: a stretch no piece can span the edges of")

    def notes(self, unit: Unit) -> list[str]:
        notes = [
            "SentencePiece merges the whole normalized text; this stretch merges on its own because no piece of the "
            "vocabulary can span its edges (checked when the model is loaded), which gives the very same pieces."
        ]
        normalizer = self.tokenizer.normalizer
        if unit.context and normalizer.add_dummy_prefix and unit.text[0] in _SPACES:
            notes.append(
                "The ▁ at its start is SentencePiece's dummy prefix: a space is put before the text, so that its "
                "first word is cut like any word after a space."
            )
        if "\u2581" in unit.text:
            notes.append("Spaces are written ▁ (U+2581) and merge like any other character.")
        return notes

    def symbols(self, unit: Unit) -> list[str]:
        return self.symbols_of(unit.text)

    def data(self, symbol: str) -> bytes:
        return symbol.encode("utf-8")

    def size(self, part: str) -> int:
        return len(self.symbols_of(part))

    def rank(self, raw: float) -> int:
        """Minus the score for a ``.model`` (a whole number in trained models), a merges-list rank for a
        tokenizer.json; scores that are not whole numbers are numbered densely, best first."""
        if float(raw).is_integer():
            return int(raw)
        if self._dense is None:
            ranks = {r for r in (self.ranking.get(p) for p in self.tokenizer.pieces) if r is not None}
            self._dense = {r: k for k, r in enumerate(sorted(ranks))}
        return self._dense[raw]

    def unknown(self, unit: Unit, part: int) -> str | None:
        tok = self.tokenizer
        if tok.piece_to_id(unit.parts[part]) != tok.unk_id:
            return None
        return "byte_fallback" if tok.byte_fallback else "unknown"

    def normalization(self, text: str, allow_special: bool) -> Normalization:
        tok = self.tokenizer
        steps = sentencepiece_steps(tok.normalizer_spec, tok.normalizer)
        return from_offsets(text, steps, *tok.normalizer.normalize(text))


class SentencePieceJSONPlan(SentencePiecePlan):
    """A SentencePiece-style ``tokenizer.json`` (:class:`~app.engines.sentencepiece.json_model.SentencePieceJSONTokenizer`):
    added tokens and the file's normalizer first, then each word merged as a ``.model`` merges it."""

    special_off = "special tokens were not allowed, so its text was encoded as ordinary text"

    def rule(self, unit: Unit) -> Rule:
        if not self.tokenizer.byte_alphabet:
            return super().rule(unit)
        # A byte-level file (its pieces written in GPT-2's byte alphabet) that lacks some of the 256 byte tokens: the
        # pieces are merged as the file's characters, but they stand for bytes, and no SentencePiece is involved.
        return Rule("a pre-token", None, "byte-level BPE: a word the pre-tokenizer cut, merged by the file's merges")

    def data(self, symbol: str) -> bytes:
        # a byte-level file's pieces stand for the bytes their characters name (Ġ is a space), as its tokens do
        return byte_level_bytes(symbol) if self.tokenizer.byte_alphabet else symbol.encode("utf-8")

    def notes(self, unit: Unit) -> list[str]:
        if not self.tokenizer.byte_alphabet:
            return super().notes(unit)
        return [
            "This byte-level file writes each byte as a character of GPT-2's byte alphabet (Ġ is a space); it lacks "
            "some of the 256 byte tokens, so a byte with no token is the unknown token or is dropped, as the library does."
        ]

    def units(self, text: str, allow_special: bool) -> Iterator[Unit]:
        return added_token_units(self.tokenizer.added, text, allow_special, self._words)

    def normalization(self, text: str, allow_special: bool) -> Normalization:
        return tokenizer_json_normalization(self.tokenizer.added, text, allow_special)

    def _words(self, piece, first: int) -> Iterator[Unit]:
        """The stretches of each word of the normalized text between added tokens, placed back in the input (a word
        the pre-tokenizer rewrote, ``Metaspace``'s ``▁`` before it, by where each of its characters came from)."""
        spans, start = piece.spans, piece.start
        for word, where in self.tokenizer.pretoken_texts(piece):
            if isinstance(where, int):
                at = lambda i, where=where: where + i  # noqa: E731
            else:
                at = where.__getitem__
            if spans:
                span_of = lambda i, j, at=at: (spans[at(i)][0], spans[at(j - 1)][1])  # noqa: E731
            else:
                span_of = lambda i, j, at=at: (start + at(i), start + at(j - 1) + 1)  # noqa: E731
            for unit in self._units(word, first, span_of):
                yield unit
                first = unit.first + len(unit.ids)
