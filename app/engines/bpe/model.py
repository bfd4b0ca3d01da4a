"""Tokenizers run by our own BPE engine: trained models (:class:`BPETokenizer`) and OpenAI's ranks.

:class:`RankTokenizer` is the shared part: ranks + split pattern + special tokens, encoded with tiktoken's
semantics by :class:`~app.engines.bpe.encoder.RankEncoder`. :class:`BPETokenizer` is a model we trained: its
vocabulary is always derived from its merges; it saves to and loads from a readable JSON format of our own
and exports the ``.tiktoken`` format. :class:`NativeOpenAITokenizer` runs ``gpt2``, ``p50k_base``,
``cl100k_base`` and ``o200k_base`` from ``tokenizers/openai`` (ids equal to tiktoken's, tested).

Saved format (``format: tokenplay-bpe``, ``version: 1``), JSON with one merge per line::

    {"format": "tokenplay-bpe", "version": 1, "pattern": "gpt4", "pattern_regex": "...",
     "special_tokens": {"<|endoftext|>": 4096}, "training": {...},
     "merges": [
      [101, 32],   <- merge 1 creates id 256 from ids 101 and 32
      ...]}
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..base import Tokenizer, VocabFacts, check_text
from ..errors import TokenplayError
from ..openai.encodings import ENCODINGS, mergeable_ranks
from ..training.steps import TrainResult
from .encoder import RankEncoder
from .patterns import name_of_regex, pattern_name, pattern_regex
from .trainer import RunOptions, train, vocab_from_merges

if TYPE_CHECKING:
    from typing_extensions import Unpack

FORMAT = "tokenplay-bpe"
VERSION = 1


class BPEModelError(TokenplayError):
    """A model file that cannot be loaded or a model that cannot be exported."""


class RankTokenizer(VocabFacts, Tokenizer):
    """Ranks (bytes -> id), a split regex and special tokens, run by our engine with tiktoken's semantics."""

    def __init__(
        self,
        ranks: Mapping[bytes, int],
        pattern: str | None,
        special_tokens: Mapping[str, int],
        decoder: Mapping[int, bytes] | None = None,
    ):
        self._special = dict(special_tokens)
        self.encoder = RankEncoder(ranks, pattern, self._special)
        self._decoder = dict(decoder) if decoder is not None else {r: b for b, r in ranks.items()}
        clash = [s for s, i in self._special.items() if i in self._decoder]
        if clash:
            raise BPEModelError(f"special token {clash[0]!r} reuses id {self._special[clash[0]]} of a normal token")
        ids = list(self._decoder) + list(self._special.values())
        self._n_vocab = max(ids) + 1 if ids else 0
        self._holes = len(set(ids)) != self._n_vocab
        # Special tokens that share an id (o200k_harmony's 200018) decode as the first one listed, as tiktoken does.
        self._special_text: dict[int, bytes] = {}
        for text, sid in self._special.items():
            self._special_text.setdefault(sid, text.encode("utf-8"))

    @property
    def pattern(self) -> str | None:
        return self.encoder.pattern

    @property
    def ranks(self) -> Mapping[bytes, int]:
        return self.encoder.ranks

    # -- contract ----------------------------------------------------------------------------------------
    def token_bytes(self, token_id: int) -> bytes:
        data = self._decoder.get(token_id)
        if data is None:
            data = self._special_text[token_id]
        return data

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids for ``text``; with ``allow_special`` false, special-token text is plain text (tiktoken's
        ``encode_ordinary``)."""
        check_text(text)
        if allow_special:
            return self.encoder.encode(text, self._special)
        return self.encoder.encode_ordinary(text)


class NativeOpenAITokenizer(RankTokenizer):
    """An OpenAI encoding's hash-checked ranks run by our engine (the same ids as tiktoken); ``n_vocab`` is tiktoken's
    own figure, the chat markup Tokenplay adds not counted."""

    def __init__(self, encoding: str):
        if encoding not in ENCODINGS:
            raise BPEModelError(f"unknown OpenAI encoding {encoding!r}; choose one of: {', '.join(ENCODINGS)}")
        spec = ENCODINGS[encoding]
        ranks = mergeable_ranks(encoding)
        super().__init__(ranks, spec.pattern, spec.special_tokens)
        self._id_bound, self._n_vocab = self._n_vocab, spec.reference_n_vocab(ranks)
        self.encoding_name = encoding
        self.name = f"native-{encoding}"


def ranks_from_vocab(vocab: Mapping[int, bytes]) -> dict[bytes, int]:
    """Bytes -> the lowest id with those bytes: ``ranks_from_vocab({0: b"a", 1: b"a"}) == {b"a": 0}``."""
    ranks: dict[bytes, int] = {}
    for i in sorted(vocab):
        ranks.setdefault(vocab[i], i)
    return ranks


class BPETokenizer(RankTokenizer):
    """A byte-level BPE model trained by Tokenplay: pattern, special tokens, merges in order."""

    def __init__(
        self,
        merges: Sequence[tuple[int, int]],
        pattern: str | None = "gpt4",
        special_tokens: Mapping[str, int] | Iterable[str] = (),
        *,
        name: str = "",
        training: dict | None = None,
    ):
        self.merges = [(int(a), int(b)) for a, b in merges]
        self.vocab = vocab_from_merges(self.merges)
        if pattern is None:
            pattern = "none"
        if pattern in ("custom",):
            raise BPEModelError("pattern 'custom' needs the regex itself; pass the regex string")
        try:
            self.pattern_name: str | None = pattern_name(pattern)
            regex_str = pattern_regex(pattern)
        except ValueError:
            self.pattern_name, regex_str = name_of_regex(pattern), pattern  # a custom split regex
        if not isinstance(special_tokens, Mapping):
            first = 256 + len(self.merges)
            special_tokens = {s: first + i for i, s in enumerate(dict.fromkeys(special_tokens))}
        super().__init__(ranks_from_vocab(self.vocab), regex_str, special_tokens, decoder=self.vocab)
        self.name = name
        self.training = dict(training or {})

    # -- training ----------------------------------------------------------------------------------------
    @classmethod
    def train(
        cls,
        text: str,
        vocab_size: int,
        pattern: str = "gpt4",
        special_tokens: Iterable[str] = (),
        tie_break: str = "first",
        *,
        name: str = "",
        min_count: int = 2,
        **options: Unpack[RunOptions],
    ) -> tuple[BPETokenizer, TrainResult]:
        """Train on ``text`` and return the model with the full step records (``options``: see RunOptions); a pair
        merges when it occurs ``min_count`` times or more."""
        specials = list(dict.fromkeys(special_tokens))
        result = train(text, vocab_size, pattern, specials, tie_break, min_count, **options)
        training = {
            "tie_break": tie_break,
            "min_count": min_count,
            "vocab_size": vocab_size,
            "stop_reason": result.stop_reason,
            "initial_tokens": result.initial_tokens,
            "counts": [s.count for s in result.steps],
            "replaced": [s.replaced for s in result.steps],
        }
        return cls(result.merges, pattern, specials, name=name, training=training), result

    # -- saving ------------------------------------------------------------------------------------------
    def to_json(self) -> str:
        """The saved form: one field per line, the training facts on one line, then one merge per line."""
        dump = partial(json.dumps, ensure_ascii=False)
        head = [
            f' "format": {dump(FORMAT)}',
            f' "version": {VERSION}',
            f' "pattern": {dump(self.pattern_name or "custom")}',
            f' "pattern_regex": {dump(self.pattern)}',
            f' "special_tokens": {dump(self.special_tokens)}',
            f' "training": {dump(self.training)}',
        ]
        merges = ",\n".join(f"  [{a}, {b}]" for a, b in self.merges)
        return "{\n" + ",\n".join(head) + f',\n "merges": [\n{merges}\n ]\n}}\n'

    def save(self, path: str | Path) -> Path:
        """Write the model as readable JSON (pattern, special tokens, merges in order)."""
        path = Path(path)
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @classmethod
    def from_json(cls, data: str | dict, *, name: str = "") -> BPETokenizer:
        try:
            obj = json.loads(data) if isinstance(data, str) else data
        except json.JSONDecodeError as exc:
            raise BPEModelError(f"not a Tokenplay BPE model (invalid JSON: {exc})") from None
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            raise BPEModelError(f'not a Tokenplay BPE model: expected "format": "{FORMAT}"')
        if obj.get("version") != VERSION:
            raise BPEModelError(f"model format version {obj.get('version')!r} is not supported (expected {VERSION})")
        merges = obj.get("merges")
        if not isinstance(merges, list) or not all(isinstance(m, list) and len(m) == 2 for m in merges):
            raise BPEModelError('"merges" must be a list of [left id, right id] pairs')
        pattern = obj.get("pattern", "gpt4")
        if pattern == "custom":
            pattern = obj.get("pattern_regex")
            if not isinstance(pattern, str):
                raise BPEModelError('a custom pattern needs its "pattern_regex"')
        try:
            return cls(
                merges, pattern, dict(obj.get("special_tokens") or {}), name=name, training=obj.get("training") or {}
            )
        except TokenplayError as exc:
            raise BPEModelError(f"invalid model: {exc}") from None

    @classmethod
    def load(cls, path: str | Path, *, name: str = "") -> BPETokenizer:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BPEModelError(f"model file {path} not found") from None
        return cls.from_json(text, name=name)

    # -- tiktoken ----------------------------------------------------------------------------------------
    def tiktoken_ranks_text(self) -> str:
        """The ``.tiktoken`` file body: ``base64(token) id`` per line, by id."""
        if len(set(self.vocab.values())) != len(self.vocab):
            raise BPEModelError(
                "two ids of this vocabulary have the same bytes; the .tiktoken format keys tokens by bytes "
                "and cannot hold it"
            )
        return "".join(f"{base64.b64encode(b).decode()} {i}\n" for i, b in sorted(self.vocab.items()))

    def export_tiktoken(self, path: str | Path) -> Path:
        """Write the ranks as a ``.tiktoken`` file (load it with ``tiktoken.load.load_tiktoken_bpe``)."""
        path = Path(path)
        path.write_text(self.tiktoken_ranks_text(), encoding="ascii")
        return path


CUSTOM_BPE_FILE = "custom-bpe/model.json"


def custom_bpe() -> BPETokenizer:
    """The shipped ``custom-bpe`` model from ``tokenizers/custom-bpe/model.json``, checked against the manifest."""
    from ..datafiles import verified_bytes

    return BPETokenizer.from_json(verified_bytes(CUSTOM_BPE_FILE).decode("utf-8"), name="custom-bpe")
