"""Build configuration beyond pyproject.toml: the optional C extension app/engines/_merge.c.

The compiled twin of the merge loop (app/engines/merging.py). ``optional=True``: where no C compiler is found the
install goes on without it, and the Python loop does the same work, slower.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("app.engines._merge", ["app/engines/_merge.c"], optional=True, extra_compile_args=["-O2"])])
