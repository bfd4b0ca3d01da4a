"""``tokenizer.json`` models served by Hugging Face ``tokenizers`` itself: the reference our own engines are held to.

:class:`HuggingFaceTokenizer` wraps one ``tokenizers.Tokenizer`` behind Tokenplay's contract:

- ``encode`` is ``encode(text, add_special_tokens=False)`` (no beginning-of-text token, as for every other
  tokenizer here), with truncation and padding off whatever the file says;
- ``allow_special=False`` sets the library's ``encode_special_tokens``: the text of tokens marked *special* is
  encoded as plain text, but non-special added tokens (Qwen3's ``<think>``, Gemma's ``<unusedN>`` and whitespace
  runs, DeepSeek's tool tokens) still match, exactly as the model sees them; ``allow_special=True`` parses special
  tokens too. The flag lives on the shared library object, so each encode sets it under a lock;
- ``decode`` is ``decode(ids, skip_special_tokens=False)``;
- tokens are placed like any byte-level tokenizer's when their bytes join up to the text, otherwise from the
  library's character offsets (normalized text, SentencePiece-style pieces).

A file a user brought (``untrusted``) runs in a process of its own, its host (:mod:`.host`): the library reads a
big file holding the GIL for seconds and matches regexes where nothing can stop them, so in the server's process
either would stall everyone; the host answers under each request's budget, and what this process keeps of the file
is a few facts and the pieces it has needed.

The library reads and checks the file itself (nothing is parsed twice: Gemma's file is 33 MB); a file it refuses,
or a model other than BPE, WordPiece, Unigram or WordLevel, raises :class:`~.tokenizer_json.TokenizerFileError`
saying so. Text the library fails to encode (a character a model without an unknown token has no piece for) raises
:class:`~..errors.InvalidTextError`, and ids its decoder fails on :class:`~.decoders.DecodeError`, as our engines do;
never the library's own exception (a Rust panic among them).
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from collections.abc import Iterator, Sequence

import tokenizers

from ..base import Tokenizer, VocabFacts, check_text
from .host import LibraryHost
from ..errors import InvalidTextError
from ..pipeline.decoders import DecodeError
from ..pipeline.post_processor import from_post_processor
from ..result import Columns, Token, TokenizeResult, byte_level_result, byte_spans, byte_table, place_byte_tokens
from ..pipeline.pieces import SPACE_SYMBOL, piece_to_byte
from ..pipeline.tokenizer_json import MODEL_TYPES, TokenizerFileError, UnsupportedTokenizerError, byte_level_bytes, load_json


class HuggingFaceTokenizer(VocabFacts, Tokenizer):
    """A ``tokenizer.json`` run by Hugging Face ``tokenizers``."""

    def __init__(self, data: bytes | str, *, name: str = "", untrusted: bool = False):
        try:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
        except UnicodeDecodeError:
            raise TokenizerFileError("this is not a tokenizer.json file: it is not UTF-8 text") from None
        self.name = name
        self._lock = threading.Lock()
        if untrusted:
            #: A file a user brought: read and run by the library in its host process (:mod:`.host`).
            what = _REGEX_WORK if '"Regex"' in text else _LIBRARY_WORK
            self.host: LibraryHost | None = LibraryHost(text, what=what, read=read_library, serve=host_call)
            self.library = None
            facts = self.host.facts
        else:
            self.host = None
            self.library, facts = read_library(text)
        self._prefix = facts.prefix
        self._suffix = facts.suffix
        self.byte_level = facts.byte_level
        self._special = facts.special
        self._added = facts.added
        self._added_text = facts.added_text
        self._n_vocab = facts.n_vocab
        self._id_bound = facts.id_bound
        self._holes = facts.holes
        self.added_specials = from_post_processor(facts.post_processor)  # what the model's default encode adds
        self._pieces: dict[int, str | None] = {}  # a hosted file's pieces this process has needed

    @property
    def isolated(self) -> bool:
        """Whether the library runs in a process of its own (a file a user brought)."""
        return self.host is not None

    def _piece(self, token_id: int) -> str | None:
        """The library's token string of an id (None for an id that stands for no token). A hosted file's pieces
        come a block of :data:`PIECES_BLOCK` ids at a time (a walk through the vocabulary asks once per block)."""
        if self.host is None:
            return self.library.id_to_token(token_id)
        if token_id not in self._pieces:
            start = token_id - token_id % PIECES_BLOCK
            self._fetch_pieces(range(start, min(start + PIECES_BLOCK, self._id_bound)))
        return self._pieces[token_id]

    def _fetch_pieces(self, ids) -> None:
        """Ask the host, in one call, for the pieces of the ``ids`` this process has not seen yet."""
        missing = sorted({i for i in ids if i not in self._pieces})
        if missing:
            self._pieces.update(zip(missing, self.host.call("pieces", missing)))

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for: a byte-level string's bytes, a piece with ``▁`` as a space, a byte
        piece's byte, an added token's text."""
        if not isinstance(token_id, int) or not 0 <= token_id < self._id_bound:
            raise KeyError(token_id)
        piece = self._piece(token_id)
        if piece is None:
            raise KeyError(token_id)
        return self.piece_bytes(token_id, piece)

    def pieces_by_id(self) -> list[str | None]:
        """Every id's token string as the library has it (None for an id with none), read in one call."""
        if self.host is not None:
            return self.host.call("pieces_by_id")
        return library_pieces(self.library)

    def pretoken_counts(self, texts: Sequence[str]) -> list[int] | None:
        """How many pieces the file's normalizer and pre-tokenizer cut each of ``texts`` into (an added token's
        text: one), or None when it has no pre-tokenizer."""
        if self.host is not None:
            return self.host.call("pretoken_counts", list(texts))
        return library_pretoken_counts(self.library, texts)

    def piece_bytes(self, token_id: int, piece: str) -> bytes:
        """The bytes of id ``token_id`` whose token string is ``piece`` (what :meth:`token_bytes` answers)."""
        if token_id in self._added:
            return self._added_text.get(token_id, piece).encode("utf-8")
        if self.byte_level:
            return byte_level_bytes(piece)
        if self._prefix and piece.startswith(self._prefix) and piece != self._prefix:
            return piece[len(self._prefix) :].encode("utf-8")
        if self._suffix and piece.endswith(self._suffix) and piece != self._suffix:
            piece = piece[: -len(self._suffix)]
        b = piece_to_byte(piece)
        return bytes([b]) if b >= 0 else piece.replace(SPACE_SYMBOL, " ").encode("utf-8")

    def _encoding(self, text: str, allow_special: bool):
        check_text(text)
        if self.host is not None:
            return self.host.call("encoding", text, allow_special)
        with self._lock:
            return library_encoding(self.library, text, allow_special)

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        return self._encoding(text, allow_special).ids

    #: Texts encoded per hold of the lock in :meth:`encode_batch`, so a long batch lets other requests in between.
    BATCH = 32

    def encode_batch(self, texts: Sequence[str], *, allow_special: bool = False) -> list[list[int]]:
        """The library's batch encoder without offsets (``encode_batch_fast``): the texts spread over every core
        outside the GIL, the same ids as :meth:`encode`."""
        for text in texts:
            check_text(text)
        if self.host is not None:
            return self.host.call("batch_ids", list(texts), allow_special)
        return [encoding.ids for encoding in self._batch_encodings(texts, allow_special)]

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """:meth:`encode_batch`'s lengths, read from the library's encodings without making their ids Python lists
        (a whole corpus is millions of ids). The texts go to the library longest first, so that each batch's
        threads finish together (the last texts of a batch are its shortest) rather than one core waiting on a
        long text while the other is idle."""
        if self.host is not None:
            for text in texts:
                check_text(text)
            return self.host.call("counts", list(texts))
        order = sorted(range(len(texts)), key=lambda k: -len(texts[k]))
        out = [0] * len(texts)
        for k, encoding in zip(order, self._batch_encodings([texts[k] for k in order], False)):
            out[k] = len(encoding)
        return out

    def _batch_encodings(self, texts: Sequence[str], allow_special: bool) -> Iterator[tokenizers.Encoding]:
        """The library's encodings of ``texts`` in order, ``BATCH`` texts per hold of the lock (every text is
        checked before the first is encoded; one batch's encodings are held at a time)."""
        for text in texts:
            check_text(text)
        for start in range(0, len(texts), self.BATCH):
            with self._lock:
                chunk = list(library_batch(self.library, texts[start : start + self.BATCH], allow_special))
            yield from chunk

    def decode(self, ids: Sequence[int]) -> str:
        """Text for ``ids`` exactly as the library's ``decode(ids, skip_special_tokens=False)``."""
        ids = self.check_ids(ids)
        if self.host is not None:
            return self.host.call("decode", ids)
        return library_decode(self.library, ids)

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        table = byte_table(self)
        check_text(text)
        # the ids alone, without the library's offsets and token strings (they cost as much again on long inputs);
        # when the tokens' bytes join up to the text (no prefix space, no normalizer change) they place the tokens
        encodings: dict[str, object] = {}
        if self.host is not None:  # one call answers the ids and the offsets, and the pieces come with them
            encodings["all"] = self._encoding(text, allow_special)
            ids = encodings["all"].ids
            self._fetch_pieces(ids)
        else:
            with self._lock:
                ids = next(library_batch(self.library, [text], allow_special)).ids
        if b"".join(map(_DATA, map(table.__getitem__, ids))) == text.encode("utf-8"):
            if self.byte_level:
                return byte_level_result(self.name, text, ids, table)
            return TokenizeResult(
                self.name, text, ids, place=partial(self._place_pieces, ids, table),
                columns=lambda: Columns(zip(*byte_spans(ids, table)), partial(self._piece_info, table)),
            )
        # The library's offsets: for a window of the first tokens (what a view shows), from encoding a prefix of
        # the text whose ids agree with the text's well past the window; for anything else, from encoding it all.

        def encoding_upto(stop: int):
            if "all" in encodings:
                return encodings["all"]
            if stop <= 10_000 and stop + _PREFIX_CHECK < len(ids):
                found = encodings.get("prefix")
                if found is not None and len(found.ids) >= stop + _PREFIX_CHECK:
                    return found
                need = stop + _PREFIX_CHECK
                chars = min(len(text), 2 * len(text) * need // len(ids) + 256)
                prefix = self._encoding(text[:chars], allow_special)
                if prefix.ids[:need] == ids[:need]:
                    encodings["prefix"] = prefix
                    return prefix
            encoding = encodings["all"] = self._encoding(text, allow_special)
            return encoding

        def place(offset: int, limit: int | None) -> list[Token]:
            stop = len(ids) if limit is None else min(len(ids), offset + limit)
            encoding = encoding_upto(stop)
            if stop - offset > 10_000:  # many tokens: the library's whole lists
                offsets, pieces = encoding.offsets, encoding.tokens
            else:  # a window: ask for its tokens only (the lists cost a tenth of a second per 300,000 tokens)
                offsets = {k: encoding.token_to_chars(k) for k in range(offset, stop)}
                pieces = {k: self._piece(ids[k]) for k in range(offset, stop)}
            out = []
            for k in range(offset, stop):
                tid = ids[k]
                start, end = offsets[k]
                if tid in self._added:  # its text as written (valid: check_text let no lone surrogate in)
                    data, shown, valid = text[start:end].encode(), text[start:end], True
                else:
                    info = table[tid]
                    data, valid = info.data, info.valid
                    shown = pieces[k] if not self.byte_level else info.text
                fallback = not self.byte_level and piece_to_byte(pieces[k]) >= 0
                out.append(Token(tid, data, start, end, shown, tid in table.special_ids, valid, fallback))
            return out

        def columns() -> Columns:  # what place(0, None) says, from the library's offsets in bulk
            offsets = encoding_upto(len(ids)).offsets
            first = {tid: offsets[ids.index(tid)] for tid in self._added.keys() & set(ids)}

            def info(tid: int) -> tuple[bytes, str, bool, bool, bool]:
                piece = self._piece(tid)
                fallback = not self.byte_level and piece_to_byte(piece) >= 0
                if tid in first:  # an added token: its text as written where it first occurs
                    shown = text[first[tid][0] : first[tid][1]]
                    return shown.encode(), shown, tid in table.special_ids, True, fallback
                entry = table[tid]
                shown = piece if not self.byte_level else entry.text
                return entry.data, shown, tid in table.special_ids, entry.valid, fallback

            return Columns(offsets, info)

        return TokenizeResult(self.name, text, ids, place=place, columns=columns)

    def _piece_info(self, table, token_id: int) -> tuple[bytes, str, bool, bool, bool]:
        """What :meth:`_place_pieces` says about a token (the same for every token with that id)."""
        entry = table[token_id]
        special = token_id in table.special_ids
        if token_id in self._added:
            return entry.data, entry.text, special, entry.valid, False
        piece = self._piece(token_id)
        return entry.data, piece, special, entry.valid, piece_to_byte(piece) >= 0

    def _place_pieces(self, ids: list[int], table, offset: int, limit: int | None) -> list[Token]:
        """Tokens of a piece vocabulary (``▁`` for a space, ``<0xNN>`` byte pieces) whose bytes join up to the text:
        placed by their bytes, shown as their pieces."""
        tokens = place_byte_tokens(ids, table, offset, limit)
        for token in tokens:
            if token.id not in self._added:
                token.text = self._piece(token.id)
                token.byte_fallback = piece_to_byte(token.text) >= 0
        return tokens


class _PlainEncoding:
    """What a child process answers of the library's ``Encoding``: the ids, offsets and token strings."""

    __slots__ = ("ids", "offsets", "tokens")

    def __init__(self, ids: list[int], offsets: list[tuple[int, int]], tokens: list[str]):
        self.ids, self.offsets, self.tokens = ids, offsets, tokens

    def __len__(self) -> int:
        return len(self.ids)

    def token_to_chars(self, k: int) -> tuple[int, int]:
        return self.offsets[k]


#: What a hosted call is named in the message of a budget it goes over: a file with a regex, and any other.
_REGEX_WORK = "this tokenizer's regex (run by Hugging Face tokenizers)"
_LIBRARY_WORK = "this tokenizer (run by Hugging Face tokenizers)"


@dataclass(frozen=True)
class LibraryFacts:
    """What the server keeps of a file the library read (in its host, for a file a user brought)."""

    prefix: str  # WordPiece's continuing-subword prefix ("##"), else ""
    suffix: str  # a BPE whose words end with a marker (openai-gpt's "</w>"): a token's bytes are its text without it
    byte_level: bool
    special: dict[str, int]  # special tokens' texts -> ids
    added: dict[int, str]  # added tokens' ids -> texts
    n_vocab: int  # the library's own figure
    id_bound: int  # the largest id + 1
    holes: bool
    post_processor: dict | None = None  # the file's post-processor as JSON (the tokens its default encode adds)
    #: added tokens written with ``▁`` that the library decodes as spaces (Gemma's runs of spaces, ``▁▁``): id -> text
    added_text: dict[int, str] = field(default_factory=dict)


#: A hosted file's pieces are fetched this many ids at a time (:meth:`HuggingFaceTokenizer._piece`).
PIECES_BLOCK = 4096


def read_library(text: str) -> tuple[tokenizers.Tokenizer, LibraryFacts]:
    """The library's tokenizer of a ``tokenizer.json``'s text, with truncation and padding off, and its facts;
    the library's refusal of the file in words (:class:`~.tokenizer_json.TokenizerFileError`)."""
    try:
        library = tokenizers.Tokenizer.from_str(text)
    except Exception as exc:  # the library raises a plain Exception for files it refuses
        load_json(text)  # JSON that is not valid: say where, in words
        raise TokenizerFileError(f"Hugging Face tokenizers cannot read this tokenizer.json file: {exc}") from None
    kind = type(library.model).__name__
    if kind not in MODEL_TYPES:
        raise UnsupportedTokenizerError(
            f"{kind} tokenizers are not supported yet; Tokenplay runs BPE, WordPiece, Unigram and WordLevel "
            "tokenizer.json files"
        )
    library.no_truncation()
    library.no_padding()
    pre = library.pre_tokenizer
    added = library.get_added_tokens_decoder()
    ids = library.get_vocab(with_added_tokens=True).values()
    id_bound = max(ids) + 1
    byte_level = pre is not None and '"ByteLevel"' in pre.__getstate__().decode()
    facts = LibraryFacts(
        prefix=library.model.continuing_subword_prefix if kind == "WordPiece" else "",
        suffix=(library.model.end_of_word_suffix or "") if kind == "BPE" else "",
        byte_level=byte_level,
        special={t.content: i for i, t in added.items() if t.special},
        added={i: t.content for i, t in added.items()},
        n_vocab=library.get_vocab_size(with_added_tokens=True),
        id_bound=id_bound,
        holes=len(ids) != id_bound,
        post_processor=None if library.post_processor is None else json.loads(library.post_processor.__getstate__()),
        added_text=_spaces_of_added(library, added, byte_level=byte_level),
    )
    return library, facts


def _spaces_of_added(library, added: dict, *, byte_level: bool) -> dict[int, str]:
    """The added tokens (not special) written with ``▁`` that the library itself decodes as spaces: their text.
    Gemma lists its runs of spaces (``▁▁`` ... ) among its added tokens; they stand for spaces, as the same pieces do
    in its vocabulary, not for the character ``▁``."""
    out = {}
    if byte_level:
        return out
    for token_id, token in added.items():
        if not token.special and SPACE_SYMBOL in token.content:
            text = library.decode([token_id], skip_special_tokens=False)
            if text != token.content and text == token.content.replace(SPACE_SYMBOL, " "):
                out[token_id] = text
    return out


def library_pieces(library: tokenizers.Tokenizer) -> list[str | None]:
    """Every id's token string (an added token's content; None for an id with none), from one ``get_vocab``."""
    vocab = library.get_vocab(with_added_tokens=True)
    added = {i: t.content for i, t in library.get_added_tokens_decoder().items()}
    pieces: list[str | None] = [None] * (max(vocab.values()) + 1)
    for piece, tid in vocab.items():
        pieces[tid] = added.get(tid, piece)
    return pieces


def library_pretoken_counts(library: tokenizers.Tokenizer, texts: Sequence[str]) -> list[int] | None:
    """:meth:`HuggingFaceTokenizer.pretoken_counts` with the library at hand."""
    pre, norm = library.pre_tokenizer, library.normalizer
    if pre is None:
        return None
    added = {t.content for t in library.get_added_tokens_decoder().values()}  # matched whole, before the pre-tokenizer
    return [1 if text in added else len(pre.pre_tokenize_str(norm.normalize_str(text) if norm is not None else text))
            for text in texts]


def library_encoding(library: tokenizers.Tokenizer, text: str, allow_special: bool):
    """The library's encoding of ``text`` (its ids, offsets and token strings); the caller holds the library's lock
    (its ``encode_special_tokens`` flag is the object's)."""
    with _encoding_errors():
        library.encode_special_tokens = not allow_special
        return library.encode(text, add_special_tokens=False)


def library_batch(library: tokenizers.Tokenizer, texts: Sequence[str], allow_special: bool) -> Iterator:
    """The library's encodings of ``texts`` without offsets (``encode_batch_fast``), as :func:`library_encoding`."""
    with _encoding_errors():
        library.encode_special_tokens = not allow_special
        encodings = library.encode_batch_fast(list(texts), add_special_tokens=False)
    return iter(encodings)


def library_decode(library: tokenizers.Tokenizer, ids: list[int]) -> str:
    try:
        return library.decode(ids, skip_special_tokens=False)
    except BaseException as exc:  # noqa: BLE001 - the library's errors and panics, in words; nothing else
        if not _library_error(exc):
            raise
        raise DecodeError("this tokenizer's decoder cannot decode these ids (Hugging Face tokenizers fails on them)") from None


def _host_encoding(library, text: str, allow_special: bool) -> _PlainEncoding:
    encoding = library_encoding(library, text, allow_special)
    return _PlainEncoding(encoding.ids, encoding.offsets, encoding.tokens)


def _host_counts(library, texts: list[str]) -> list[int]:
    order = sorted(range(len(texts)), key=lambda k: -len(texts[k]))
    out = [0] * len(texts)
    for k, encoding in zip(order, library_batch(library, [texts[k] for k in order], False)):
        out[k] = len(encoding)
    return out


#: What a host process (:mod:`.host`) runs for the server: name -> fn(library, *args).
HOST_CALLS = {
    "encoding": _host_encoding,
    "batch_ids": lambda library, texts, allow_special: [e.ids for e in library_batch(library, texts, allow_special)],
    "counts": _host_counts,
    "decode": library_decode,
    "pieces": lambda library, ids: [library.id_to_token(i) for i in ids],
    "pieces_by_id": library_pieces,
    "pretoken_counts": library_pretoken_counts,
}


def host_call(library: tokenizers.Tokenizer, method: str, args: tuple):
    """What a host process runs for the server: :data:`HOST_CALLS`' ``method`` on the library."""
    return HOST_CALLS[method](library, *args)

_DATA = attrgetter("data")
#: A window's tokens are placed from a prefix of the text when the prefix's ids agree this far past the window.
_PREFIX_CHECK = 256


def _library_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the library failing (its plain ``Exception``, or a Rust panic, a ``BaseException``)."""
    return type(exc) is Exception or type(exc).__name__ == "PanicException"


@contextmanager
def _encoding_errors():
    """The library failing to encode a text, as :class:`~..errors.InvalidTextError` in words."""
    try:
        yield
    except BaseException as exc:  # noqa: BLE001 - re-raised unless it is the library's own failure
        if not _library_error(exc):
            raise
        if "retry-limit" in str(exc):  # Oniguruma gave up on a match
            raise InvalidTextError(
                "this tokenizer's regex backtracks too much on this text: Hugging Face tokenizers gives up on it "
                "(Oniguruma's retry limit); the model's own library cannot encode it either"
            ) from None
        raise InvalidTextError(
            "this tokenizer cannot encode this text: Hugging Face tokenizers fails on it (a character it has no "
            "token for, and no unknown token to stand for it)"
        ) from None
