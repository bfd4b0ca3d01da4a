"""A collection check: the run fails when two collected tests share an id.

pytest-xdist sends each worker the ids of the tests to run, so tests that share an id run once between them: the
schemathesis test's 27 API operations once ran as 1 under ``make test``. This hook (imported by tests/conftest.py,
and a plugin of its own: ``-p helpers.unique_ids``) reports the shared ids as a collection error, in the main process
and in every worker, which fails the run.
"""

from __future__ import annotations

from collections import Counter

import pytest


def pytest_collection_modifyitems(session, config, items):
    shared = {nodeid: n for nodeid, n in Counter(item.nodeid for item in items).items() if n > 1}
    if shared:
        listed = "\n".join(f"  {nodeid} ({n} tests)" for nodeid, n in sorted(shared.items()))
        config.hook.pytest_collectreport(
            report=pytest.CollectReport("", "failed", f"collected tests share an id; give each its own:\n{listed}", [])
        )
