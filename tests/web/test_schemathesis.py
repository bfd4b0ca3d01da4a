"""Schemathesis against our OpenAPI schema: whatever fits (or nearly fits) the schema never gets a 500, with the
default limits and with limits so small that the fuzzer's data meets them (413s, a full training queue).

Every API operation is its own test, with its own id (``test_...[POST /api/tokenize][defaults]``): pytest 9 builds
an item's id from the name schemathesis passes as ``originalname``, which is the bare function name for a test
without ``parametrize`` (then every operation shares one id, and under xdist only one of them runs) and the name
with the operation for a parametrized one. ``tests/conftest.py`` fails the run when two collected tests share an id.

Lab runs started here go to a temporary directory and a thread pool, as in every other test (conftest.py),
never into the working tree's ``var/runs`` or a process pool. (``schemathesis.pytest.from_fixture`` would reuse
the suite's ``app`` fixture but does not work with pytest 9, so the apps are built here, at import.)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from app.settings import Settings
from app.web.app import create_app

_RUNS = tempfile.TemporaryDirectory(prefix="tokenplay-schemathesis-")  # removed when the test process ends


def _app(name: str, **limits):
    runs = Path(_RUNS.name) / name
    return create_app(Settings(lab_runs_dir=runs, uploads_dir=runs / "uploads", lab_pool="thread", **limits))


APPS = {
    "defaults": _app("defaults"),
    # Small enough that generated texts, id lists and corpora pass them: every limit's answer is a 4xx.
    "tight": _app(
        "tight", max_chars=16, max_ids=8, lab_max_corpus_chars=32, lab_max_merges=4, lab_workers=1, lab_queue=0
    ),
}
# The operations come from the default app's schema; the limits change answers, never the schema.
schema = schemathesis.openapi.from_asgi("/openapi.json", APPS["defaults"])


@schema.parametrize()
@pytest.mark.parametrize("limits", list(APPS))
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_never_answers_a_server_error(case, limits):
    response = case.call(app=APPS[limits])
    assert response.status_code < 500, (limits, case.method, case.path, case.body, response.text[:500])
    if response.status_code >= 400:
        assert "detail" in response.json(), response.text[:500]
