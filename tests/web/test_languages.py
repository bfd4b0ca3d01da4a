"""The token tax of every language: POST /api/languages and its text endpoint against the reference libraries, the
count cache (by what a tokenizer is, never by its name), uploaded and lab tokenizers by cookie, the page's filters,
sorting and exports, and ``tokenplay languages``."""

from __future__ import annotations

import base64
import csv
import io
import re
import threading

import pytest
import sentencepiece as spm
import tiktoken
from fastapi.testclient import TestClient
from helpers.lab_helpers import wait_done
from helpers.oracles import tiktoken_encoding
from tokenizers import Tokenizer as HFTokenizer

from app import cli
from app.engines.base import Tokenizer
from app.engines.bpe.patterns import GPT2_PATTERN
from app.engines.datafiles import data_path
from app.engines.huggingface.npm_models import NPM_MODELS
from app.features import languages
from app.features.udhr import corpus

LANGS = ["eng", "jpn", "arb", "hin", "cmn_hans", "rus", "mya", "kor", "tgl_tglg"]


def _hf(name: str):
    library = HFTokenizer.from_file(str(data_path(NPM_MODELS[name].tokenizer_file)))
    library.encode_special_tokens = True
    return lambda text: library.encode(text, add_special_tokens=False).ids


REFERENCES = {
    "gpt2": lambda: tiktoken_encoding("gpt2").encode_ordinary,
    "o200k_base": lambda: tiktoken_encoding("o200k_base").encode_ordinary,
    "llama-3": lambda: _hf("llama-3"),
    "qwen3": lambda: _hf("qwen3"),
    "mistral-7b": lambda: spm.SentencePieceProcessor(model_file=str(data_path("sentencepiece/mistral-7b-v0.1.model"))).encode,
}


def _api(client: TestClient, names: list[str], codes: list[str] | None = None) -> dict:
    body = {"tokenizers": names} | ({"languages": codes} if codes is not None else {})
    r = client.post("/api/languages", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def _by_code(answer: dict) -> dict[str, dict]:
    return {row["code"]: row for row in answer["languages"] + answer["incomplete"]}


@pytest.mark.parametrize("name", list(REFERENCES))
def test_counts_equal_the_reference_library_on_the_served_text(client, name):
    reference = REFERENCES[name]()
    answer = _api(client, [name], LANGS)
    rows = _by_code(answer)
    assert list(rows) == [c for c in LANGS if c != "tgl_tglg"] + ["tgl_tglg"]  # asked order; incomplete apart
    for code in LANGS:
        r = client.get(f"/api/languages/{code}/text")
        assert r.status_code == 200 and r.headers["content-type"] == "text/plain; charset=utf-8"
        text = r.text
        result = rows[code]["results"][name]
        assert result["tokens"] == len(reference(text)), (name, code)
        assert result["chars"] == len(text) and result["bytes"] == len(text.encode("utf-8"))
    assert rows["eng"]["results"][name]["premium"] == 1.0
    assert answer["english"][name] == rows["eng"]["results"][name]["tokens"]
    jpn = rows["jpn"]["results"][name]
    assert jpn["premium"] == jpn["tokens"] / answer["english"][name]
    assert rows["tgl_tglg"]["results"][name]["premium"] is None and rows["tgl_tglg"]["stage"] == 1


def test_the_text_endpoint_answers_exactly_the_counted_text(client):
    for code in ("eng", "arb", "jpn_tokyo", "krl"):
        r = client.get(f"/api/languages/{code}/text")
        assert r.text == corpus().get(code).text
        assert r.headers["content-language"] == corpus().get(code).bcp47
    assert client.get("/api/languages/por_br/text").text == corpus().get("por_BR").text
    missing = client.get("/api/languages/zzz/text")
    assert missing.status_code == 404 and "no UDHR translation has the code 'zzz'" in missing.json()["detail"]


def test_every_language_and_the_answer_shape(client):
    answer = _api(client, ["gpt-4o", "gpt2", "o200k_base"])  # an alias counts once, under its registry name
    assert answer["tokenizers"] == ["o200k_base", "gpt2"]
    assert len(answer["languages"]) == 527 and len(answer["incomplete"]) == 5
    assert answer["data"] == {"package": "udhr", "version": "6.0.0", "sha256": corpus().digest}
    jpn = _by_code(answer)["jpn"]
    assert {k: jpn[k] for k in ("code", "name", "bcp47", "direction")} == {
        "code": "jpn", "name": "Japanese", "bcp47": "ja", "direction": "ltr"
    }
    assert set(jpn["results"]["gpt2"]) == {"tokens", "count_with_specials", "chars", "bytes", "premium"}
    assert jpn["results"]["gpt2"]["count_with_specials"] == jpn["results"]["gpt2"]["tokens"]  # tiktoken adds none
    assert answer["added_specials"] == {"o200k_base": [], "gpt2": []}
    assert _by_code(answer)["arb"]["direction"] == "rtl"
    for row in answer["languages"]:
        for name in ("gpt2", "o200k_base"):
            assert row["results"][name]["premium"] == row["results"][name]["tokens"] / answer["english"][name]
    listed = client.get("/api/languages").json()
    assert len(listed["languages"]) == 532 and listed["data"]["sha256"] == corpus().digest
    assert {d["code"] for d in listed["languages"] if not d["complete"]} == set(_by_code(answer)) - {
        r["code"] for r in answer["languages"]
    }


def test_bad_requests_say_what_is_wrong(client):
    r = client.post("/api/languages", json={"tokenizers": []})
    assert r.status_code == 422 and "tokenizers" in r.json()["detail"]
    r = client.post("/api/languages", json={"tokenizers": ["no-such-tokenizer"]})
    assert r.status_code == 404 and "gpt2" in r.json()["valid"]
    r = client.post("/api/languages", json={"tokenizers": ["gpt2"], "languages": ["eng", "xx-nope"]})
    assert r.status_code == 404 and "unknown language code 'xx-nope'" in r.json()["detail"]
    r = client.post("/api/languages", json={"tokenizers": ["gpt2"] * 40})
    assert r.status_code == 422
    r = client.post("/api/languages", json={"languages": ["eng"]})
    assert r.status_code == 422 and "tokenizers" in r.json()["detail"]


@pytest.mark.parametrize("name", ["gpt2", "o200k_harmony", "llama-3", "qwen3", "mistral-7b", "native-cl100k_base"])
def test_encode_batch_is_encode_of_each_text(name):
    from app.engines import registry
    from app.engines.errors import InvalidTextError

    tok = registry.get(name)
    texts = [corpus().get(c).text[:2000] for c in ("eng", "jpn", "arb")] + ["<|endoftext|> <think>x</think>", ""]
    texts += [f"text {i} 日本" for i in range(40)]  # more than one of the tokenizers library's chunks
    for special in (False, True):
        assert tok.encode_batch(texts, allow_special=special) == [tok.encode(t, allow_special=special) for t in texts]
    with pytest.raises(InvalidTextError, match="lone surrogate"):
        tok.encode_batch(["fine", "bad \ud800"])


# -- the cache ------------------------------------------------------------------------------------------------------


class Words(Tokenizer):
    """Tokens are whitespace-separated words, times ``scale``; counts its batches, and may wait in one."""

    def __init__(self, scale: int = 1, hold: threading.Event | None = None, entered: threading.Event | None = None):
        self.scale, self.hold, self.entered, self.batches = scale, hold, entered, 0

    def encode(self, text, *, allow_special=False):
        return [0] * (len(text.split()) * self.scale)

    def encode_batch(self, texts, *, allow_special=False):
        self.batches += 1
        if self.entered:
            self.entered.set()
        if self.hold:
            assert self.hold.wait(30)
        return super().encode_batch(texts)

    def token_bytes(self, token_id):
        return b"x"

    @property
    def n_vocab(self):
        return 1


def test_counts_are_kept_by_identity_and_data_digest():
    one, two = Words(1), Words(3)
    first = languages.token_counts(one, "test:words-1")
    assert first["eng"] == len(corpus().english.text.split()) and len(first) == 532
    assert languages.token_counts(one, "test:words-1") is first and one.batches == 1
    # another tokenizer under another identity is counted, never served the first one's counts
    assert languages.token_counts(two, "test:words-3")["eng"] == 3 * first["eng"] and two.batches == 1
    # the same identity on other data is another key
    other = type(corpus())(corpus().declarations[:3], "another-digest")
    assert len(languages.token_counts(one, "test:words-1", other)) == 3 and one.batches == 2


def test_one_tokenizer_asked_twice_at_once_is_counted_once():
    hold, entered = threading.Event(), threading.Event()
    tok = Words(hold=hold, entered=entered)
    out = {}

    def ask(key):
        out[key] = languages.token_counts(tok, "test:held")

    first = threading.Thread(target=ask, args=("a",))
    first.start()
    assert entered.wait(30)  # the first request is counting, held inside the tokenizer
    second = threading.Thread(target=ask, args=("b",))
    second.start()
    hold.set()
    first.join(30)
    second.join(30)
    assert tok.batches == 1 and out["a"] is out["b"]


def test_the_cache_drops_the_least_recently_used():
    cache = languages.CountCache(size=2)
    cache.get_or_count(("a", "d"), lambda: {"eng": 1})
    cache.get_or_count(("b", "d"), lambda: {"eng": 2})
    cache.get(("a", "d"))
    cache.get_or_count(("c", "d"), lambda: {"eng": 3})
    assert cache.get(("b", "d")) is None and cache.get(("a", "d")) == {"eng": 1}


# -- uploaded and lab tokenizers ------------------------------------------------------------------------------------


def _upload(client: TestClient, rel: str, **fields):
    r = client.post("/api/tokenizers", files={"file": (rel.rsplit("/", 1)[1], data_path(rel).read_bytes())}, data=fields)
    assert r.status_code == 201, r.text


def test_uploaded_tokenizers_belong_to_their_browser_and_are_never_confused_by_name(app):
    with TestClient(app) as alice, TestClient(app) as bob, TestClient(app) as stranger:
        _upload(alice, "openai/gpt2.tiktoken", name="mine", pattern="gpt2")
        _upload(bob, "openai/cl100k_base.tiktoken", name="mine", pattern="cl100k_base")
        texts = {code: corpus().get(code).text for code in ("eng", "jpn", "arb")}
        a = _by_code(_api(alice, ["mine"], list(texts)))
        b = _by_code(_api(bob, ["mine"], list(texts)))
        for code, text in texts.items():
            assert a[code]["results"]["mine"]["tokens"] == len(tiktoken_encoding("gpt2").encode_ordinary(text))
            assert b[code]["results"]["mine"]["tokens"] == len(tiktoken_encoding("cl100k_base").encode_ordinary(text))
        refused = stranger.post("/api/languages", json={"tokenizers": ["mine"]})
        assert refused.status_code == 404
        page = alice.get("/languages", params={"t": ["mine", "gpt2"], "q": "japanese"})
        assert page.status_code == 200 and 'value="mine" checked' in page.text


def test_a_lab_tokenizer_counts_for_the_browser_that_uses_it(app):
    with TestClient(app) as mine, TestClient(app) as other:
        corpus_text = "low lower newest widest " * 20
        run = mine.post("/api/train", json={"corpus": corpus_text, "algorithm": "byte", "pattern": "gpt2", "merges": 12})
        run_id = run.json()["id"]
        wait_done(mine, run_id)
        assert mine.post(f"/api/train/{run_id}/use").status_code == 200
        name = f"lab-{run_id}"
        ranks = {}
        for line in mine.get(f"/api/train/{run_id}/export", params={"format": "tiktoken"}).text.splitlines():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        reference = tiktoken.Encoding(name="lab", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
        rows = _by_code(_api(mine, [name], ["eng", "jpn"]))
        for code in ("eng", "jpn"):
            text = corpus().get(code).text
            assert rows[code]["results"][name]["tokens"] == len(reference.encode_ordinary(text))
        assert other.post("/api/languages", json={"tokenizers": [name]}).status_code == 404


def test_identity_names_what_a_tokenizer_is():
    from app.services.languages import identity

    class Stub:  # the parts of Tokenizers that identity reads
        def __init__(self, uploaded):
            self.uploaded = uploaded

        def upload_of(self, name):
            return self.uploaded.get(name)

        def resolve(self, name):
            return {"gpt-4o": "o200k_base"}.get(name, name)

    class Upload:
        def __init__(self, id, data):
            self.id, self.data, self.format, self.pattern, self.special_tokens = id, data, "tiktoken", "gpt2", []

    same_a, same_b, other = Upload("a1", b"ranks"), Upload("b2", b"ranks"), Upload("c3", b"other ranks")
    assert identity(Stub({}), "gpt-4o") == "registry:o200k_base"
    assert identity(Stub({}), "lab-abc123") == "lab:abc123"
    ids = [identity(Stub({"mine": u}), "mine") for u in (same_a, same_b, other)]
    assert ids[0] == ids[1] != ids[2] and ids[0].startswith("upload:")


# -- the page: filters, sorting, exports ---------------------------------------------------------------------------


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr id="lang-([\w]+)">', html)


def test_page_lists_every_complete_language_sorted_by_the_first_premium(client):
    r = client.get("/languages", params={"t": ["gpt2", "o200k_base"]})
    assert r.status_code == 200
    codes = _rows(r.text)
    assert len(codes) == 527 and "tgl_tglg" not in codes
    answer = _by_code(_api(client, ["gpt2", "o200k_base"]))
    premiums = [answer[c]["results"]["gpt2"]["premium"] for c in codes]
    assert premiums == sorted(premiums, reverse=True)
    # the incomplete ones are listed apart, with their stage
    incomplete = r.text[r.text.index('id="incomplete-table"') :]
    assert re.findall(r'<tr data-code="(\w+)">', incomplete) == ["chv", "khk_mong", "tgl_tglg", "taj", "tzm_tfng"]
    # every premium shown is the API's, rounded once
    row = r.text[r.text.index('<tr id="lang-jpn">') :].split("</tr>", 1)[0]
    shown = re.findall(r'class="premium[^"]*" data-value="([^"]+)">([^<]+)<', row)
    assert [(float(v), s) for v, s in shown] == [
        (answer["jpn"]["results"][n]["premium"], f"{answer['jpn']['results'][n]['premium']:.2f}×") for n in ("gpt2", "o200k_base")
    ]
    assert 'href="/compare?lang=jpn&amp;t=gpt2&amp;t=o200k_base"' in row


def test_filters_and_sorting(client):
    html = client.get("/languages", params={"t": "gpt2", "q": "JAPAN", "sort": "tokens:gpt2", "order": "asc"}).text
    codes = _rows(html)
    assert set(codes) == {"jpn", "jpn_osaka", "jpn_tokyo"}
    answer = _by_code(_api(client, ["gpt2"], codes))
    tokens = [answer[c]["results"]["gpt2"]["tokens"] for c in codes]
    assert tokens == sorted(tokens)
    assert 'aria-sort="ascending" data-sort="tokens:gpt2"' in html
    html = client.get("/languages", params={"t": "gpt2", "script": "Cyrillic", "sort": "name"}).text
    codes = _rows(html)
    names = [corpus().get(c).name for c in codes]
    assert len(codes) == sum(d.script == "Cyrillic" for d in corpus().complete) == 34
    assert names == sorted(names, key=str.casefold)
    assert all(corpus().get(c).script == "Cyrillic" for c in codes)
    nothing = client.get("/languages", params={"t": "gpt2", "q": "zzzz-nothing"}).text
    assert nothing.count('<tr id="lang-') == 0 and "No complete translation matches “zzzz-nothing”." in nothing
    # a form with every tokenizer unticked sends only its empty t: a message, not the first visit's defaults
    none = client.get("/languages", params={"t": ""}, headers={"HX-Request": "true"})
    assert none.status_code == 200 and "Pick at least one tokenizer" in none.text and "lang-eng" not in none.text
    assert _rows(client.get("/languages").text)[:1] == ["mya"]  # a first visit: the defaults, gpt2 first
    # a filter matches the code and the BCP 47 tag too; an htmx request gets the results block alone
    block = client.get("/languages", params={"t": "gpt2", "q": "zh-Hant"}, headers={"HX-Request": "true"})
    assert _rows(block.text) == ["cmn_hant"] and "<html" not in block.text
    assert block.headers["HX-Push-Url"] == "/languages?t=gpt2&q=zh-Hant&sort=premium%3Agpt2&order=desc"


def test_view_sorts_and_filters_rows():
    table = languages.language_table({"w": languages.token_counts(Words(), "test:words-1")})
    assert [r.declaration.code for r in languages.view(table.rows, q="arabic", sort="name")][:1] == ["arb"]
    by_chars = languages.view(table.rows, sort="chars", descending=True)
    assert [r.declaration.chars for r in by_chars] == sorted((r.declaration.chars for r in by_chars), reverse=True)
    assert languages.sort_key("premium:nope", ["w"]) == "premium:w"
    worst, best = languages.extremes(table.rows, "w", 3)
    assert worst[0].results["w"].premium == max(r.results["w"].premium for r in table.rows)
    assert best[0].results["w"].premium == min(r.results["w"].premium for r in table.rows)
    assert languages.scripts(corpus().complete)[0] == ("Latin", 412)


def test_exports_are_the_table_as_shown(client):
    params = {"t": ["gpt2", "o200k_base"], "script": "Arabic", "sort": "premium:o200k_base", "order": "asc"}
    r = client.get("/languages/export.csv", params=params)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    lines = list(csv.DictReader(io.StringIO(r.text)))
    answer = _by_code(_api(client, ["gpt2", "o200k_base"]))
    arabic = [d.code for d in corpus().complete if d.script == "Arabic"]
    assert {line["code"] for line in lines} == set(arabic) and len(lines) == 2 * len(arabic)
    o200k = [line for line in lines if line["tokenizer"] == "o200k_base"]
    assert [float(x["premium"]) for x in o200k] == sorted(float(x["premium"]) for x in o200k)
    for line in lines:
        result = answer[line["code"]]["results"][line["tokenizer"]]
        assert int(line["tokens"]) == result["tokens"] and float(line["premium"]) == result["premium"]
        assert float(line["chars_per_token"]) == result["chars"] / result["tokens"]
    exported = client.get("/languages/export.json", params=params).json()
    assert [row["code"] for row in exported["languages"]] == [line["code"] for line in o200k]
    assert exported["languages"][0] == answer[exported["languages"][0]["code"]]
    assert client.get("/languages/export.xml", params=params).status_code == 404


def test_a_language_page_shows_its_text_in_its_direction(client):
    r = client.get("/languages/arb")
    assert r.status_code == 200
    assert '<article id="language-text" class="language-text card" lang="ar" dir="rtl">' in r.text
    assert "<p>الإعلان العالمي لحقوق الإنسان</p>" in r.text
    assert 'href="/compare?lang=arb&amp;t=gpt2&amp;t=cl100k_base&amp;t=o200k_base"' in r.text
    assert client.get("/languages/eng").text.count("<p>Article ") == 30
    assert client.get("/languages/nope").status_code == 404


def test_compare_opens_with_a_languages_text(client):
    r = client.get("/compare", params={"lang": "jpn", "t": ["gpt2", "o200k_base"]})
    assert r.status_code == 200
    text = corpus().get("jpn").text
    assert "すべての人間は、生まれながらにして自由であり" in text
    assert re.search(r'<textarea id="compare-text"[^>]*dir="auto"[^>]*>\n?' + re.escape(text[:40]), r.text)
    gpt2 = len(tiktoken_encoding("gpt2").encode_ordinary(text))
    assert f'data-value="{gpt2}"' in r.text  # the stats table counted the whole text
    assert client.get("/compare", params={"lang": "nope"}).status_code == 404


def test_a_tokenizer_added_without_javascript_returns_to_the_languages_page(client):
    r = client.post(
        "/tokenizers",
        files={"file": ("gpt2.tiktoken", data_path("openai/gpt2.tiktoken").read_bytes())},
        data={"back": "languages", "name": "back-to-languages", "pattern": "gpt2"},
        follow_redirects=False,
    )
    assert r.status_code == 303
    assert r.headers["location"] == "/languages?t=gpt2&t=cl100k_base&t=o200k_base&t=back-to-languages"


# -- the CLI -------------------------------------------------------------------------------------------------------


def test_cli_prints_the_same_numbers(client, capsys):
    assert cli.main(["languages", "-t", "gpt2", "-t", "o200k_base", "--lang", "jpn", "--lang", "eng", "--lang", "chv"]) == 0
    out = capsys.readouterr().out
    answer = _by_code(_api(client, ["gpt2", "o200k_base"], ["jpn", "eng", "chv"]))
    jpn = answer["jpn"]["results"]
    assert re.search(
        rf"^jpn\s+Japanese\s+Japanese\s+{jpn['gpt2']['tokens']:,}\s+{jpn['gpt2']['premium']:.2f}x\s+"
        rf"{jpn['o200k_base']['tokens']:,}\s+{jpn['o200k_base']['premium']:.2f}x$",
        out,
        re.M,
    )
    assert "not ranked (incomplete translations):" in out and "chv  Chuvash (stage 1)" in out
    assert cli.main(["languages", "-t", "gpt2", "--csv", "--script", "Hebrew"]) == 0
    lines = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {line["code"] for line in lines} == {"heb", "ydd"}
    exported = client.get("/languages/export.csv", params={"t": "gpt2", "script": "Hebrew"}).text
    assert lines == list(csv.DictReader(io.StringIO(exported)))
    assert cli.main(["languages", "-t", "gpt2", "--lang", "nope"]) == 2
    assert "unknown language code 'nope'" in capsys.readouterr().err

