"""Build configuration beyond pyproject.toml: the optional C extensions.

- app/engines/_merge.c: the compiled twin of the merge loop (app/engines/merging.py);
- app/engines/training/_words.c: the compiled twin of the training core's word loops
  (app/engines/training/words.py).

``optional=True``: where no C compiler is found the install goes on without them, and the Python loops do the same
work, slower.
"""

from setuptools import Extension, setup


def _extension(name: str, source: str) -> Extension:
    return Extension(name, [source], optional=True, extra_compile_args=["-O2"])


setup(
    ext_modules=[
        _extension("app.engines._merge", "app/engines/_merge.c"),
        _extension("app.engines.training._words", "app/engines/training/_words.c"),
    ]
)
