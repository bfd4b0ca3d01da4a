"""The lab's examples (app/lab/examples.py) each train as their title says; the Unigram one prunes in several rounds,
each removing pieces, down to the size it asks for."""

from __future__ import annotations

import pytest
from helpers.lab_helpers import wait_done

from app.lab.examples import EXAMPLES


def api_body(form: dict) -> dict:
    size = "vocab_size" if form["size_kind"] == "vocab_size" else "merges"
    body = {"corpus": form["corpus"], "algorithm": form["algorithm"], "pattern": form["pattern"], size: form["size"],
            "tie_break": form["tie_break"]}
    return body | ({"end_of_word": True} if form.get("end_of_word") else {})


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_example_trains_to_its_size(client, key):
    form = EXAMPLES[key]["form"]
    run = wait_done(client, client.post("/api/train", json=api_body(form)).json()["id"])
    assert run["status"] == "done", run
    assert client.get(f"/lab?example={key}").status_code == 200


def test_the_unigram_example_prunes_in_several_rounds(client):
    form = EXAMPLES["unigram-rounds"]["form"]
    run = wait_done(client, client.post("/api/train", json=api_body(form)).json()["id"])
    rounds = client.get(f"/api/train/{run['id']}?steps=1").json()["steps"]
    sizes = [r["vocab_size"] for r in rounds]
    assert len(rounds) >= 4 and sizes[-1] == form["size"] == run["vocab_size"]
    assert all(a > b for a, b in zip(sizes, sizes[1:]))  # every round removes pieces


@pytest.mark.parametrize(("algorithm", "steps", "said"), [
    ("unigram", 1, "1 round)"), ("unigram", 5, "5 rounds)"), ("byte", 1, "1 merge)"), ("byte", 1200, "1,200 merges)"),
])
def test_a_runs_label_counts_its_steps_in_words(algorithm, steps, said):
    from app.lab.options import Options
    from app.lab.runs import Run

    run = Run("r1", "corpus", Options(algorithm=algorithm), status="done")
    run.steps = [object()] * steps
    assert run.label().endswith(said)
