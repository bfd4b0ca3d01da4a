"""The figures of a merged :class:`~.tally.Tally`: ratios, vocabulary use, Rényi efficiency, the premium and its
bootstrap interval. Everything here is computed from integer sums and frequency tables at the end, in one order,
so the same corpus gives the same figures, bit for bit, whatever the workers.

Definitions (per tokenizer, for the whole corpus and for each group):

- ``documents``, ``bytes`` (UTF-8, after invalid sequences became U+FFFD), ``chars`` (code points), ``words``
  (matches of the ``regex`` module's ``\\w+``), ``tokens`` (the sum of every document's token count);
- ``bytes_per_token``, ``chars_per_token``, ``tokens_per_word`` (fertility);
- ``continued_words``: the share of word occurrences that the tokenizer cuts into two or more tokens when the word
  is encoded alone;
- ``vocab_used``: distinct ids that occurred, and ``vocab_used_share`` of ``n_vocab``;
- ``byte_fallback``, ``unknown``: the share of tokens that are byte-fallback pieces, or the unknown token (None for a
  tokenizer that has none);
- ``renyi_efficiency``: the Rényi entropy of order 2.5 of the id frequencies over ``log n_vocab`` (Zouhar et al.
  2023, "Tokenization and the Noiseless Channel"): ``log(sum p_i^a) / (1 - a) / log n_vocab``;
- ``premium`` against a reference group: this group's tokens over the reference group's (the same tokenizer), which
  says how much more a language pays when the groups hold the same content (a parallel corpus); against a
  reference tokenizer (``tokenizer_premium``): this tokenizer's tokens over the reference's, on the same documents.
  Each with ``_low`` and ``_high``, the 95% percentile interval of the ratio over bootstrap resamples of the
  documents (1,000 by default, a fixed seed; each group's resamples drawn from its own seed, the same for every
  tokenizer).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.engines.errors import TokenplayError

from .tally import GroupSums, Tally, TokenSums

RENYI_ORDER = 2.5
RESAMPLES = 1000
SEED = 0
CONFIDENCE = 0.95
#: Resampled document indices drawn at a time (resamples x documents), bounding the bootstrap's memory.
DRAW_BLOCK = 1 << 22

#: Every figure, in the order the CSV and the tables list them.
FIGURES = (
    "documents", "bytes", "chars", "words", "tokens", "bytes_per_token", "chars_per_token", "tokens_per_word",
    "continued_words", "vocab_used", "vocab_used_share", "n_vocab", "byte_fallback", "unknown", "renyi_efficiency",
    "premium", "premium_low", "premium_high", "tokenizer_premium", "tokenizer_premium_low", "tokenizer_premium_high",
)


class ReferenceError(TokenplayError, LookupError):
    """A reference group or tokenizer that the measurement does not have."""


@dataclass(frozen=True)
class FigureOptions:
    reference_group: str | None = None
    reference_tokenizer: str | None = None
    resamples: int = RESAMPLES
    seed: int = SEED
    renyi_order: float = RENYI_ORDER


def ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def renyi_efficiency(counts: np.ndarray, n_vocab: int, order: float = RENYI_ORDER) -> float | None:
    """Rényi entropy of order ``order`` of the frequencies ``counts`` over ``log n_vocab`` (None when nothing
    occurred or the vocabulary has one id).

    >>> round(renyi_efficiency(np.array([1, 1]), 4), 6)  # two ids, equally often: H = log 2, over log 4
    0.5
    """
    total = counts.sum()
    if total <= 0 or n_vocab < 2:
        return None
    p = counts[counts > 0] / total
    if order == 1:
        entropy = float(-(p * np.log(p)).sum())
    else:
        entropy = float(math.log(float(np.power(p, order).sum())) / (1 - order))
    return entropy / math.log(n_vocab)


def _base_figures(group: GroupSums, sums: TokenSums, n_vocab: int, kinds: tuple[bool, bool], order: float) -> dict:
    ids, counts = sums.ids.arrays()
    has_unknown, has_fallback = kinds
    return {
        "documents": group.documents,
        "bytes": group.bytes,
        "chars": group.chars,
        "words": group.words,
        "tokens": sums.tokens,
        "bytes_per_token": ratio(group.bytes, sums.tokens),
        "chars_per_token": ratio(group.chars, sums.tokens),
        "tokens_per_word": ratio(sums.tokens, group.words),
        "continued_words": ratio(sums.continued, group.words),
        "vocab_used": int(len(ids)),
        "vocab_used_share": ratio(len(ids), n_vocab),
        "n_vocab": n_vocab,
        "byte_fallback": ratio(sums.fallback, sums.tokens) if has_fallback else None,
        "unknown": ratio(sums.unknown, sums.tokens) if has_unknown else None,
        "renyi_efficiency": renyi_efficiency(counts, n_vocab, order),
    }


def _total(tally: Tally, name: str) -> tuple[GroupSums, TokenSums]:
    """The whole corpus's sums through one tokenizer (every group added up, in sorted order)."""
    group, sums = GroupSums(), TokenSums(tally.n_vocab[name])
    for key in sorted(tally.groups):
        group.merge(tally.groups[key])
        sums.merge(tally.tokens[name][key])
    return group, sums


def group_seed(seed: int, key: str) -> np.random.Generator:
    """The random generator of one group's resamples: from the seed and the group's name only (so adding a group
    changes no other group's interval)."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def resampled_sums(per_doc: Sequence[np.ndarray], resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``resamples`` bootstrap resamples of the documents (``len(per_doc[0])`` of them, drawn with replacement),
    and for each the sum of every array of ``per_doc`` over it: shape ``(resamples, len(per_doc))``. The same
    draws serve every array (the tokenizers are compared on the same resamples)."""
    n = len(per_doc[0]) if per_doc else 0
    out = np.zeros((resamples, len(per_doc)), dtype=np.int64)
    if n == 0:
        return out
    columns = np.stack([np.asarray(a, dtype=np.int64) for a in per_doc], axis=1)
    block = max(1, DRAW_BLOCK // (n * len(per_doc)))
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        draws = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = columns[draws].sum(axis=1)
    return out


def interval(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """The percentile interval of ``samples`` (NaN and infinite ones left out: a resample whose reference had no
    tokens).

    >>> interval(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 0.5)
    (2.0, 4.0)
    """
    finite = samples[np.isfinite(samples)]
    if not len(finite):
        return None, None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def _ratios(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return num.astype(np.float64) / den.astype(np.float64)


def figures(tally: Tally, options: FigureOptions = FigureOptions()) -> dict:
    """``{tokenizer: {figure: value, ..., "groups": {group: {figure: value, ...}}}}`` (groups: {} when the
    documents were not grouped)."""
    tally.fold()
    names = tally.tokenizers
    if options.reference_tokenizer is not None and options.reference_tokenizer not in names:
        raise ReferenceError(
            f"the reference tokenizer {options.reference_tokenizer!r} is not measured; measure it too "
            f"(--tokenizers ...,{options.reference_tokenizer}) or choose one of: {', '.join(names)}"
        )
    grouped = any(key != "" for key in tally.groups)
    if options.reference_group is not None and options.reference_group not in tally.groups:
        shown = ", ".join(sorted(tally.groups)[:20]) if grouped else "(none: use --group-by)"
        raise ReferenceError(f"no group {options.reference_group!r} in the corpus; its groups are: {shown}")
    out: dict[str, dict] = {}
    for name in names:
        group, sums = _total(tally, name)
        entry = _base_figures(group, sums, tally.n_vocab[name], tally.kinds[name], options.renyi_order)
        entry["groups"] = {}
        if grouped:
            for key in sorted(tally.groups):
                entry["groups"][key] = _base_figures(tally.groups[key], tally.tokens[name][key], tally.n_vocab[name],
                                                     tally.kinds[name], options.renyi_order)
        out[name] = entry
    if options.reference_group is not None or options.reference_tokenizer is not None:
        _premiums(tally, out, options, grouped)
    return out


def _premiums(tally: Tally, out: dict, options: FigureOptions, grouped: bool) -> None:
    names = list(tally.tokenizers)
    keys, group_of, per_doc = tally.document_arrays()
    columns = [per_doc[name] for name in names]
    resampled: dict[str, np.ndarray] = {}  # group -> (resamples, tokenizers) sums
    for g, key in enumerate(keys):
        members = np.flatnonzero(group_of == g)
        resampled[key] = resampled_sums([c[members] for c in columns], options.resamples, group_seed(options.seed, key))
    ref_tok = options.reference_tokenizer
    if ref_tok is not None:
        r = names.index(ref_tok)
        whole = resampled_sums(columns, options.resamples, group_seed(options.seed, "\0all documents"))
        for t, name in enumerate(names):
            entry = out[name]
            _put(entry, "tokenizer_premium", ratio(entry["tokens"], out[ref_tok]["tokens"]),
                 _ratios(whole[:, t], whole[:, r]))
            for key in entry["groups"]:
                tokens, ref_tokens = entry["groups"][key]["tokens"], out[ref_tok]["groups"][key]["tokens"]
                _put(entry["groups"][key], "tokenizer_premium", ratio(tokens, ref_tokens),
                     _ratios(resampled[key][:, t], resampled[key][:, r]))
    ref_group = options.reference_group
    if ref_group is not None and grouped:
        for t, name in enumerate(names):
            groups = out[name]["groups"]
            for key in groups:
                _put(groups[key], "premium", ratio(groups[key]["tokens"], groups[ref_group]["tokens"]),
                     _ratios(resampled[key][:, t], resampled[ref_group][:, t]))


def _put(entry: dict, name: str, value: float | None, samples: np.ndarray) -> None:
    low, high = interval(samples) if value is not None else (None, None)
    entry[name], entry[f"{name}_low"], entry[f"{name}_high"] = value, low, high
