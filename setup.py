"""Build configuration beyond pyproject.toml: the optional C extensions, the compiled twins of hot loops.

Every ``_*.c`` under app/engines/ is one extension, named after its path and built beside the Python loops it is
the twin of (app.engines.compiled.TWINS): ``_merge.c``, the merge loop (app/engines/merging.py); ``bpe/_pieces.c``,
the byte-level split and loop over pre-tokens (bpe/patterns.py, encoder.py); ``sentencepiece/_chunks.c``, the
SentencePiece engine's loop over chunks (sentencepiece/model.py);
``sentencepiece/_lattice.c``, the unigram Viterbi pass and normalizer (sentencepiece/unigram.py, normalizer.py);
``sentencepiece/_unigram_train.c``, the unigram trainer's E-step and pruning losses (sentencepiece/unigram_trainer.py);
``training/_train.c``, the training core's hot loops (training/words.py and pair_counts.py);
``training/_word_table.c``, a corpus's words tallied by a table (training/word_table.py, for the corpus measure). They share
``app/engines/twins.h`` (every extension ``depends`` on it, so a change to it rebuilds them all). ``optional=True``:
where no C compiler is found the install goes on without them, and the Python loops do the same work, slower.
"""

from pathlib import Path

from setuptools import Extension, setup

ENGINES = Path("app/engines")
HEADERS = sorted(h.as_posix() for h in ENGINES.glob("*.h"))

# One extension per C file, as the Makefile's C_SOURCES finds them: a new twin needs no second list.
setup(
    ext_modules=[
        Extension(
            ".".join(src.with_suffix("").parts),
            [src.as_posix()],
            include_dirs=[ENGINES.as_posix()],
            depends=HEADERS,
            optional=True,
            extra_compile_args=["-O2"],
        )
        for src in sorted(ENGINES.rglob("_*.c"))
    ]
)
