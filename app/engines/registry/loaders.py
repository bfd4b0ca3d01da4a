"""Build a tokenizer from the bytes of a tokenizer file: the engine side of "bring your own tokenizer".

Formats, told apart by their content (:func:`detect_format`; a file's name never decides):

- a Hugging Face ``tokenizer.json`` (BPE, WordPiece, Unigram and WordLevel models, with any normalizer,
  pre-tokenizer and decoder our engines run exactly; anything else is refused, named): run by our own engines
  (byte-level BPE, BPE over characters, WordPiece, Unigram, WordLevel) or, with ``engine="huggingface"``, by
  Hugging Face ``tokenizers``;
- a BERT ``vocab.txt`` (one WordPiece token per line, ``[UNK]`` among them), run with BERT's pipeline;
- a Tokenplay BPE model (``tokenplay train --out``, JSON with ``"format": "tokenplay-bpe"``);
- a ``.tiktoken`` rank file (``base64 rank`` lines), with a split pattern (one of our pattern names or a regex)
  and optional special tokens;
- a SentencePiece ``.model`` (its protobuf bytes; BPE and unigram models; word and char models are refused).

Everything is checked before a tokenizer is returned, so bad input raises a
:class:`~..pipeline.tokenizer_json.TokenizerFileError` (a :class:`~..errors.TokenplayError`) saying what is wrong in words a
user knows (JSON that is not valid says where, with its line and column; a file of none of these kinds gets one
sentence naming the kinds read; never the file format's own jargon), and nothing half-built escapes: :class:`~..pipeline.tokenizer_json.UnsupportedTokenizerError` for a valid file of a kind not supported
yet (``the UnicodeScripts pre-tokenizer is not supported yet``), :class:`FileTooLargeError` for a file over
:data:`MAX_FILE_BYTES` (refused before it is parsed), :class:`LoaderError` for the rest. The caller decides
where the tokenizer is registered; this module does not touch the registry or the web layer.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

from ..base import Tokenizer
from ..errors import TokenplayError
from ..pipeline.post_processor import from_post_processor
from .memory import release_freed_memory
from ..pipeline.tokenizer_json import TokenizerFileError, json_error, load_json, parse_tokenizer_json

if TYPE_CHECKING:
    from typing_extensions import Unpack

MAX_FILE_BYTES = 64 << 20
ENGINES = ("tokenplay", "huggingface")
#: The kinds of file read, as the messages name them.
ACCEPTED = "a Hugging Face tokenizer.json, a BERT vocab.txt, a .tiktoken rank file or a SentencePiece .model"


class LoaderError(TokenizerFileError):
    """A tokenizer file that cannot be loaded; the message says why."""


class FileTooLargeError(LoaderError):
    """A tokenizer file over :data:`MAX_FILE_BYTES`."""


def check_size(data: bytes) -> None:
    if len(data) > MAX_FILE_BYTES:
        raise FileTooLargeError(
            f"the file has {len(data):,} bytes; tokenizer files up to {MAX_FILE_BYTES >> 20} MB are accepted"
        )


def tokenizer_from_json(
    data: bytes | str, *, name: str = "", engine: str = "tokenplay", untrusted: bool = False
) -> Tokenizer:
    """A ``tokenizer.json`` run by our engine (``tokenplay``) or by Hugging Face ``tokenizers`` (``untrusted``: a
    file a user brought, whose regexes the library then runs in a child process under the request's budget; our
    engine runs every regex a file brings under it)."""
    if engine not in ENGINES:
        raise LoaderError(f"unknown engine {engine!r}; choose one of: {', '.join(ENGINES)}")
    try:
        return _build_from_json(data, name, engine, untrusted)
    finally:
        release_freed_memory()  # the parse left hundreds of MB of freed heap for a big model


def _build_from_json(data: bytes | str, name: str, engine: str, untrusted: bool = False) -> Tokenizer:
    if engine == "huggingface":
        from ..huggingface.library import HuggingFaceTokenizer

        return HuggingFaceTokenizer(data, name=name, untrusted=untrusted)
    spec = parse_tokenizer_json(data)
    tok = _native_json(spec, name)
    tok.added_specials = from_post_processor(spec.post_processor)
    return tok


def _native_json(spec, name: str) -> Tokenizer:
    if spec.model_type == "WordPiece":
        from ..wordpiece.model import WordPieceTokenizer

        return WordPieceTokenizer(spec, name=name)
    if spec.model_type == "Unigram":
        from ..sentencepiece.unigram_json import UnigramJSONTokenizer

        return UnigramJSONTokenizer(spec, name=name)
    if spec.model_type == "WordLevel":
        from ..wordpiece.wordlevel import WordLevelTokenizer

        return WordLevelTokenizer(spec, name=name)
    if spec.end_of_word_suffix:
        from ..bpe.word_end_model import WordEndBPETokenizer

        return WordEndBPETokenizer(spec, name=name)
    from ..bpe.json_model import ByteLevelJSONTokenizer, runs_byte_level

    if runs_byte_level(spec):
        return ByteLevelJSONTokenizer(spec, name=name)
    from ..sentencepiece.json_model import SentencePieceJSONTokenizer  # every other BPE, over its pieces' characters

    return SentencePieceJSONTokenizer(spec, name=name)


def tokenizer_from_tiktoken(
    data: bytes,
    pattern: str = "gpt4",
    special_tokens: Mapping[str, int] | list[str] | tuple[str, ...] = (),
    *,
    name: str = "",
) -> Tokenizer:
    """A ``.tiktoken`` rank file run by our BPE engine with tiktoken's rules.

    ``pattern`` is one of our pattern names (``none``, ``gpt2``, ``gpt4``/``cl100k``, ``o200k``) or a split regex.
    ``special_tokens`` maps text to id, or lists texts that get the ids after the highest rank.
    """
    from ..bpe.model import RankTokenizer
    from ..bpe.patterns import compiled, pattern_regex

    ranks = parse_tiktoken_ranks(data)
    try:
        regex_str = pattern_regex(pattern)
    except ValueError:
        regex_str = pattern
        try:
            compiled(regex_str)
        except Exception as exc:  # regex.error and friends: the user's regex is broken
            raise LoaderError(f"the split pattern {pattern!r} is neither a known name nor a valid regex: {exc}") from None
    if not isinstance(special_tokens, Mapping):
        first = max(ranks.values()) + 1
        special_tokens = {s: first + i for i, s in enumerate(dict.fromkeys(special_tokens))}
    try:
        tok = RankTokenizer(ranks, regex_str, special_tokens)
    except TokenplayError as exc:
        raise LoaderError(f"cannot use this .tiktoken file: {exc}") from None
    tok.name = name
    return tok


def parse_tiktoken_ranks(data: bytes) -> dict[bytes, int]:
    """``base64(token) rank`` lines to a ranks dict, refusing anything else and colliding ranks or tokens. A last
    line without its line break that is refused is a file cut short, and says so."""
    ranks: dict[bytes, int] = {}
    seen: set[int] = set()
    lines = data.splitlines()
    cut = not data.endswith((b"\n", b"\r"))
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            try:
                token_b64, rank_text = line.split()
                token = base64.b64decode(token_b64, validate=True)
                rank = int(rank_text)
            except (ValueError, binascii.Error):
                raise LoaderError(
                    f"line {number:,} is not a base64 token and its rank, as every line of a .tiktoken file is"
                ) from None
            if rank < 0:
                raise LoaderError(f"line {number:,}: rank {rank} is negative")
            if token in ranks or rank in seen:
                raise LoaderError(
                    f"line {number:,}: ids collide ({'token' if token in ranks else 'rank'} listed twice)"
                )
        except LoaderError:
            if cut and number == len(lines):
                raise LoaderError(f"this .tiktoken file is cut short: its last line ({number:,}) is incomplete") from None
            raise
        ranks[token] = rank
        seen.add(rank)
    if not ranks:
        raise LoaderError("the .tiktoken file has no ranks")
    return ranks


def tokenizer_from_sentencepiece(data: bytes, *, name: str = "") -> Tokenizer:
    """A SentencePiece ``.model`` (BPE or unigram) run by our SentencePiece engines."""
    import struct

    from ..sentencepiece.proto import ModelFormatError, ModelProto, ModelTruncatedError
    from ..sentencepiece.unigram import sentencepiece_tokenizer

    try:
        model = ModelProto.parse(data)
    except ModelTruncatedError as exc:
        raise LoaderError(f"this SentencePiece .model file is cut short: {exc}; the whole file is needed") from None
    except ModelFormatError as exc:
        raise LoaderError(f"this SentencePiece .model file is damaged: {exc}") from None
    except (ValueError, IndexError, struct.error):
        raise LoaderError("this SentencePiece .model file is damaged and cannot be read") from None
    try:
        return sentencepiece_tokenizer(model, name=name)
    except TokenplayError as exc:
        raise LoaderError(str(exc)) from None


def tokenizer_from_tokenplay_bpe(data: bytes | str, *, name: str = "") -> Tokenizer:
    """A model saved by ``tokenplay train --out`` (Tokenplay's BPE JSON)."""
    from ..bpe.model import BPETokenizer

    obj = load_json(data, "this Tokenplay BPE model file")
    try:
        return BPETokenizer.from_json(obj, name=name)
    except TokenplayError as exc:
        raise LoaderError(str(exc)) from None


def detect_format(data: bytes) -> str:
    """``tokenizer.json``, ``tokenplay-bpe``, ``tiktoken``, ``vocab.txt`` (BERT WordPiece), ``sentencepiece``,
    ``empty`` or ``unknown``, from the content alone.

    >>> detect_format(b'{"model": {}}'), detect_format(b"IQ== 0\\n"), detect_format(b"# README"), detect_format(b" ")
    ('tokenizer.json', 'tiktoken', 'unknown', 'empty')
    """
    from ..sentencepiece.proto import looks_like_model

    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head:
        return "empty" if not data.strip(b"\xef\xbb\xbf \t\r\n") else "unknown"
    if head.startswith(b"{"):
        return "tokenplay-bpe" if b'"tokenplay-bpe"' in head else "tokenizer.json"
    if b"\n[UNK]\n" in data[:65536] or data.startswith(b"[UNK]\n") or b"\n[UNK]\r\n" in data[:65536]:
        return "vocab.txt"
    first = head.split(b"\n", 1)[0].split()
    if len(first) == 2 and first[1].isdigit():
        try:
            base64.b64decode(first[0], validate=True)
            return "tiktoken"
        except binascii.Error:
            pass
    if looks_like_model(data):
        return "sentencepiece"
    return "unknown"


def refuse_unknown(data: bytes, kind: str, filename: str = "") -> None:
    """Raise the error for a file of no kind read: empty; named ``.json`` but not JSON (where and why, with the
    line and column); anything else (a README, random bytes), one sentence naming the kinds read."""
    if kind == "empty":
        raise LoaderError(f"the file is empty; Tokenplay reads {ACCEPTED}")
    if filename.lower().endswith(".json"):
        import json

        try:
            json.loads(data)
        except UnicodeDecodeError:
            raise LoaderError("this file is named .json but is not UTF-8 text, as JSON is") from None
        except json.JSONDecodeError as exc:
            raise LoaderError(json_error(exc, "this file (named .json)")) from None
        except RecursionError:
            raise LoaderError("this file (named .json) nests too deeply (thousands of levels of lists or objects) "
                              "to be read; a tokenizer file nests a few levels") from None
    raise LoaderError(f"this is not a tokenizer file; Tokenplay reads {ACCEPTED}")


def precheck(data: bytes, pattern: str | None = None, filename: str = "") -> str:
    """The file's kind (:func:`detect_format`), after the checks that need no build: its size, a kind read, a split
    pattern only for a ``.tiktoken`` file. Raises the loader's error otherwise."""
    check_size(data)
    kind = detect_format(data)
    if kind in ("empty", "unknown"):
        refuse_unknown(data, kind, filename)
    if pattern is not None and kind != "tiktoken":
        raise LoaderError(f"a split pattern applies to .tiktoken files only; this is a {kind} file")
    return kind


def user_regexes(data: bytes, kind: str, pattern: str | None = None) -> list[str]:
    """The regexes a tokenizer file brings, as the engines run them: a ``tokenizer.json``'s ``Split`` and
    ``Replace`` steps' (normalizer, pre-tokenizer, decoder), a ``.tiktoken`` file's own split pattern."""
    if kind == "tiktoken":
        from ..bpe.patterns import pattern_regex

        try:
            return [] if pattern is None or pattern_regex(pattern) is not None or pattern == "none" else [pattern]
        except ValueError:
            return [pattern]
    if kind != "tokenizer.json":
        return []
    from ..pipeline.onig_regex import translate
    from ..pipeline.tokenizer_json import pipeline_steps

    try:
        obj = load_json(data)
    except TokenizerFileError:
        return []
    found: list[str] = []
    parts = (("normalizer", "normalizers"), ("pre_tokenizer", "pretokenizers"), ("decoder", "decoders"))
    for part, key in parts:
        try:
            steps = pipeline_steps(obj.get(part), key) if isinstance(obj, dict) else []
        except TokenizerFileError:
            continue
        for step in steps:
            regex_text = step.get("pattern", {}).get("Regex") if isinstance(step.get("pattern"), dict) else None
            if isinstance(regex_text, str):
                try:
                    found.append(translate(regex_text))
                except Exception:  # noqa: BLE001 - a regex the loader refuses in words when it builds the file
                    continue
    return list(dict.fromkeys(found))


def regex_warnings(data: bytes, kind: str, pattern: str | None = None, *, budget_seconds: float | None = None) -> list[str]:
    """A warning in words for each regex of the file that backtracks catastrophically on one of a few adversarial
    texts (:func:`app.engines.budget.probe_pattern`): requests on it will be stopped at their budget."""
    import regex

    from ..budget import probe_pattern

    warnings = []
    for source in user_regexes(data, kind, pattern):
        try:
            compiled = regex.compile(source)
        except regex.error:
            continue
        warning = probe_pattern(compiled, budget_seconds=budget_seconds)
        if warning is not None:
            warnings.append(warning)
    return warnings


class LoadOptions(TypedDict, total=False):
    """What a tokenizer file is loaded with besides its bytes (each has its default in :data:`LOAD_DEFAULTS`):
    ``pattern`` and ``special_tokens`` are for ``.tiktoken`` files (pattern None: ``gpt4``), ``engine`` for
    ``tokenizer.json`` files. ``filename`` (the name a user gave the file) only words the error for a file named
    ``.json`` that is not JSON. ``untrusted``: a file a user brought (see :func:`tokenizer_from_json`)."""

    pattern: str | None
    special_tokens: Mapping[str, int] | list[str] | tuple[str, ...]
    engine: str
    filename: str
    untrusted: bool


LOAD_DEFAULTS: LoadOptions = {
    "pattern": None, "special_tokens": (), "engine": "tokenplay", "filename": "", "untrusted": False,
}


def load_options(options: LoadOptions) -> LoadOptions:
    """``options`` with a default for each one left out; a TypeError names an option there is not."""
    unknown = sorted(options.keys() - LOAD_DEFAULTS.keys())
    if unknown:
        raise TypeError(f"unknown load option(s): {', '.join(unknown)}; known: {', '.join(LOAD_DEFAULTS)}")
    return {**LOAD_DEFAULTS, **options}


def load_tokenizer(data: bytes, *, name: str = "", **options: Unpack[LoadOptions]) -> Tokenizer:
    """A tokenizer from any supported file (see the module docstring and :class:`LoadOptions`)."""
    o = load_options(options)
    pattern, special_tokens, engine = o["pattern"], o["special_tokens"], o["engine"]
    kind = precheck(data, pattern, o["filename"])
    if kind == "tiktoken":
        return tokenizer_from_tiktoken(data, pattern or "gpt4", special_tokens, name=name)
    if kind == "tokenizer.json":
        try:
            return tokenizer_from_json(data, name=name, engine=engine, untrusted=o["untrusted"])
        except TokenizerFileError:
            raise
        except TokenplayError as exc:
            raise LoaderError(str(exc)) from None
    if kind == "tokenplay-bpe":
        return tokenizer_from_tokenplay_bpe(data, name=name)
    if kind == "vocab.txt":
        from ..wordpiece.model import WordPieceTokenizer

        return WordPieceTokenizer.from_vocab_txt(data, name=name)
    return tokenizer_from_sentencepiece(data, name=name)
