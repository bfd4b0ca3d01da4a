"""What a finished run's vocabulary is made of, and, when it ended short of the size asked for, why.

Each trainer stops for its own reason, and the pages say it in the algorithm's words, from the run's records:

- BPE (byte-level, character-level) merges only a pair that occurs at least twice: it stops when none does (often
  because every word of a small corpus is one token already);
- WordPiece merges any pair that occurs, even once, unless its text is a piece already: it stops when no pair is
  left (every word is one piece);
- sentencepiece's trainers (SentencePiece BPE, Unigram) never end short: a size the corpus cannot fill is refused
  before the run is kept, as sentencepiece refuses it, with the largest size that works
  (:func:`app.lab.spm_runs.spm_refusal`).

A run that ends short also says which sizes work (:attr:`Outcome.sizes`): a merge-based run merges the same pairs
whatever size it is asked for, so it reaches every size from its base vocabulary to where it stopped, and no
more, with the same settings.

Nothing here trains; the numbers come from the run (its base vocabulary, its steps, its options).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engines.sentencepiece.proto import BYTE, CONTROL, UNKNOWN, USER_DEFINED, ModelProto

from .algorithms import encoders, transition_of
from .runs import Run

ALGORITHM_NAMES = {"byte": "BPE", "char": "BPE", "sentencepiece": "BPE", "wordpiece": "WordPiece", "unigram": "Unigram"}


def _n(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished run's vocabulary: ``reached`` tokens of the ``asked`` (``parts`` says what they are), and
    ``reason`` when the two differ; ``sizes``, when the run ended short and the lab knows them, the vocabulary
    sizes that work on this corpus with these settings (``(smallest, largest)``), and ``steps`` the merges (a
    unigram run: the learned pieces) that work, ``(0, most)``."""

    asked: int
    reached: int
    parts: tuple[tuple[int, str], ...]
    reason: str | None
    sizes: tuple[int, int] | None = None
    steps: tuple[int, int] | None = None

    def to_dict(self) -> dict:
        """The API's form of it (``/api/train``): ``reachable`` is None unless the run ended short and the sizes
        that work are known."""
        reachable = None
        if self.sizes is not None and self.steps is not None:
            reachable = {"vocab_size": {"min": self.sizes[0], "max": self.sizes[1]},
                         "merges": {"min": self.steps[0], "max": self.steps[1]}}
        return {"asked": self.asked, "reached": self.reached, "reason": self.reason, "reachable": reachable}

    @property
    def short(self) -> bool:
        return self.reached != self.asked

    @property
    def breakdown(self) -> str:
        """``3 special + 256 bytes + 11 characters + 20 merges``."""
        return " + ".join(f"{n:,} {what}" for n, what in self.parts if n or what.endswith(("merges", "merge")))


def outcome(run: Run) -> Outcome:
    """The vocabulary of a finished run and, when it ended away from the size asked for, why (see the module)."""
    algorithm = run.options.algorithm
    n = run.n_steps
    if algorithm in ("sentencepiece", "unigram"):
        return _sentencepiece(run)
    base = len(run.base)
    asked = base + run.target_merges
    reached = base + n
    if algorithm == "byte":
        parts = ((256, "bytes"),)
    elif algorithm == "char":
        eow = run.options.end_of_word
        parts = ((base - eow, "characters"),) + (((1, "end-of-word marker"),) if eow else ())
    else:
        texts = [b.decode() for i, b in run.base.items() if i]
        inner = sum(t.startswith("##") for t in texts)
        parts = ((1, "[UNK]"), (len(texts) - inner, "characters"), (inner, "##characters"))
    parts += ((n, "merge" if n == 1 else "merges"),)
    if reached == asked:
        return Outcome(asked, reached, parts, None)
    reason = (f"{_merge_reason(run, asked, reached)}; with these settings this corpus supports at most "
              f"{_n(n, 'merge')}: a vocabulary of {base:,} to {reached:,} tokens")
    return Outcome(asked, reached, parts, reason, (base, reached), (0, n))


def _words(run: Run) -> int:
    """How many words the trainer saw (the tokens of a corpus whose every word is one token)."""
    one, two = encoders(run.options, run.base)
    t = transition_of(run.options)
    return len((two if t is not None and run.n_steps > t else one).spans(run.corpus))


def _merge_reason(run: Run, asked: int, reached: int) -> str:
    name = ALGORITHM_NAMES[run.options.algorithm]
    n = run.n_steps
    if run.options.vocab_size is not None:
        where = f"{name} stopped at {reached:,} of the {asked:,} tokens asked for, after {_n(n, 'merge')}"
    else:
        where = f"{name} stopped after {n:,} of the {_n(run.target_merges, 'merge')} asked for"
    one_each = run.tokens_at(n) <= _words(run)
    if run.options.algorithm == "wordpiece":
        if one_each:
            return f"{where}: no pair left to merge, every word of the corpus is one piece"
        return f"{where}: no pair left to merge, the pairs left would only make pieces it already has"
    if one_each:
        return f"{where}: every word of the corpus is one token already (no pair left to merge)"
    if run.options.min_count != 2:
        m = run.options.min_count
        return (f"{where}: no pair of neighbouring tokens occurs {'even once' if m == 1 else f'{m} times'} in the corpus "
                f"any more (this run merges pairs seen {m} time{'s' * (m != 1)} or more)")
    return f"{where}: no pair of neighbouring tokens occurs twice in the corpus any more (BPE merges only pairs that repeat)"


def _sentencepiece(run: Run) -> Outcome:
    """A run of sentencepiece's trainers: its ``.model``'s pieces by kind (it has the size asked for: sentencepiece
    refuses a size the corpus cannot fill)."""
    types = [p.type for p in ModelProto.parse(run.model).pieces]
    special = sum(t in (CONTROL, UNKNOWN) for t in types)
    user = types.count(USER_DEFINED)
    byte = types.count(BYTE)
    n = run.n_steps
    if run.unigram:
        final = [run.base[i].decode("utf-8") for i in range(len(types))]
        chars = sum(len(p) == 1 for p, t in zip(final, types) if t not in (CONTROL, UNKNOWN, USER_DEFINED, BYTE))
        learned = len(types) - special - user - byte - chars
        tail = ((chars, "characters"), (learned, "longer piece" if learned == 1 else "longer pieces"))
    else:
        tail = ((len(types) - special - user - byte - n, "characters"), (n, "merge" if n == 1 else "merges"))
    parts = ((special, "special"), (user, "user-defined symbols"), (byte, "byte pieces")) + tail
    return Outcome(len(types), len(types), parts, None)
