"""The reference libraries' view of a BPE model, for checking explanations: each model's own merge ranks, its ids
for a text, and its ids for one pre-token on its own, read from tiktoken, Hugging Face ``tokenizers`` and
``sentencepiece`` (and the shipped files they load), never from Tokenplay's engines.

A referee works in the model's symbol space: bytes for byte-level BPE, characters (``▁`` for a space) for
SentencePiece-style models. ``rank(left, right)`` is the rank of merging two parts (lower merges first; ``None``:
they never merge), ``parts(ids)`` turns ids back into parts (a character written as byte-fallback pieces is one
part again), ``single(text)`` encodes one pre-token on its own where the library can (``None`` where it cannot).
:class:`Characters` is a tokenizer that is not BPE, for the refusals.
"""

from __future__ import annotations

import functools
import orjson

import sentencepiece as spm
import tiktoken
from helpers.oracles import tiktoken_encoding
from tokenizers import Tokenizer as HFTokenizer

from app.engines import datafiles
from app.engines.base import Tokenizer
from app.engines.huggingface.npm_models import NPM_MODELS

OPENAI = ("gpt2", "p50k_base", "cl100k_base", "o200k_base", "o200k_harmony")
MISTRAL = "sentencepiece/mistral-7b-v0.1.model"


@functools.cache
def gpt2_byte_chars() -> dict[int, str]:
    """GPT-2's printable stand-in for every byte (the alphabet byte-level tokenizer.json files are written in)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


class TiktokenReferee:
    """tiktoken: a pair ranks as its joined bytes; ``_encode_single_piece`` is tiktoken's BPE of one pre-token."""

    chars = False

    def __init__(self, encoding: tiktoken.Encoding):
        self.encoding = encoding
        self.ranks = encoding._mergeable_ranks
        self.bytes_of = {i: b for b, i in self.ranks.items()}

    def symbols(self, text: str) -> list[bytes]:
        return [bytes([b]) for b in text.encode("utf-8")]

    def rank(self, left: bytes, right: bytes) -> int | None:
        return self.ranks.get(left + right)

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(text)

    def single(self, text: str) -> list[int]:
        return self.encoding._encode_single_piece(text.encode("utf-8"))

    def parts(self, ids: list[int]) -> list[bytes]:
        return [self.bytes_of[i] for i in ids]

    def ids(self, parts: list[bytes]) -> list[int]:
        return [self.ranks[p] for p in parts]


def _merges(spec: dict) -> list[tuple[str, str]]:
    return [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in spec["model"]["merges"]]


class HFByteReferee:
    """A byte-level tokenizer.json served by Hugging Face ``tokenizers``; ranks are places in its merges list."""

    chars = False

    def __init__(self, data: bytes):
        self.library = HFTokenizer.from_str(data.decode("utf-8"))
        self.library.encode_special_tokens = True
        spec = orjson.loads(data)
        to_byte = {c: b for b, c in gpt2_byte_chars().items()}
        as_bytes = functools.cache(lambda s: bytes(to_byte[c] for c in s))
        self.pairs = {(as_bytes(a), as_bytes(b)): r for r, (a, b) in enumerate(_merges(spec))}
        # entries outside the byte alphabet are added tokens written into the vocabulary (DeepSeek's markup)
        self.vocab = {as_bytes(t): i for t, i in spec["model"]["vocab"].items() if all(c in to_byte for c in t)}
        self.bytes_of = {i: b for b, i in self.vocab.items()}

    def symbols(self, text: str) -> list[bytes]:
        return [bytes([b]) for b in text.encode("utf-8")]

    def rank(self, left: bytes, right: bytes) -> int | None:
        return self.pairs.get((left, right))

    def encode(self, text: str) -> list[int]:
        return self.library.encode(text, add_special_tokens=False).ids

    def single(self, text: str) -> list[int]:
        chars = gpt2_byte_chars()
        return [t.id for t in self.library.model.tokenize("".join(chars[b] for b in text.encode("utf-8")))]

    def parts(self, ids: list[int]) -> list[bytes]:
        return [self.bytes_of[i] for i in ids]

    def ids(self, parts: list[bytes]) -> list[int]:
        return [self.vocab[p] for p in parts]


class _PieceReferee:
    """What SentencePiece-style referees share: characters as symbols, byte-fallback pieces folded back into the
    character they spell."""

    chars = True

    def piece(self, i: int) -> str:
        raise NotImplementedError

    def piece_id(self, piece: str) -> int | None:
        raise NotImplementedError

    def symbols(self, text: str) -> list[str]:
        return list(text)

    def parts(self, ids: list[int]) -> list[str]:
        out: list[str] = []
        pending = bytearray()
        for i in ids:
            piece = self.piece(i)
            if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
                pending.append(int(piece[3:5], 16))
                try:
                    out.append(pending.decode("utf-8"))
                    pending.clear()
                except UnicodeDecodeError:
                    pass
                continue
            out.append(piece)
        assert not pending, "byte-fallback pieces that spell no whole character"
        return out

    def ids(self, parts: list[str]) -> list[int]:
        out: list[int] = []
        for p in parts:
            found = self.piece_id(p)
            out.extend([found] if found is not None else [self.piece_id(f"<0x{b:02X}>") for b in p.encode("utf-8")])
        return out


class HFPieceReferee(_PieceReferee):
    """A SentencePiece-style tokenizer.json (Gemma 3) served by Hugging Face ``tokenizers``."""

    def __init__(self, data: bytes):
        self.library = HFTokenizer.from_str(data.decode("utf-8"))
        self.library.encode_special_tokens = True
        spec = orjson.loads(data)
        self.pairs = {pair: r for r, pair in enumerate(_merges(spec))}
        self.vocab = spec["model"]["vocab"]
        self.by_id = {i: p for p, i in self.vocab.items()}

    def rank(self, left: str, right: str) -> int | None:
        return self.pairs.get((left, right))

    def encode(self, text: str) -> list[int]:
        return self.library.encode(text, add_special_tokens=False).ids

    def single(self, text: str) -> list[int]:
        return [t.id for t in self.library.model.tokenize(text)]

    def piece(self, i: int) -> str:
        return self.by_id[i]

    def piece_id(self, piece: str) -> int | None:
        return self.vocab.get(piece)


class SentencePieceReferee(_PieceReferee):
    """A SentencePiece ``.model`` run by the ``sentencepiece`` library: a pair ranks as minus the score of the
    joined piece, when that piece is an ordinary one (control, unknown and byte pieces are never merged into)."""

    def __init__(self, model_proto: bytes):
        self.library = spm.SentencePieceProcessor(model_proto=model_proto)

    def rank(self, left: str, right: str) -> float | None:
        i = self.piece_id(left + right)
        return None if i is None else -self.library.GetScore(i)

    def encode(self, text: str) -> list[int]:
        return self.library.encode(text)

    def single(self, text: str) -> None:
        return None  # the library has no call for one stretch of normalized text

    def piece(self, i: int) -> str:
        return self.library.IdToPiece(i)

    def piece_id(self, piece: str) -> int | None:
        i = self.library.PieceToId(piece)
        sp = self.library
        if sp.IdToPiece(i) != piece or sp.IsUnknown(i) or sp.IsControl(i) or sp.IsByte(i):
            return None
        return i


@functools.cache
def referee(name: str):
    """The referee of a registered model name (the library-served entry's name)."""
    if name in OPENAI:
        return TiktokenReferee(tiktoken_encoding(name))
    if name == "mistral-7b":
        return SentencePieceReferee(datafiles.verified_bytes(MISTRAL))
    data = datafiles.data_path(NPM_MODELS[name].tokenizer_file).read_bytes()
    return HFPieceReferee(data) if NPM_MODELS[name].pieces else HFByteReferee(data)


def tiktoken_referee(ranks: dict[bytes, int], pattern: str | None) -> TiktokenReferee:
    """tiktoken itself on ranks Tokenplay trained (custom-bpe, a lab run); ``None``: the whole text is one piece."""
    return TiktokenReferee(
        tiktoken.Encoding("trained", pat_str=pattern or r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})
    )


class RunReferee:
    """A character-level lab run with the ``whitespace`` pattern, by its own merge records: a pair ranks as the first
    merge of those two parts' bytes; a word starts as its characters and ``</w>``, the whitespace between words
    (a pre-token too) as its characters."""

    chars = False

    def __init__(self, steps):
        self.pairs: dict[tuple[bytes, bytes], int] = {}
        for rank, step in enumerate(steps):
            self.pairs.setdefault((step.left, step.right), rank)

    def symbols(self, text: str) -> list[bytes]:
        return [c.encode("utf-8") for c in text] + ([] if text.isspace() else [b"</w>"])

    def rank(self, left: bytes, right: bytes) -> int | None:
        return self.pairs.get((left, right))


class Characters(Tokenizer):
    """One token per character (its code point): a tokenizer that is not BPE."""

    name = "characters"
    n_vocab = 0x110000

    def encode(self, text, *, allow_special=False):
        return [ord(c) for c in text]

    def token_bytes(self, token_id):
        return chr(token_id).encode()
