"""The lab's WordPiece and Unigram runs through the API: the step contract, encode ids, exports that the reference
libraries load and encode like the lab, manual mode, stores, and the side-by-side comparison."""

from __future__ import annotations

import json
import re

import pytest
from helpers import realtext
import sentencepiece as spm
from fastapi.testclient import TestClient
from helpers.lab_helpers import QUICK_WAIT, wait_done
from helpers.lab_training import LOW, train
from helpers.spm_trainer import reference
from tokenizers import Tokenizer

from app.engines.sentencepiece.proto import ModelProto
from app.lab.examples import SAMPLE_CORPUS
from app.settings import Settings
from app.web.app import create_app

TEXTS = ["lowest newer", "the widest low", "Héllo, wörld! 東京", "unknown ꙮ characters", ""]


@pytest.fixture()
def lab(tmp_path):
    settings = Settings(lab_runs_dir=tmp_path, lab_pool="thread", lab_quick_wait_seconds=QUICK_WAIT)
    with TestClient(create_app(settings)) as client:
        yield client


def test_unigram_steps_carry_the_round_contract(lab):
    """Each round: its EM steps (log-likelihood, size after), the pieces it removed, each with why and, when pruned by
    loss, the loss (smallest first), the size after it; the last round ends with sentencepiece's final choice."""
    run = train(lab, corpus=SAMPLE_CORPUS * 3, algorithm="unigram", merges=60)
    full = lab.get(f"/api/train/{run['id']}").json()
    assert full["steps"], full
    for k, step in enumerate(full["steps"], 1):
        assert set(step) == {"round", "removed", "vocab_size", "log_likelihood", "em", "restored"}
        assert step["round"] == k and all(set(r) == {"piece", "loss", "why"} for r in step["removed"])
        assert len(step["em"]) == 2 and step["em"][0]["log_likelihood"] == step["log_likelihood"]
        losses = [r["loss"] for r in step["removed"] if r["why"] == "loss"]
        assert losses == sorted(losses) and all(r["loss"] is None for r in step["removed"] if r["why"] != "loss")
        assert {r["why"] for r in step["removed"]} <= {"em", "free", "loss", "unreachable", "final"}
    assert full["vocab_size"] == full["steps"][-1]["vocab_size"]
    state = lab.get(f"/api/train/{run['id']}/steps/1").json()
    assert state["removed"] == full["steps"][0]["removed"] and state["log_likelihood"] == full["steps"][0]["log_likelihood"]
    assert state["em"] == full["steps"][0]["em"]


def test_wordpiece_steps_carry_the_bpe_fields_and_the_score(lab):
    run = train(lab, corpus=LOW, algorithm="wordpiece", merges=6)
    steps = lab.get(f"/api/train/{run['id']}").json()["steps"]
    assert len(steps) == 6
    for step in steps:
        assert {"step", "pair", "count", "ties", "tie_break", "top_pairs", "token", "new_id"} <= set(step)
        assert step["score"] == pytest.approx(step["count"] / (step["left_count"] * step["right_count"]))
    state = lab.get(f"/api/train/{run['id']}/steps/1").json()
    assert state["score"] == steps[0]["score"] and all("score" in row for row in state["top_pairs"])


@pytest.mark.parametrize("algorithm", ["wordpiece", "unigram", "sentencepiece"])
def test_exports_encode_like_the_lab_in_the_reference_library(lab, algorithm):
    realtext.require()
    corpus = "\n".join(realtext.slices("en", 30, 1200, seed=7) + realtext.slices("ja", 10, 600, seed=7))
    size = {"merges": 300} if algorithm == "wordpiece" else {"merges": 400}
    run = train(lab, corpus=corpus, algorithm=algorithm, **size)
    fmt = "tokenizer.json" if algorithm == "wordpiece" else "model"
    body = lab.get(f"/api/train/{run['id']}/export", params={"format": fmt})
    assert body.status_code == 200
    if algorithm == "wordpiece":
        reference = Tokenizer.from_str(body.text)
        encode = lambda text: reference.encode(text, add_special_tokens=False).ids  # noqa: E731
    else:
        encode = spm.SentencePieceProcessor(model_proto=body.content).encode
    for text in TEXTS + realtext.slices("es", 3, 800, seed=2):
        assert lab.post(f"/api/train/{run['id']}/encode", json={"text": text}).json()["ids"] == encode(text)


def test_unigram_encode_shows_a_lattice_and_the_nbest(lab):
    run = train(lab, corpus=LOW * 4, algorithm="unigram", merges=4)
    trace = lab.post(f"/api/train/{run['id']}/encode", json={"text": "lowest"}).json()
    nodes = trace["lattice"]["nodes"]
    best = sorted((n["start"], n["end"]) for n in nodes if n["best"])
    assert best[0][0] == 0 and best[-1][1] == len(trace["lattice"]["text"])
    assert all(a[1] == b[0] for a, b in zip(best, best[1:]))  # the best path tiles the word
    assert trace["nbest"][0]["ids"] == trace["ids"]
    page = lab.post(f"/lab/runs/{run['id']}/encode", data={"text": "lowest"})
    assert page.status_code == 200 and "lattice-node best" in page.text


def test_wordpiece_encode_shows_the_walk(lab):
    run = train(lab, corpus=LOW, algorithm="wordpiece", merges=8)
    trace = lab.post(f"/api/train/{run['id']}/encode", json={"text": "lowest"}).json()
    tries = trace["walks"][0]["tries"]
    assert "lowest".startswith(tries[0]["candidate"])  # from the start of the word, the longest a piece can be
    assert [t["candidate"] for t in tries if t["found"]] == trace["tokens"]


def test_wordpiece_manual_mode_continues_from_a_chosen_pair(lab):
    run = train(lab, corpus=LOW, algorithm="wordpiece", merges=4)
    first = lab.get(f"/api/train/{run['id']}/steps/0").json()["top_pairs"]
    other = next(row for row in first if not row["winner"])
    r = lab.post(f"/api/train/{run['id']}/steps/0/merge", json={"pair": other["ids"]})
    assert r.status_code in (200, 202)
    new = wait_done(lab, r.json()["id"], timeout=30) if r.json()["status"] != "done" else r.json()
    step = lab.get(f"/api/train/{new['id']}/steps/1").json()
    assert step["pair_ids"] == other["ids"] and step["forced"]


@pytest.mark.parametrize("algorithm", ["wordpiece", "unigram"])
def test_run_pages_and_tools_render(lab, algorithm):
    run = train(lab, corpus=LOW * 2, algorithm=algorithm, merges=4)
    for k in range(run["merges"] + 1):
        page = lab.get(f"/lab/runs/{run['id']}?step={k}")
        assert page.status_code == 200
    assert lab.get(f"/lab/runs/{run['id']}/vocab?step=1").status_code == 200
    exported = json.loads(lab.get(f"/lab/runs/{run['id']}/export.json").content)
    assert exported["id"] == run["id"]
    use = lab.post(f"/api/train/{run['id']}/use").json()
    r = lab.post("/api/tokenize", json={"tokenizer": use["tokenizer"], "text": "lowest newer"})
    assert r.status_code == 200, r.text


def test_side_by_side_trains_the_three_and_compares_their_cuts(lab):
    r = lab.post("/api/train/side-by-side", json={"corpus": SAMPLE_CORPUS, "vocab_size": 150})
    assert r.status_code == 202
    runs = r.json()["runs"]
    assert {side: s["options"]["algorithm"] for side, s in runs.items()} == {
        "bpe": "sentencepiece", "wordpiece": "wordpiece", "unigram": "unigram"}
    ids = {side: wait_done(lab, s["id"], timeout=30)["id"] for side, s in runs.items()}
    cuts = lab.get("/api/train/side-by-side/cuts", params=ids | {"text": "lowest newer"}).json()
    assert set(cuts["cuts"]) == {"bpe", "wordpiece", "unigram"}
    for side, cut in cuts["cuts"].items():
        assert set(cut["differ"]).isdisjoint(cuts["agreed"])
    assert lab.get("/lab/side-by-side", params=ids | {"text": "lowest newer"}).status_code == 200


@pytest.mark.parametrize("algorithm", ["wordpiece", "unigram", "sentencepiece"])
def test_runs_survive_their_json_form(lab, algorithm):
    from app.lab.runs import Run

    run = train(lab, corpus=LOW * 2, algorithm=algorithm, merges=4 if algorithm != "unigram" else 3)
    stored = lab.app.state.lab.get(run["id"])
    again = Run.from_json(json.loads(json.dumps(stored.to_json())))
    assert [s.to_dict() for s in again.steps] == [s.to_dict() for s in stored.steps]
    assert again.vocab() == stored.vocab() and again.extra == stored.extra and again.n_ties == stored.n_ties


def number_after(words: str, text: str) -> int:
    return int(re.search(re.escape(words) + r" (\d[\d,]*\d|\d)", text).group(1).replace(",", ""))


@pytest.mark.parametrize("algorithm", ["sentencepiece", "unigram"])
@pytest.mark.parametrize("corpus", ["low lower newest widest", LOW, "東京と京都\n東京の天気。京都の天気。"])
def test_a_size_sentencepiece_cannot_fill_is_refused_with_its_limit(lab, tmp_path, corpus, algorithm):
    """sentencepiece's trainers refuse a vocab_size the corpus cannot fill ("Vocabulary size too high"), and so does
    the lab: 422, in words, naming the option and the most it can be; that most trains, to sentencepiece's model, and
    one more is what sentencepiece refuses. Asked as merges (learned pieces), the refusal speaks of merges."""
    model_type = "bpe" if algorithm == "sentencepiece" else "unigram"
    r = lab.post("/api/train", json={"corpus": corpus, "algorithm": algorithm, "vocab_size": 1000})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail.startswith("vocab_size 1,000 is more than this corpus can fill: sentencepiece's ")
    assert not re.search(r"[A-Z]\w*Error|Traceback", detail)
    most = number_after("choose a vocab_size of at most", detail)
    with pytest.raises(RuntimeError, match="Vocabulary size"):
        reference(tmp_path, corpus, most + 1, model_type)
    run = train(lab, corpus=corpus, algorithm=algorithm, vocab_size=most)
    model = lab.get(f"/api/train/{run['id']}/export", params={"format": "model"}).content
    assert [p.piece for p in ModelProto.parse(model).pieces] == [p.piece for p in reference(tmp_path, corpus, most, model_type).pieces]
    assert run["vocab_size"] == most and run["reachable"] is None and run["stop_reason"] == "vocab_size reached"
    r = lab.post("/api/train", json={"corpus": corpus, "algorithm": algorithm, "merges": 500})
    assert r.status_code == 422 and r.json()["detail"].startswith("merges 500 is more than this corpus allows")
    learned = number_after("choose at most", r.json()["detail"])
    assert train(lab, corpus=corpus, algorithm=algorithm, merges=learned)["vocab_size"] == most
