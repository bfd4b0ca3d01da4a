"""WordPiece walks, unigram lattices and the normalizer layer in real Chromium: click a BERT token and read its
word's walk, click a Jurassic-2 token and read its lattice, turn the normalizer layer on, and open explanations for
those models from compare's boundary marks, from chat, and from the oddities gallery.

What the pages must show comes from the reference libraries (Hugging Face ``tokenizers`` for BERT, ``sentencepiece``
for Jurassic-2), never from the pages themselves.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from helpers.walk_referees import UnigramReferee, WordPieceReferee, unbyte
from playwright.sync_api import Page, expect

from app.engines import datafiles, registry

pytestmark = pytest.mark.browser

TEXT = "The naïve CAFÉ served unaffable crème brûlée, as well as the rest of the world"


@pytest.fixture(scope="module")
def bert_ref() -> WordPieceReferee:
    tok = registry.get("bert-base-uncased")
    return WordPieceReferee.bert([tok.id_to_token(i) for i in range(tok.n_vocab)])


@pytest.fixture(scope="module")
def jurassic_ref() -> UnigramReferee:
    return UnigramReferee(datafiles.verified_bytes("sentencepiece/jurassic-2.model"))


def playground(page: Page, live_server: str, name: str, text: str = TEXT, **params) -> Page:
    page.goto(f"{live_server}/?" + urlencode({"tokenizer": name, "text": text} | params))
    expect(page.locator("#tokens > span").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    return page


def click_token(page: Page, view: str, text: str) -> None:
    """Click the span of ``view`` whose text is ``text`` (dispatched on the span itself: a span that wraps over two
    lines has no point of its own at the centre of its box)."""
    span = page.locator(f"{view} > span").filter(has_text=text).first
    span.scroll_into_view_if_needed()
    span.dispatch_event("click")


@pytest.mark.parametrize("width", [1280, 390])
def test_clicking_a_bert_token_shows_its_words_walk(page: Page, live_server: str, bert_ref, width):
    page.set_viewport_size({"width": width, "height": 900})
    playground(page, live_server, "bert-base-uncased")
    click_token(page, "#tokens", "ffa")
    article = page.locator("#explain .explanation")
    expect(article).to_have_attribute("data-kind", "wordpiece")
    expect(article.locator(".x-token")).to_have_text("##ffa")
    word = next(w for w in bert_ref.words(TEXT) if w == "unaffable")
    expect(article.locator(".x-walk .walk-try.found")).to_have_text([f"{p}\u00a0✓" for p in bert_ref.word_pieces(word)])
    expect(article.locator(".x-walk-step.this .walk-try.found")).to_have_text("##ffa\u00a0✓")
    # the misses shown in this token's row are candidates the library's vocabulary does not hold
    misses = [m.replace("\u00a0✗", "") for m in article.locator(".x-walk-step.this .walk-try.miss").all_inner_texts()]
    assert misses and all(m not in bert_ref.vocab and m.startswith("##ffa") for m in misses)
    expect(page.locator("#tokens > .explained")).to_have_text("ffa")


@pytest.mark.parametrize("width", [1280, 390])
def test_clicking_a_jurassic_token_shows_its_lattice(page: Page, live_server: str, jurassic_ref, width):
    page.set_viewport_size({"width": width, "height": 900})
    playground(page, live_server, "jurassic-2")
    click_token(page, "#tokens", "the rest of the world")
    article = page.locator("#explain .explanation")
    expect(article).to_have_attribute("data-kind", "unigram")
    expect(article.locator(".lattice-node.this code")).to_have_text("▁the▁rest▁of▁the▁world")
    # a lattice wider than its box is scrolled to the explained piece
    box, node = article.locator(".lattice").bounding_box(), article.locator(".lattice-node.this").bounding_box()
    assert box["x"] - 1 <= node["x"] + node["width"] / 2 <= box["x"] + box["width"] + 1
    pieces = unbyte(jurassic_ref.pieces(TEXT))
    best = article.locator(".lattice-node.best code").all_inner_texts()
    k, j = pieces.index("▁the▁rest▁of▁the▁world"), best.index("▁the▁rest▁of▁the▁world")
    assert best == pieces[k - j : k - j + len(best)]  # the library's pieces around the token, in order
    span = "".join(best)
    assert "".join(article.locator(".lattice-char").all_inner_texts()) == span
    theirs = jurassic_ref.nbest(span, 5)
    rows = article.locator(".x-nbest > li")
    expect(rows).to_have_count(min(5, len(theirs)))
    assert rows.nth(0).locator("code").all_inner_texts() == best
    assert [r.split("score ")[1] for r in rows.all_inner_texts()] == [f"{s:.3f}" for _, s in theirs]


def test_the_normalizer_layer_underlines_what_bert_rewrote(page: Page, live_server: str, bert_ref):
    page.set_viewport_size({"width": 1280, "height": 900})
    playground(page, live_server, "bert-base-uncased", text="The naïve CAFÉ")
    expect(page.locator("#tokens.show-norm")).to_have_count(0)
    page.locator("#norm").check()
    expect(page.locator("#tokens.show-norm")).to_have_count(1)
    marked = page.locator("#tokens > span.nz").all_inner_texts()
    assert marked == ["The", "naïve", "CAFÉ"]
    assert bert_ref.library.normalizer.normalize_str("The naïve CAFÉ") == "the naive cafe"
    expect(page.locator("#norm-layer")).to_contain_text("accents stripped")
    assert "norm=1" in page.url
    page.locator("#norm").uncheck()
    expect(page.locator("#norm-layer")).to_have_count(0)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_compare_marks_open_both_explanations_for_bert_and_jurassic(page: Page, live_server: str, scheme):
    page.emulate_media(color_scheme=scheme)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server}/compare?" + urlencode(
        [("t", "bert-base-uncased"), ("t", "jurassic-2"), ("ref", "jurassic-2"), ("text", TEXT)]))
    view = '.pane[data-tokenizer="bert-base-uncased"] .tokens'
    expect(page.locator(f"{view} > span").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    click_token(page, view, "una")
    sides = page.locator("#compare-explain .explain-side")
    expect(sides).to_have_count(2)
    expect(sides.nth(0).locator(".explanation")).to_have_attribute("data-kind", "wordpiece")
    expect(sides.nth(1).locator(".explanation")).to_have_attribute("data-kind", "unigram")
    expect(sides.nth(0).locator(".x-walk")).to_be_visible()
    expect(sides.nth(1).locator(".lattice")).to_be_visible()


def test_chat_opens_the_explanation_of_a_prompt_token(page: Page, live_server: str, client):
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(f"{live_server}/chat?tokenizer=gemma-3")
    expect(page.locator(".pane .tokens > span").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "How many tokens is this conversation?"}]
    tokens = client.post("/api/chat", json={"tokenizer": "gemma-3", "messages": messages}).json()["tokens"]
    index = next(i for i, t in enumerate(tokens) if t["text"] == "▁helpful")
    page.locator(".pane .tokens > span").nth(index).dispatch_event("click")
    article = page.locator("#chat-explain .explanation")
    expect(article).to_be_visible()
    expect(article.locator(".x-token")).to_have_text("␣helpful")
    expect(article.locator(".x-meta")).to_contain_text(f"id {tokens[index]['id']}")
    page.locator("#chat-explain [data-explain-close]").click()
    expect(page.locator("#chat-explain .explanation")).to_have_count(0)


def test_the_oddities_rows_open_lattices_and_walks(page: Page, live_server: str):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server}/oddities")
    section = page.locator("#multiword")
    expect(section.locator(".explanation")).to_have_attribute("data-kind", "unigram")
    section.locator(".odd-row").first.locator("a.odd-open").click()
    expect(page.locator("#explain .explanation")).to_have_attribute("data-kind", "unigram")
    expect(page.locator("#explain .lattice")).to_be_visible()
    page.goto(f"{live_server}/oddities")
    page.locator("#normalizers .odd-row").first.locator("a.odd-open").click()
    expect(page.locator("#explain .explanation")).to_have_attribute("data-kind", "wordpiece")
    expect(page.locator("#explain .x-changes")).to_contain_text("accents stripped")
