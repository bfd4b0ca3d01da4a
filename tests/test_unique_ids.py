"""The collection check of tests/helpers/unique_ids.py: a run whose tests share an id fails, with and without
pytest-xdist, and names the shared id; a run without shared ids is untouched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# A collector that makes two items with one id, as schemathesis 4.32 did under pytest 9 (a test per API operation,
# each given the bare function name as its id).
TWINS = '''
import pytest

def pytest_pycollect_makeitem(collector, name, obj):
    if name == "test_twice":
        return [pytest.Function.from_parent(collector, name=name, callobj=obj) for _ in range(2)]
'''


def run(directory: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "helpers.unique_ids", "-p", "no:cacheprovider", "-q", *args],
        cwd=directory, env=env, capture_output=True, text=True, timeout=600,
    )


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_tests_that_share_an_id_fail_the_run(tmp_path, workers):
    (tmp_path / "conftest.py").write_text(TWINS)
    (tmp_path / "test_shared.py").write_text("def test_twice():\n    pass\n\ndef test_alone():\n    pass\n")
    done = run(tmp_path, *workers)
    assert done.returncode != 0, done.stdout
    assert "collected tests share an id" in done.stdout and "test_shared.py::test_twice (2 tests)" in done.stdout


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_tests_with_their_own_ids_run(tmp_path, workers):
    (tmp_path / "test_own.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('x', [1, 2])\ndef test_each(x):\n    pass\n"
    )
    done = run(tmp_path, *workers)
    assert done.returncode == 0, done.stdout
    assert "2 passed" in done.stdout
