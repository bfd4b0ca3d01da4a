"""The lab's pre-tokenizers, min_count, superwords, typed merges, every pair and curves over HTTP (issues 33 parts
3-5, 34): the JSON API as the issues spell it, good and bad input, and the /lab pages' fragments."""

from __future__ import annotations

import base64
import csv
import io
import json
import threading

import pytest
import regex
import tiktoken
from fastapi.testclient import TestClient
from helpers.lab_helpers import QUICK_WAIT
from tiktoken._educational import bpe_train
from tokenizers import Tokenizer

from app.engines import budget as budgets
from app.engines.bpe.patterns import LINES_DIGITS_R2L_PATTERN, PATTERNS
from app.engines.bpe.pretokens import custom
from app.lab.examples import SAMPLE_CORPUS
from app.settings import Settings
from app.web.app import create_app

CORPUS = ("The cat sat on the mat. It's 1234567 cats, 42 dogs!\nOf the cats on the mats, of the dogs in the fog.\n" * 8)
HELD_OUT = "the dog sat on the log, 7654321 dogs and 12 cats!\nof the fog"


def make_client(tmp_path, **overrides) -> TestClient:
    defaults = {"lab_pool": "thread", "lab_quick_wait_seconds": QUICK_WAIT}
    return TestClient(create_app(Settings(lab_runs_dir=tmp_path / "runs", **(defaults | overrides))))


@pytest.fixture()
def lab(tmp_path):
    with make_client(tmp_path) as c:
        yield c


def trained(client, **body) -> dict:
    r = client.post("/api/train", json={"corpus": CORPUS, "algorithm": "byte"} | body)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "done"
    return r.json()


# -- POST /api/pretokenize ------------------------------------------------------------------------------------------


#: What each named pattern's pieces are, by the regex module itself (on a text whose characters every table agrees on).
REFEREE = {"none": r"[\s\S]+", "whitespace": r"\S+|\s+", "lines-digits-r2l": LINES_DIGITS_R2L_PATTERN,
           **{name: PATTERNS[name] for name in ("gpt2", "gpt4", "o200k", "digits", "digits-r2l")}}


@pytest.mark.parametrize("pattern", list(REFEREE))
def test_pretokenize_cuts_as_training_does_with_no_character_lost(lab, pattern):
    r = lab.post("/api/pretokenize", json={"text": CORPUS, "pattern": pattern})
    assert r.status_code == 200, r.text
    body = r.json()
    assert "".join(body["pieces"]) == CORPUS and body["count"] == len(body["pieces"]) and all(body["pieces"])
    assert body["pieces"] == regex.findall(REFEREE[pattern], CORPUS)


def test_pretokenize_digits_in_threes_from_the_right(lab):
    r = lab.post("/api/pretokenize", json={"text": "It costs 1234567 dollars", "pattern": "digits-r2l"})
    assert r.json() == {"pieces": ["It", " costs", " ", "1", "234", "567", " dollars"], "count": 7}


def test_pretokenize_a_custom_pattern_keeps_the_stretches_between_matches(lab):
    r = lab.post("/api/pretokenize", json={"text": "ab12cd 3", "pattern": "custom", "pattern_regex": r"\d+"})
    assert r.json() == {"pieces": ["ab", "12", "cd ", "3"], "count": 4}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"pattern": "custom", "pattern_regex": "(a"}, "pattern_regex is not a valid regular expression: missing )"),
        ({"pattern": "custom"}, "pattern_regex is missing"),
        ({"pattern": "custom", "pattern_regex": "(?=a)"}, "pattern_regex only matches empty strings"),
        ({"pattern": "custom", "pattern_regex": "x" * 1001}, "pattern_regex: String should have at most 1000 characters"),
        ({"pattern": "gpt4", "pattern_regex": r"\d"}, "pattern_regex is used with pattern 'custom' only"),
    ],
)
def test_pretokenize_refuses_a_bad_pattern_in_words(lab, body, says):
    r = lab.post("/api/pretokenize", json={"text": "aaa bbb"} | body)
    assert r.status_code == 422
    assert says in r.json()["detail"]


def test_pretokenize_refuses_a_lone_surrogate_in_words(lab):
    r = lab.post("/api/pretokenize", content='{"text": "a\\ud800 b", "pattern": "gpt4"}',
                 headers={"content-type": "application/json"})
    assert r.status_code == 422 and "text: has a character that cannot be encoded as UTF-8" in r.json()["detail"]
    assert "lone surrogate" in r.json()["detail"] and "unable to parse raw data" not in r.json()["detail"]


def test_pretokenize_refuses_an_unknown_pattern_naming_the_choices(lab):
    r = lab.post("/api/pretokenize", json={"text": "a", "pattern": "gpt5"})
    assert r.status_code == 422 and "digits-r2l" in r.text


def test_a_catastrophic_pattern_is_refused_within_the_request_budget(tmp_path):
    with make_client(tmp_path, user_code_seconds=0.2) as c:
        body = {"text": "a" * 5000 + "!", "pattern": "custom", "pattern_regex": "(a+)+$"}
        r = c.post("/api/pretokenize", json=body)
        assert r.status_code == 422
        assert "pattern_regex took more than 0.2 s on 5,001 characters" in r.json()["detail"]
        r = c.post("/api/train", json={"corpus": body["text"], "algorithm": "byte", "merges": 3} | body)
        assert r.status_code == 422 and "pattern_regex took more than 0.2 s" in r.json()["detail"]
        assert c.get("/api/train/nonexistent1").status_code == 404  # the server goes on serving


def test_a_user_pattern_is_work_on_what_a_user_brought():
    """Running a custom pattern tells the request's budget, which moves the request to the lane of such work
    (app/web/lanes.py), so other users' requests never queue behind it."""
    moved = threading.Event()
    with budgets.use(budgets.Budget(5, on_untrusted=moved.set)):
        assert custom(r"\d+").pieces("a1b22") == ["a", "1", "b", "22"]
    assert moved.is_set()


# -- training options -----------------------------------------------------------------------------------------------


def test_min_count_1_over_http_is_what_bpe_train_learns(lab):
    page = SAMPLE_CORPUS[:1500]  # about a page: the last merges are pairs seen once
    run = trained(lab, corpus=page, pattern="gpt4", vocab_size=512, min_count=1)
    ranks_file = lab.get(f"/api/train/{run['id']}/export?format=tiktoken").text
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in ranks_file.splitlines())}
    assert ranks == bpe_train(page, 512, PATTERNS["gpt4"], visualise=None)
    steps = lab.get(f"/api/train/{run['id']}").json()["steps"]
    assert steps[-1]["count"] == 1 and run["options"]["min_count"] == 1


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"min_count": 0}, 422, "min_count"),
        ({"algorithm": "unigram", "vocab_size": 300, "merges": None, "min_count": 1}, 422, "min_count applies to"),
        ({"superwords": {"transition": 50}, "merges": 10}, 422, "superwords.transition 50 is larger than the run's 10 merges"),
        ({"superwords": {"transition": 50}, "merges": None, "vocab_size": 300}, 422, "superwords.transition 50 is larger than the run's 44 merges"),
        ({"algorithm": "unigram", "merges": None, "vocab_size": 300, "superwords": {"transition": 1}}, 422, "superwords applies to byte- and"),
        ({"pattern": "custom", "pattern_regex": "[z-a]"}, 422, "pattern_regex is not a valid regular expression"),
        ({"merge_list": "t h\nĠt h", "merges": None}, 422, "merge_list line 2: the token 'Ġt'"),
        ({"merge_list": "t h", "merges": 3}, 422, "give 'merge_list' alone"),
    ],
)
def test_bad_training_options_are_refused_naming_the_field(lab, body, status, says):
    r = lab.post("/api/train", json={"corpus": CORPUS, "algorithm": "byte", "merges": 10} | body)
    assert r.status_code == status, r.text
    assert says in r.json()["detail"]


def test_a_typed_merge_list_run_steps_exports_and_plays(lab):
    run = trained(lab, pattern="gpt2", merge_list="#version: 0.2\nt h\nĠ th\nĠth e\nĠ c\na t\nĠc at")
    assert run["merges"] == 6
    step = lab.get(f"/api/train/{run['id']}/steps/3").json()
    assert step["token"] == " the" and step["forced"]
    trace = lab.post(f"/api/train/{run['id']}/encode", json={"text": "a the cat"}).json()
    assert trace["tokens"] == ["a", " the", " cat"]
    assert lab.get(f"/api/train/{run['id']}/export?format=tiktoken").status_code == 200
    assert lab.post(f"/api/train/{run['id']}/use").status_code == 200
    # manual mode: the first 3 typed merges kept, a pair of our choice next, then training goes on by itself
    forced = lab.post(f"/api/train/{run['id']}/steps/3/merge", json={"pair": [" ", "c"]})
    assert forced.status_code == 200, forced.text
    again = lab.get(f"/api/train/{forced.json()['id']}").json()
    assert [s["token"] for s in again["steps"][:4]] == ["th", " th", " the", " c"] and again["merges"] >= 6


# -- the whole pair table -------------------------------------------------------------------------------------------


def test_every_pair_of_a_step_pages_and_filters(lab):
    run = trained(lab, corpus=SAMPLE_CORPUS, pattern="gpt4", merges=20)
    first = lab.get(f"/api/train/{run['id']}/steps/4/pairs?offset=0&limit=100").json()
    assert set(first) >= {"total", "pairs"} and first["total"] > 100 and len(first["pairs"]) == 100
    row = first["pairs"][0]
    assert set(row) == {"pair", "ids", "count"}
    step5 = lab.get(f"/api/train/{run['id']}/steps/5").json()
    assert row["ids"] == step5["pair_ids"] and row["count"] == step5["count"]  # the next merge ranks first
    rest = lab.get(f"/api/train/{run['id']}/steps/4/pairs?offset=100&limit=1000").json()
    counts = [p["count"] for p in first["pairs"] + rest["pairs"]]
    assert len(counts) == first["total"] and counts == sorted(counts, reverse=True)
    th = lab.get(f"/api/train/{run['id']}/steps/4/pairs?q=th").json()
    assert th["total"] and all("th" in "".join(p["pair"]).lower() for p in th["pairs"])
    assert lab.get(f"/api/train/{run['id']}/steps/21/pairs").status_code == 404
    assert lab.get(f"/api/train/{run['id']}/steps/2/pairs?limit=0").status_code == 422


def test_every_pair_is_refused_for_runs_without_one(lab):
    run = trained(lab, algorithm="wordpiece", merges=5)
    r = lab.get(f"/api/train/{run['id']}/steps/0/pairs")
    assert r.status_code == 422 and "byte- and character-level BPE" in r.json()["detail"]


# -- curves ---------------------------------------------------------------------------------------------------------


def test_curves_equal_the_encode_view_at_every_point(lab):
    plain = trained(lab, pattern="gpt4", merges=80)
    superwords = trained(lab, pattern="gpt4", merges=80, superwords={"transition": 50})
    r2l = trained(lab, pattern="digits-r2l", merges=80)
    ids = [plain["id"], superwords["id"], r2l["id"]]
    r = lab.post("/api/train/curves", json={"runs": ids, "text": HELD_OUT, "points": 20})
    assert r.status_code == 200, r.text
    runs = r.json()["runs"]
    assert [line["id"] for line in runs] == ids
    for line in runs:
        assert len(line["points"]) >= 20
        for p in line["points"]:
            enc = lab.post(f"/api/train/{line['id']}/encode", json={"text": HELD_OUT, "step": p["merges"]}).json()
            assert p["tokens"] == len(enc["ids"])
    assert runs[1]["transition"] == 50 and runs[0]["transition"] is None
    assert runs[1]["points"][-1]["tokens"] <= runs[0]["points"][-1]["tokens"]  # superwords: no more tokens


@pytest.mark.parametrize(
    ("body", "status"),
    [({"runs": ["ffffffffff"], "text": "x", "points": 20}, 404), ({"runs": [], "text": "x"}, 422),
     ({"runs": ["RUN"], "text": "x", "points": 1}, 422)],
)
def test_curves_refuse_bad_requests(lab, body, status):
    run = trained(lab, pattern="gpt4", merges=3)
    body = json.loads(json.dumps(body).replace("RUN", run["id"]))
    assert lab.post("/api/train/curves", json=body).status_code == status


# -- exports --------------------------------------------------------------------------------------------------------


def test_superword_exports_load_in_their_libraries_and_encode_as_the_lab_does(lab):
    run = trained(lab, pattern="gpt4", merges=120, superwords={"transition": 80})
    want = lab.post(f"/api/train/{run['id']}/encode", json={"text": HELD_OUT}).json()["ids"]
    body = lab.get(f"/api/train/{run['id']}/export?format=tokenizer.json").content
    assert Tokenizer.from_str(body.decode()).encode(HELD_OUT).ids == want
    d = lab.get(f"/api/train/{run['id']}/export?format=tiktoken.json").json()
    ranks = {base64.b64decode(k): v for k, v in d["mergeable_ranks"].items()}
    enc = tiktoken.Encoding(d["name"], pat_str=d["pat_str"], mergeable_ranks=ranks, special_tokens=d["special_tokens"])
    assert enc.encode(HELD_OUT) == want



@pytest.mark.parametrize(
    ("pattern_regex", "says"),
    [(r"[a-z]*", "matches the empty string"), (r"(?=[A-Z])|[a-z]+|[^a-zA-Z]+", "matches the empty string"),
     (r"\w+|\W", r"uses \w")],
    ids=["x*", "a lookahead alone", "word class"],
)
def test_a_tiktoken_export_tiktoken_could_not_cut_as_the_lab_is_refused_in_words(lab, pattern_regex, says):
    r"""tiktoken keeps only matches and stops at an empty one (its Rust code panics); \w is read with other Unicode
    tables. The tiktoken export refuses such a pattern (422, in words), while tokenizer.json, which cuts as the lab
    does, is offered instead and still encodes as the lab does."""
    corpus = "The Cat sat on the Mat, 12 cats. The Dog sat on the Log. " * 4
    run = trained(lab, corpus=corpus, pattern="custom", pattern_regex=pattern_regex, merges=12)
    r = lab.get(f"/api/train/{run['id']}/export?format=tiktoken.json")
    assert r.status_code == 422 and says in r.json()["detail"] and "tokenizer.json" in r.json()["detail"], r.text
    if "empty" in says:
        text = "A Cat and a Dog, 7 Mats."
        want = lab.post(f"/api/train/{run['id']}/encode", json={"text": text}).json()["ids"]
        body = lab.get(f"/api/train/{run['id']}/export?format=tokenizer.json").content
        hf = Tokenizer.from_str(body.decode())
        assert hf.encode(text).ids == want and hf.decode(want) == text



def test_an_empty_match_only_the_corpus_has_is_refused_at_download_naming_where(lab):
    """A lookahead that matches only before QQQ: the page's short texts never meet it (the button stays), the
    download tries the corpus and says where."""
    corpus = "the cat sat QQQ on the mat, the cat sat on the hat. " * 6
    run = trained(lab, corpus=corpus, pattern="custom", pattern_regex=r"(?=QQQ)|[^Q ]+| |Q", merges=8)
    assert f'href="/lab/runs/{run["id"]}/export.tiktoken.json"' in lab.get(f"/lab/runs/{run['id']}").text
    r = lab.get(f"/api/train/{run['id']}/export?format=tiktoken.json")
    assert r.status_code == 422 and "matches the empty string (at offset 12 of the corpus)" in r.json()["detail"]


def test_the_run_page_says_why_an_export_is_not_offered_instead_of_a_failing_download(lab):
    empty = trained(lab, pattern="custom", pattern_regex=r"[a-z]*", merges=6)
    html = lab.get(f"/lab/runs/{empty['id']}").text
    assert f'href="/lab/runs/{empty["id"]}/export.tiktoken.json"' not in html
    assert 'aria-describedby="refused-tiktoken-json">tiktoken.json</span>' in html
    assert '<strong>tiktoken.json</strong> is not offered: the run&#39;s pattern_regex matches the empty string' in html
    assert f'href="/lab/runs/{empty["id"]}/export.tokenizer.json"' in html  # Hugging Face cuts as the lab does
    words = trained(lab, pattern="custom", pattern_regex=r"\w+|\W", merges=6)
    html = lab.get(f"/lab/runs/{words['id']}").text
    assert "refused-tokenizer-json" in html and "refused-tiktoken-json" in html
    assert f'href="/lab/runs/{words["id"]}/export.tokenizer.json"' not in html
    stage_two = trained(lab, pattern="gpt4", merges=8, superwords={"transition": 4, "pattern_regex": r"[a-z]*|[^a-z]+"})
    html = lab.get(f"/lab/runs/{stage_two['id']}").text
    assert "the run&#39;s stage-two pattern_regex matches the empty string" in html
    for pattern in ("gpt4", "digits-r2l"):  # a shipped pattern: every export offered
        run = trained(lab, pattern=pattern, merges=6)
        html = lab.get(f"/lab/runs/{run['id']}").text
        assert "export-refused" not in html and f'/lab/runs/{run["id"]}/export.tiktoken.json"' in html


# -- the pages ------------------------------------------------------------------------------------------------------


def test_the_setup_page_offers_every_pattern_a_regex_box_and_typed_merges(lab):
    html = lab.get("/lab").text
    for name in ("o200k", "digits", "digits-r2l", "lines-digits-r2l", "custom"):
        assert f'<option value="{name}"' in html
    assert 'id="pattern_regex"' in html and 'name="merge_list"' in html and 'name="min_count"' in html
    assert 'hx-post="/lab/pretokenize"' in html and 'name="transition"' in html


def test_the_preview_fragment_cuts_the_corpus_and_says_errors_in_words(lab):
    r = lab.post("/lab/pretokenize", data={"corpus": "It's 1234567!", "pattern": "digits-r2l"}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and ">1</span><span" in r.text and ">234</span>" in r.text and "7 pre-tokens" in r.text
    r = lab.post("/lab/pretokenize", data={"corpus": "abc", "pattern": "custom", "pattern_regex": "(a"}, headers={"HX-Request": "true"})
    assert r.status_code == 422 and "not a valid regular expression" in r.text and 'role="alert"' in r.text
    r = lab.post("/lab/pretokenize", data={"corpus": "<b>x</b>", "pattern": "custom", "pattern_regex": "<b>"}, headers={"HX-Request": "true"})
    assert "<b>" not in r.text and "&lt;b&gt;" in r.text  # the user's text is never live HTML


def test_the_form_trains_superwords_min_count_and_typed_merges(lab):
    form = {"corpus": SAMPLE_CORPUS, "algorithm": "byte", "pattern": "gpt4", "size_kind": "merges", "size": "60",
            "tie_break": "first", "min_count": "1", "superwords": "1", "transition": "40", "stage_two": "lines-digits-r2l"}
    r = lab.post("/lab/train", data=form, follow_redirects=True)
    assert r.status_code == 200 and "superwords after merge 40" in r.text
    page = lab.get(r.url.path + "?step=60").text
    assert 'id="superwords-title"' in page and 'class="transition"' in page
    typed = form | {"mode": "merges", "merge_list": "t h\nĠ th", "superwords": ""}
    r = lab.post("/lab/train", data=typed, follow_redirects=True)
    assert r.status_code == 200 and "merges typed as a list" in r.text
    bad = typed | {"merge_list": "t h\nx y z"}
    r = lab.post("/lab/train", data=bad)
    assert r.status_code == 422 and "merge_list line 2" in r.text and "x y z" in r.text  # the form is kept


def test_the_run_page_pages_every_pair_and_draws_curves(lab):
    a = trained(lab, pattern="gpt4", merges=30)
    b = trained(lab, pattern="gpt4", merges=30, superwords={"transition": 20})
    page = lab.get(f"/lab/runs/{a['id']}?step=5").text
    assert f'/lab/runs/{a["id"]}/pairs?at=4' in page
    part = lab.get(f"/lab/runs/{a['id']}/pairs?at=4&q=th", headers={"HX-Request": "true"}).text
    assert 'id="all-pairs"' in part and "pairs-total" in part
    r = lab.post("/lab/curves", data={"runs": f"{a['id']} /lab/runs/{b['id']}", "text": HELD_OUT, "points": "10"},
                 headers={"HX-Request": "true"})
    assert r.status_code == 200 and r.text.count('class="curve s') == 2 and "superwords from merge 21" in r.text
    r = lab.post("/lab/curves.csv", data={"runs": [a["id"], b["id"]], "text": HELD_OUT, "points": "10"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert {row["run"] for row in rows} == {a["id"], b["id"]} and sum(row["transition"] == "1" for row in rows) == 1


def test_the_api_names_every_pattern_of_the_lab():
    from typing import get_args

    from app.lab.splits import PATTERNS as LAB_PATTERNS
    from app.web.api.schemas import PatternName

    assert get_args(PatternName) == LAB_PATTERNS
