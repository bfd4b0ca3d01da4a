"""Trained lab runs as playground tokenizers ("use in playground"), registered as ``lab-<run id>``.

Byte-level runs become the BPE engine's own :class:`~app.engines.bpe.BPETokenizer` (tiktoken semantics);
SentencePiece BPE and unigram runs the SentencePiece engines running the run's trained ``.model``; WordPiece
runs the WordPiece engine running its ``tokenizer.json``. Character-level runs
become a :class:`LabTokenizer`: the run's merges applied by rank
to each word, with byte fallback for characters the corpus never had (ids after the vocabulary, one per byte),
so any text tokenizes and the tokens' bytes join back to the text. ``</w>`` is shown in a token's text but
stands for no bytes. A :class:`LabTokenizer` brings the explain view its own plan
(:class:`LabPlan`, below it), which retraces the run's merges.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from app.engines import registry
from app.engines.base import Tokenizer
from app.features.explain.split_rules import Rule
from app.features.explain.units import Plan, Unit
from app.engines.merging import Ranking, pair
from app.engines.registry import TokenizerSpec

from .algorithms import END_OF_WORD, final_encoder
from .runs import Run
from .replay import Merges
from .splits import findall_regex

PREFIX = "lab-"


class LabTokenizer(Tokenizer):
    def __init__(self, run: Run):
        self.run = run
        self.vocab = run.vocab()
        self.n_trained = max(self.vocab) + 1 if self.vocab else 0
        self.merges = Merges(run.steps)
        opts = run.options
        self.encoder = final_encoder(run.options, run.base, run.n_steps)
        eow = END_OF_WORD.encode()
        self._bytes = {i: b.replace(eow, b"") if opts.end_of_word else b for i, b in self.vocab.items()}

    @property
    def n_vocab(self) -> int:
        return self.n_trained + 256

    def token_bytes(self, token_id: int) -> bytes:
        if self.n_trained <= token_id < self.n_trained + 256:
            return bytes([token_id - self.n_trained])
        return self._bytes[token_id]

    def _fallback(self, ch: str) -> list[int]:
        return [self.n_trained + b for b in ch.encode("utf-8")]

    def plain_ids(self, text: str) -> list[int]:
        """Text between words: each character as its base token, or its bytes."""
        out: list[int] = []
        for ch in text:
            i = self.encoder.char_ids.get(ch)
            out.extend([i] if i is not None else self._fallback(ch))
        return out

    def words(self, text: str) -> list[tuple[int, int, list[int] | None]]:
        """``text`` as ``(start, end, base ids)`` stretches in order: the words the merges apply to, and the text
        between them (base ids ``None``: never merged)."""
        out: list[tuple[int, int, list[int] | None]] = []
        pos = 0
        for a, b, lead in self.encoder.spans(text):
            if a > pos:
                out.append((pos, a, None))
            word = text[a:b]
            out.append((a, b, self.encoder.word_ids(word, lead)))
            pos = b
        if pos < len(text):
            out.append((pos, len(text), None))
        return out

    def word_tokens(self, word: str, merged: list[int]) -> list[list[int]]:
        """The ids each merged part of ``word`` becomes: itself, or for a character the run never saw (-1) its
        bytes' fallback ids."""
        out: list[list[int]] = []
        chars = iter(word)
        for t in merged:
            if t >= 0:
                out.append([t])
                if t != self.encoder.eow_id:
                    for _ in self.vocab[t].decode("utf-8").replace(END_OF_WORD, ""):
                        next(chars, None)
            else:
                out.append(self._fallback(next(chars)))
        return out

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        out: list[int] = []
        for a, b, base in self.words(text):
            if base is None:
                out.extend(self.plain_ids(text[a:b]))
            else:
                for ids in self.word_tokens(text[a:b], self.merges.apply(base)):
                    out.extend(ids)
        return out

    # -- what the vocabulary views read (app.features.vocab.merges: ranks, parents, children, the ladder) -------------
    def merge_order(self) -> tuple[list[int], list[tuple[int, int, int]]]:
        """The base ids (characters, ``</w>``, ``▁``: what no merge makes) and the run's merges in order, each as
        ``(left id, right id, new id)``."""
        made = set(self.merges.new_id.values())
        base = sorted(i for i in self.vocab if i not in made)
        return base, [(a, b, new) for (a, b), new in self.merges.new_id.items()]

    def count_with_merges(self, text: str, k: int) -> int:
        """How many tokens ``text`` takes with only the run's first ``k`` merges (as :meth:`encode` with all)."""
        n = 0
        for a, b, base in self.words(text):
            if base is None:
                n += len(self.plain_ids(text[a:b]))
            else:
                n += sum(map(len, self.word_tokens(text[a:b], self.merges.apply(base, k))))
        return n

    def explain_plan(self):
        """How the explain view retraces this tokenizer's merges (:class:`LabPlan`)."""
        return LabPlan(self)


# -- the explain view's plan ---------------------------------------------------------------------------------------
# A run's words (its pre-tokenizer's matches) start as base ids,
# characters and ``</w>`` when the run has one; the run's merges apply by rank, the rank of a merge being its place
# in the run (0 for the first merge). Text between words is never merged; a character the run never saw falls back
# to its bytes. Steps and trees show the run's own token text (``</w>`` included). Byte-level and
# SentencePiece runs are explained by the engines' own plans; this one is for :class:`LabTokenizer` only.

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
        self.source = f"the run's {opts.pattern} split"

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


def _build(run: Run) -> Tokenizer:
    opts = run.options
    if opts.algorithm == "byte":
        from app.engines.bpe import BPETokenizer

        split = final_encoder(run.options, run.base, run.n_steps)
        pattern = findall_regex(split.pattern, split.pattern_regex)
        tokenizer = BPETokenizer([s.pair for s in run.steps], pattern or "none", name=PREFIX + run.id)
        if split.pattern == "custom":  # cut exactly as the lab cuts (empty matches too), within the time budget
            tokenizer.encoder.split = partial(split.split.pieces, timeout=split.timeout)
        return tokenizer
    if opts.algorithm in ("sentencepiece", "unigram") and run.model:
        from app.engines.sentencepiece.unigram import sentencepiece_tokenizer

        return sentencepiece_tokenizer(run.model, name=PREFIX + run.id)
    if opts.algorithm == "wordpiece" and run.model:
        from app.engines.registry.loaders import tokenizer_from_json

        return tokenizer_from_json(run.model, name=PREFIX + run.id)
    return LabTokenizer(run)


def _n_vocab(run: Run) -> int:
    if run.unigram:
        return run.extra["n_final"]
    return len(run.base) + run.n_steps + (256 if run.options.algorithm == "char" else 0)  # + byte fallback


def spec_for(run: Run) -> TokenizerSpec:
    return TokenizerSpec(
        name=PREFIX + run.id,
        label=run.label(),
        family="lab",
        factory=lambda: _build(run),
        description=run.options.describe(),
        maker="trained here",
        n_vocab=_n_vocab(run),
        engine="tokenplay",
    )


#: Lab tokenizers kept registered in one process; older ones are dropped (each holds its whole run) and come
#: back from the run store when their user asks for them again (``user_tokenizers``, :mod:`app.services.catalog`).
MAX_REGISTERED = 64


def register_run(run: Run, limit: int = MAX_REGISTERED) -> TokenizerSpec:
    """Register ``run`` as ``lab-<id>`` (most recently used last) and drop the least recently used beyond ``limit``."""
    spec = spec_for(run)
    registry.unregister(spec.name)  # re-adding moves it to the end: the registry's order is the LRU order
    registry.register(spec)
    lab_names = [n for n in registry.names() if is_lab_name(n)]
    for name in lab_names[: max(0, len(lab_names) - limit)]:
        registry.unregister(name)
    return spec


def user_tokenizers(run_ids: list[str], lab=None) -> list[TokenizerSpec]:
    """The lab tokenizers of ``run_ids`` (the runs a user put in the playground), registered and in order.

    A run registered by another worker process is loaded from the run store (``lab``) and registered here.
    """
    out = []
    known = {s.name: s for s in registry.specs()}
    for run_id in run_ids:
        spec = known.get(PREFIX + run_id)
        if spec is None and lab is not None:
            run = lab.get(run_id)
            if run is not None and run.status == "done":
                spec = register_run(run)
        if spec is not None:
            out.append(spec)
    return out


def is_lab_name(name: str) -> bool:
    return name.startswith(PREFIX)
