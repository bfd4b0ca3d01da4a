"""A vocabulary's health from its files alone (no model weights): the tokens a model can never see in training, and
so never learns an embedding for (" SolidGoldMagikarp", the glitch tokens), and other oddities.

:func:`health` computes, for one tokenizer, each figure of :data:`FIGURES` with examples:

- ``unreachable_bpe``: tokens its own merges never produce from their bytes: BPE over the token's bytes (or
  characters) alone, with every merge, gives other tokens (merge-based tokenizers only);
- ``unreachable_pretokenizer``: whole-UTF-8 tokens whose text alone the pre-tokenizer cuts into more than one piece,
  so no text can reach them whole (tokenizers with a pre-tokenizer only);
- ``partial_utf8``: tokens whose bytes are not whole UTF-8 (they only ever appear beside another piece of a
  character);
- ``never_valid_bytes``: tokens holding a byte that never occurs in UTF-8 (C0, C1, F5–FF): no text produces them;
- ``duplicates``: ids whose bytes an earlier id already has (a byte-fallback piece beside the character's own
  piece, or the same string twice);
- ``special_reachable``: special tokens that plain text produces when the reference library's defaults are used
  (tiktoken refuses special-token text by default; Hugging Face ``tokenizers`` and BERT read it as the special token).

Special tokens are left out of every figure but the last. :func:`usage` adds what a text or corpus leaves unused.
A report is computed once per vocabulary (its :attr:`~.tokens.Vocabulary.fingerprint`) and kept in memory and, given
a directory, on disk as JSON: a second process or a restarted server reads it back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import regex

from app.engines.base import Tokenizer
from app.engines.bpe.json_model import ByteLevelJSONTokenizer
from app.engines.bpe.encoder import piece_merger
from app.engines.bpe.model import RankTokenizer
from app.engines.bpe.word_end_model import WordEndBPETokenizer
from app.engines.huggingface.library import HuggingFaceTokenizer
from app.engines.merging import merge_text
from app.engines.openai.encodings import ENCODINGS, TiktokenTokenizer
from app.engines.result import escape_bytes
from app.engines.sentencepiece.json_model import SentencePieceJSONTokenizer

from .merges import MergeModel, NotMergeBasedError, merge_model
from .store import JSONStore
from .tokens import Vocabulary, vocabulary

FIGURES = (
    "unreachable_bpe",
    "unreachable_pretokenizer",
    "partial_utf8",
    "never_valid_bytes",
    "duplicates",
    "special_reachable",
)
#: What each figure means and why it matters, as the page and the CSV's notes say it.
MEANINGS = {
    "unreachable_bpe": "tokens the tokenizer's own merges never produce from their bytes: BPE over the token's bytes "
    "alone gives other tokens. No text is ever encoded to them, so a model never sees them in training and their "
    "embeddings stay untrained — the glitch tokens (\" SolidGoldMagikarp\") are of this kind",
    "unreachable_pretokenizer": "whole-UTF-8 tokens whose text alone the pre-tokenizer cuts into more than one "
    "piece: a merge never crosses a pre-token's edge, so these too are never produced",
    "partial_utf8": "tokens whose bytes are not whole UTF-8: pieces of a character, seen only beside the rest of it",
    "never_valid_bytes": "tokens holding a byte that never occurs in UTF-8 (C0, C1, F5–FF): no text holds them, so they "
    "are never produced from text",
    "duplicates": "ids whose bytes an earlier id already has: two ids for one string (often a byte-fallback piece "
    "beside the character's own piece), one of which a text rarely or never produces",
    "special_reachable": "special tokens that plain text produces with the reference library's defaults: text that "
    "merely mentions <|endoftext|> can end a document or start a turn (prompt injection)",
}
EXAMPLES = 12
#: Bytes that never occur in UTF-8.
NEVER_UTF8 = bytes([0xC0, 0xC1, *range(0xF5, 0x100)])
_ALL_BYTES = bytes(range(256))


@dataclass
class Figure:
    count: int | None  # None: it does not apply to this tokenizer
    examples: list[dict]
    note: str = ""

    def to_dict(self) -> dict:
        out = {"count": self.count, "examples": self.examples}
        if self.note:
            out["note"] = self.note
        return out


def _example(vocab: Vocabulary, tid: int, **extra) -> dict:
    k = vocab.position[tid]
    return {"id": tid, "text": vocab.texts[k], "bytes_hex": vocab.data[k].hex(), **extra}


def _figure(vocab: Vocabulary, ids: list[int], note: str = "", extra=None) -> Figure:
    examples = [_example(vocab, tid, **(extra(tid) if extra else {})) for tid in ids[:EXAMPLES]]
    return Figure(len(ids), examples, note)


# -- each figure -----------------------------------------------------------------------------------------------------
def unreachable_bpe(vocab: Vocabulary, model: MergeModel | None) -> Figure:
    if model is None:
        return Figure(None, [], "not a BPE tokenizer: it has no merges")
    bad: list[int] = []
    parts_of: dict[int, list] = {}
    special = vocab.special
    merged = [(model.keys[r], model.ids[r]) for r in range(model.n_base, model.size)]
    merged = [(key, tid) for key, tid in merged if tid not in special and key is not None]
    if model.symbols == "bytes" and model.split_key is None:
        # the engines' own compiled merge of a pre-token, with its memo of ranks: ids come back
        ids_of = dict(zip(model.keys, model.ids))
        merge_ids, args = piece_merger(ids_of, model.table if model.rule == "pairs" else None)
        for key, tid in merged:
            got = merge_ids(key, *args)
            if len(got) != 1 or got[0] != tid:
                bad.append(tid)
    else:
        pair_keys = model.rule == "pairs"
        fast = model.split_key is None and model.symbols != "ids"  # a key's characters: the compiled merge
        for key, tid in merged:
            parts = merge_text(key, model.table, pair_keys=pair_keys) if fast else model.merge_parts(key)
            if len(parts) != 1 or parts[0] != key:
                bad.append(tid)
    bad.sort()
    for tid in bad[:EXAMPLES]:  # what BPE gives instead, for the examples
        parts_of[tid] = model.merge_parts(model.keys[model.rank_of_id(tid)])

    def shown(part) -> str:
        return escape_bytes(part) if isinstance(part, bytes) else part

    note = ""
    if model.whole:
        note = ("this tokenizer takes a pre-token that is a token whole (tiktoken's rule, or ignore_merges), so a "
                "token counted here is still produced when it is a whole pre-token")
    return _figure(vocab, bad, note, lambda tid: {"bpe_gives": [shown(p) for p in parts_of[tid]]} if tid in parts_of else {})


def _pretoken_counter(tok: Tokenizer):
    """A function giving how many pre-tokens a text is cut into by ``tok``'s pre-tokenizer, or None without one."""
    if isinstance(tok, (TiktokenTokenizer, RankTokenizer)):
        if isinstance(tok, TiktokenTokenizer):
            pattern = ENCODINGS[tok.name].pattern if tok.name in ENCODINGS else tok._spec.pattern
        else:
            pattern = tok.pattern
        if not pattern:
            return None
        match = regex.compile(pattern).match

        def first_piece(text: str) -> int:
            # one piece when the split's first match is the whole text (its matches tile the text from its start)
            m = match(text)
            return 1 if m is not None and m.end() == len(text) else 2

        return first_piece
    if isinstance(tok, (ByteLevelJSONTokenizer, SentencePieceJSONTokenizer, WordEndBPETokenizer)) or hasattr(tok, "pre"):
        pre = getattr(tok, "pre", None)
        added = getattr(tok, "added", None)
        if pre is None or added is None or not pre.steps:
            return None

        def count(text: str) -> int:
            n = 0
            for piece in added.split(text, True):  # an added token is matched whole before the pre-tokenizer
                if piece.token is not None:
                    n += 1
                elif pre.transforms:
                    n += len(pre.pieces(piece.text, piece.origin()))
                else:
                    n += len(pre(piece.text))
            return n

        return count
    return None


def unreachable_pretokenizer(vocab: Vocabulary, tok: Tokenizer) -> Figure:
    skip = vocab.special | vocab.fallback
    candidates = [(tid, text) for tid, text, valid in zip(vocab.ids, vocab.texts, vocab.valid)
                  if valid and text and tid not in skip]
    if isinstance(tok, HuggingFaceTokenizer):
        # the library's own normalizer and pre-tokenizer (added tokens are matched whole before it), in one call:
        # an uploaded file's run in its host process (app.engines.huggingface.host)
        counts = tok.pretoken_counts([text for _, text in candidates])
    else:
        count = _pretoken_counter(tok)
        counts = None if count is None else [count(text) for _, text in candidates]
    if counts is None:
        return Figure(None, [], "this tokenizer has no pre-tokenizer: nothing cuts a token's text before the model")
    return _figure(vocab, [tid for (tid, _), n in zip(candidates, counts) if n > 1])


def partial_utf8(vocab: Vocabulary) -> Figure:
    return _figure(vocab, [tid for tid, valid in zip(vocab.ids, vocab.valid) if not valid and tid not in vocab.special])


def never_valid_bytes(vocab: Vocabulary) -> Figure:
    keep = _ALL_BYTES.translate(None, NEVER_UTF8)  # every byte that may occur in UTF-8
    bad = [tid for tid, data in zip(vocab.ids, vocab.data) if tid not in vocab.special and data.translate(None, keep)]
    return _figure(vocab, bad)


def duplicates(vocab: Vocabulary) -> Figure:
    first: dict[bytes, int] = {}
    bad: list[int] = []
    for tid, data in zip(vocab.ids, vocab.data):
        if tid in vocab.special:
            continue
        if data in first:
            bad.append(tid)
        else:
            first[data] = tid
    return _figure(vocab, bad, extra=lambda tid: {"same_as": first[vocab.bytes_of(tid)]})


def _default_ids(tok: Tokenizer, text: str) -> list[int] | None:
    """The ids plain ``text`` gets with the reference library's defaults; None when the library refuses it."""
    if isinstance(tok, TiktokenTokenizer):
        try:
            return tok.encoding.encode(text)  # disallowed_special="all": special-token text is refused
        except ValueError:
            return None
    if isinstance(tok, RankTokenizer):
        # tiktoken's rules (our engine of them): special-token text is refused by default, as tiktoken does
        return None if any(s in text for s in tok.special_tokens) else tok.encode(text)
    return tok.encode(text, allow_special=True)  # tokenizers, BERT, SentencePiece: special text is read as such


def special_reachable(vocab: Vocabulary, tok: Tokenizer) -> Figure:
    reached = []
    for text, sid in sorted(tok.special_tokens.items(), key=lambda kv: kv[1]):
        ids = _default_ids(tok, text)
        if ids is not None and sid in ids:
            reached.append(sid)
    reached = sorted(set(reached))
    return _figure(vocab, reached)


# -- the report ------------------------------------------------------------------------------------------------------
def compute(tok: Tokenizer) -> dict:
    """The health report of ``tok`` (no cache): ``{"tokenizer", "n_vocab", "tokens", "figures": {...}, "seconds"}``."""
    start = time.perf_counter()
    vocab = vocabulary(tok)
    try:
        model = merge_model(tok)
    except NotMergeBasedError:
        model = None
    figures = {
        "unreachable_bpe": unreachable_bpe(vocab, model),
        "unreachable_pretokenizer": unreachable_pretokenizer(vocab, tok),
        "partial_utf8": partial_utf8(vocab),
        "never_valid_bytes": never_valid_bytes(vocab),
        "duplicates": duplicates(vocab),
        "special_reachable": special_reachable(vocab, tok),
    }
    return {
        "tokenizer": tok.name,
        "n_vocab": tok.n_vocab,
        "tokens": len(vocab.ids),
        "special": len(vocab.special),
        "merge_based": model is not None,
        "figures": {name: figures[name].to_dict() for name in FIGURES},
        "seconds": round(time.perf_counter() - start, 3),
    }


class HealthStore(JSONStore):
    """Health reports by vocabulary fingerprint (see :class:`~.store.JSONStore`)."""

    def report(self, tok: Tokenizer) -> dict:
        """The report of ``tok``, computed once per vocabulary (other requests for it wait for that one)."""
        found = self.get_or_compute(f"health-{vocabulary(tok).fingerprint}", lambda: compute(tok))
        return {**found, "tokenizer": tok.name}


def usage(tok: Tokenizer, text: str) -> dict:
    """What ``text`` leaves unused of ``tok``'s vocabulary: ``unused`` (tokens it never produces, special tokens
    apart; examples by rank where the vocabulary has ranks, else by id) and ``share`` (the share of the vocabulary it
    used)."""
    vocab = vocabulary(tok)
    used = set(tok.encode(text))
    unused = [tid for tid in vocab.ids if tid not in used and tid not in vocab.special]
    try:
        model = merge_model(tok)
        unused.sort(key=lambda tid: (model.rank_of_id(tid) is None, model.rank_of_id(tid) or 0))
    except NotMergeBasedError:
        pass
    figure = _figure(vocab, unused)
    normal = len(vocab.ids) - len(vocab.special)
    return {
        "unused": figure.to_dict(),
        "used": len(used),
        "share": round(len(used) / normal, 6) if normal else 0.0,
    }


CSV_COLUMNS = ("tokenizer", "n_vocab", *FIGURES)


def csv_rows(reports: list[dict]) -> list[list]:
    """One row per report: the tokenizer, its n_vocab and each figure's count (empty where it does not apply)."""
    rows = []
    for r in reports:
        counts = [r["figures"][f]["count"] for f in FIGURES]
        rows.append([r["tokenizer"], r["n_vocab"], *("" if c is None else c for c in counts)])
    return rows
