"""How many tokens a run's tokenizer makes of the whole corpus after each step, beside what training counts.

Training counts the tokens of the words it merges. Byte- and character-level runs train on every character (their
pre-tokens are the pattern's matches and the stretches between them), so their count is the count of the run's
tokenizer ("use in playground", ``/api/tokenize``, the exported file in its reference library), which reads the
corpus as one text. Where the two readings differ, they differ by the words they do not share (:func:`difference`).

:func:`merge_text_tokens` gives the tokenizer's count after every merge at once: each word of the difference is
merged once, every merge it takes counted at its step, and the difference is added to training's counts.
SentencePiece BPE and unigram runs count with their step's own model instead (:mod:`.spm_replay`,
:mod:`.unigram_replay`): sentencepiece's trainer reads the corpus as the model does, normalized, except for the
characters it leaves out (:func:`how_training_counts` says how).
"""

from __future__ import annotations

from collections import Counter

from .algorithms import Encoder
from .runs import Run

Word = tuple[str, "bool | None"]


def difference(encoder: Encoder, corpus: str) -> dict[Word, int]:
    """The words ``(text, lead)`` the tokenizer's reading of ``corpus`` has more (positive) or fewer (negative)
    times than training's; lead ``None`` is text between words (see :class:`~.algorithms.Encoder`)."""
    if encoder.algorithm == "wordpiece":  # BERT's pre-tokenizer drops the whitespace, as training does
        return {}
    if encoder.algorithm in ("byte", "char"):  # the same words, and the text between them
        out: Counter = Counter()
        pos = 0
        for a, b, _ in encoder.spans(corpus):
            if a > pos:
                out[(corpus[pos:a], None)] += 1
            pos = b
        if pos < len(corpus):
            out[(corpus[pos:], None)] += 1
        return dict(out)
    raise ValueError(f"{encoder.algorithm} runs count with their own model")


def merge_text_tokens(run: Run, encoder: Encoder, merge_ranks) -> list[int]:
    """The tokens of the whole corpus as the run's tokenizer cuts it after ``k`` merges, for every ``k`` from 0
    to the run's last step. ``merge_ranks(ids)`` lists the ranks of the merges that all the run's merges make in
    ``ids`` (:meth:`.replay.Merges.ranks_in`)."""
    n = run.n_steps
    delta = [0] * (n + 1)
    for (chunk, lead), times in difference(encoder, run.corpus).items():
        ids = encoder.text_ids(chunk, lead)
        delta[0] += times * len(ids)
        for rank in merge_ranks(ids):  # merge ``rank + 1`` joins two of its tokens into one
            delta[rank + 1] -= times
    out: list[int] = []
    extra = 0
    for k in range(n + 1):
        extra += delta[k]
        out.append(run.tokens_at(k) + extra)
    return out


def how_training_counts(run: Run) -> tuple[str, str] | None:
    """How training's count of the corpus differs from the run's tokenizer's, in words: ``(what training counts,
    what the tokenizer does otherwise)``; ``None`` when the two read the corpus alike (the page shows one count)."""
    algorithm = run.options.algorithm
    if algorithm in ("sentencepiece", "unigram"):
        unknown = ("its UTF-8 bytes, a byte piece each (byte fallback)" if run.options.spm_options().byte_fallback
                   else "<unk>, one for a run of them")
        return ("as sentencepiece's trainer reads it, a sentence a line, normalized, each character outside "
                "character_coverage one symbol ▅ that no piece holds",
                f"it reads the corpus as one text, where a character the vocabulary lacks is {unknown}")
    return None
