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
from functools import partial
from operator import attrgetter
from collections.abc import Iterator, Sequence

import tokenizers

from ..base import Tokenizer, VocabFacts, check_text
from ..budget import run_isolated
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
            self.library = tokenizers.Tokenizer.from_str(text)
        except UnicodeDecodeError:
            raise TokenizerFileError("this is not a tokenizer.json file: it is not UTF-8 text") from None
        except Exception as exc:  # the library raises a plain Exception for files it refuses
            load_json(text)  # JSON that is not valid: say where, in words
            raise TokenizerFileError(f"Hugging Face tokenizers cannot read this tokenizer.json file: {exc}") from None
        kind = type(self.library.model).__name__
        if kind not in MODEL_TYPES:
            raise UnsupportedTokenizerError(
                f"{kind} tokenizers are not supported yet; Tokenplay runs BPE, WordPiece, Unigram and WordLevel "
                "tokenizer.json files"
            )
        self._prefix = self.library.model.continuing_subword_prefix if kind == "WordPiece" else ""
        # a BPE whose words end with a marker (openai-gpt's "</w>"): a token's bytes are its text without it
        self._suffix = (self.library.model.end_of_word_suffix or "") if kind == "BPE" else ""
        self.library.no_truncation()
        self.library.no_padding()
        self.name = name
        pre = self.library.pre_tokenizer
        self.byte_level = pre is not None and '"ByteLevel"' in pre.__getstate__().decode()
        added = self.library.get_added_tokens_decoder()
        self._special = {t.content: i for i, t in added.items() if t.special}
        self._added = {i: t.content for i, t in added.items()}
        ids = self.library.get_vocab(with_added_tokens=True).values()
        self._n_vocab = self.library.get_vocab_size(with_added_tokens=True)  # the library's own figure
        self._id_bound = max(ids) + 1
        self._holes = len(ids) != self._id_bound
        post = self.library.post_processor
        self.added_specials = from_post_processor(None if post is None else json.loads(post.__getstate__()))
        self._lock = threading.Lock()
        #: A file a user brought whose pipeline holds a regex: the library matches it in Rust, where nothing can
        #: stop it, so every call that encodes or decodes runs in a child process under the request's budget.
        self.isolated = untrusted and '"Regex"' in text

    def _new_lock(self) -> None:  # in a forked child: the parent's lock was held by the thread that forked
        self._lock = threading.Lock()

    def _isolated(self, fn, *args):
        # the lock is held while the child is forked, so that no other thread is inside the library then
        return run_isolated(fn, *args, what=_REGEX_WORK, hold=self._lock, reset=self._new_lock)

    def _plain_encoding(self, text: str, allow_special: bool) -> _PlainEncoding:
        encoding = self._library_encoding(text, allow_special)
        return _PlainEncoding(encoding.ids, encoding.offsets, encoding.tokens)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for: a byte-level string's bytes, a piece with ``▁`` as a space, a byte
        piece's byte, an added token's text."""
        if not isinstance(token_id, int) or not 0 <= token_id < self._id_bound:
            raise KeyError(token_id)
        piece = self.library.id_to_token(token_id)
        if piece is None:
            raise KeyError(token_id)
        return self.piece_bytes(token_id, piece)

    def pieces_by_id(self) -> list[str | None]:
        """Every id's token string as the library has it (None for an id with none), read in one call."""
        pieces: list[str | None] = [None] * self._id_bound
        for piece, tid in self.library.get_vocab(with_added_tokens=True).items():
            pieces[tid] = self._added.get(tid, piece)
        return pieces

    def piece_bytes(self, token_id: int, piece: str) -> bytes:
        """The bytes of id ``token_id`` whose token string is ``piece`` (what :meth:`token_bytes` answers)."""
        if token_id in self._added:
            return piece.encode("utf-8")
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
        if self.isolated:
            return self._isolated(self._plain_encoding, text, allow_special)
        return self._library_encoding(text, allow_special)

    def _library_encoding(self, text: str, allow_special: bool):
        with self._lock, _encoding_errors():
            self.library.encode_special_tokens = not allow_special
            return self.library.encode(text, add_special_tokens=False)

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        return self._encoding(text, allow_special).ids

    #: Texts encoded per hold of the lock in :meth:`encode_batch`, so a long batch lets other requests in between.
    BATCH = 32

    def encode_batch(self, texts: Sequence[str], *, allow_special: bool = False) -> list[list[int]]:
        """The library's batch encoder without offsets (``encode_batch_fast``): the texts spread over every core
        outside the GIL, the same ids as :meth:`encode`."""
        if self.isolated:
            return self._isolated(self._batch_ids, texts, allow_special)
        return self._batch_ids(texts, allow_special)

    def _batch_ids(self, texts: Sequence[str], allow_special: bool) -> list[list[int]]:
        return [encoding.ids for encoding in self._batch_encodings(texts, allow_special)]

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """:meth:`encode_batch`'s lengths, read from the library's encodings without making their ids Python lists
        (a whole corpus is millions of ids). The texts go to the library longest first, so that each batch's
        threads finish together (the last texts of a batch are its shortest) rather than one core waiting on a
        long text while the other is idle."""
        if self.isolated:
            return list(map(len, self.encode_batch(texts)))
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
            with self._lock, _encoding_errors():
                self.library.encode_special_tokens = not allow_special
                chunk = self.library.encode_batch_fast(list(texts[start : start + self.BATCH]), add_special_tokens=False)
            yield from chunk

    def decode(self, ids: Sequence[int]) -> str:
        """Text for ``ids`` exactly as the library's ``decode(ids, skip_special_tokens=False)``."""
        ids = self.check_ids(ids)
        if self.isolated:
            return self._isolated(self._library_decode, ids)
        return self._library_decode(ids)

    def _library_decode(self, ids: list[int]) -> str:
        try:
            return self.library.decode(ids, skip_special_tokens=False)
        except BaseException as exc:  # noqa: BLE001 - the library's errors and panics, in words; nothing else
            if not _library_error(exc):
                raise
            raise DecodeError("this tokenizer's decoder cannot decode these ids (Hugging Face tokenizers fails on them)") from None

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        table = byte_table(self)
        check_text(text)
        # the ids alone, without the library's offsets and token strings (they cost as much again on long inputs);
        # when the tokens' bytes join up to the text (no prefix space, no normalizer change) they place the tokens
        encodings: dict[str, object] = {}
        if self.isolated:  # one child answers the ids and the offsets
            encodings["all"] = self._encoding(text, allow_special)
            ids = encodings["all"].ids
        else:
            with self._lock, _encoding_errors():
                self.library.encode_special_tokens = not allow_special
                ids = self.library.encode_batch_fast([text], add_special_tokens=False)[0].ids
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
                pieces = {k: self.library.id_to_token(ids[k]) for k in range(offset, stop)}
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
                piece = self.library.id_to_token(tid)
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
        piece = self.library.id_to_token(token_id)
        return entry.data, piece, special, entry.valid, piece_to_byte(piece) >= 0

    def _place_pieces(self, ids: list[int], table, offset: int, limit: int | None) -> list[Token]:
        """Tokens of a piece vocabulary (``▁`` for a space, ``<0xNN>`` byte pieces) whose bytes join up to the text:
        placed by their bytes, shown as their pieces."""
        tokens = place_byte_tokens(ids, table, offset, limit)
        for token in tokens:
            if token.id not in self._added:
                token.text = self.library.id_to_token(token.id)
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


#: What an isolated call is named in the message of a budget it goes over.
_REGEX_WORK = "this tokenizer's regex (run by Hugging Face tokenizers)"

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
