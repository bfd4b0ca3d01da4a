"""The lab's counts of a corpus and of a new text are those of the run's tokenizer, checked in the reference
libraries on the run's own exported file (issue 21: every number a page shows is the API's).

A run's tokenizer ("use in playground", ``/api/tokenize``) reads the corpus as one text, where training reads its
words only (a ``whitespace`` pre-tokenizer) or a line at a time (SentencePiece-style and unigram). The lab shows
the tokenizer's count (``text_tokens``) beside training's (``corpus_tokens``): at every step it is what a run
trained to that step cuts the corpus into, and at the last step what ``/api/tokenize`` and the reference library
(tiktoken on the ``.tiktoken`` export, ``sentencepiece`` on the ``.model``, ``tokenizers`` on the
``tokenizer.json``) give. An encode trace gives the tokenizer's ids too: a character the corpus lacks is its bytes.
"""

from __future__ import annotations

import base64
from collections import Counter

import pytest
import sentencepiece as spm
import tiktoken
from fastapi.testclient import TestClient
from helpers.lab_training import train
from tokenizers import Tokenizer as HFTokenizer

from app.engines.bpe.patterns import pattern_regex
from app.lab.algorithms import Encoder
from app.lab.examples import SAMPLE_CORPUS
from app.lab.replay import replay_for
from app.lab.text_counts import difference
from app.lab.unigram_runs import round_proto

# Line breaks of every kind a corpus has: an empty first line, a blank line, lines that start with spaces, a line of
# spaces, tabs, a no-break space, an ideographic space between Japanese words, and a last line break.
CORPUS = (
    "\nthe cat sat on the mat\nthe dog  sat on the log\n\nlow lower lowest low\n  two  spaces here\n"
    "\tand a tab\u00a0there\n   \n東京と京都\u3000東京の天気。京都の天気。\nthe end\n"
)
# A text with characters the corpus lacks (é, z, q, an emoji), spaces, a tab and, through the API, a line break.
NEW_TEXT = "lowest café zq 👩\u200d💻\tthe\nend  東京"

RUNS = {
    "byte, whitespace": {"algorithm": "byte", "pattern": "whitespace"},
    "byte, gpt2": {"algorithm": "byte", "pattern": "gpt2"},
    "char, whitespace": {"algorithm": "char", "pattern": "whitespace"},
    "char </w>, whitespace": {"algorithm": "char", "pattern": "whitespace", "end_of_word": True},
    "char </w>, gpt4": {"algorithm": "char", "pattern": "gpt4", "end_of_word": True},
    "sentencepiece": {"algorithm": "sentencepiece"},
    "wordpiece": {"algorithm": "wordpiece"},
    "unigram": {"algorithm": "unigram"},
}


def reference(client, run: dict):
    """The reference library on the run's own export: a function from a text to its ids (None: character-level
    runs, which only Tokenplay runs)."""
    algorithm, pattern = run["options"]["algorithm"], run["options"]["pattern"]
    url = f"/api/train/{run['id']}/export"
    if algorithm == "byte":
        body = client.get(url, params={"format": "tiktoken"}).content
        ranks = {}
        for line in body.decode().splitlines():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        pat = r"\S+|\s+" if pattern == "whitespace" else pattern_regex(pattern) or r"[\s\S]+"
        encoding = tiktoken.Encoding("lab", pat_str=pat, mergeable_ranks=ranks, special_tokens={})
        return encoding.encode_ordinary
    if algorithm in ("sentencepiece", "unigram"):
        sp = spm.SentencePieceProcessor(model_proto=client.get(url, params={"format": "model"}).content)
        return sp.encode
    if algorithm == "wordpiece":
        hf = HFTokenizer.from_str(client.get(url, params={"format": "tokenizer.json"}).text)
        return lambda text: hf.encode(text, add_special_tokens=False).ids
    return None


def tokenize(client, run: dict, text: str) -> dict:
    r = client.post("/api/tokenize", json={"text": text, "tokenizer": f"lab-{run['id']}"})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("options", RUNS.values(), ids=RUNS.keys())
def test_the_corpus_and_a_new_text_count_as_the_runs_tokenizer_and_its_reference(client, options):
    size = {"vocab_size": 40} if options["algorithm"] == "unigram" else {"merges": 40}
    run = train(client, corpus=CORPUS, **options, **size)
    client.post(f"/lab/runs/{run['id']}/use")
    whole = tokenize(client, run, CORPUS)
    step = client.get(f"/api/train/{run['id']}/steps/{run['merges']}").json()
    assert run["text_tokens"] == step["text_tokens"] == whole["count"]
    library = reference(client, run)
    if library is not None:
        assert len(library(CORPUS)) == whole["count"]

    trace = client.post(f"/api/train/{run['id']}/encode", json={"text": NEW_TEXT}).json()
    new = tokenize(client, run, NEW_TEXT)
    assert trace["ids"] == new["ids"]
    if library is not None:
        assert library(NEW_TEXT) == new["ids"]
    if options["algorithm"] in ("sentencepiece", "char"):  # é, z, q and the emoji's four characters
        assert trace["unknown"] >= 7
    if options["algorithm"] == "sentencepiece":  # no byte fallback by default: é, zq, the emoji: a <unk> a run
        assert trace["ids"].count(0) == 3 and trace["tokens"].count("<unk>") == 3
    if options["algorithm"] == "sentencepiece":  # its byte pieces too (a character-level run shows </w> in tokens)
        assert trace["tokens"] == [t["text"] for t in new["tokens"]]


@pytest.mark.parametrize(
    "options", [RUNS["byte, whitespace"], RUNS["char </w>, whitespace"], RUNS["sentencepiece"]],
    ids=["byte, whitespace", "char </w>, whitespace", "sentencepiece"],
)
def test_every_step_counts_the_corpus_as_a_run_trained_to_that_step(client, options):
    """Step k's count is that of the tokenizer of a run trained with k merges (training is deterministic, so its
    merges are the first k)."""
    run = train(client, corpus=CORPUS, merges=100, **options)
    n = run["merges"]
    assert n >= 15
    for k in (0, 1, 2, 7, n // 2, n - 1, n):
        shorter = train(client, corpus=CORPUS, merges=k, **options)
        client.post(f"/lab/runs/{shorter['id']}/use")
        want = tokenize(client, shorter, CORPUS)["count"]
        assert client.get(f"/api/train/{run['id']}/steps/{k}").json()["text_tokens"] == want, k


def test_every_unigram_round_counts_the_corpus_as_that_rounds_model(client, app):
    corpus = CORPUS + SAMPLE_CORPUS  # enough pieces for rounds of pruning
    run = train(client, corpus=corpus, algorithm="unigram", vocab_size=100)
    stored = app.state.lab.get(run["id"])
    assert stored.n_steps >= 2
    for k in range(stored.n_steps + 1):
        model = spm.SentencePieceProcessor(model_proto=round_proto(stored, k).serialize())
        assert replay_for(stored).text_tokens(k) == len(model.encode(corpus)), k


def test_the_difference_is_the_words_the_two_readings_do_not_share(client, app):
    """:func:`difference` (the short way) equals the words of ``text_spans`` less those of ``spans``."""
    for algorithm in ("char", "byte"):
        run = app.state.lab.get(train(client, corpus=CORPUS, algorithm=algorithm, pattern="whitespace", merges=3)["id"])
        encoder = Encoder(algorithm, "whitespace", run.base)
        whole = Counter((CORPUS[a:b], lead) for a, b, lead in encoder.text_spans(CORPUS))
        whole.subtract(Counter((CORPUS[a:b], lead) for a, b, lead in encoder.spans(CORPUS)))
        assert difference(encoder, CORPUS) == {w: n for w, n in whole.items() if n}


def test_the_run_page_shows_the_tokenizers_count_and_says_what_training_counts(client):
    """sentencepiece's trainer reads the corpus as its model does, normalized, except for the characters outside
    character_coverage: one symbol ▅ each, where the model has one <unk> for a run of them (ꙮꙮ: two, then one)."""
    corpus = SAMPLE_CORPUS * 6 + "ꙮꙮ and ꙮ.\n"  # ꙮ: 3 of 10,000 characters, outside 0.9995
    run = train(client, corpus=corpus, algorithm="sentencepiece", merges=20)
    client.post(f"/lab/runs/{run['id']}/use")
    whole = tokenize(client, run, corpus)["count"]
    assert whole == run["final_tokens"] - 1 == run["text_tokens"]
    html = client.get(f"/lab/runs/{run['id']}?step={run['merges']}").text
    assert f'id="stat-tokens">{whole:,}<' in html
    assert f'id="stat-trained-tokens">{run["final_tokens"]:,}<' in html
    assert "a sentence a line, normalized, each character outside character_coverage one symbol ▅" in html
    assert "a character the vocabulary lacks is &lt;unk&gt;, one for a run of them" in html
    same = train(client, corpus=CORPUS, algorithm="byte", pattern="gpt2", merges=20)
    html = client.get(f"/lab/runs/{same['id']}?step=20").text
    assert f'id="stat-tokens">{same["final_tokens"]:,}<' in html and "stat-trained-tokens" not in html


@pytest.mark.parametrize("algorithm", ["wordpiece", "sentencepiece", "byte"])
def test_compression_is_the_corpus_bytes_per_token_of_the_count_beside_it(client, app, algorithm):
    """The run summary's ``compression`` is the corpus's UTF-8 bytes per token as the run's tokenizer cuts it: the
    same basis as ``text_tokens``, which the playground counts with the run (issue 37: "282 tokens in the corpus"
    stood beside training's own 1.26 bytes per token). The page, its chart and the phones of a class show that
    number and say what it divides."""
    corpus = CORPUS + " naïve café ☕\n"
    run = train(client, corpus=corpus, algorithm=algorithm, merges=20)
    client.post(f"/lab/runs/{run['id']}/use")
    count = tokenize(client, run, corpus)["count"]
    size = len(corpus.encode("utf-8"))
    assert run["text_tokens"] == count and run["corpus_bytes"] == size
    assert run["compression"] == round(size / count, 4)
    assert run["training_compression"] == round(run["base_units"] / run["final_tokens"], 4)
    html = client.get(f"/lab/runs/{run['id']}?step=20").text
    assert f'id="stat-compression">{size / count:.2f}<' in html
    assert f"bytes per token: {size:,} ÷ {count:,}<" in html
    assert f"the corpus's {size:,} UTF-8 bytes ÷ its {count:,} tokens as the run's tokenizer cuts it" in html
    assert f'aria-label="compression {round(size / count, 3)} at step 20 of 20"' in html
    body = client.post(f"/api/train/{run['id']}/session").json()
    client.post(f"/api/sessions/{body['code']}/step", json={"step": 20},
                headers={"Authorization": f"Bearer {body['teacher_token']}"})
    with TestClient(app) as phone:
        assert f">{size / count:.2f}</span><span class=\"lbl\">bytes per token: {size:,} ÷ {count:,}<" in phone.get(body["follow_url"]).text


def test_a_class_following_the_run_sees_the_labs_count(client, app):
    """The phones of a class read the same count as the teacher's page, step by step."""
    run = train(client, corpus=CORPUS, algorithm="byte", pattern="whitespace", merges=20)
    body = client.post(f"/api/train/{run['id']}/session").json()
    teacher = {"Authorization": f"Bearer {body['teacher_token']}"}
    for k in (0, 7, run["merges"]):
        assert client.post(f"/api/sessions/{body['code']}/step", json={"step": k}, headers=teacher).status_code == 200
        with TestClient(app) as phone:
            page = phone.get(body["follow_url"]).text
        want = client.get(f"/api/train/{run['id']}/steps/{k}").json()["text_tokens"]
        assert f'<span class="num">{want:,}</span><span class="lbl">tokens in the corpus</span>' in page, k


def test_every_wordpiece_step_counts_the_corpus_as_its_vocabulary_cuts_it(client, app):
    """WordPiece encodes greedily, longest piece first; training counts by its merges. At every step the two agree
    on the corpus (at the last, tokenizers on the export does too: above), so the count shown is the tokenizer's."""
    corpus = CORPUS + SAMPLE_CORPUS
    run = app.state.lab.get(train(client, corpus=corpus, algorithm="wordpiece", merges=300)["id"])
    replay = replay_for(run)
    for k in range(0, run.n_steps + 1, 7):
        assert replay.text_tokens(k) == run.tokens_at(k) == len(replay.wordpiece_at(k).encode(corpus)), k
