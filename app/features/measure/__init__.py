"""Measure tokenizers on a corpus, at any scale (``tokenplay measure``, and later its page).

- :mod:`.sources` — the corpus's files (``.txt``, ``.jsonl``, ``.parquet``, gzip or zstd), cut into parts, read as
  streams of documents; bad input becomes problems, not errors;
- :mod:`.encoders` — a tokenizer as the measure uses it (ids as arrays, words alone, byte-fallback and unknown ids);
- :mod:`.words` — words (``\\w+``) and the words each tokenizer cuts;
- :mod:`.tally` — what a part adds up to, and how parts merge;
- :mod:`.figures` — the figures of a merged tally (Rényi efficiency, the bootstrap premium...);
- :mod:`.refs` — tokenizers named so any worker can build them;
- :mod:`.executors` — one process, local worker processes, or a Dask cluster;
- :mod:`.report` — :func:`measure` from start to end, and its JSON and CSV;
- :mod:`.conformance` — do two runtimes of one model agree on every document?

No web imports: the CLI and the web's service call :func:`measure`.
"""

from .executors import DaskExecutor, InProcess, MeasureCancelled, MeasureError, ProcessPool, executor_for
from .figures import FIGURES, FigureOptions, ReferenceError
from .refs import TokenizerRef, bytes_ref, callable_ref, registry_ref
from .report import Report, measure
from .sources import CorpusError, ReadOptions, check_group_by

__all__ = [
    "FIGURES",
    "CorpusError",
    "DaskExecutor",
    "FigureOptions",
    "InProcess",
    "MeasureCancelled",
    "MeasureError",
    "ProcessPool",
    "ReadOptions",
    "ReferenceError",
    "Report",
    "TokenizerRef",
    "bytes_ref",
    "callable_ref",
    "check_group_by",
    "executor_for",
    "measure",
    "registry_ref",
]
