"""HTTP tests of the compare view: POST /api/compare, the page and its fragments, the downloads."""

from __future__ import annotations

from helpers.lab_helpers import wait_done

import csv
import html as html_lib
import json
import io
import re
from urllib.parse import parse_qs, urlsplit

from helpers import realtext
from helpers.chat_reference import reference_tokenizer
from fastapi.testclient import TestClient

from app.engines import registry
from app.features import presets
from app.settings import Settings
from app.web.app import create_app

THREE = ["gpt2", "cl100k_base", "o200k_base"]
HX = {"HX-Request": "true"}


def test_api_compare_returns_results_stats_best_and_diffs(client):
    r = client.post("/api/compare", json={"text": "Hello world 12345", "tokenizers": THREE})
    assert r.status_code == 200
    body = r.json()
    assert body["text_chars"] == 17 and body["text_bytes"] == 17 and body["words"] == 3
    assert [res["tokenizer"] for res in body["results"]] == THREE
    gpt2 = body["results"][0]
    assert gpt2["ids"] == registry.get("gpt2").encode("Hello world 12345")
    assert gpt2["count"] == 4 and gpt2["stats"]["tokens"] == 4
    assert gpt2["stats"]["chars_per_token"] == 4.25
    assert gpt2["stats"]["fertility"] == 1.333
    assert len(gpt2["tokens"]) == 4 and gpt2["tokens"][0]["text"] == "Hello"
    assert body["reference"] == "gpt2"
    assert body["boundary_diff"] == {"gpt2": [], "cl100k_base": [12], "o200k_base": [12]}
    assert body["best"]["tokens"] == ["gpt2"]


def test_api_compare_hello_world_hand_computed(client):
    body = client.post("/api/compare", json={"text": "Hello world", "tokenizers": ["gpt2", "cl100k_base"]}).json()
    for res in body["results"]:
        assert res["stats"]["tokens"] == 2
        assert res["stats"]["chars_per_token"] == 5.5
        assert res["stats"]["bytes_per_token"] == 5.5
        assert res["stats"]["fertility"] == 1.0
        assert res["stats"]["partial_share"] == 0.0
    assert body["best"]["tokens"] == ["gpt2", "cl100k_base"]


def test_api_compare_matches_tokenize_endpoint(client):
    text = "naïve café ☕ 閒 👨‍👩‍👧"
    body = client.post("/api/compare", json={"text": text, "tokenizers": THREE}).json()
    for res in body["results"]:
        single = client.post("/api/tokenize", json={"text": text, "tokenizer": res["tokenizer"]}).json()
        assert res["ids"] == single["ids"]
        assert res["tokens"] == single["tokens"]


def test_api_compare_reference_changes_boundary_diff(client):
    body = client.post(
        "/api/compare", json={"text": "Hello world 12345", "tokenizers": THREE, "reference": "cl100k_base"}
    ).json()
    assert body["reference"] == "cl100k_base"
    assert body["boundary_diff"]["gpt2"] == [12]
    assert body["boundary_detail"]["gpt2"] == {"offsets": [12], "extra": [], "missing": [12]}


def test_api_compare_reference_not_compared_is_422(client):
    r = client.post(
        "/api/compare", json={"text": "x", "tokenizers": ["gpt2", "cl100k_base"], "reference": "o200k_base"}
    )
    assert r.status_code == 422
    assert "reference" in r.json()["detail"]


def test_api_compare_duplicates_are_removed(client):
    body = client.post("/api/compare", json={"text": "hi", "tokenizers": ["gpt2", "gpt2", "o200k_base"]}).json()
    assert [res["tokenizer"] for res in body["results"]] == ["gpt2", "o200k_base"]


def test_api_compare_fewer_than_two_is_422(client):
    for names in (["gpt2"], ["cl100k_base", "gpt-4"], []):  # gpt-4 is an alias of cl100k_base
        r = client.post("/api/compare", json={"text": "hi", "tokenizers": names})
        assert r.status_code == 422, names
        assert "at least 2" in r.json()["detail"]


def test_api_compare_unknown_tokenizer_is_404_with_valid_names(client):
    r = client.post("/api/compare", json={"text": "hi", "tokenizers": ["gpt2", "gpt-7"]})
    assert r.status_code == 404
    assert "gpt2" in r.json()["valid"]


def test_api_compare_text_over_limit_is_413():
    with TestClient(create_app(Settings(max_chars=10))) as c:
        r = c.post("/api/compare", json={"text": "x" * 11, "tokenizers": ["gpt2", "cl100k_base"]})
        assert r.status_code == 413
        assert "limit is 10" in r.json()["detail"]


def test_api_compare_special_tokens_only_when_allowed(client):
    text = "a<|endoftext|>b"
    plain = client.post("/api/compare", json={"text": text, "tokenizers": ["gpt2", "cl100k_base"]}).json()
    special = client.post(
        "/api/compare", json={"text": text, "tokenizers": ["gpt2", "cl100k_base"], "allow_special": True}
    ).json()
    assert all(res["stats"]["special"] == 0 for res in plain["results"])
    assert [res["stats"]["special"] for res in special["results"]] == [1, 1]
    assert 50256 in special["results"][0]["ids"] and 100257 in special["results"][1]["ids"]


def test_api_compare_in_openapi(client):
    assert "/api/compare" in client.get("/openapi.json").json()["paths"]


def test_compare_page_lists_every_shipped_tokenizer(client):
    r = client.get("/compare")
    assert r.status_code == 200
    html = r.text
    for spec in registry.specs():
        # Lab tokenizers are listed only for the browser that trained them (tests/web/test_pickers.py).
        shown = f'name="t" value="{spec.name}"' in html
        assert shown != spec.name.startswith("lab-"), spec.name
    assert 'id="compare-stats"' in html and 'id="compare-text"' in html
    # the default selection and the English preset
    for name in ("gpt2", "cl100k_base", "o200k_base", "llama-3", "qwen3", "gemma-3", "mistral-7b"):
        assert f'value="{name}" checked' in html
    assert "The quick brown fox" in html


def test_japanese_and_code_presets_show_todays_models_side_by_side(client):
    """The default set's new models, each with the count its reference library gives for the preset's text."""
    for key in ("japanese", "python"):
        html = client.get("/compare", params={"preset": key}).text
        text = presets.get_preset(key).text
        for name in ("llama-3", "qwen3", "gemma-3"):
            want = len(reference_tokenizer(name).encode(text, add_special_tokens=False).ids)
            row = re.search(rf'<tr data-tokenizer="{name}">(.*?)</tr>', html, re.S)
            assert row and f'data-col="tokens" data-value="{want}"' in row[1], (key, name, want)


def test_compare_page_from_url_selection_and_text(client):
    r = client.get("/compare", params={"t": ["gpt2", "o200k_base"], "text": "Hi <b>there</b>"})
    html = r.text
    assert html.count('<tr data-tokenizer="') == 2
    assert '<tr data-tokenizer="gpt2">' in html and '<tr data-tokenizer="o200k_base">' in html
    assert "Hi &lt;b&gt;there&lt;/b&gt;" in html and "<b>there</b>" not in html
    assert 'value="cl100k_base" checked' not in html


def test_compare_page_preset_fills_text(client):
    html = client.get("/compare", params={"preset": "japanese", "t": ["gpt2", "cl100k_base"]}).text
    assert "吾輩は猫である" in html
    assert 'data-preset="japanese"' in html


def test_compare_page_htmx_preset_answers_main_block_only(client):
    r = client.get("/compare", params={"preset": "korean", "t": THREE}, headers=HX)
    assert r.status_code == 200
    assert "<html" not in r.text and 'id="compare-form"' in r.text and "안녕하세요" in r.text


def test_compare_results_fragment_and_url(client):
    r = client.post("/compare/results", data={"text": "Hello world", "t": THREE, "ref": "cl100k_base"}, headers=HX)
    assert r.status_code == 200
    assert "<form" not in r.text and "<textarea" not in r.text  # never swaps the text area
    assert r.text.count('<section class="pane') == 3
    assert '<td data-col="tokens" data-value="2"' in r.text
    url = urlsplit(r.headers["HX-Replace-Url"])
    assert url.path == "/compare"
    assert parse_qs(url.query) == {"t": THREE, "ref": ["cl100k_base"], "text": ["Hello world"]}


def test_compare_results_long_text_left_out_of_url():
    with TestClient(create_app(Settings(url_text_limit=5))) as c:
        r = c.post("/compare/results", data={"text": "Hello world", "t": THREE}, headers=HX)
        assert "text=" not in r.headers["HX-Replace-Url"]
        assert "t=gpt2" in r.headers["HX-Replace-Url"]


def test_compare_results_one_tokenizer_shows_its_pane_and_asks_for_a_second(client):
    r = client.post("/compare/results", data={"text": "Hello world", "t": ["gpt2"]}, headers=HX)
    assert r.status_code == 200
    assert r.text.count('<section class="pane') == 1 and 'data-tokenizer="gpt2"' in r.text
    assert 'id="compare-stats"' in r.text and "Tick a second tokenizer" in r.text
    none = client.post("/compare/results", data={"text": "Hello", "t": []}, headers=HX)
    assert "at least 1" in none.text and 'id="compare-stats"' not in none.text
    # the API keeps its contract: two or more
    assert client.post("/api/compare", json={"text": "x", "tokenizers": ["gpt2"]}).status_code == 422


def test_compare_results_marks_boundary_differences(client):
    r = client.post("/compare/results", data={"text": "Hello world 12345", "t": THREE, "ref": "gpt2"}, headers=HX)
    html = r.text
    cl100k = html[html.index('<section class="pane" data-tokenizer="cl100k_base"') :].split("</section>")[0]
    assert "diff-extra" in cl100k  # cl100k cuts " |123" where gpt2 has " 123"
    gpt2 = html[html.index('<section class="pane reference" data-tokenizer="gpt2"') :].split("</section>")[0]
    assert "diff-extra" not in gpt2 and 'class="cut"' not in gpt2


def test_compare_results_best_marked_only_when_not_all_tie(client):
    html = client.post("/compare/results", data={"text": "Hello world", "t": ["gpt2", "cl100k_base"]}, headers=HX).text
    assert 'class="best"' not in html  # both have 2 tokens: nothing to single out
    html = client.post("/compare/results", data={"text": "Hello world 閒", "t": THREE}, headers=HX).text
    row = html[html.index('<tr data-tokenizer="o200k_base">') :].split("</tr>")[0]
    assert '<td data-col="tokens" data-value="4" class="best">' in row


def test_export_csv_has_stats_and_ids(client):
    r = client.get("/compare/export.csv", params={"t": THREE, "text": "Hello world"})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [row["tokenizer"] for row in rows] == THREE
    assert rows[0]["tokens"] == "2" and rows[0]["chars_per_token"] == "5.5" and rows[0]["fertility"] == "1.0"
    assert rows[0]["ids"] == "15496 995"


def test_export_json_post_matches_api(client):
    data = {"text": "Hello world 閒", "t": THREE, "special": "true"}
    r = client.post("/compare/export.json", data=data)
    assert r.status_code == 200
    body = r.json()
    api = client.post(
        "/api/compare", json={"text": "Hello world 閒", "tokenizers": THREE, "allow_special": True}
    ).json()
    assert [res["ids"] for res in body["results"]] == [res["ids"] for res in api["results"]]
    assert [res["stats"] for res in body["results"]] == [res["stats"] for res in api["results"]]
    assert body["best"] == api["best"] and body["allow_special"] is True


def test_export_unknown_format_is_404_like_the_labs(client):
    r = client.get("/compare/export.xml", params={"t": THREE, "text": "x"})
    assert r.status_code == 404 and "json, csv" in r.json()["detail"]
    run = wait_done(client, client.post("/api/train", json={"corpus": "aaabdaaabac", "merges": 2}).json()["id"])
    assert client.get(f"/lab/runs/{run['id']}/export.xml").status_code == 404


def test_compare_text_over_limit_shows_message_in_page():
    with TestClient(create_app(Settings(max_chars=5))) as c:
        r = c.get("/compare", params={"t": THREE, "text": "toolongtext"})
        assert r.status_code == 413
        assert 'id="compare-text"' in r.text and "toolongtext" in r.text  # the form and the text stay
        assert "limit is 5" in r.text
        r = c.post("/compare/results", data={"text": "toolongtext", "t": THREE}, headers=HX)
        assert r.status_code == 413 and "limit is 5" in r.text and "<textarea" not in r.text
        # as the page posts it: multipart
        fields = [("text", (None, "toolongtext"))] + [("t", (None, name)) for name in THREE]
        r = c.post("/compare/results", files=fields, headers=HX)
        assert r.status_code == 413 and "limit is 5" in r.text and "<textarea" not in r.text


def test_compare_preset_links_keep_the_choice(client):
    html = client.get("/compare", params={"t": ["gpt2", "o200k_base"], "ref": "o200k_base", "text": "x"}).text
    assert 'href="/compare?preset=japanese&amp;t=gpt2&amp;t=o200k_base&amp;ref=o200k_base"' in html


def test_compare_picker_shows_this_browsers_lab_tokenizers(client):
    from app.engines.openai.encodings import TiktokenTokenizer
    from app.engines.registry import TokenizerSpec, register, unregister
    from app.web.cookies import LAB_COOKIE as COOKIE

    name = "lab-0123abcd"
    register(TokenizerSpec(name, "my lab BPE", "lab", lambda: TiktokenTokenizer("gpt2")), replace=True)
    try:
        assert f'value="{name}"' not in client.get("/compare").text  # someone else's run: not offered
        client.cookies.set(COOKIE, "0123abcd")
        html = client.get("/compare").text
        assert f'name="t" value="{name}"' in html and "my lab BPE" in html
        html = client.get("/compare", params={"t": ["gpt2", name], "text": "hi"}).text
        assert f'value="{name}" checked' in html and f'<tr data-tokenizer="{name}">' in html
        client.cookies.clear()
        html = client.get("/compare", params={"t": ["gpt2", name], "text": "hi"}).text  # someone else's link
        assert f'value="{name}"' not in html and f'<tr data-tokenizer="{name}">' not in html
    finally:
        unregister(name)


def test_a_paste_of_more_than_a_megabyte_is_compared_and_one_over_the_limit_is_413(client):
    """600,000 Japanese characters are 1.8 MB of UTF-8, under the 1,000,000-character limit: the forms accept
    what the limit promises (Starlette alone stops a field at 1 MB with a JSON 400), and beyond it the app
    answers its own 413 fragment."""
    text = "日本語のテキスト。" * 66_667
    assert len(text.encode()) > 1_800_000 and len(text) < 1_000_000
    r = client.post("/compare/results", data={"text": text, "t": ["gpt2", "cl100k_base"]}, headers=HX)
    assert r.status_code == 200 and 'id="compare-stats"' in r.text
    over = client.post("/compare/results", data={"text": "a" * 1_000_001, "t": ["gpt2", "cl100k_base"]}, headers=HX)
    assert over.status_code == 413 and "the limit is 1,000,000" in over.text and "{" not in over.text[:20]
    export = client.post("/compare/export.csv", data={"text": text, "t": ["gpt2", "cl100k_base"]})
    assert export.status_code == 200 and export.text.startswith("tokenizer,")


# -- one window of tokens per pane (issue 21, part 6) ----------------------------------------------------------

TEN = ["gpt2", "cl100k_base", "o200k_base", "llama-3", "qwen3", "deepseek-v3", "gemma-3", "mistral-7b", "jurassic-2",
       "bert-base-uncased"]
_PANE = re.compile(r'<section class="pane( reference)?" data-tokenizer="([^"]+)" data-token-scope>(.*?)</section>', re.S)


def panes(html: str) -> dict[str, dict]:
    """Each pane of a results or pane answer: its count, its window (first token and character, the ids, the text
    its spans join to), its boundary marks and its pager."""
    out = {}
    for ref, name, body in _PANE.findall(html):
        tokens = re.search(r'<div class="tokens" data-first-token="(\d+)" data-first-char="(\d+)"[^>]*>(.*?)</div>',
                           body, re.S)
        ids = re.search(r"<span class=\"id-list\" data-id-list>([^<]*)</span>", body)[1]
        start = re.search(rf'<input type="hidden" name="start:{re.escape(name)}" value="(\d+)"', body)
        out[name] = {
            "reference": bool(ref),
            "count": int(re.search(r'class="pane-count" data-count="(\d+)"', body)[1]),
            "first_token": int(tokens[1]),
            "first_char": int(tokens[2]),
            "text": html_lib.unescape(re.sub(r"<[^>]+>", "", tokens[3])),
            "ids": [int(i) for i in ids.split()],
            "extra": tokens[3].count("diff-extra"),
            "cuts": tokens[3].count('class="cut"'),
            "start_field": int(start[1]) if start else None,
            "next": re.search(r"hx-vals='([^']*)'[^>]*>Next", body),
            "html": body,
        }
    return out


def _check_window(pane: dict, api: dict, text: str, limit: int) -> None:
    """The pane's window is a run of the API's tokens, its spans are the text they cover, and its marks are the
    API's boundary differences inside it."""
    first, n = pane["first_token"], len(pane["ids"])
    assert pane["count"] == api["count"]
    assert pane["ids"] == api["ids"][first : first + n]
    assert 0 < n <= limit + 3  # a character's byte tokens across the window's end stay whole
    end = pane["first_char"] + len(pane["text"])
    assert pane["text"] == text[pane["first_char"] : end]
    assert pane["first_char"] == api["tokens"][first]["start"] or first == 0
    detail = api["boundary_detail"][api["tokenizer"]]
    assert pane["extra"] == sum(pane["first_char"] <= e < end for e in detail["extra"])
    assert pane["cuts"] == sum(pane["first_char"] < m < end for m in detail["missing"])


def _api_by_name(client, text: str, names: list[str], reference: str) -> dict:
    body = client.post("/api/compare", json={"text": text, "tokenizers": names, "reference": reference}).json()
    return {r["tokenizer"]: r | {"boundary_detail": body["boundary_detail"]} for r in body["results"]}


def test_ten_tokenizers_on_7500_characters_send_a_window_per_pane_in_at_most_300_kb(client):
    realtext.require()
    text = realtext.en_ja(7_500)
    fields = [("text", text)] + [("t", n) for n in TEN]
    r = client.post("/compare/results", files=[(k, (None, v)) for k, v in fields], headers=HX)
    assert r.status_code == 200
    assert len(r.content) <= 300_000
    api = _api_by_name(client, text, TEN, "gpt2")
    limit = client.app.state.settings.compare_pane_tokens
    shown = panes(r.text)
    assert list(shown) == TEN
    for name, pane in shown.items():
        assert pane["first_token"] == 0 and pane["start_field"] is None
        _check_window(pane, api[name], text, limit)
        assert pane["count"] > len(pane["ids"])  # a window, not every token...
        assert json.loads(pane["next"][1]) == {"pane": name, "start": limit}  # ...and the next one on demand
        row = re.search(rf'<tr data-tokenizer="{name}">.*?</tr>', r.text, re.S)[0]  # stats: the whole text
        assert f'<td data-col="tokens" data-value="{api[name]["count"]}"' in row
        assert f'data-col="chars_per_token" data-value="{api[name]["stats"]["chars_per_token"]}"' in row
        assert f'data-col="boundary_diffs" data-value="{len(api[name]["boundary_detail"][name]["offsets"])}"' in row


def test_a_pane_pages_through_its_tokens_marked_against_the_reference(client):
    text = ("Tokenizers cut text differently: 12345 🙂👍🏽 東京の天気は晴れです。 Über naïve café.\n" * 60)
    names = ["gpt2", "cl100k_base", "mistral-7b", "bert-base-uncased", "jurassic-2"]
    api = _api_by_name(client, text, names, "cl100k_base")
    with TestClient(create_app(Settings(compare_pane_tokens=150))) as small:
        form = [("text", text), ("ref", "cl100k_base")] + [("t", n) for n in names]
        for name in names:
            for start in (150, 300, 10**6):
                r = small.post("/compare/pane", files=[(k, (None, str(v))) for k, v in
                                                       form + [("pane", name), ("start", start)]], headers=HX)
                assert r.status_code == 200, r.text[:300]
                (pane,) = panes(r.text).values()
                assert pane["reference"] == (name == "cl100k_base")
                if start < api[name]["count"]:
                    assert start <= pane["first_token"] <= start + 3 and pane["start_field"] == start
                else:  # past the end (the text shrank): the last window
                    assert pane["first_token"] + len(pane["ids"]) == api[name]["count"]
                _check_window(pane, api[name], text, 150)
                diff = 0 if name == "cl100k_base" else len(api[name]["boundary_detail"][name]["offsets"])
                assert ("reference" if not diff else f"{diff} {'cut differs' if diff == 1 else 'cuts differ'}") in r.text
        # typing keeps each pane's window: the start:NAME field the pane put in the form
        moved = form + [("start:mistral-7b", "300")]
        r = small.post("/compare/results", files=[(k, (None, v)) for k, v in moved], headers=HX)
        shown = panes(r.text)
        assert shown["mistral-7b"]["first_token"] == 300 and shown["gpt2"]["first_token"] == 0
        paged = small.post("/compare/pane", files=[(k, (None, str(v))) for k, v in
                                                   form + [("pane", "mistral-7b"), ("start", 300)]], headers=HX)
        assert panes(paged.text)["mistral-7b"]["html"] == shown["mistral-7b"]["html"]  # one pane, two routes


def test_compare_pane_errors_are_words_with_a_status(client):
    form = [("text", "hello"), ("t", "gpt2"), ("t", "cl100k_base")]
    r = client.post("/compare/pane", files=[(k, (None, v)) for k, v in form + [("pane", "nope")]], headers=HX)
    assert r.status_code == 404 and "nope" in r.text and "gpt2" in r.text
    r = client.post("/compare/pane", files=[(k, (None, v)) for k, v in form + [("pane", "gpt2"), ("start", "x")]],
                    headers=HX)
    assert r.status_code == 200 and panes(r.text)["gpt2"]["first_token"] == 0


def test_the_reference_is_a_ticked_tokenizer_and_the_answer_names_it(client):
    """A reference that is not ticked (the user just unticked it) gives way to the first ticked tokenizer; the
    table says which (static/compare.js moves the page's ◉ to it), and the panes and explanations use it."""
    form = {"text": "Hello world 12345", "t": ["cl100k_base", "gpt2"], "ref": "o200k_base"}
    r = client.post("/compare/results", data=form, headers=HX)
    assert 'id="compare-stats" class="compare-table" data-reference="cl100k_base"' in r.text
    assert panes(r.text)["cl100k_base"]["reference"] and not panes(r.text)["gpt2"]["reference"]
    assert parse_qs(urlsplit(r.headers["HX-Replace-Url"]).query)["ref"] == ["cl100k_base"]
    pane = client.post("/compare/pane", data=form | {"pane": "gpt2", "start": "0"}, headers=HX)
    assert panes(pane.text)["gpt2"]["extra"] == 0 and "1 cut differs" in pane.text  # cl100k: " |123|45", gpt2 " 12345"
    explained = client.post("/compare/explain", data=form | {"pane": "gpt2", "at": "12"}, headers=HX)
    assert re.search(r'class="explain-side reference" data-tokenizer="cl100k_base"', explained.text)


def test_htmx_restoring_history_gets_the_whole_page(client):
    """The compare page keeps no history snapshot (hx-history="false": ten panes of tokens stored on every
    keystroke); Back then asks the server for the page, with HX-Request set, and must get the whole page."""
    page = client.get("/compare", params={"t": THREE, "text": "hi"})
    assert 'hx-history="false"' in page.text
    restore = client.get("/compare", params={"t": THREE, "text": "hi"},
                         headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert "<html" in restore.text and 'id="compare-form"' in restore.text
    assert "<html" not in client.get("/compare", params={"t": THREE, "preset": "japanese"}, headers=HX).text


def test_typing_does_not_replace_the_address_with_the_same_one(client):
    # While someone types a long text, the address (tokenizers, reference; no text past url_text_limit) stays the
    # same: the answer then carries no HX-Replace-Url, so htmx leaves the browser's history alone. A changed
    # address still comes, and so does the playground's and chat's.
    text = "x" * 2_500
    fields = {"text": text, "t": THREE}
    first = client.post("/compare/results", data=fields, headers=HX)
    url = first.headers["HX-Replace-Url"]
    assert url.startswith("/compare?t=gpt2") and "text=" not in url
    again = client.post("/compare/results", data=fields, headers=HX | {"HX-Current-URL": "http://testserver" + url})
    assert again.status_code == 200 and "HX-Replace-Url" not in again.headers
    assert "compare-stats" in again.text
    fields = {"text": text + "y", "t": THREE[:2]}
    other = client.post("/compare/results", data=fields, headers=HX | {"HX-Current-URL": "http://testserver" + url})
    assert other.headers["HX-Replace-Url"] == "/compare?t=gpt2&t=cl100k_base&ref=gpt2"
    form = {"text": "hello", "tokenizer": "gpt2"}
    played = client.post("/render", data=form, headers=HX)
    here = "http://testserver" + played.headers["HX-Replace-Url"]
    assert "HX-Replace-Url" not in client.post("/render", data=form, headers=HX | {"HX-Current-URL": here}).headers
    moved = client.post("/render", data=form | {"text": "hello!"}, headers=HX | {"HX-Current-URL": here})
    assert moved.headers["HX-Replace-Url"] != played.headers["HX-Replace-Url"]
