"""BPE lab over HTTP: every /api/train endpoint (good and bad input) and the /lab pages' htmx fragments."""

from __future__ import annotations

import base64
import html
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
import tiktoken
from fastapi.testclient import TestClient
from helpers.lab_helpers import QUICK_WAIT, wait_done
from helpers.lab_training import LOW, train
from helpers.spm_trainer import processor, reference, reference_model

from app.engines import registry
from app.engines.sentencepiece.proto import ModelProto
from app.lab.examples import SAMPLE_CORPUS
from app.lab.run_tokenizers import user_tokenizers
from app.web.cookies import cookie_ids
from app.settings import Settings
from app.web.app import create_app

AAAB = {"corpus": "aaabdaaabac", "algorithm": "byte", "pattern": "none", "merges": 3}


def make_client(tmp_path, **overrides) -> TestClient:
    """An app with its own runs directory; trainings in threads (the process pool has its own tests, and one
    here); starting a small run answers when it is done (a test that needs one still training holds it)."""
    defaults = {"lab_pool": "thread", "lab_quick_wait_seconds": QUICK_WAIT}
    settings = Settings(lab_runs_dir=tmp_path / "runs", **(defaults | overrides))
    return TestClient(create_app(settings))


def held_client(tmp_path, hold, **overrides) -> TestClient:
    """An app whose trainings pause at ``hold``; starting one answers at once."""
    return make_client(tmp_path, lab_progress_wrap=hold, lab_quick_wait_seconds=0, **overrides)


@pytest.fixture()
def lab(tmp_path):
    with make_client(tmp_path) as c:
        yield c


# -- POST /api/train, GET /api/train/{id} ---------------------------------------------------------------------


def test_train_aaabdaaabac_finishes_at_once_with_three_merges(lab):
    r = lab.post("/api/train", json=AAAB)
    assert r.status_code == 200
    run = r.json()
    assert run["status"] == "done" and run["merges"] == 3 and run["vocab_size"] == 259
    assert run["initial_tokens"] == 11 and run["final_tokens"] == 5 and run["compression"] == 2.2
    full = lab.get(f"/api/train/{run['id']}").json()
    assert [s["token"] for s in full["steps"]] == ["aa", "aaa", "aaab"]
    assert [s["count"] for s in full["steps"]] == [4, 2, 2]
    assert full["steps"][1]["pair_text"] == ["aa", "a"]


def test_train_with_vocab_size_counts_the_base_vocabulary(lab):
    run = train(lab, corpus="aaabdaaabac", algorithm="byte", pattern="none", vocab_size=258)
    assert run["merges"] == 2
    run = train(lab, corpus=LOW, algorithm="char", pattern="whitespace", vocab_size=15, end_of_word=True)
    assert run["base_vocab_size"] == 12 and run["merges"] == 3  # " " d e i l n o r s t w </w>: spaces are pre-tokens


def test_train_lexical_tie_break_picks_the_smaller_pair(lab):
    run = train(lab, **(AAAB | {"tie_break": "lexical"}))
    step = lab.get(f"/api/train/{run['id']}/steps/2").json()
    assert step["pair"] == ["a", "b"] and step["ties"] == [["aa", "a"]] and step["tie_break"] == "lexical"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (AAAB | {"algorithm": "bpe-dropout"}, "algorithm"),
        (AAAB | {"algorithm": "unigram", "tie_break": "lexical"}, "tie_break"),
        (AAAB | {"pattern": "o300k"}, "pattern"),
        (AAAB | {"tie_break": "random"}, "tie_break"),
        (AAAB | {"merges": -1}, "merges"),
        (AAAB | {"merges": 10**6}, "8,192"),
        (AAAB | {"merges": 10**20}, "8,192"),
        ({k: v for k, v in AAAB.items() if k != "merges"} | {"vocab_size": 10**20}, "at most 8,192 merges"),
        ({k: v for k, v in AAAB.items() if k != "merges"} | {"vocab_size": 100}, "256 base tokens"),
        (AAAB | {"end_of_word": True}, "character-level"),
        (AAAB | {"corpus": "   "}, "empty"),
        ({"algorithm": "byte"}, "corpus"),
        (AAAB | {"merges": 3, "vocab_size": 300}, "exactly one"),
    ],
)
def test_train_rejects_bad_input_with_a_clear_message(lab, body, needle):
    r = lab.post("/api/train", json=body)
    assert r.status_code == 422, r.text
    assert needle in r.json()["detail"]


def test_train_rejects_a_corpus_over_the_limit_with_413(tmp_path):
    with make_client(tmp_path, lab_max_corpus_chars=100) as c:
        r = c.post("/api/train", json=AAAB | {"corpus": "ab" * 51})
    assert r.status_code == 413
    assert "102 characters" in r.json()["detail"] and "at most 100" in r.json()["detail"]


def test_train_unknown_run_is_404(lab):
    for path in ("", "/steps/0"):
        r = lab.get(f"/api/train/0123456789{path}")
        assert r.status_code == 404 and "no lab run" in r.json()["detail"]
    assert lab.get("/api/train/..%2Fetc/steps/0").status_code == 404


# -- queue, progress, cancel --------------------------------------------------------------------------------------


def test_train_queue_full_answers_429_with_retry_after(tmp_path, lab_hold):
    with held_client(tmp_path, lab_hold, lab_workers=1, lab_queue=1) as c:
        first = c.post("/api/train", json=AAAB)
        assert first.status_code == 202, first.text
        lab_hold.wait_held(1)  # the one worker is busy with the first
        assert c.get(f"/api/train/{first.json()['id']}").json()["status"] == "running"
        second = c.post("/api/train", json=AAAB)
        third = c.post("/api/train", json=AAAB)
        assert second.status_code == 202 and second.json()["status"] == "queued"
        assert third.status_code == 429
        assert int(third.headers["Retry-After"]) > 0 and "busy" in third.json()["detail"]
        lab_hold.release()
        assert wait_done(c, second.json()["id"])["status"] == "done"


def test_cancel_stops_a_running_training(tmp_path, lab_hold):
    with held_client(tmp_path, lab_hold) as c:
        run = c.post("/api/train", json=AAAB).json()
        lab_hold.wait_held(1)
        assert c.get(f"/api/train/{run['id']}").json()["progress"] == {"done": 1, "total": 3}
        r = c.post(f"/api/train/{run['id']}/cancel")
        assert r.status_code == 200 and r.json()["cancel_requested"] is True
        assert wait_done(c, run["id"])["status"] == "cancelled"
        r = c.get(f"/api/train/{run['id']}/steps/0")
        assert r.status_code == 409 and "cancelled" in r.json()["detail"]


def test_cancel_and_summary_of_unknown_or_finished_runs(lab, tmp_path, monkeypatch):
    assert lab.post("/api/train/0123456789/cancel").status_code == 404
    run = train(lab, **AAAB)
    r = lab.post(f"/api/train/{run['id']}/cancel")
    assert r.status_code == 200 and r.json()["cancel_requested"] is False and r.json()["status"] == "done"


def test_summary_of_a_running_run_has_progress_and_no_steps(tmp_path, lab_hold):
    with held_client(tmp_path, lab_hold) as c:
        run = c.post("/api/train", json=AAAB).json()
        lab_hold.wait_held(1)
        now = c.get(f"/api/train/{run['id']}").json()
        assert now["status"] == "running" and "steps" not in now and now["progress"] == {"done": 1, "total": 3}
        page = c.get(f"/lab/runs/{run['id']}")
        assert 'hx-trigger="every 500ms"' in page.text and "Cancel" in page.text
        assert c.get(f"/api/train/{run['id']}/steps/0").status_code == 409
        lab_hold.release()
        assert wait_done(c, run["id"])["status"] == "done"
        assert c.get(f"/api/train/{run['id']}/steps/0").status_code == 200


def test_progress_page_polls_until_done_then_redirects(lab):
    run = train(lab, **AAAB)
    r = lab.get(f"/lab/runs/{run['id']}/progress", headers={"HX-Request": "true"})
    assert r.headers["HX-Redirect"] == f"/lab/runs/{run['id']}"


# -- GET /api/train/{id}/steps/{k} ----------------------------------------------------------------------------


def test_step_reports_pair_count_ties_top_pairs_and_tokens(lab):
    run = train(lab, **AAAB)
    s = lab.get(f"/api/train/{run['id']}/steps/2").json()
    assert s["step"] == 2 and s["pair"] == ["aa", "a"] and s["token"] == "aaa"
    assert s["count"] == 2 and s["replaced"] == 2
    assert s["ties"] == [["a", "b"]] and s["tie_break"] == "first"
    assert s["corpus_tokens"] == 7 and s["vocab_size"] == 258
    assert s["tokens"] == ["aaa", "b", "d", "aaa", "b", "a", "c"]
    top = s["top_pairs"]
    assert top[0] == {"pair": ["aa", "a"], "ids": [256, 97], "count": 2, "winner": True, "tie": True}
    assert top[1]["pair"] == ["a", "b"] and top[1]["tie"] and not top[1]["winner"]
    assert not any(t["tie"] for t in top[2:])


def test_step_zero_is_the_corpus_before_any_merge(lab):
    run = train(lab, **AAAB)
    s = lab.get(f"/api/train/{run['id']}/steps/0").json()
    assert s["pair"] is None and s["tokens"] == list("aaabdaaabac") and s["corpus_tokens"] == 11
    assert s["top_pairs"][0]["pair"] == ["a", "a"] and s["top_pairs"][0]["count"] == 4


def test_step_counts_overlaps_and_replacements_separately(lab):
    run = train(lab, corpus="aaaa aaa", algorithm="byte", pattern="none", merges=1)
    s = lab.get(f"/api/train/{run['id']}/steps/1").json()
    assert s["count"] == 5 and s["replaced"] == 3  # aaaa: 3 overlapping pairs, 2 merged; aaa: 2 and 1


def test_step_out_of_range_is_404(lab):
    run = train(lab, **AAAB)
    for k in (4, 99):
        r = lab.get(f"/api/train/{run['id']}/steps/{k}")
        assert r.status_code == 404 and "0..3" in r.json()["detail"]
    assert lab.get(f"/api/train/{run['id']}/steps/-1").status_code == 404
    assert lab.get(f"/api/train/{run['id']}/steps/x").status_code == 422


def test_step_escapes_byte_tokens_that_are_not_utf8(lab):
    run = train(lab, corpus="日本日本", algorithm="byte", pattern="none", merges=2)
    s0 = lab.get(f"/api/train/{run['id']}/steps/0").json()
    assert s0["tokens"][:3] == ["\\xe6", "\\x97", "\\xa5"]
    s1 = lab.get(f"/api/train/{run['id']}/steps/1").json()
    assert s1["token"] == "\\xe6\\x97" and s1["pair"] == ["\\xe6", "\\x97"]


def test_step_char_level_with_end_of_word_marker(lab):
    run = train(lab, corpus=LOW, algorithm="char", pattern="whitespace", merges=4, end_of_word=True)
    s = lab.get(f"/api/train/{run['id']}/steps/4").json()
    merges = lab.get(f"/api/train/{run['id']}").json()["steps"]
    assert [m["token"] for m in merges] == ["es", "est", "est</w>", "lo"]
    assert s["tokens"][:2] == ["lo", "w"] and "est</w>" in s["tokens"]


def test_step_sentencepiece_shows_its_merges_in_its_order_with_their_frequency(lab, tmp_path):
    """A SentencePiece BPE run makes sentencepiece's merges: its pieces are those sentencepiece's trainer writes, in
    its order, each step its merge with the count the pair had; ties go sentencepiece's way (▁t before t+he, both
    3: the shorter piece first); step 3's corpus is what sentencepiece cuts it into with three merges."""
    corpus = "the cat the hat the bat"
    run = train(lab, corpus=corpus, algorithm="sentencepiece", merges=3)
    merges = lab.get(f"/api/train/{run['id']}").json()["steps"]
    want = reference(tmp_path, corpus, run["vocab_size"], "bpe").pieces
    assert [m["token"] for m in merges] == [p.piece for p in want[3:6]] == ["at", "he", "▁t"]
    assert [m["count"] for m in merges] == [3, 3, 3]
    assert [m["new_id"] for m in merges] == [3, 4, 5]  # the .model's ids: merged pieces right after the specials
    s = lab.get(f"/api/train/{run['id']}/steps/3").json()
    assert s["tie_break"] == "sentencepiece" and s["n_ties"] == 1 and s["ties"] == [["t", "he"]]
    assert s["tokens"] == processor(reference_model(tmp_path, corpus, run["vocab_size"], "bpe")).encode(corpus, out_type=str)
    assert s["tokens"][:3] == ["▁t", "he", "▁"]
    s0 = lab.get(f"/api/train/{run['id']}/steps/1").json()
    assert s0["top_pairs"][0] == {"pair": ["a", "t"], "ids": [9, 6], "count": 3, "winner": True, "tie": True}


# -- POST /api/train/{id}/encode ------------------------------------------------------------------------------


def test_encode_shows_each_merge_applied_in_order(lab):
    run = train(lab, corpus=LOW, algorithm="char", pattern="whitespace", merges=10, end_of_word=True)
    trace = lab.post(f"/api/train/{run['id']}/encode", json={"text": "lowest"}).json()
    stages = trace["stages"]
    assert stages[0]["words"] == [["l", "o", "w", "e", "s", "t", "</w>"]]
    assert [s["token"] for s in stages[1:]] == ["es", "est", "est</w>", "lo", "low"]
    assert trace["tokens"] == ["low", "est</w>"]
    early = lab.post(f"/api/train/{run['id']}/encode", json={"text": "lowest", "step": 1}).json()
    assert early["tokens"] == ["l", "o", "w", "es", "t", "</w>"]


def test_encode_marks_characters_the_corpus_never_had(lab):
    """A character the corpus never had is its UTF-8 bytes, a token each, as the run's tokenizer cuts it."""
    run = train(lab, corpus=LOW, algorithm="char", pattern="whitespace", merges=3)
    trace = lab.post(f"/api/train/{run['id']}/encode", json={"text": "xé"}).json()
    assert trace["unknown"] == 2 and trace["tokens"] == ["x", "\\xc3", "\\xa9"]
    assert min(trace["ids"]) >= run["vocab_size"]  # the byte-fallback ids, after the vocabulary
    lab.post(f"/lab/runs/{run['id']}/use")
    used = lab.post("/api/tokenize", json={"text": "xé", "tokenizer": f"lab-{run['id']}"}).json()
    assert used["ids"] == trace["ids"]


def test_encode_rejects_bad_input(lab):
    run = train(lab, **AAAB)
    assert lab.post(f"/api/train/{run['id']}/encode", json={"text": "a" * 1001}).status_code == 422
    assert lab.post(f"/api/train/{run['id']}/encode", json={"text": "ab", "step": 9}).status_code == 404
    assert lab.post(f"/api/train/{run['id']}/encode", json={}).status_code == 422
    assert lab.post("/api/train/abcdef0123/encode", json={"text": "a"}).status_code == 404


# -- manual mode ----------------------------------------------------------------------------------------------


def test_merge_forces_a_pair_and_continues_automatically(lab):
    run = train(lab, **AAAB)
    r = lab.post(f"/api/train/{run['id']}/steps/1/merge", json={"pair": ["a", "b"]})
    assert r.status_code == 200, r.text
    new = r.json()
    assert new["id"] != run["id"] and new["parent"] == run["id"] and new["step"] == 2 and new["merges"] == 3
    steps = lab.get(f"/api/train/{new['id']}").json()["steps"]
    assert [s["token"] for s in steps] == ["aa", "ab", "aaab"]
    assert [s["forced"] for s in steps] == [False, True, False]
    s2 = lab.get(f"/api/train/{new['id']}/steps/2").json()
    assert s2["forced"] and s2["tokens"] == ["aa", "ab", "d", "aa", "ab", "a", "c"]
    # the original run is unchanged
    assert lab.get(f"/api/train/{run['id']}/steps/2").json()["token"] == "aaa"


def test_merge_accepts_ids_and_can_go_past_the_last_step(lab):
    run = train(lab, **AAAB)
    new = lab.post(f"/api/train/{run['id']}/steps/3/merge", json={"pair": [100, 258]}).json()
    assert new["merges"] == 4
    assert lab.get(f"/api/train/{new['id']}/steps/4").json()["token"] == "daaab"


def test_merge_rejects_pairs_that_do_not_exist(lab):
    run = train(lab, **AAAB)
    r = lab.post(f"/api/train/{run['id']}/steps/1/merge", json={"pair": ["c", "a"]})
    assert r.status_code == 422 and "does not occur" in r.json()["detail"]
    r = lab.post(f"/api/train/{run['id']}/steps/1/merge", json={"pair": ["zz", "a"]})
    assert r.status_code == 422 and "no token with text 'zz'" in r.json()["detail"]
    r = lab.post(f"/api/train/{run['id']}/steps/0/merge", json={"pair": [256, 97]})
    assert r.status_code == 422 and "does not exist after 0 merges" in r.json()["detail"]
    assert lab.post(f"/api/train/{run['id']}/steps/9/merge", json={"pair": ["a", "b"]}).status_code == 404
    assert lab.post(f"/api/train/{run['id']}/steps/1/merge", json={"pair": ["a"]}).status_code == 422


# -- export, use in playground --------------------------------------------------------------------------------


def test_export_tiktoken_encodes_like_our_merges(lab):
    run = train(lab, corpus=LOW * 3, algorithm="byte", pattern="none", merges=12)
    r = lab.get(f"/api/train/{run['id']}/export", params={"format": "tiktoken"})
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in r.text.splitlines())}
    enc = tiktoken.Encoding(name="lab-test", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})
    trace = lab.post(f"/api/train/{run['id']}/encode", json={"text": "lowest newer"}).json()
    assert enc.encode("lowest newer") == trace["ids"]


def test_export_json_lists_merges_and_vocab(lab):
    run = train(lab, **AAAB)
    data = lab.get(f"/api/train/{run['id']}/export").json()
    assert data["format"] == "tokenplay-lab" and [m["token"] for m in data["merges"]] == ["aa", "aaa", "aaab"]
    assert data["vocab"]["258"] == "aaab" and len(data["vocab"]) == 259


@pytest.mark.parametrize("algorithm", ["sentencepiece", "unigram"])
def test_export_model_is_the_model_sentencepiece_trains(lab, tmp_path, algorithm):
    """The .model a SentencePiece BPE or unigram run exports is what sentencepiece's trainer writes for its corpus
    at its size: the same pieces, types and scores, so the same ids on any text."""
    corpus = SAMPLE_CORPUS + "École, 12 ans. ½ ﬁ Ⅸ"
    run = train(lab, corpus=corpus, algorithm=algorithm, merges=60)
    r = lab.get(f"/lab/runs/{run['id']}/export.model")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    model_type = "bpe" if algorithm == "sentencepiece" else "unigram"
    want = reference(tmp_path, corpus, run["vocab_size"], model_type)
    got = ModelProto.parse(r.content).pieces
    assert [(p.piece, p.type) for p in got] == [(p.piece, p.type) for p in want.pieces]
    assert max(abs(a.score - b.score) for a, b in zip(got, want.pieces)) <= 1e-4
    ours, theirs = processor(r.content), processor(want.serialize())
    for text in ("the cat", "lowest newer 日本 x", corpus):
        assert ours.encode(text) == theirs.encode(text)


def test_export_rejects_formats_the_algorithm_has_not(lab):
    run = train(lab, **AAAB)
    r = lab.get(f"/api/train/{run['id']}/export", params={"format": "model"})
    assert r.status_code == 422 and "SentencePiece" in r.json()["detail"]
    char = train(lab, corpus=LOW, algorithm="char", pattern="whitespace", merges=2)
    assert lab.get(f"/api/train/{char['id']}/export", params={"format": "tiktoken"}).status_code == 422
    assert lab.get(f"/api/train/{run['id']}/export", params={"format": "zip"}).status_code == 422


@pytest.mark.parametrize("algorithm", ["byte", "char", "sentencepiece"])
def test_use_in_playground_registers_the_tokenizer_for_this_user(lab, algorithm):
    pattern = "whitespace" if algorithm == "char" else "gpt2"
    run = train(lab, corpus=LOW, algorithm=algorithm, pattern=pattern, merges=8)
    r = lab.post(f"/api/train/{run['id']}/use")
    assert r.status_code == 200
    name = r.json()["tokenizer"]
    assert name == f"lab-{run['id']}" and "8 merges" in r.json()["label"]
    cookie = r.cookies.get("tp_lab") or lab.cookies.get("tp_lab")
    assert [s.name for s in user_tokenizers(cookie_ids(cookie))] == [name]
    assert cookie_ids("") == [] and cookie_ids("not-an-id") == [] and user_tokenizers([]) == []
    tok = registry.get(name)
    text = "lowest newer 日本 x"
    if algorithm == "sentencepiece":  # the run's .model, run as sentencepiece runs it (no byte fallback: 日本 is <unk>)
        sp = processor(lab.get(f"/api/train/{run['id']}/export", params={"format": "model"}).content)
        assert tok.encode(text) == sp.encode(text) and tok.decode(tok.encode(text)) == sp.decode(sp.encode(text))
        assert sp.unk_id() in tok.encode(text)
    else:
        assert tok.decode(tok.encode(text)) == text
    r = lab.post("/api/tokenize", json={"text": "lower", "tokenizer": name})
    assert r.status_code == 200 and r.json()["count"] >= 1
    registry.unregister(name)


def test_use_in_playground_opens_it_with_text_the_run_cuts(lab):
    """"Use in playground" opens the playground with the start of the run's corpus, cut by the run (issue 37: it
    opened empty); the page's link and the API's are one link, and the count is the run's tokenizer's."""
    corpus = "The lowest newer low.\n\nA second paragraph the link leaves out."
    run = train(lab, corpus=corpus * 4, algorithm="byte", pattern="gpt2", merges=8)
    name = f"lab-{run['id']}"
    link = lab.post(f"/api/train/{run['id']}/use").json()["playground"]
    part = lab.post(f"/lab/runs/{run['id']}/use", headers={"HX-Request": "true"}).text
    assert html.unescape(re.search(r'<a href="([^"]+)">Open the playground</a>', part).group(1)) == link
    query = parse_qs(urlsplit(link).query)
    assert query == {"tokenizer": [name], "text": ["The lowest newer low."]}
    page = lab.get(link).text
    assert ">\nThe lowest newer low.</textarea>" in page or ">The lowest newer low.</textarea>" in page
    count = len(registry.get(name).encode("The lowest newer low."))
    assert f'id="count-tokens">{count:,}<' in page and count < len("The lowest newer low.")
    registry.unregister(name)


def test_a_handout_prints_the_merges_the_vocabulary_and_a_word(lab):
    """A run at a step as a handout (issue 37): its merges so far in order, its vocabulary at that step and one word
    encoded as tiktoken encodes it with the run's tiktoken.json export (the referee); its own print style."""
    run = train(lab, corpus=LOW * 6, algorithm="byte", pattern="gpt2", merges=12)
    page = lab.get(f"/lab/runs/{run['id']}/handout", params={"step": 9, "word": "lowest"}).text
    merges = re.findall(r'<li value="(\d+)">', page)
    assert merges == [str(i) for i in range(1, 10)]
    assert "Merges so far (9)" in page and "The vocabulary at step 9 (265 tokens)" in page
    made = re.search(r'<ul class="handout-vocab">(.*?)</ul>', page, re.S).group(1)
    assert made.count("<li>") == 9  # the 256 bytes said in words, the 9 merged tokens listed
    d = json.loads(lab.get(f"/api/train/{run['id']}/export", params={"format": "tiktoken.json"}).content)
    ranks = {base64.b64decode(t): r for t, r in d["mergeable_ranks"].items() if r < 256 + 9}  # the first 9 merges
    referee = tiktoken.Encoding("h", pat_str=d["pat_str"], mergeable_ranks=ranks, special_tokens={})
    n = len(referee.encode("lowest"))
    assert "One word encoded: “lowest”" in page and f'id="trace-count">{n} token{"" if n == 1 else "s"}.' in page
    shown = [int(t) for t in re.findall(r"merge (\d+):</span>", page)]
    assert shown == sorted(shown) and shown and max(shown) <= 9  # the trace uses the merges up to step 9 only
    assert "@media print" in lab.get("/static/lab.css").text and "data-print" in page
    assert re.search(rf'href="/lab/runs/{run["id"]}/handout\?step=\d+"', lab.get(f"/lab/runs/{run['id']}").text)
    default = lab.get(f"/lab/runs/{run['id']}/handout").text  # the last step, the corpus's most frequent long word
    assert "Merges so far (12)" in default and "One word encoded: “newest”" in default
    assert lab.get(f"/lab/runs/{run['id']}/handout", params={"step": 99}).status_code == 404  # as the run page


def test_user_tokenizers_loads_a_run_another_process_trained(tmp_path):
    with make_client(tmp_path) as c:
        run = train(c, **AAAB)
    with make_client(tmp_path) as fresh:  # another worker process: the run is only on disk
        fresh.get("/lab")  # starts this app's lab
        specs = user_tokenizers([run["id"]], fresh.app.state.lab)
        assert [s.name for s in specs] == [f"lab-{run['id']}"]
        assert registry.get(f"lab-{run['id']}").encode("aaabdaaabac") == [258, 100, 258, 97, 99]
    registry.unregister(f"lab-{run['id']}")


# -- persistence, worker processes -----------------------------------------------------------------------------


def test_train_in_worker_processes_steps_and_manual_mode(tmp_path):
    with make_client(tmp_path, lab_pool="process") as c:
        run = train(c, **AAAB)
        assert c.get(f"/api/train/{run['id']}/steps/2").json()["ties"] == [["a", "b"]]
        r = c.post(f"/api/train/{run['id']}/steps/1/merge", json={"pair": ["a", "b"]})
        assert r.status_code in (200, 202), r.text
        new = wait_done(c, r.json()["id"])
        assert new["status"] == "done", new
        assert c.get(f"/api/train/{new['id']}/steps/2").json()["forced"] is True


def test_run_reloads_from_the_directory_store_in_another_process(tmp_path):
    with make_client(tmp_path) as c:
        run = train(c, **AAAB)
        before = c.get(f"/api/train/{run['id']}/steps/2").json()
    with make_client(tmp_path) as fresh:  # a new app: empty memory, same runs directory
        assert fresh.get(f"/api/train/{run['id']}/steps/2").json() == before
    assert (tmp_path / "runs" / f"{run['id']}.json").is_file()


# -- pages ----------------------------------------------------------------------------------------------------


def test_lab_page_offers_examples_and_states_limits(lab):
    r = lab.get("/lab")
    assert r.status_code == 200
    assert "aaabdaaabac" in r.text and "low lower newest widest" in r.text and "Japanese" in r.text
    assert "2,000,000 characters" in r.text and "8,192 merges" in r.text
    r = lab.get("/lab?example=low-lower", headers={"HX-Request": "true"})
    assert "<html" not in r.text and 'value="char" selected' in r.text and "checked" in r.text


def test_form_train_redirects_to_the_run(lab):
    r = lab.post(
        "/lab/train",
        data={
            "corpus": "aaabdaaabac",
            "algorithm": "byte",
            "pattern": "none",
            "size_kind": "merges",
            "size": "3",
            "tie_break": "first",
        },
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"].startswith("/lab/runs/")
    page = lab.get(r.headers["location"])
    # a run opens before its first merge: a class starts at step 0
    assert page.status_code == 200 and 'data-step="0"' in page.text and "Step 0: before any merge" in page.text
    r = lab.post("/lab/train", data={"corpus": "aaabdaaabac", "size": "3"}, headers={"HX-Request": "true"})
    assert r.headers["HX-Redirect"].startswith("/lab/runs/")


def test_form_train_upload_and_errors(lab):
    r = lab.post(
        "/lab/train",
        data={"size": "2", "pattern": "none"},
        files={"file": ("c.txt", b"abab abab", "text/plain")},
        follow_redirects=False,
    )
    assert r.status_code == 303
    r = lab.post(
        "/lab/train", data={"size": "2"}, files={"file": ("c.bin", b"\xff\xfe\x00", "application/octet-stream")}
    )
    assert r.status_code == 422 and "not UTF-8" in r.text
    r = lab.post("/lab/train", data={"corpus": "abc", "size": "many"})
    assert r.status_code == 422 and "whole number" in r.text
    r = lab.post("/lab/train", data={"corpus": "abc", "size": "99999"})
    assert r.status_code == 422 and "8,192" in r.text and 'name="corpus"' in r.text


def test_run_page_step_block_for_htmx(lab):
    run = train(lab, **AAAB)
    r = lab.get(f"/lab/runs/{run['id']}?step=2", headers={"HX-Request": "true"})
    assert r.status_code == 200 and r.text.lstrip().startswith('<div id="step"')
    assert 'data-step="2"' in r.text and '=<span class="mark-word"> tie</span>' in r.text and "rule <em>first</em>" in r.text
    corpus = r.text.split('id="corpus-tokens"')[1].split("</div>")[0]
    assert len(re.findall(r'<span class="?c\d', corpus)) == 7
    assert len(re.findall(r'<span class="c\d new"', corpus)) == 2
    full = lab.get(f"/lab/runs/{run['id']}?step=99")
    assert 'data-step="3"' in full.text and "<html" in full.text
    assert lab.get("/lab/runs/ffffffffff").status_code == 404


def test_run_page_escapes_corpus_markup(lab):
    run = train(lab, corpus="<b>x</b><b>x</b>", algorithm="byte", pattern="none", merges=2)
    r = lab.get(f"/lab/runs/{run['id']}?step=2")
    assert "<b>x" not in r.text and "&lt;b&gt;" in r.text


def test_vocab_tree_encode_and_use_fragments(lab):
    run = train(lab, **AAAB)
    rid = run["id"]
    v = lab.get(f"/lab/runs/{rid}/vocab", params={"q": "aa", "step": 3}, headers={"HX-Request": "true"})
    assert "4 tokens" in v.text and "aaab" in v.text  # aa, aaa, aaab and the byte \\xaa
    t = lab.get(f"/lab/runs/{rid}/tree/258", headers={"HX-Request": "true"})
    assert t.text.count("merge ") == 3 and "base" in t.text
    assert lab.get(f"/lab/runs/{rid}/tree/999").status_code == 404
    e = lab.post(f"/lab/runs/{rid}/encode", data={"text": "aaab", "step": 3}, headers={"HX-Request": "true"})
    assert "merge 3" in e.text
    u = lab.post(f"/lab/runs/{rid}/use", headers={"HX-Request": "true"})
    assert "Open the playground" in u.text and f"lab-{rid}" in u.headers["set-cookie"] or rid in u.headers["set-cookie"]
    registry.unregister(f"lab-{rid}")


def test_manual_merge_form_goes_to_the_new_run(lab):
    run = train(lab, **AAAB)
    r = lab.post(
        f"/lab/runs/{run['id']}/merge", data={"after": 1, "left": 97, "right": 98}, headers={"HX-Request": "true"}
    )
    assert r.status_code == 200 and r.headers["HX-Redirect"].endswith("?step=2")
    page = lab.get(r.headers["HX-Redirect"])
    assert "chosen by hand" in page.text


def test_a_pasted_corpus_trains_as_the_same_text_uploaded(lab):
    """Browsers send a text area's lines as CRLF: a pasted corpus is what the text area holds (LF), like the
    playground's text; a file is taken byte for byte."""
    text = "low lower lowest\nnewer newest\n" * 20
    form = {"algorithm": "byte", "pattern": "none", "size_kind": "merges", "size": "8"}
    pasted = lab.post("/lab/train", data=form | {"corpus": text.replace("\n", "\r\n")}, follow_redirects=False)
    uploaded = lab.post("/lab/train", data=form, files={"file": ("c.txt", text.encode(), "text/plain")},
                        follow_redirects=False)
    runs = [wait_done(lab, r.headers["location"].split("/")[-1].split("?")[0]) for r in (pasted, uploaded)]
    assert runs[0]["corpus_chars"] == runs[1]["corpus_chars"] == len(text)
    steps = [[s["token"] for s in lab.get(f"/api/train/{r['id']}").json()["steps"]] for r in runs]
    assert steps[0] == steps[1] and not any("\r" in t for t in steps[0])
    # a file keeps its CRLF: byte-exact
    crlf = lab.post("/lab/train", data=form, files={"file": ("c.txt", text.replace("\n", "\r\n").encode(), "text/plain")},
                    follow_redirects=False)
    assert wait_done(lab, crlf.headers["location"].split("/")[-1])["corpus_chars"] == len(text) + text.count("\n")


def test_byte_level_japanese_shows_whole_characters_and_bytes_on_hover(lab):
    """The corpus view groups the byte tokens of one character into one span, as the playground does (the bytes
    are in data-hex for the hover detail); chips of a piece of a character show its bytes, never \\x escapes."""
    corpus = "東京は日本の首都です。京都は古い都です。" * 3
    run = train(lab, corpus=corpus, algorithm="byte", pattern="none", merges=6)
    html = lab.get(f"/lab/runs/{run['id']}?step=1", headers={"HX-Request": "true"}).text
    view = html.split('id="corpus-tokens"')[1].split("</div>")[0]
    spans = re.findall(r"<span class=[^>]*>(.*?)</span>", view)
    assert "".join(spans) == corpus and "\\x" not in html
    assert "data-hex=" in view  # a character cut into byte tokens carries its tokens' bytes
    step1 = lab.get(f"/api/train/{run['id']}/steps/1").json()
    assert "\\x" in step1["token"]  # the token of merge 1 is a piece of a character...
    merge_line = html.split('class="merge-line"')[1].split("</p>")[0]
    assert "chip-bytes" in merge_line and re.search(r"[0-9A-F]{2} [0-9A-F]{2}", merge_line)  # ...shown as bytes


def test_lab_pages_say_one_character_and_draw_spaces_one_way(lab):
    run = train(lab, corpus="a", algorithm="char", pattern="none", merges=0)
    assert "· 1 character<" in lab.get(f"/lab/runs/{run['id']}").text
    run = train(lab, corpus="ab ab ab ab", algorithm="byte", pattern="none", merges=3)
    html = lab.get(f"/lab/runs/{run['id']}?step=3").text
    corpus = html.split('id="corpus-tokens"')[1].split("</div>")[0]
    space = "<i class=w-sp> </i>"  # chips and corpus: the same space
    assert "␣" not in html and space in corpus and f'<span class="chip">{space}' in html
