"""One text, several tokenizers: the comparison (:mod:`app.features.compare`) the compare page shows, its
downloads, and ``POST /api/compare``."""

from __future__ import annotations

import csv
import io
import json

from app.engines.result import TokenizeResult
from app.features.compare import (
    MIN_TOKENIZERS,
    Comparison,
    boundaries,
    boundary_diff,
    check_selection,
    compare,
    unk_id_of,
)
from app.settings import Settings

from .catalog import Tokenizers
from .errors import check_text_size, export_format

#: What /compare opens with: OpenAI's three generations beside today's open models (issue 14), so every preset
#: (Japanese, code, numbers...) shows them side by side from the first visit.
PREFERRED_DEFAULTS = ("gpt2", "cl100k_base", "o200k_base", "llama-3", "qwen3", "gemma-3", "mistral-7b")
EXPORT_FORMATS = ("json", "csv")


def default_selection(tokenizers: Tokenizers) -> list[str]:
    """The tokenizers compare opens with (the first few listed when those are not there)."""
    chosen = tokenizers.known(PREFERRED_DEFAULTS)
    return chosen if len(chosen) >= 2 else [s.name for s in tokenizers.listed()[:3]]


def run_compare(
    tokenizers: Tokenizers,
    text: str,
    names: list[str],
    *,
    allow_special: bool,
    reference: str | None,
    settings: Settings,
    minimum: int = MIN_TOKENIZERS,
) -> Comparison:
    """Every named tokenizer on ``text`` (aliases resolved, so ``gpt-4`` and ``cl100k_base`` count once)."""
    check_text_size(text, settings)
    names = check_selection([tokenizers.resolve(n) for n in names], minimum)
    if reference:
        reference = tokenizers.resolve(reference)
    chosen = [tokenizers.get(n) for n in names]
    results = [t.tokenize(text, allow_special=allow_special) for t in chosen]
    return compare(text, results, unk_ids={t.name: unk_id_of(t) for t in chosen}, reference=reference,
                   added={t.name: t.added_specials for t in chosen})


def reference_of(chosen: list[str], reference: str | None) -> str:
    """The reference the table and the panes use: the one the form names if it is ticked, else the first ticked
    (the page moves its ◉ to it: static/compare.js)."""
    return reference if reference in chosen else chosen[0]


def pane_result(
    tokenizers: Tokenizers, name: str, text: str, chosen: list[str], reference: str | None, *, allow_special: bool,
    settings: Settings,
) -> tuple[TokenizeResult, set[int] | None, int]:
    """One pane of a comparison on its own (its pager): the tokenizer ``name``'s result, the reference's
    boundaries (None when it is the reference) and how many of its boundaries differ from them. ``chosen``: the
    ticked tokenizers (known names), which decide the reference as the table does."""
    check_text_size(text, settings)
    tokenizer = tokenizers.get(tokenizers.resolve(name))  # an unknown name: 404 with the valid ones
    reference = reference_of(chosen or [tokenizer.name], tokenizers.first_known(reference))
    result = tokenizer.tokenize(text, allow_special=allow_special)
    if reference == tokenizer.name:
        return result, None, 0
    ref_bounds = boundaries(tokenizers.get(reference).tokenize(text, allow_special=allow_special))
    return result, ref_bounds, len(boundary_diff(result, ref_bounds).offsets)


# -- downloads -----------------------------------------------------------------------------------------------------

CSV_FIELDS = [
    "tokenizer",
    "tokens",
    "count_with_specials",
    "chars",
    "bytes",
    "words",
    "chars_per_token",
    "bytes_per_token",
    "fertility",
    "partial",
    "partial_share",
    "unknown",
    "byte_fallback",
    "special",
    "boundary_diffs",
    "ids",
]


def export_dict(comparison: Comparison, allow_special: bool) -> dict:
    """The downloadable results: the text, ids and stats per tokenizer, the best values, boundary differences."""
    return {
        "text": comparison.text,
        "allow_special": allow_special,
        "reference": comparison.reference,
        "words": comparison.words,
        "results": [
            {
                "tokenizer": r.tokenizer,
                "count": r.count,
                **comparison.counted(r),
                "ids": r.ids,
                "stats": comparison.stats[r.tokenizer].to_dict(),
                "boundary_diff": comparison.diffs[r.tokenizer].offsets if comparison.diffs else [],
            }
            for r in comparison.results
        ],
        "best": comparison.best,
    }


def export_csv(comparison: Comparison) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for r in comparison.results:
        stats = comparison.stats[r.tokenizer].to_dict()
        row = {k: ("" if stats.get(k) is None else stats.get(k)) for k in CSV_FIELDS if k in stats}
        row["tokenizer"] = r.tokenizer
        row["count_with_specials"] = comparison.counted(r)["count_with_specials"]
        row["boundary_diffs"] = len(comparison.diffs[r.tokenizer].offsets) if comparison.diffs else 0
        row["ids"] = " ".join(str(i) for i in r.ids)
        writer.writerow(row)
    return out.getvalue()


def export(
    fmt: str, tokenizers: Tokenizers, text: str, names: list[str], reference: str | None, allow_special: bool,
    settings: Settings,
) -> tuple[str, str]:
    """The comparison as a download in ``fmt`` (``json`` or ``csv``): its body and media type."""
    export_format(fmt, EXPORT_FORMATS)
    comparison = run_compare(
        tokenizers, text, names, allow_special=allow_special, reference=reference, settings=settings
    )
    if fmt == "csv":
        return export_csv(comparison), "text/csv; charset=utf-8"
    return json.dumps(export_dict(comparison, allow_special), ensure_ascii=False, indent=1), "application/json"
