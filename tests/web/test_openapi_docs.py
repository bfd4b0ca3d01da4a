"""``/docs`` is written for people: every operation of the OpenAPI schema is listed once (one tag, a declared
one), with a written summary (not FastAPI's, made from the function's name) and a one-line description, and no two
operations share an operationId."""

from __future__ import annotations

import re


def generated_summary(name: str) -> str:
    """The summary FastAPI makes up when a route gives none: the function's name, title-cased."""
    return name.replace("_", " ").title()


def function_name(operation_id: str, path: str, method: str) -> str:
    """The route function's name, from FastAPI's operationId: ``{name}{path}_{method}`` with non-word characters
    as ``_``."""
    suffix = re.sub(r"\W", "_", path) + "_" + method
    assert operation_id.endswith(suffix), (operation_id, suffix)
    return operation_id[: -len(suffix)]


def test_every_operation_is_listed_once_with_a_written_summary(app):
    schema = app.openapi()
    tags = {t["name"]: t.get("description", "") for t in schema.get("tags", [])}
    assert tags and all(tags.values()), "every section of /docs says what it holds"
    ids, used = [], set()
    for path, operations in schema["paths"].items():
        for method, op in operations.items():
            where = f"{method.upper()} {path}"
            assert len(op.get("tags", [])) == 1 and op["tags"][0] in tags, (where, op.get("tags"))
            used.add(op["tags"][0])
            summary = op.get("summary", "")
            name = function_name(op["operationId"], path, method)
            assert summary and summary != generated_summary(name), (where, summary)
            assert op.get("description", "").strip(), f"{where} has no description"
            ids.append(op["operationId"])
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert used == set(tags), "no empty section"
    assert len(ids) >= 17


def test_the_generated_summary_is_what_fastapi_makes():
    from fastapi import FastAPI

    demo = FastAPI()

    @demo.post("/x")
    def api_compare_things():
        return {}

    operation = demo.openapi()["paths"]["/x"]["post"]
    assert operation["summary"] == generated_summary("api_compare_things") == "Api Compare Things"
    assert function_name(operation["operationId"], "/x", "post") == "api_compare_things"
