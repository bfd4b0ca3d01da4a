"""A tokenizer's vocabulary as data: every id with its bytes, its kind and script, and the vocabulary browser's query.

:func:`vocabulary` reads any :class:`~app.engines.base.Tokenizer` through the contract (``id_bound``, ``token_bytes``,
``special_tokens``) and, where an engine keeps them, its own token strings (``Ġhello``, ``▁hello``, ``##ing``,
``ing</w>``, ``<0xE3>``), and keeps the result per tokenizer object. :func:`kind_of` sorts a token into one of
:data:`KINDS` (with the script of its letters for a word); :func:`browse` pages through a vocabulary by id, filtered by
a substring or a regex of the token's text and by kind. A regex runs with a time limit, so no query can hang a worker.

Nothing here knows how a vocabulary was learned: :mod:`.merges` adds ranks, parents and children.
"""

from __future__ import annotations

import hashlib
import time
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

import regex

from app.engines.base import Tokenizer
from app.engines.errors import TokenplayError
from app.engines.result import escape_bytes
from app.engines.sentencepiece.model import piece_to_byte

from .store import PerTokenizer

KINDS = ("byte", "partial-utf8", "word", "space", "digits", "punctuation", "special", "other")
#: The most tokens one page of the browser holds.
MAX_LIMIT = 1_000
#: How long a regex query may run over a whole vocabulary, in seconds.
REGEX_SECONDS = 5.0


class VocabQueryError(TokenplayError, ValueError):
    """A browser query that cannot run: a bad regex, an unknown kind, a page out of range (the message says which)."""


# -- scripts ---------------------------------------------------------------------------------------------------------
#: ISO 15924 code -> name: the scripts a token's letters are named by (regex's \p{Script=...}); others are "other".
SCRIPTS = {
    "Latn": "Latin", "Cyrl": "Cyrillic", "Grek": "Greek", "Armn": "Armenian", "Geor": "Georgian", "Hebr": "Hebrew",
    "Arab": "Arabic", "Syrc": "Syriac", "Thaa": "Thaana", "Ethi": "Ethiopic", "Deva": "Devanagari", "Beng": "Bengali",
    "Guru": "Gurmukhi", "Gujr": "Gujarati", "Orya": "Oriya", "Taml": "Tamil", "Telu": "Telugu", "Knda": "Kannada",
    "Mlym": "Malayalam", "Sinh": "Sinhala", "Thai": "Thai", "Laoo": "Lao", "Tibt": "Tibetan", "Mymr": "Myanmar",
    "Khmr": "Khmer", "Mong": "Mongolian", "Hani": "Han", "Hira": "Hiragana", "Kana": "Katakana", "Hang": "Hangul",
    "Bopo": "Bopomofo", "Yiii": "Yi", "Cher": "Cherokee", "Cans": "Canadian Aboriginal", "Tfng": "Tifinagh",
    "Copt": "Coptic", "Glag": "Glagolitic", "Runr": "Runic", "Brai": "Braille",
    "Zyyy": "Common", "Zinh": "Inherited",
}  # fmt: skip
_SCRIPT_OF = regex.compile("|".join(f"(?P<{code}>\\p{{Script={code}}})" for code in SCRIPTS))
_script_names: dict[str, str] = {}


def script_of(ch: str) -> str:
    """The name of the script of one character ("other" for one outside :data:`SCRIPTS`).

    >>> script_of("a"), script_of("я"), script_of("の"), script_of("7"), script_of("\\u0301")
    ('Latin', 'Cyrillic', 'Hiragana', 'Common', 'Inherited')
    """
    name = _script_names.get(ch)
    if name is None:
        m = _SCRIPT_OF.match(ch)
        name = _script_names[ch] = SCRIPTS[m.lastgroup] if m else "other"
    return name


def letters_script(text: str) -> str:
    """The script most of the letters of ``text`` are in ("" without letters)."""
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha():
            name = script_of(ch)
            counts[name] = counts.get(name, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else ""


_ASCII_PUNCTUATION = "".join(chr(c) for c in range(0x21, 0x7F) if unicodedata.category(chr(c))[0] in "PS")

# -- kinds -----------------------------------------------------------------------------------------------------------
def kind_of(data: bytes, *, special: bool = False, fallback: bool = False) -> tuple[str, str]:
    """The kind of a token (one of :data:`KINDS`) and, for a word, the script of its letters.

    ``byte``: a byte-fallback piece or one byte that is no character; ``partial-utf8``: bytes that are not whole
    UTF-8; ``space``: whitespace only; ``digits``, ``word`` (letters and marks), ``punctuation`` (punctuation and
    symbols): that alone, after any leading spaces; ``other``: the rest (mixed, control characters).

    >>> [kind_of(b) for b in (b" the", b"\\xe3", b"\\xe3\\x81", b"\\n\\n", b" 123", b"?!", b"a1")]
    [('word', 'Latin'), ('byte', ''), ('partial-utf8', ''), ('space', ''), ('digits', ''), ('punctuation', ''), ('other', '')]
    """
    if special:
        return "special", ""
    if fallback:
        return "byte", ""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return ("byte" if len(data) == 1 else "partial-utf8"), ""
    if not text:
        return "other", ""
    if text.isspace():
        return "space", ""
    body = text.lstrip(" ")
    if body.isascii():  # most tokens: no Unicode tables needed
        if body.isdigit():
            return "digits", ""
        if body.isalpha():
            return "word", "Latin"
        if not body.strip(_ASCII_PUNCTUATION):
            return "punctuation", ""
        return "other", ""
    cats = {unicodedata.category(c)[0] if unicodedata.category(c) != "Nd" else "D" for c in body}
    if cats == {"D"}:
        return "digits", ""
    if cats <= {"L", "M"} and "L" in cats:
        return "word", letters_script(body)
    if cats <= {"P", "S"}:
        return "punctuation", ""
    return "other", ""


# -- a vocabulary ----------------------------------------------------------------------------------------------------
def _piece_getter(tok: Tokenizer):
    """The engine's own string for an id (``Ġhello``, ``▁hello``, ``##ing``), or None when it keeps none."""
    for attr in ("id_to_piece", "id_to_token"):
        getter = getattr(tok, attr, None)
        if getter is not None:
            return getter
    library = getattr(tok, "library", None)
    if library is not None:
        return library.id_to_token
    return None


@dataclass
class Vocabulary:
    """Every id of one tokenizer that stands for a token, in id order, with what the browser and the reports read."""

    name: str
    n_vocab: int  # the reference library's own figure
    ids: list[int]
    data: list[bytes]
    pieces: list[str | None]  # the engine's own string where it differs from the bytes' text
    special: frozenset[int]
    fallback: frozenset[int]  # byte-fallback pieces (<0xNN>)
    _kinds: list[tuple[str, str]] | None = field(default=None, repr=False)

    @cached_property
    def position(self) -> dict[int, int]:
        """id -> its index in :attr:`ids`."""
        return {tid: k for k, tid in enumerate(self.ids)}

    @cached_property
    def texts(self) -> list[str]:
        """Each token's bytes as text (bytes that are not UTF-8 as ``\\xNN``)."""
        texts, valid = self._decoded
        return texts

    @cached_property
    def valid(self) -> list[bool]:
        """Whether each token's bytes are whole UTF-8 (then its text is their decoding)."""
        texts, valid = self._decoded
        return valid

    @cached_property
    def _decoded(self) -> tuple[list[str], list[bool]]:
        texts: list[str] = []
        valid: list[bool] = []
        for data in self.data:
            try:
                texts.append(data.decode("utf-8"))
                valid.append(True)
            except UnicodeDecodeError:
                texts.append(escape_bytes(data))
                valid.append(False)
        return texts, valid

    @cached_property
    def fingerprint(self) -> str:
        """A digest of the vocabulary's content (bytes, specials and fallback pieces by id), for caches on disk."""
        h = hashlib.sha256()
        for tid, data in zip(self.ids, self.data):
            h.update(tid.to_bytes(4, "little") + len(data).to_bytes(4, "little") + data)
        h.update(repr((sorted(self.special), sorted(self.fallback), self.n_vocab)).encode())
        return h.hexdigest()[:24]

    @property
    def kinds(self) -> list[tuple[str, str]]:
        if self._kinds is None:
            self._kinds = [
                kind_of(d, special=t in self.special, fallback=t in self.fallback) for t, d in zip(self.ids, self.data)
            ]
        return self._kinds

    def bytes_of(self, token_id: int) -> bytes:
        return self.data[self.position[token_id]]

    def kind_at(self, k: int) -> tuple[str, str]:
        """The kind and script of the token at position ``k`` (without working out every token's)."""
        if self._kinds is not None:
            return self._kinds[k]
        tid = self.ids[k]
        return kind_of(self.data[k], special=tid in self.special, fallback=tid in self.fallback)

    def entry(self, token_id: int) -> dict:
        """The browser's record of one id (without its rank)."""
        k = self.position[token_id]
        kind, script = self.kind_at(k)
        out = {"id": token_id, "text": self.texts[k], "bytes_hex": self.data[k].hex(), "kind": kind}
        if script:
            out["script"] = script
        if self.pieces[k] is not None:
            out["piece"] = self.pieces[k]
        return out


def vocabulary(tok: Tokenizer) -> Vocabulary:
    """The :class:`Vocabulary` of ``tok``, read once per tokenizer object."""
    return _VOCABS(tok)


def _entries(tok: Tokenizer):
    """``(id, bytes, engine's string or None)`` for every id that stands for a token, in id order."""
    bulk = getattr(tok, "pieces_by_id", None)  # Hugging Face tokenizers: every string in one call
    if bulk is not None:
        for tid, piece in enumerate(bulk()):
            if piece is not None:
                yield tid, tok.piece_bytes(tid, piece), piece
        return
    piece_of = _piece_getter(tok)
    for tid in range(tok.id_bound):
        try:
            b = tok.token_bytes(tid)
        except (KeyError, IndexError, ValueError, OverflowError):
            continue
        piece = None
        if piece_of is not None:
            try:
                piece = piece_of(tid)
            except (KeyError, IndexError, ValueError):
                piece = None
        yield tid, b, piece


def _read(tok: Tokenizer) -> Vocabulary:
    special = frozenset(tok.special_tokens.values())
    ids: list[int] = []
    data: list[bytes] = []
    pieces: list[str | None] = []
    fallback: set[int] = set()
    for tid, b, piece in _entries(tok):
        ids.append(tid)
        data.append(b)
        if piece is not None:
            if len(b) == 1 and piece_to_byte(piece) == b[0]:
                fallback.add(tid)
            if piece == escape_bytes(b):
                piece = None
        pieces.append(piece)
    return Vocabulary(tok.name, tok.n_vocab, ids, data, pieces, special, frozenset(fallback))


_VOCABS = PerTokenizer(_read)


# -- the browser -----------------------------------------------------------------------------------------------------
def _matcher(q: str):
    """A predicate on a token's text: ``/pattern/`` is a regex (run with a time limit), anything else a substring."""
    if len(q) >= 2 and q.startswith("/") and q.endswith("/"):
        try:
            pattern = regex.compile(q[1:-1])
        except regex.error as exc:
            raise VocabQueryError(f"q is not a valid regex: {exc}; write /pattern/ or plain text to find") from None
        return pattern
    return q


def browse(vocab: Vocabulary, *, offset: int = 0, limit: int = 100, q: str = "", kind: str = "") -> tuple[int, list[int]]:
    """``(total, ids)``: how many tokens match (``q``: a substring of the token's text, or ``/regex/``; ``kind``: one
    of :data:`KINDS`) and the ids of the page ``offset`` .. ``offset + limit`` among them, by id."""
    if kind and kind not in KINDS:
        raise VocabQueryError(f"kind {kind!r} is none of: {', '.join(KINDS)}")
    if not 0 <= offset:
        raise VocabQueryError(f"offset must be 0 or more, not {offset}")
    if not 1 <= limit <= MAX_LIMIT:
        raise VocabQueryError(f"limit must be from 1 to {MAX_LIMIT}, not {limit}")
    positions = range(len(vocab.ids))
    if kind:
        kinds = vocab.kinds
        positions = [k for k in positions if kinds[k][0] == kind]
    if q:
        texts = vocab.texts
        match = _matcher(q)
        if isinstance(match, str):
            positions = [k for k in positions if match in texts[k]]
        else:
            positions = _regex_filter(match, texts, positions)
    total = len(positions)
    return total, [vocab.ids[k] for k in positions[offset : offset + limit]]


def _now() -> float:
    return time.monotonic()


def _regex_filter(pattern: regex.Pattern, texts: list[str], positions) -> list[int]:
    """The positions whose text the pattern finds something in; the whole search stops after :data:`REGEX_SECONDS`."""
    deadline = _now() + REGEX_SECONDS
    out: list[int] = []
    search = pattern.search
    try:
        for n, k in enumerate(positions):
            if search(texts[k], timeout=REGEX_SECONDS):
                out.append(k)
            if n % 4096 == 4095 and _now() > deadline:
                raise TimeoutError
    except TimeoutError:
        raise VocabQueryError(
            f"the regex took longer than {REGEX_SECONDS:g} s over the vocabulary; make it simpler"
        ) from None
    return out
