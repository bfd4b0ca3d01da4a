"""Build configuration beyond pyproject.toml: the optional C extensions in app/engines/ (``*.c``).

The compiled twins of the merge loop (app/engines/merging.py), of the unigram Viterbi pass and normalizer
(app/engines/sentencepiece/unigram.py, normalizer.py), of the training core's hot loops
(app/engines/training/words.py and pair_counts.py) and of the unigram trainer's E-step and pruning losses
(app/engines/sentencepiece/unigram_trainer.py). ``optional=True``: where no C compiler is found the install goes on
without them, and the Python loops do the same work, slower.
"""

from pathlib import Path

from setuptools import Extension, setup

# One extension per C file, as the Makefile's C_SOURCES finds them: a new twin needs no second list.
setup(
    ext_modules=[
        Extension(f"app.engines.{src.stem}", [src.as_posix()], optional=True, extra_compile_args=["-O2"])
        for src in sorted(Path("app/engines").glob("*.c"))
    ]
)
