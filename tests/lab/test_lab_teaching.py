"""The lab as a teacher meets it (issue 21, part 7), through HTTP: defaults that train word pieces, "New run" that
keeps the corpus and settings, each algorithm's own words and plurals, the characters a byte-level piece belongs
to, and why a run (or a side of "side by side") ends short of the size asked for, checked against the reference
libraries (``tokenizers``, ``sentencepiece``) that load the runs' exports. The same views in Chromium:
tests/browser/test_lab_exact.py."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from helpers import realtext
import sentencepiece as spm
from fastapi.testclient import TestClient
from helpers.lab_helpers import wait_done
from helpers.lab_training import LOW, train
from helpers.spm_trainer import reference
from tokenizers import Tokenizer

from app.lab.byte_hints import CorpusBytes, byte_hint
from app.lab.examples import SAMPLE_CORPUS, SIDE_VOCAB_SIZE
from app.settings import Settings
from app.web.app import create_app


@pytest.fixture()
def lab(tmp_path):
    with TestClient(create_app(Settings(lab_runs_dir=tmp_path, lab_pool="thread"))) as client:
        yield client


def selected(page: str, name: str) -> str:
    """The selected option of the <select name=...> of a page."""
    select = re.search(rf'<select name="{name}".*?</select>', page, re.S).group(0)
    return re.search(r'<option value="([^"]*)"[^>]*selected', select).group(1)


def textarea(page: str, ident: str) -> str:
    return html.unescape(re.search(rf'<textarea id="{ident}"[^>]*>(.*?)</textarea>', page, re.S).group(1))


def size_box(page: str) -> str:
    return re.search(r'<input type="number" name="size" value="([^"]*)"', page).group(1)


# -- defaults -------------------------------------------------------------------------------------------------


def test_fresh_lab_holds_a_sample_corpus_that_trains_pieces_of_words(lab):
    page = lab.get("/lab").text
    corpus = textarea(page, "corpus")
    assert corpus == SAMPLE_CORPUS and len(corpus) > 1000
    form = {"corpus": corpus, "algorithm": selected(page, "algorithm"), "pattern": selected(page, "pattern"),
            "size": size_box(page), "size_kind": selected(page, "size_kind"), "tie_break": selected(page, "tie_break")}
    assert form["pattern"] != "none"  # the whole text as one word makes pairs across spaces
    r = lab.post("/lab/train", data=form, follow_redirects=False)
    assert r.status_code == 303
    run = wait_done(lab, r.headers["location"].rsplit("/", 1)[1].split("?")[0])
    full = lab.get(f"/api/train/{run['id']}").json()
    tokens = [s["token"] for s in full["steps"]]
    assert len(tokens) == int(form["size"]) >= 30 and full["stop_reason"] == "merge count reached"
    assert not [t for t in tokens if any(c.isspace() for c in t)], "every merge stays inside a word"
    words = set(re.findall(r"\w+", SAMPLE_CORPUS))
    assert {"the", "token", "pieces"} <= set(tokens) & words  # whole words of the corpus, learned as tokens


def test_side_by_side_defaults_reach_their_size_with_all_three(lab):
    page = lab.get("/lab").text
    assert textarea(page, "side-corpus") == SAMPLE_CORPUS
    assert f'name="side_size" value="{SIDE_VOCAB_SIZE}"' in page
    runs = lab.post("/api/train/side-by-side", json={"corpus": SAMPLE_CORPUS, "vocab_size": SIDE_VOCAB_SIZE}).json()["runs"]
    ids = {side: wait_done(lab, r["id"])["id"] for side, r in runs.items()}
    wp = Tokenizer.from_str(lab.get(f"/api/train/{ids['wordpiece']}/export", params={"format": "tokenizer.json"}).text)
    assert wp.get_vocab_size() == SIDE_VOCAB_SIZE
    for side in ("bpe", "unigram"):
        model = spm.SentencePieceProcessor(model_proto=lab.get(f"/api/train/{ids[side]}/export", params={"format": "model"}).content)
        assert model.get_piece_size() == SIDE_VOCAB_SIZE, side
    view = lab.get("/lab/side-by-side", params=ids).text
    assert f"All three have the {SIDE_VOCAB_SIZE} tokens asked for." in view
    assert "side-why" not in view


def test_side_by_side_with_the_same_number_of_merges(lab):
    """"Same number of merges" (issue 37): each of the three learns that many pieces beyond its own base, as the
    reference libraries read the exports (sentencepiece's pieces longer than a character; WordPiece's vocabulary
    beyond [UNK], the characters and ##characters), and the page says what the three share."""
    r = lab.post("/lab/side-by-side", data={"corpus": SAMPLE_CORPUS, "side_size": "40", "match": "merges"}, follow_redirects=False)
    assert r.status_code == 303
    ids = dict(parse_qsl(urlsplit(r.headers["location"]).query))
    for run_id in ids.values():
        wait_done(lab, run_id)
    for side in ("bpe", "unigram"):
        model = spm.SentencePieceProcessor(model_proto=lab.get(f"/api/train/{ids[side]}/export", params={"format": "model"}).content)
        pieces = [model.id_to_piece(i) for i in range(model.get_piece_size()) if not model.is_control(i) and not model.is_unknown(i)]
        assert sum(len(p) > 1 for p in pieces) == 40, side
    wp = Tokenizer.from_str(lab.get(f"/api/train/{ids['wordpiece']}/export", params={"format": "tokenizer.json"}).text)
    assert sum(len(t.removeprefix("##")) > 1 for t in wp.get_vocab() if t != "[UNK]") == 40
    view = lab.get("/lab/side-by-side", params=ids).text
    assert "The same corpus, the same number of merges, three algorithms." in view
    assert "each learned 40 pieces beyond its own base" in view
    again = lab.get("/lab", params={"from": ids["bpe"]}).text  # "New comparison" keeps the choice
    assert '<option value="merges" selected>' in again and 'name="side_size" value="40"' in again
    assert lab.post("/api/train/side-by-side", json={"corpus": SAMPLE_CORPUS, "vocab_size": 99, "merges": 9}).status_code == 422
    api = lab.post("/api/train/side-by-side", json={"corpus": SAMPLE_CORPUS, "merges": 12}).json()["runs"]
    assert {side: run["options"]["merges"] for side, run in api.items()} == {"bpe": 12, "wordpiece": 12, "unigram": 12}


# -- "New run" ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"corpus": LOW + "\n<b>&amp;</b>", "algorithm": "unigram", "merges": 3},
        {"corpus": LOW, "algorithm": "char", "pattern": "whitespace", "vocab_size": 20, "tie_break": "lexical", "end_of_word": True},
    ],
)
def test_new_run_starts_from_the_corpus_and_settings_of_the_run(lab, body):
    run = train(lab, **body)
    step = lab.get(f"/lab/runs/{run['id']}").text
    assert f'href="/lab?from={run["id"]}"' in step
    page = lab.get(f"/lab?from={run['id']}").text
    assert textarea(page, "corpus") == body["corpus"]  # HTML in the corpus stays text
    assert selected(page, "algorithm") == body["algorithm"]
    assert selected(page, "size_kind") == ("vocab_size" if "vocab_size" in body else "merges")
    assert size_box(page) == str(body.get("vocab_size", body.get("merges")))
    assert selected(page, "tie_break") == body.get("tie_break", "first")
    assert ('name="end_of_word" value="1" checked' in page) == body.get("end_of_word", False)
    if body["algorithm"] == "char":
        assert selected(page, "pattern") == "whitespace"
    again = lab.post("/lab/train", data={"corpus": textarea(page, "corpus"), "algorithm": selected(page, "algorithm"),
                                          "pattern": selected(page, "pattern"), "size": size_box(page),
                                          "size_kind": selected(page, "size_kind"), "tie_break": selected(page, "tie_break"),
                                          **({"end_of_word": "1"} if body.get("end_of_word") else {})},
                     follow_redirects=False)
    again_run = wait_done(lab, again.headers["location"].rsplit("/", 1)[1].split("?")[0])
    assert again_run["options"] == run["options"] and again_run["vocab_size"] == run["vocab_size"]


def test_new_run_of_an_unknown_run_says_so(lab):
    r = lab.get("/lab?from=abcdef0123")
    assert r.status_code == 404 and "no lab run with id" in r.text and textarea(r.text, "corpus") == SAMPLE_CORPUS


# -- each algorithm's words ------------------------------------------------------------------------------------


def test_unigram_form_and_rounds_speak_of_pieces_and_rounds(lab):
    run = train(lab, corpus=LOW, algorithm="unigram", merges=3)
    page = lab.get(f"/lab?from={run['id']}").text
    option = re.search(r'<option value="merges"[^>]*>([^<]*)</option>', page)
    assert option.group(1) == "learned pieces" and 'data-byte="merges"' in option.group(0)
    # 3 learned pieces: the smallest vocabulary (3 special pieces, the 11 characters of LOW) plus 3
    step0 = lab.get(f"/lab/runs/{run['id']}?step=0").text
    assert "down to the 17 asked for" in step0 and f"this run takes <strong>{run['merges']}</strong> round" in step0
    assert "with the 3 meta pieces" in step0
    last = lab.get(f"/lab/runs/{run['id']}?step={run['merges']}").text
    card = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", last.split('id="step"')[1].split("Pieces removed")[0]))
    assert f"Round {run['merges']} of {run['merges']}" in card and "merge" not in card
    assert "2 EM steps re-estimated every piece's probability" in card and "sentencepiece's final choice" in card
    restored = lab.get(f"/api/train/{run['id']}").json()["steps"][-1]["restored"]
    assert not restored or f"the {len(restored)} character" in card  # the characters the EM steps dropped come back
    assert "<th scope=\"col\">Why</th>" in last


def test_counts_are_in_the_singular_for_one_and_step_zero_has_no_merge_range(lab):
    run = train(lab, corpus="hug pug pun bun hugs", algorithm="wordpiece", merges=8)
    steps = lab.get(f"/api/train/{run['id']}").json()["steps"]
    ones = [s["step"] for s in steps if s["count"] == 1]
    assert ones, "a WordPiece run merges pairs seen once"
    page = lab.get(f"/lab/runs/{run['id']}?step={ones[0]}").text
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page))
    assert "1 occurrence of the pair" in text and "1 occurrences" not in text
    zero = re.sub(r"<[^>]+>", "", lab.get(f"/lab/runs/{train(lab, corpus='abab', algorithm='byte', pattern='none', merges=1)['id']}?step=0").text)
    assert "1–0" not in zero and "(no merge yet: bytes only)" in zero


def test_wordpiece_stop_reason_says_no_pair_is_left(lab):
    run = train(lab, corpus=LOW, algorithm="wordpiece", merges=50)
    n = run["merges"]
    assert n < 50 and run["stop_reason"] == (
        f"WordPiece stopped after {n} of the 50 merges asked for: no pair left to merge, every word of the corpus is "
        f"one piece; with these settings this corpus supports at most {n} merges: a vocabulary of "
        f"{run['base_vocab_size']} to {run['vocab_size']} tokens")


# -- bytes of characters ---------------------------------------------------------------------------------------


def test_byte_pieces_name_the_characters_they_belong_to():
    realtext.require()
    corpus = realtext.excerpt("ja", 40_000, 6_000)
    data = corpus.encode()
    chars = CorpusBytes(corpus)
    pieces = {data[i : i + n] for i in range(0, 3000) for n in (1, 2, 3, 4)}
    checked = 0
    for token in pieces:
        try:
            token.decode()
            continue
        except UnicodeDecodeError:
            pass
        hint = byte_hint(token, chars)
        # the first occurrence's characters hold exactly the token's bytes, at the places the hint names
        assert b"".join(p.char.encode()[p.first : p.end] for p in hint.parts) == token
        if len(hint.parts) == 1:
            # every character of the corpus around an occurrence of the token, counted one occurrence at a time
            around = set()
            for m in re.finditer(re.escape(token), data):
                a, b = m.start(), m.end()
                while a and 0x80 <= data[a] < 0xC0:
                    a -= 1
                while b < len(data) and 0x80 <= data[b] < 0xC0:
                    b += 1
                around.add(data[a:b].decode())
            singles = {c for c in around if len(c) == 1}
            assert hint.total == len(singles) and set(hint.chars) <= singles
            assert hint.chars[0] == hint.parts[0].char
        checked += 1
    assert checked > 500


def test_byte_level_merge_card_and_pair_table_name_the_character(lab):
    corpus = "東京は日本の首都です。京都は古い都です。東京と京都は日本の大きな都市です。日本の都市はきれいです。"
    run = train(lab, corpus=corpus, algorithm="byte", pattern="none", merges=20)
    steps = lab.get(f"/api/train/{run['id']}").json()["steps"]
    partial = next(s for s in steps if s["token"].startswith("\\x"))
    page = html.unescape(lab.get(f"/lab/runs/{run['id']}?step={partial['step']}").text)
    note = re.search(r'<p class="byte-note">.*?</p>', page, re.S).group(0)
    token = bytes.fromhex("".join(re.findall(r"\\x([0-9a-f]{2})", partial["token"])))
    named = re.findall(r"「(.)」", re.sub(r"<[^>]+>", "", note))
    assert named and all(token in c.encode() for c in named)
    assert f"{len(token)} of the 3 UTF-8 bytes of 「{named[0]}」" in note
    assert 'class="pair-hint"' in page


# -- why a run is short of its size ---------------------------------------------------------------------------


def test_side_by_side_says_why_each_algorithm_stopped_short_or_was_refused(lab, tmp_path):
    """At a size the corpus cannot give, sentencepiece's trainers refuse (as sentencepiece does, which the test
    checks: one more than the most it names is what sentencepiece refuses), and the side says so in words with the
    most it can be; WordPiece, the lab's own, stops short and says why."""
    runs = lab.post("/api/train/side-by-side", json={"corpus": LOW, "vocab_size": 290}).json()["runs"]
    done = {side: wait_done(lab, r["id"]) for side, r in runs.items()}
    ids = {side: r["id"] for side, r in done.items()}
    assert done["bpe"]["status"] == done["unigram"]["status"] == "error" and done["wordpiece"]["status"] == "done"
    for side, model_type in (("bpe", "bpe"), ("unigram", "unigram")):
        error = done[side]["error"]
        assert error.startswith(f"vocab_size 290 is more than this corpus can fill: sentencepiece's {model_type.replace('bpe', 'BPE')} trainer")
        most = int(re.search(r"choose a vocab_size of at most (\d+)", error).group(1))
        with pytest.raises(RuntimeError, match="Vocabulary size"):
            reference(tmp_path, LOW, most + 1, model_type)
        assert len(reference(tmp_path, LOW, most, model_type).pieces) == most
    wp = Tokenizer.from_str(lab.get(f"/api/train/{ids['wordpiece']}/export", params={"format": "tokenizer.json"}).text)
    assert wp.get_vocab_size() == 25
    assert len(wp.encode(LOW, add_special_tokens=False).ids) == len(LOW.split())

    view = re.sub(r"\s+", " ", html.unescape(lab.get("/lab/side-by-side", params=ids).text))
    assert "Not at the 290 tokens asked for: BPE (refused), WordPiece (25), Unigram (refused)." in view
    assert done["bpe"]["error"] in view and done["unigram"]["error"] in view
    assert (f"WordPiece stopped at 25 of the 290 tokens asked for, after {done['wordpiece']['merges']} merges: no pair "
            "left to merge, every word of the corpus is one piece") in view
    assert "= 1 [UNK] + 3 characters + 8 ##characters + 13 merges" in view
    # each run's own page says it too
    assert "every word of the corpus is one piece" in html.unescape(lab.get(f"/lab/runs/{ids['wordpiece']}").text)


def test_side_by_side_breaks_down_sentencepieces_vocabularies(lab):
    runs = lab.post("/api/train/side-by-side", json={"corpus": LOW, "vocab_size": 17}).json()["runs"]
    ids = {side: wait_done(lab, r["id"])["id"] for side, r in runs.items()}
    view = re.sub(r"\s+", " ", html.unescape(lab.get("/lab/side-by-side", params=ids).text))
    assert "= 3 special + 11 characters + 3 merges" in view and "= 3 special + 11 characters + 3 longer pieces" in view


def test_a_bpe_run_short_of_its_merges_says_no_pair_repeats(lab):
    run = train(lab, corpus="abcabd xyz", algorithm="byte", pattern="none", merges=10)
    page = html.unescape(lab.get(f"/lab/runs/{run['id']}").text)
    assert run["merges"] == 1
    assert ("BPE stopped after 1 of the 10 merges asked for: no pair of neighbouring tokens occurs twice in the "
            "corpus any more") in page


# -- a size out of reach says which sizes work ---------------------------------------------------------------------

OUT_OF_REACH = {
    "byte-level BPE": ({"algorithm": "byte", "pattern": "whitespace"}, "BPE"),
    "character-level BPE": ({"algorithm": "char", "pattern": "whitespace", "end_of_word": True}, "BPE"),
    "WordPiece": ({"algorithm": "wordpiece"}, "WordPiece"),
}
# sentencepiece's trainers refuse a size out of reach instead: tests/lab/test_lab_algorithms.py


@pytest.mark.parametrize("options, name", OUT_OF_REACH.values(), ids=OUT_OF_REACH.keys())
def test_a_size_out_of_reach_says_which_sizes_work_and_they_do(lab, options, name):
    """A run asked for more than its corpus supports ends short and says, in its stop_reason and on its page, the
    range of sizes that works; the range is true: its largest size is reached exactly, and one more ends there."""
    corpus = "low lower newest widest"
    run = train(lab, corpus=corpus, vocab_size=400, **options)
    top, steps = run["reachable"]["vocab_size"]["max"], run["reachable"]["merges"]["max"]
    least = run["reachable"]["vocab_size"]["min"]
    assert top == run["vocab_size"] < 400 and run["reachable"]["merges"]["min"] == 0
    assert run["stop_reason"].startswith(f"{name} ")
    assert least == run["base_vocab_size"] and steps == run["merges"]
    assert (f"with these settings this corpus supports at most {steps} merges: a vocabulary of {least:,} to "
            f"{top:,} tokens") in run["stop_reason"]
    page = html.unescape(lab.get(f"/lab/runs/{run['id']}").text)
    assert f'<p class="lab-outcome" role="note">{run["stop_reason"]}.</p>' in page
    assert not re.search(r"[A-Z]\w*Error|Traceback|vocab_size reached", run["stop_reason"])

    at_top = train(lab, corpus=corpus, vocab_size=top, **options)
    assert at_top["vocab_size"] == top and at_top["reachable"] is None
    assert train(lab, corpus=corpus, merges=steps, **options)["vocab_size"] == top
    beyond = train(lab, corpus=corpus, vocab_size=top + 1, **options)
    assert beyond["vocab_size"] == top and beyond["reachable"] == run["reachable"]
    assert train(lab, corpus=corpus, vocab_size=least, **options)["vocab_size"] == least
    with_more_text = train(lab, corpus=corpus + " lowest newer wider", vocab_size=top + 1, **options)
    assert with_more_text["vocab_size"] == top + 1 and with_more_text["reachable"] is None
