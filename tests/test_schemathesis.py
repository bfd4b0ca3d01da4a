"""Schemathesis against our OpenAPI schema: whatever fits (or nearly fits) the schema never gets a 500."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings

from app.web.app import create_app

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app())


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_never_answers_a_server_error(case):
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, case.body, response.text[:500])
    if response.status_code >= 400:
        assert "detail" in response.json(), response.text[:500]
