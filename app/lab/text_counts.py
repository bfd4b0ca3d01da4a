"""How many tokens a run's tokenizer makes of the whole corpus after each step, beside what training counts.

Training counts the tokens of the words it merges. Byte- and character-level runs train on every character (their
pre-tokens are the pattern's matches and the stretches between them), so the two counts agree; SentencePiece-style
and unigram training read the corpus a line at a time, each line a sentence with its dummy-prefix ``▁`` (as
SentencePiece trains on a file). The run's tokenizer ("use in playground", ``/api/tokenize``, the exported file in
its reference library) reads the corpus as one text: a SentencePiece model puts ``▁`` at the start of the text
only, and cuts each line break into its byte ``<0x0A>`` (no piece holds one). The two counts differ by the words
the two readings do not share (:func:`difference`), which are few: the first word of each line and the line
breaks.

:func:`merge_text_tokens` gives the tokenizer's count after every merge at once: each word of the difference is
merged once, every merge it takes counted at its step, and the difference is added to training's counts.
:func:`unigram_text_tokens` gives it for one round of a unigram run, with that round's model.
"""

from __future__ import annotations

from collections import Counter

from app.engines.base import Tokenizer

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
    # SentencePiece-style: the words after each line's first are the same; a line's first word has its ▁ in
    # training (a non-empty line) but only at the start of the text for the tokenizer, and each line break is one
    # word more (Encoder.text_spans and spans cut the same way, a line at a time; the tests hold them to it)
    out = Counter()
    for n, line in enumerate(corpus.split("\n")):
        first = line.find(" ")
        chunk = line if first < 0 else line[:first]
        if n == 0:
            if not line:
                out[("", True)] += 1  # the text's own ▁, before an empty first line
            continue
        out[("\n", None)] += 1
        if line:
            out[(chunk, True)] -= 1
            if chunk:
                out[(chunk, False)] += 1
    return {word: times for word, times in out.items() if times}


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


def count_words(model: Tokenizer, words: list[Word]) -> int:
    """The tokens a SentencePiece model (our engine, which equals ``sentencepiece``) cuts SentencePiece-style words
    into, each as it is in a text: encoded at once, each word after a line break (which no piece holds, so no
    piece crosses it), a word with ``lead`` after a space, for its ``▁``. The text's own dummy-prefix ``▁`` and the
    line breaks put in are one token each."""
    if not words:
        return 0
    text = "\n" + "\n".join(" " + chunk if lead else chunk for chunk, lead in words)
    return len(model.encode(text)) - 1 - len(words)


def unigram_text_tokens(run: Run, diff: dict[Word, int], model: Tokenizer, k: int) -> int:
    """The tokens of the whole corpus as round ``k``'s ``model`` cuts it (``diff``: :func:`difference`)."""
    more = [word for word, times in diff.items() if times > 0 for _ in range(times)]
    fewer = [word for word, times in diff.items() if times < 0 for _ in range(-times)]
    return run.tokens_at(k) + count_words(model, more) - count_words(model, fewer)


def how_training_counts(run: Run) -> tuple[str, str] | None:
    """How training's count of the corpus differs from the run's tokenizer's, in words: ``(what training counts,
    what the tokenizer does otherwise)``; ``None`` when the two read the corpus alike (the page shows one count)."""
    algorithm, corpus = run.options.algorithm, run.corpus
    if algorithm in ("sentencepiece", "unigram") and "\n" in corpus:
        breaks = corpus.count("\n")
        return ("a line at a time, each line a sentence that starts with ▁ (as SentencePiece trains on a file), as "
                "the corpus below shows it",
                f"it reads the corpus as one text, where only the first line starts with ▁ and each of its "
                f"{breaks:,} line break{'s' * (breaks != 1)} is a token of its own (the byte <0x0A>)")
    return None
