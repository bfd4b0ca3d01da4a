"""Explaining WordPiece (BERT, uploaded WordPiece files, the lab's WordPiece runs): each word's greedy walk.

A WordPiece tokenizer normalizes the text (BERT: clean text, space out CJK characters, strip accents, lower-case),
cuts it into words (BERT: at whitespace, each punctuation mark alone) and cuts each word greedily, longest match
first: from the start of the word the longest vocabulary piece that begins there, written with ``##`` after the
first, then the same from where it ended (:func:`app.engines.wordpiece.model.wordpiece_walk`, the walk the lab
draws). A word here is a unit; its walk says, for each piece, how many longer candidates were looked up there and
missed (``tried``). A word with a stretch no piece covers, or longer than ``max_input_chars_per_word``, is one
``[UNK]``; the walk says where it got stuck.

The words and their ids come from the engine's own pipeline (checked against the tokenizer's ids by the
explainer); the walk is checked against the engine's pieces for that word.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field

from app.engines.pipeline.tokenizer_json import pipeline_steps
from app.engines.wordpiece.model import WalkStep, WordPieceTokenizer, wordpiece_walk

from .errors import NotExplainableError
from .normalization import Normalization, Stretch, tokenizer_json_steps
from .split_rules import Rule
from .units import Detail, Plan, Unit


@dataclass(frozen=True, slots=True)
class WalkEntry:
    """One piece of a word's walk: ``piece`` covers ``normalized[start:end]``; ``tried`` longer candidates were
    looked up at ``start`` and missed (``misses``, longest first)."""

    piece: str
    start: int
    end: int
    tried: int
    misses: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"piece": self.piece, "start": self.start, "end": self.end, "tried": self.tried}


@dataclass(slots=True)
class WordPieceDetail(Detail):
    """A word's walk and which of its pieces the token is (``token_piece``); ``stuck`` is where the walk found no
    piece (the word is then one ``[UNK]``)."""

    normalized: str
    walk: list[WalkEntry]
    token_piece: int
    notes: list[str] = field(default_factory=list)
    stuck: int | None = None
    found: list[WalkEntry] = field(default_factory=list)  # the pieces found before getting stuck
    kind: str = "wordpiece"
    window: tuple[int, int] | None = None

    def to_dict(self) -> dict:
        return {
            "walk": [w.to_dict() for w in self.walk],
            "token_piece": self.token_piece,
            "stuck": None if self.stuck is None else {"start": self.stuck, "found": [w.to_dict() for w in self.found]},
        }


def walk_entries(pieces: list[tuple[int, int, str]], tries: list[WalkStep]) -> list[WalkEntry]:
    """Each piece of a walk with the candidates missed at its start."""
    out = []
    for start, end, piece in pieces:
        misses = tuple(t.candidate for t in tries if t.start == start and not t.found)
        out.append(WalkEntry(piece, start, end, len(misses), misses))
    return out


class WordPiecePlan(Plan):
    """A :class:`~app.engines.wordpiece.model.WordPieceTokenizer`: BERT, uploads, lab runs."""

    algorithm = "wordpiece"
    symbol_name = "characters"
    special_off = "special tokens were not allowed here, so its text was cut into words as ordinary text"

    def __init__(self, tokenizer: WordPieceTokenizer):
        super().__init__(tokenizer, None)
        kinds = [s.get("type") for s in _pre_steps(tokenizer)]
        self.bert_words = kinds == ["BertPreTokenizer"]

    def units(self, text: str, allow_special: bool) -> Iterator[Unit]:
        """Each word (or added token) the engine cuts, with its ids (:meth:`~app.engines.wordpiece.model.WordPieceTokenizer.words`)."""
        first = 0
        for w in self.tokenizer.words(text, allow_special):
            if w.token is not None:
                yield Unit(w.start, w.end, w.word, first, [w.token.id], "special" if w.token.special else "added")
                first += 1
                continue
            ids = [t for _, _, t in w.pieces]
            yield Unit(w.start, w.end, w.word, first, ids, parts=w.pieces)
            first += len(ids)

    def data(self, part) -> bytes:
        return self.tokenizer.id_to_token(part[2]).encode("utf-8")

    def rule(self, unit: Unit) -> Rule:
        source = "BERT's pre-tokenizer" if self.bert_words else "the tokenizer.json pre-tokenizer"
        word = unit.text
        if len(word) == 1 and _is_punctuation(word):
            return Rule("a punctuation mark, always a word of its own", None, source)
        if len(word) == 1 and _is_cjk(word) and self.bert_words:
            return Rule("a CJK character: the normalizer spaces each one out, so it is a word of its own", None, source)
        if self.bert_words:
            return Rule("a word: the text between spaces and punctuation marks", None, source)
        return Rule("a pre-token of the pipeline", None, source)

    def normalization(self, text: str, allow_special: bool) -> Normalization:
        normalize = self.tokenizer.added.normalize
        steps = tokenizer_json_steps(normalize.spec) if normalize is not None else []
        stretches = [Stretch(*s) for s in self.tokenizer.normalized_stretches(text, allow_special)]
        return Normalization(text, steps, stretches)

    def detail(self, text: str, unit: Unit, part: int, sub: int) -> WordPieceDetail:
        tok = self.tokenizer
        word = unit.text
        unk = tok.unk_token
        notes = [
            "WordPiece cuts each word greedily from its start: the longest piece of the vocabulary that begins "
            f"there, written with {tok.prefix or 'no prefix'} after the first piece, then again from where that "
            "piece ended. Longer candidates are looked up first; the first one in the vocabulary wins."
        ]
        if len(word) > tok.max_word_chars:
            notes.insert(0, f"This word is {len(word)} characters long, more than the model's limit of "
                            f"{tok.max_word_chars} (max_input_chars_per_word): it is not cut at all but becomes "
                            f"one {unk}.")
            return WordPieceDetail(word, [WalkEntry(unk, 0, len(word), 0)], 0, notes)
        pieces, tries = wordpiece_walk(word, tok.vocab, tok.prefix, tok.longest)
        entries = walk_entries(pieces, tries)
        engine = [tok.vocab[p] for _, _, p in pieces] or [tok.unk_id]
        if engine != [t for _, _, t in unit.parts]:
            raise NotExplainableError("the walk did not give the engine's pieces for this word; please report it")
        if not pieces:
            stuck = tries[-1].start if tries else 0
            found, _ = wordpiece_walk(word[:stuck], tok.vocab, tok.prefix, tok.longest) if stuck else ([], [])
            notes.insert(0, f"The walk found no piece of the vocabulary beginning at character {stuck} "
                            f"({word[stuck:stuck + 1]!r}{' after ' + ' + '.join(p for _, _, p in found) if found else ''}), "
                            f"so the whole word becomes one {unk}.")
            before = [e for e in walk_entries(found, tries)]
            return WordPieceDetail(word, [WalkEntry(unk, 0, len(word), 0)], 0, notes, stuck, before)
        entry = entries[part]
        if entry.misses:
            shown = ", ".join(repr(m) for m in entry.misses[:3]) + (", …" if len(entry.misses) > 3 else "")
            notes.insert(0, f"At character {entry.start} of {word!r} the walk looked up {entry.tried} longer "
                            f"candidate{'s' if entry.tried != 1 else ''} first ({shown}), none in the vocabulary; "
                            f"{entry.piece!r} is the longest piece that begins there.")
        else:
            longest = "the rest of the word" if entry.end == len(word) else f"the longest candidate ({tok.longest} characters, as long as the vocabulary's longest entry)"
            notes.insert(0, f"{entry.piece!r} is {longest}, found in the vocabulary at the first try.")
        return WordPieceDetail(word, entries, part, notes)


def _pre_steps(tokenizer: WordPieceTokenizer) -> list[dict]:
    return pipeline_steps(tokenizer.pre.spec, "pretokenizers")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)
