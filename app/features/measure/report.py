"""A measurement from start to end (:func:`measure`) and what it answers (:class:`Report`, as JSON or CSV).

:func:`measure` finds the corpus's files and parts, has an executor measure every part, merges the tallies as they
arrive and computes the figures once at the end. The report's JSON is
``{"tokenizers": {NAME: {figure: value, ..., "groups": {GROUP: {...}}}}, "corpus": {...}, "problems": [...],
"options": {...}}`` (:mod:`.figures` defines every figure); its CSV has a row per tokenizer and group (the
corpus as a whole first, group empty).
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import orjson

from .executors import InProcess, Job, MeasureError, Progress, ShouldStop
from .figures import FIGURES, FigureOptions, ReferenceError, figures
from .refs import TokenizerRef
from .sources import PART_BYTES, Problem, ReadOptions, open_corpus
from .tally import Tally


#: Groups one measurement may have (each keeps a frequency table per tokenizer).
MAX_GROUPS = 10_000


@dataclass
class Report:
    tokenizers: dict
    corpus: dict
    problems: list[Problem]
    options: dict
    seconds: float = 0.0
    executor: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        """Whether any document was measured (the CLI's exit status is non-zero when none was)."""
        return self.corpus.get("documents", 0) > 0

    def to_dict(self) -> dict:
        return {
            "tokenizers": self.tokenizers,
            "corpus": self.corpus,
            "problems": [p.to_dict() for p in self.problems],
            "options": self.options,
            "run": {"seconds": round(self.seconds, 3), "executor": self.executor},
        }

    def json(self, indent: bool = True) -> bytes:
        return orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2 if indent else 0)

    def rows(self) -> list[dict]:
        """A row per tokenizer and group: the corpus as a whole (group ``""``) then each group."""
        out = []
        for name, entry in self.tokenizers.items():
            out.append({"tokenizer": name, "group": ""} | {f: entry.get(f) for f in FIGURES})
            for group, values in entry["groups"].items():
                out.append({"tokenizer": name, "group": group} | {f: values.get(f) for f in FIGURES})
        return out

    def csv(self) -> str:
        buffer = io.StringIO()
        columns = ["tokenizer", "group", *FIGURES]
        writer = csv.DictWriter(buffer, columns, lineterminator="\n")
        writer.writeheader()
        for row in self.rows():
            writer.writerow({k: ("" if v is None else repr(v) if isinstance(v, float) else v) for k, v in row.items()})
        return buffer.getvalue()


def measure(
    paths: Iterable[str],
    refs: Sequence[TokenizerRef],
    *,
    read: ReadOptions = ReadOptions(),
    options: FigureOptions = FigureOptions(),
    executor=None,
    part_bytes: int = PART_BYTES,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    on_plan=None,
    max_groups: int = MAX_GROUPS,
) -> Report:
    """Measure the corpus under ``paths`` with every tokenizer of ``refs``. ``on_plan(corpus)`` hears of the files
    and parts before the work starts (a progress bar learns its total there)."""
    started = time.monotonic()
    refs = tuple(refs)
    names = [r.name for r in refs]
    if not refs:
        raise ReferenceError("name at least one tokenizer to measure with")
    if len(set(names)) != len(names):
        raise ReferenceError(f"a tokenizer is named twice: {', '.join(names)}")
    if options.reference_tokenizer is not None and options.reference_tokenizer not in names:
        raise ReferenceError(
            f"the reference tokenizer {options.reference_tokenizer!r} is not measured; add it to the tokenizers "
            f"({', '.join(names)})"
        )
    corpus = open_corpus(paths, part_bytes)
    if on_plan is not None:
        on_plan(corpus)
    executor = executor or InProcess()
    total: list[Tally] = []

    def on_tally(tally: Tally) -> None:
        if total:
            total[0].merge(tally)
        else:
            total.append(tally)
        if len(total[0].groups) > max_groups:  # every group keeps a table per tokenizer: refuse, do not exhaust memory
            raise MeasureError(
                f"the documents fall into more than {max_groups:,} groups (--group-by {read.group_by}); group by a "
                "field with fewer values"
            )

    job = Job(refs, read, tuple(corpus.parts))
    kwargs = {}
    if progress is not None:
        kwargs["progress"] = progress
    if should_stop is not None:
        kwargs["should_stop"] = should_stop
    executor.run(job, on_tally, **kwargs)
    problems = corpus.problems
    if total:
        tally = total[0]
        tally.problems.merge(problems)
        problems = tally.problems
        values = figures(tally, options) if tally.groups else {}
        documents = sum(g.documents for g in tally.groups.values())
        n_bytes = sum(g.bytes for g in tally.groups.values())
        invalid = sum(g.invalid_utf8 for g in tally.groups.values())
        groups = len([k for k in tally.groups if k != ""])
    else:
        values, documents, n_bytes, invalid, groups = {}, 0, 0, 0, 0
    if not values:  # nothing measured: every figure empty
        zero = {"documents": 0, "bytes": 0, "chars": 0, "words": 0, "tokens": 0}
        values = {name: {f: zero.get(f) for f in FIGURES} | {"groups": {}} for name in names}
    return Report(
        tokenizers=values,
        corpus={"files": len(corpus.files), "parts": len(corpus.parts), "input_bytes": corpus.total_bytes,
                "documents": documents, "bytes": n_bytes, "groups": groups, "invalid_utf8_documents": invalid},
        problems=problems.sorted(),
        options={"group_by": read.group_by, "field": read.field, "reference_group": options.reference_group,
                 "reference_tokenizer": options.reference_tokenizer, "resamples": options.resamples,
                 "seed": options.seed, "renyi_order": options.renyi_order},
        seconds=time.monotonic() - started,
        executor=executor.describe(),
    )
