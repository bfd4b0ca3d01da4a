"""Schemathesis against our OpenAPI schema: whatever fits (or nearly fits) the schema never gets a 500.

Lab runs started here go to a temporary directory and a thread pool, as in every other test (conftest.py),
never into the working tree's ``var/runs`` or a process pool. (``schemathesis.pytest.from_fixture`` would reuse
the suite's ``app`` fixture but does not work with pytest 9, so the app is built here, at import.)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings

from app.settings import Settings
from app.web.app import create_app

_RUNS = tempfile.TemporaryDirectory(prefix="tokenplay-schemathesis-")  # removed when the test process ends
schema = schemathesis.openapi.from_asgi(
    "/openapi.json", create_app(Settings(lab_runs_dir=Path(_RUNS.name), lab_pool="thread"))
)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_never_answers_a_server_error(case):
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, case.body, response.text[:500])
    if response.status_code >= 400:
        assert "detail" in response.json(), response.text[:500]
