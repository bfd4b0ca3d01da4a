"""Read a Hugging Face ``tokenizer.json`` into plain data, refusing files Tokenplay cannot run exactly.

A ``tokenizer.json`` holds a whole tokenization pipeline: added tokens, a normalizer, a pre-tokenizer, the model
(vocabulary and merges) and a decoder. :func:`parse_tokenizer_json` checks the parts every engine relies on (a
model whose merges and added tokens are consistent with its vocabulary) and keeps the pipeline steps as the
JSON objects they are; the engines that build them (:mod:`.normalizers`, :mod:`.pretokenizers`) refuse the
step types they do not support, naming them. WordPiece models are read too (vocabulary, unknown token, the
``##`` prefix, the word-length limit), and so are Unigram models (pieces with their scores, the unknown piece's id)
and WordLevel models (a vocabulary looked up word by word); any other model type is refused with
:class:`UnsupportedTokenizerError`, named.

This module only reads; it does not tokenize, and it never imports Hugging Face ``tokenizers``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from operator import add

from ..errors import TokenplayError
from .post_processor import PostProcessorError, from_post_processor


MODEL_TYPES = ("BPE", "WordPiece", "Unigram", "WordLevel")


class TokenizerFileError(TokenplayError):
    """A file that is not a tokenizer file Tokenplay can read: broken, truncated, or inconsistent."""


class UnsupportedTokenizerError(TokenizerFileError):
    """A valid tokenizer file that uses something Tokenplay does not run yet (a model type, a pipeline step)."""


@dataclass(frozen=True, slots=True)
class AddedToken:
    """An entry of ``added_tokens``: text matched before the model runs (see :mod:`.added_tokens`)."""

    id: int
    content: str
    special: bool = False
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = False


@dataclass
class TokenizerJSON:
    """The parts of a ``tokenizer.json`` the engines use. ``merges`` are in rank order (first merges first). A
    Unigram model's ``vocab`` maps each piece to its id (a piece listed twice: its last id, as the library looks
    pieces up) and ``scores`` holds every id's score."""

    vocab: dict[str, int]
    merges: list[tuple[str, str]]
    added_tokens: list[AddedToken] = field(default_factory=list)
    normalizer: dict | None = None
    pre_tokenizer: dict | None = None
    decoder: dict | None = None
    post_processor: dict | None = None  # what the model's default encoding adds around a text (.post_processor)
    unk_token: str | None = None
    byte_fallback: bool = False
    fuse_unk: bool = False
    ignore_merges: bool = False
    model_type: str = "BPE"  # or "WordPiece", "Unigram", "WordLevel" (then ``merges`` is empty)
    continuing_subword_prefix: str = ""  # WordPiece: what marks a piece inside a word ("##")
    max_input_chars_per_word: int = 100  # WordPiece: longer words are one unknown token
    scores: list[float] | None = None  # Unigram: the score of each id's piece
    pieces: list[str] | None = None  # Unigram: each id's piece, in id order
    unk_id: int | None = None  # Unigram: the unknown piece's id (None: the model has none)
    end_of_word_suffix: str = ""  # BPE: what marks a word's last piece ("</w>" in openai-gpt)

    @property
    def byte_level(self) -> bool:
        """Whether the vocabulary is written in the byte-level alphabet (a ``ByteLevel`` pre-tokenizer step)."""
        return any(step.get("type") == "ByteLevel" for step in pipeline_steps(self.pre_tokenizer, "pretokenizers"))

    @property
    def n_vocab(self) -> int:
        ids = list(self.vocab.values()) + [t.id for t in self.added_tokens]
        if self.pieces is not None:
            ids.append(len(self.pieces) - 1)
        return max(ids) + 1 if ids else 0

    @property
    def reference_size(self) -> int:
        """The vocabulary size as Hugging Face ``tokenizers`` gives it (``get_vocab_size(with_added_tokens=True)``): the
        distinct token strings of the vocabulary and the added tokens. It is :attr:`n_vocab` unless ids leave gaps."""
        return len(self.vocab.keys() | {t.content for t in self.added_tokens})

    def tokens_by_id(self) -> list[str | None]:
        """Each id's token below ``n_vocab``: the vocabulary's string, or the added token's content where one
        has the id; None for an id that stands for neither."""
        tokens: list[str | None] = [None] * self.n_vocab
        for token, tid in self.vocab.items():
            tokens[tid] = token
        for added in self.added_tokens:
            tokens[added.id] = added.content
        return tokens


def _byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-level alphabet: the printable character that stands for each byte in a vocabulary string.

    Printable Latin-1 bytes stand for themselves; the others get the characters from U+0100 on, in byte order.
    """
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(0x100 + i): b for i, b in enumerate(others)}}


#: Byte-level vocabulary character -> the byte it stands for (``"Ġ"`` -> 32).
BYTE_OF_CHAR = _byte_alphabet()


def byte_level_bytes(token: str) -> bytes:
    """The bytes a byte-level vocabulary string stands for; a string with any character outside the alphabet
    (an added token such as ``<｜User｜>``) stands for its own UTF-8, as the ``ByteLevel`` decoder has it.

    >>> byte_level_bytes("Ġhello"), byte_level_bytes("<｜User｜>")
    (b' hello', b'<\xef\xbd\x9cUser\xef\xbd\x9c>')
    """
    try:
        return bytes(map(BYTE_OF_CHAR.__getitem__, token))
    except KeyError:
        return token.encode("utf-8")


def pipeline_steps(obj: dict | None, key: str) -> list[dict]:
    """The steps of a pipeline part: ``[]`` for none, the items of a ``Sequence`` (flattened), else ``[obj]``.

    >>> pipeline_steps({"type": "Sequence", "normalizers": [{"type": "NFC"}]}, "normalizers")
    [{'type': 'NFC'}]
    """
    if obj is None:
        return []
    if not isinstance(obj, dict):
        raise TokenizerFileError(f"a pipeline step must be an object, not {obj!r}")
    if obj.get("type") == "Sequence":
        items = obj.get(key) or []
        if not isinstance(items, list):
            raise TokenizerFileError(f'a Sequence needs a list of "{key}"')
        return [step for item in items for step in pipeline_steps(item, key)]
    return [obj]


#: What Python's JSON parser says, in words (the start of its message -> ours).
_JSON_PROBLEMS = {
    "Expecting value": "a value was expected",
    "Expecting ',' delimiter": "a comma was expected",
    "Expecting ':' delimiter": "a colon was expected",
    "Expecting property name enclosed in double quotes": "a key in double quotes was expected",
    "Invalid control character": "a string holds a raw control character (a tab or line break)",
    "Invalid \\uXXXX escape": "a \\u escape is not four hex digits",
    "Invalid \\escape": "a backslash escape is not valid",
    "Extra data": "more text follows the end of the JSON",
}


def json_error(exc: json.JSONDecodeError, subject: str = "this tokenizer.json file") -> str:
    r"""Why ``subject`` is not valid JSON, in words, with the line and column: a file cut short says so.

    >>> def error(text):
    ...     try:
    ...         json.loads(text)
    ...     except json.JSONDecodeError as exc:
    ...         return json_error(exc)
    >>> error('{"a": 1,\n  "b" 2}')
    'this tokenizer.json file is not valid JSON: a colon was expected at line 2, column 7'
    >>> error('{"model": {"vocab": {"a": 0')
    'this tokenizer.json file is cut short: its JSON stops at line 1, column 28 before it is complete'
    """
    doc = exc.doc
    if exc.msg.startswith("Unterminated string") or exc.pos >= len(doc.rstrip()):
        line = doc.count("\n") + 1
        column = len(doc) - doc.rfind("\n")
        return f"{subject} is cut short: its JSON stops at line {line}, column {column} before it is complete"
    what = next((words for start, words in _JSON_PROBLEMS.items() if exc.msg.startswith(start)), exc.msg.lower())
    return f"{subject} is not valid JSON: {what} at line {exc.lineno}, column {exc.colno}"


_U64_MAX = (1 << 64) - 1
_POW10 = [float(f"1e{k}") for k in range(309)]


def serde_float(text: str) -> float:
    """A JSON number with a fraction or an exponent, read as Rust's ``serde_json`` reads it into a 64-bit float
    (without its ``float_roundtrip`` feature, as ``tokenizers`` is built): the digits that fit a 64-bit integer, that
    integer made a float, then multiplied or divided by a power of ten. That is not always the nearest float to the
    decimal (Python's reading), and a Unigram model's scores must be the library's to the last bit.

    >>> serde_float("-1.45122807530199209") == float("-1.45122807530199209")
    False
    >>> serde_float("-7.527526800268718") == float("-7.527526800268718"), serde_float("1e-400"), serde_float("-0.0")
    (True, 0.0, -0.0)
    """
    body = text[1:] if text.startswith("-") else text
    mantissa, _, exp_text = body.replace("E", "e").partition("e")
    whole, _, fraction = mantissa.partition(".")
    significand, exponent, full = 0, 0, False
    for digit in whole:
        if full or significand * 10 + int(digit) > _U64_MAX:
            full = True
            exponent += 1  # an integer part too long: its last digits count only as powers of ten
        else:
            significand = significand * 10 + int(digit)
    for digit in fraction:
        if full or significand * 10 + int(digit) > _U64_MAX:
            full = True  # the fraction's digits past 64 bits are dropped
        else:
            significand = significand * 10 + int(digit)
            exponent -= 1
    if exp_text:
        exp_value = int(exp_text)
        if abs(exp_value) > 2**31 - 1:
            if significand and exp_value > 0:
                raise ValueError(f"the number {text} is out of range")
            return -0.0 if text.startswith("-") else 0.0
        exponent = max(-(2**31), min(2**31 - 1, exponent + exp_value))
    f = float(significand)
    while True:
        if abs(exponent) <= 308:
            if exponent >= 0:
                f *= _POW10[exponent]
                if f == float("inf"):
                    raise ValueError(f"the number {text} is out of range")
            else:
                f /= _POW10[-exponent]
            break
        if f == 0.0:
            break
        if exponent >= 0:
            raise ValueError(f"the number {text} is out of range")
        f /= 1e308
        exponent += 308
    return -f if text.startswith("-") else f


def load_json(data: bytes | str, subject: str = "this tokenizer.json file"):
    """``data`` parsed as JSON, or :class:`TokenizerFileError` saying, in words, where and why it is not JSON (a
    file cut inside a character is cut short, not a file of another encoding). Numbers with a fraction or an
    exponent are read as the library reads them (:func:`serde_float`)."""
    try:
        if isinstance(data, bytes):
            try:
                data = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                if exc.end != len(data) or exc.reason != "unexpected end of data":
                    raise
                data = data[: exc.start].decode("utf-8-sig")
        return json.loads(data, parse_float=serde_float)
    except UnicodeDecodeError:
        raise TokenizerFileError(f"{subject} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise TokenizerFileError(json_error(exc, subject)) from None
    except ValueError as exc:  # a number too large for a 64-bit float
        raise TokenizerFileError(f"{subject} has a number the library cannot read: {exc}") from None
    except RecursionError:
        raise TokenizerFileError(f"{subject} nests too deeply (thousands of levels of lists or objects) to be "
                                 "read; a tokenizer file nests a few levels") from None


def parse_tokenizer_json(data: bytes | str) -> TokenizerJSON:
    """Parse and check a ``tokenizer.json``; raise :class:`TokenizerFileError` saying what is wrong."""
    obj = load_json(data)
    if not isinstance(obj, dict) or not isinstance(obj.get("model"), dict):
        raise TokenizerFileError('this is not a Hugging Face tokenizer.json file: it has no "model" object')
    model = obj["model"]
    kind = model.get("type") or ("BPE" if "merges" in model else "WordPiece" if "max_input_chars_per_word" in model else "unknown")
    if kind not in MODEL_TYPES:
        raise UnsupportedTokenizerError(
            f"{kind} tokenizers are not supported yet; Tokenplay runs BPE, WordPiece, Unigram and WordLevel "
            "tokenizer.json files"
        )
    if kind == "BPE":
        if model.get("continuing_subword_prefix"):
            raise UnsupportedTokenizerError(
                f"BPE models with a continuing_subword_prefix ({model['continuing_subword_prefix']!r}) are not "
                "supported yet"
            )
        suffix = model.get("end_of_word_suffix")
        if suffix is not None and not isinstance(suffix, str):
            raise TokenizerFileError(f"end_of_word_suffix must be a string or null, not {suffix!r}")
        if model.get("dropout"):
            raise UnsupportedTokenizerError("BPE dropout (random merges) is not supported; set dropout to null")
    scores = pieces = unk_id = None
    if kind == "Unigram":
        pieces, scores, vocab, unk_id = _unigram_vocab(model)
    else:
        vocab = _vocab(model.get("vocab"))
    merges = _merges(model.get("merges"), vocab) if kind == "BPE" else []
    added = _added_tokens(obj.get("added_tokens") or [], vocab, None if pieces is None else dict(enumerate(pieces)))
    unk = model.get("unk_token") if kind != "Unigram" else None if unk_id is None else pieces[unk_id]
    if kind == "WordLevel" and unk not in vocab:
        unk = None  # the library fails on a word it does not know, as the engine will
    if unk is not None and unk not in vocab:
        raise TokenizerFileError(f"the unknown token {unk!r} is not in the vocabulary")
    if kind == "WordPiece" and unk is None:
        raise TokenizerFileError("a WordPiece model needs an unk_token (the token of a word it cannot cut)")
    max_chars = model.get("max_input_chars_per_word", 100)
    if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 0:
        raise TokenizerFileError(f"max_input_chars_per_word must be a whole number, not {max_chars!r}")
    for part in ("normalizer", "pre_tokenizer", "decoder", "post_processor"):
        if obj.get(part) is not None and not isinstance(obj[part], dict):
            raise TokenizerFileError(f'"{part}" must be an object or null')
    try:
        from_post_processor(obj.get("post_processor"))
    except PostProcessorError as exc:
        raise TokenizerFileError(f"this tokenizer.json's post-processor cannot be read: {exc}") from None
    return TokenizerJSON(
        vocab=vocab,
        merges=merges,
        added_tokens=added,
        normalizer=obj.get("normalizer"),
        pre_tokenizer=obj.get("pre_tokenizer"),
        decoder=obj.get("decoder"),
        post_processor=obj.get("post_processor"),
        unk_token=unk,
        byte_fallback=bool(model.get("byte_fallback")),
        fuse_unk=bool(model.get("fuse_unk")) or kind == "Unigram",  # Unigram always fuses unknown runs
        ignore_merges=bool(model.get("ignore_merges")),
        model_type=kind,
        continuing_subword_prefix=(model.get("continuing_subword_prefix", "##") or "") if kind == "WordPiece" else "",
        max_input_chars_per_word=max_chars,
        scores=scores,
        pieces=pieces,
        unk_id=unk_id,
        end_of_word_suffix=(model.get("end_of_word_suffix") or "") if kind == "BPE" else "",
    )


def _unigram_vocab(model: dict) -> tuple[list[str], list[float], dict[str, int], int | None]:
    """A Unigram model's pieces and scores in id order, its piece -> id lookup (a piece listed twice: the later
    id, as the library's lookup keeps it) and the unknown piece's id."""
    entries = model.get("vocab")
    if not isinstance(entries, list) or not entries:
        raise TokenizerFileError('a Unigram model needs a "vocab" list of [piece, score] pairs')
    pieces: list[str] = []
    scores: list[float] = []
    for tid, entry in enumerate(entries):
        if (
            not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str)
            or not isinstance(entry[1], (int, float)) or isinstance(entry[1], bool)
        ):
            raise TokenizerFileError(f"Unigram vocabulary entry {tid} is {entry!r}; each entry is [piece, score]")
        if not entry[0]:
            raise UnsupportedTokenizerError(f"Unigram vocabulary entry {tid} is an empty piece, which cannot be matched")
        score = float(entry[1])
        if score != score or score in (float("inf"), float("-inf")):
            raise TokenizerFileError(f"Unigram vocabulary entry {tid} ({entry[0]!r}) has no finite score")
        pieces.append(entry[0])
        scores.append(score)
    unk_id = model.get("unk_id")
    if unk_id is not None and (not isinstance(unk_id, int) or isinstance(unk_id, bool) or not 0 <= unk_id < len(pieces)):
        raise TokenizerFileError(f"the Unigram unk_id {unk_id!r} is not the id of a piece")
    return pieces, scores, {piece: tid for tid, piece in enumerate(pieces)}, unk_id


def _vocab(vocab) -> dict[str, int]:
    if not isinstance(vocab, dict) or not vocab:
        raise TokenizerFileError('the model has no "vocab" object of token -> id')
    seen: dict[int, str] = {}
    for token, tid in vocab.items():
        if not isinstance(tid, int) or isinstance(tid, bool) or tid < 0:
            raise TokenizerFileError(f"vocabulary entry {token!r} has id {tid!r}; ids are whole numbers from 0")
        if tid in seen:
            raise TokenizerFileError(f"ids collide: {seen[tid]!r} and {token!r} both have id {tid}")
        seen[tid] = token
    return vocab


def _merges(merges, vocab: dict[str, int]) -> list[tuple[str, str]]:
    if merges is None:
        return []
    if not isinstance(merges, list):
        raise TokenizerFileError('"merges" must be a list')
    try:  # the whole list at C speed; the slow loop below runs only to say what is wrong
        pairs = merges if all(map(list.__instancecheck__, merges)) else [m.split(" ") for m in merges]
        if set(map(len, pairs)) <= {2}:
            lefts, rights = zip(*pairs) if pairs else ((), ())
            if vocab.keys() >= {*lefts, *rights, *map(add, lefts, rights)}:
                return list(zip(lefts, rights))
    except (TypeError, ValueError, AttributeError):
        pass
    for rank, merge in enumerate(merges):
        parts = merge.split(" ") if isinstance(merge, str) else merge if isinstance(merge, list) else []
        if len(parts) != 2 or not all(isinstance(part, str) for part in parts):
            raise TokenizerFileError(f"merge {rank} is {merge!r}; a merge is two tokens ('a b' or [a, b])")
        a, b = parts
        for token in (a, b, a + b):
            if token not in vocab:
                raise TokenizerFileError(f"merge {rank} ({a!r}, {b!r}) uses {token!r}, which is not in the vocabulary")
    raise TokenizerFileError('"merges" is not a list of token pairs')


def _added_tokens(entries, vocab: dict[str, int], by_id: dict[int, str] | None = None) -> list[AddedToken]:
    if not isinstance(entries, list):
        raise TokenizerFileError('"added_tokens" must be a list')
    if by_id is None:
        by_id = {tid: token for token, tid in vocab.items()}
    added: list[AddedToken] = []
    seen: dict[int, str] = {}
    for entry in entries:
        try:
            token = AddedToken(
                id=entry["id"],
                content=entry["content"],
                **{k: bool(entry.get(k, False)) for k in ("special", "single_word", "lstrip", "rstrip", "normalized")},
            )
        except (KeyError, TypeError):
            raise TokenizerFileError(f"added token {entry!r} needs an integer id and a text content") from None
        if not isinstance(token.id, int) or token.id < 0 or not isinstance(token.content, str) or not token.content:
            raise TokenizerFileError(f"added token {entry!r} needs an integer id and a non-empty text content")
        if token.id in seen and seen[token.id] != token.content:
            raise TokenizerFileError(f"ids collide: added tokens {seen[token.id]!r} and {token.content!r} share id {token.id}")
        if by_id.get(token.id, token.content) != token.content:
            raise TokenizerFileError(
                f"ids collide: added token {token.content!r} has id {token.id}, "
                f"which the vocabulary gives to {by_id[token.id]!r}"
            )
        seen[token.id] = token.content
        added.append(token)
    return added
