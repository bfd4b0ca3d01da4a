"""Which compiled twins of hot loops this process runs: the C extensions setup.py builds next to their Python loops
(:data:`TWINS`: ``app/engines/_merge.c``, ``bpe/_pieces.c``, ``sentencepiece/_lattice.c``, ``_chunks.c`` and
``_spm_train.c``, ``_spm_unigram.c``, ``training/_train.c`` and ``_word_table.c``), and what they share, here:
``twins.h`` (the header every one of them includes), ``piece_rules.h`` (the pieces sentencepiece's two trainers may
make) and the frozen containers a table file's sections are read as (``_frozen.c``, their layout in ``frozen.h``,
which the merge loop reads too).

Each twin is optional: a machine without a C compiler installs without it, and ``TOKENPLAY_PURE_PYTHON=1`` turns
them all off (the tests run both ways). This module only finds them; the modules that own the loops choose between
the twin and their Python loop, which give the same results.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

#: Each twin by its name, and the module it is built as: the C file of the same path under app/engines/, beside the
#: Python loops it is the twin of (setup.py builds every ``_*.c`` there; the tests hold this table to the files).
TWINS = {
    "_merge": "app.engines._merge",  # merging.py
    "_frozen": "app.engines.compiled._frozen",  # registry/table_files.py's sections (read by merging.py too)
    "_pieces": "app.engines.bpe._pieces",  # bpe/patterns.py and encoder.py
    "_lattice": "app.engines.sentencepiece._lattice",  # sentencepiece/unigram.py and normalizer.py
    "_chunks": "app.engines.sentencepiece._chunks",  # sentencepiece/model.py
    "_spm_train": "app.engines.sentencepiece._spm_train",  # sentencepiece/bpe_trainer.py
    "_spm_unigram": "app.engines.sentencepiece._spm_unigram",  # sentencepiece/unigram_trainer.py (no Python twin)
    "_train": "app.engines.training._train",  # training/words.py and pair_counts.py, wordpiece/trainer.py
    "_word_table": "app.engines.training._word_table",  # training/word_table.py (the corpus measure's words)
}


def twin(module: str, name: str) -> Callable[..., Any] | None:
    """The function ``name`` of the compiled twin ``module`` (a name in :data:`TWINS`), or None when that was not
    built or ``TOKENPLAY_PURE_PYTHON=1``.

    >>> twin("_no_such_module", "merge") is None
    True
    """
    if os.environ.get("TOKENPLAY_PURE_PYTHON") == "1":
        return None
    try:
        return getattr(importlib.import_module(TWINS.get(module, f"{__package__}.{module}")), name)
    except ImportError:  # built without a C compiler: the Python loop does the same, slower
        return None
