"""The chaos run's cases (bench/chaos.py, ``make chaos``: issue 38's hostile cases at full size against a live server
with Redis) run here against the test app at tiny sizes, so that a case that no longer answers what it expects fails
the tests too. Cases that need a live server (Redis stopped and started) or full-size files are left to the chaos run.
The budget is small and every hostile case is hostile on any machine: nothing here depends on the machine's speed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app

#: The cases pass timeouts for the live server's sake; the test client ignores them.
pytestmark = pytest.mark.filterwarnings("ignore:You should not use the 'timeout' argument")

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("chaos", ROOT / "bench" / "chaos.py")
chaos = importlib.util.module_from_spec(spec)
sys.modules["chaos"] = chaos  # its dataclasses look their module up
spec.loader.exec_module(chaos)


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("chaos")
    settings = Settings(lab_runs_dir=tmp / "runs", uploads_dir=tmp / "uploads", lab_pool="thread", user_code_seconds=0.5,
                        max_chars=10_000, max_ids=chaos.TINY.limit_ids)
    app = create_app(settings)
    with TestClient(app) as client:
        yield chaos.Ctx(http=client, fresh=lambda: TestClient(app), sizes=chaos.TINY)


@pytest.mark.parametrize("case", [c for c in chaos.CASES if not c.live_only], ids=lambda c: c.name)
def test_each_case_answers_what_the_chaos_run_expects(ctx, case):
    got = case.run(ctx)
    got = got if isinstance(got, chaos.Answer) else chaos.answer(got)
    assert got.status == case.expect, got
    assert got.words  # a sentence, not an empty answer


def test_the_live_only_cases_are_the_ones_a_test_app_cannot_run():
    assert {c.name for c in chaos.CASES if c.live_only} == {
        "upload a 33 MB tokenizer.json (Gemma 3, 262k entries)", "tokenize with it",
        "Redis down 6 s during an 8,192-merge training on 2 M characters"}
