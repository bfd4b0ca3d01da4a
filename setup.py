"""Build configuration beyond pyproject.toml: the optional C extensions, the compiled twins of hot loops.

Every ``_*.c`` under app/engines/ is one extension, named after its path and built beside the Python loops it is
the twin of (app.engines.compiled.TWINS): ``_merge.c``, the merge loop (app/engines/merging.py); ``bpe/_pieces.c``,
the byte-level split and loop over pre-tokens (bpe/patterns.py, encoder.py); ``sentencepiece/_chunks.c``, the
SentencePiece engine's loop over chunks (sentencepiece/model.py);
``sentencepiece/_lattice.c``, the unigram Viterbi pass and normalizer (sentencepiece/unigram.py, normalizer.py);
``sentencepiece/_spm_train.c``, sentencepiece's BPE merge loop (sentencepiece/bpe_trainer.py);
``sentencepiece/_spm_unigram.c``, sentencepiece's unigram trainer's passes (sentencepiece/unigram_trainer.py, which
has no Python twin: without a C compiler it refuses to train, saying so);
``training/_train.c``, the training core's hot loops (training/words.py and pair_counts.py);
``training/_word_table.c``, a corpus's words tallied by a table (training/word_table.py, for the corpus measure); and
``compiled/_frozen.c``, the frozen containers of table files (registry/table_files.py). They share the headers of
``app/engines/compiled/`` (``twins.h``, ``frozen.h``, and ``piece_rules.h`` for the two sentencepiece trainers: every
extension ``depends`` on them, so a change to one rebuilds them all). ``optional=True``:
where no C compiler is found the install goes on without them, and the Python loops do the same work, slower.
"""

from pathlib import Path

from setuptools import Extension, setup

ENGINES = Path("app/engines")
#: Where the shared headers are (the include folder of every extension).
SHARED = ENGINES / "compiled"
HEADERS = sorted(h.as_posix() for h in SHARED.glob("*.h"))

# One extension per C file, as the Makefile's C_SOURCES finds them: a new twin needs no second list.
setup(
    ext_modules=[
        Extension(
            ".".join(src.with_suffix("").parts),
            [src.as_posix()],
            include_dirs=[SHARED.as_posix()],
            depends=HEADERS,
            optional=True,
            extra_compile_args=["-O2"],
        )
        for src in sorted(ENGINES.rglob("_*.c"))
    ]
)
