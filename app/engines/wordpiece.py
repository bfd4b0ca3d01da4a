"""WordPiece (BERT and its family) run by Tokenplay's own code, id for id with Hugging Face ``tokenizers``.

A WordPiece model is a vocabulary of whole-word pieces (``play``) and continuation pieces (``##ing``). Text is
normalized and cut into words by the file's pipeline (BERT's: clean text, space out CJK ideographs, strip accents,
lower-case; cut at whitespace and punctuation; see :mod:`.bert_text`), added tokens such as ``[CLS]`` being cut out
first (:mod:`.added_tokens`). Each word is then cut greedily, longest match first: from the start of the word, the
longest vocabulary piece that begins there (written with the ``##`` prefix unless it starts the word), then the
same from where it ended. A word longer than ``max_input_chars_per_word`` characters, or one with a stretch that
no piece covers, becomes a single ``[UNK]``. :func:`wordpiece_walk` records that walk for the lab's "encoding a
word" view.

The walk from a position tries at most as many lengths as the longest piece has characters, so a word costs its
length times that, never its length squared. :class:`WordPieceTokenizer` is built from a ``tokenizer.json``
(:func:`~.tokenizer_json.parse_tokenizer_json`) or from a BERT ``vocab.txt`` (:func:`parse_vocab_txt`, with
BERT's own pipeline). Decoding follows the ``WordPiece`` decoder (``##`` pieces glued to the one before, the
others after a space, then the library's clean-up of spaces before punctuation). Nothing here trains a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import regex

from .added_tokens import AddedVocabulary, added_token, input_spans
from .base import Tokenizer, check_text
from .bert_text import PUNCTUATION, SPLIT_SPACE, bert_normalizer, char_class
from .hf_normalizers import TextNormalizer
from .hf_pretokenizers import PreTokenizer
from .result import Token, TokenizeResult
from .tokenizer_json import TokenizerFileError, TokenizerJSON, UnsupportedTokenizerError, pipeline_steps
from .vocab_facts import VocabFacts

#: BERT's pipeline around a ``vocab.txt`` (what ``BertWordPieceTokenizer`` writes into a tokenizer.json).
BERT_NORMALIZER = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None}
BERT_PRE_TOKENIZER = {"type": "BertPreTokenizer"}
BERT_DECODER = {"type": "WordPiece", "prefix": "##", "cleanup": True}
BERT_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


@dataclass(frozen=True, slots=True)
class WalkStep:
    """One try of the greedy walk: ``candidate`` (prefix included) starting at ``start`` was or was not a piece."""

    start: int
    end: int
    candidate: str
    found: bool


def wordpiece_walk(word: str, vocab: dict[str, int], prefix: str = "##", longest: int | None = None) -> tuple[list[tuple[int, int, str]], list[WalkStep]]:
    """Cut ``word`` longest match first: ``(pieces as (start, end, piece), every try)``; no pieces when some
    stretch has no piece (the word is then one unknown token).

    >>> wordpiece_walk("unaffable", {"un": 0, "##aff": 1, "##able": 2, "##a": 3})[0]
    [(0, 2, 'un'), (2, 5, '##aff'), (5, 9, '##able')]
    """
    longest = longest or len(word)
    pieces: list[tuple[int, int, str]] = []
    tries: list[WalkStep] = []
    start = 0
    while start < len(word):
        end = min(len(word), start + longest)
        while end > start:
            candidate = word[start:end] if start == 0 else prefix + word[start:end]
            found = candidate in vocab
            tries.append(WalkStep(start, end, candidate, found))
            if found:
                break
            end -= 1
        if end == start:
            return [], tries
        pieces.append((start, end, candidate))
        start = end
    return pieces, tries


def parse_vocab_txt(data: bytes | str) -> list[str]:
    """The tokens of a BERT ``vocab.txt`` (one per line, the line number is the id), refusing anything else."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise TokenizerFileError("this is not a vocab.txt file: it is not UTF-8 text") from None
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    tokens = [t[:-1] if t.endswith("\r") else t for t in tokens]
    seen: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if not token or any(c.isspace() for c in token):
            raise TokenizerFileError(f"line {i + 1} of the vocab.txt is {token!r}; each line must be one token")
        if token in seen:
            raise TokenizerFileError(f"ids collide: {token!r} is on lines {seen[token] + 1} and {i + 1}")
        seen[token] = i
    if "[UNK]" not in seen:
        raise TokenizerFileError("the vocab.txt has no [UNK] token; is this a BERT WordPiece vocabulary?")
    return tokens


def vocab_from_word_starts(tokens: Sequence[str], marker: str = "\u2581") -> list[str]:
    """A vocabulary written with ``▁`` before word-initial pieces (TensorFlow.js's BERT vocabularies) in BERT's own
    notation: ``▁play`` -> ``play``, ``ing`` -> ``##ing``; ``[SPECIAL]`` tokens stay; the lone ``▁`` is BERT's
    ``[unused0]`` (which that notation overwrote).

    >>> vocab_from_word_starts(["[PAD]", "\u2581", "\u2581play", "ing"])
    ['[PAD]', '[unused0]', 'play', '##ing']
    """
    out = []
    for token in tokens:
        if token == marker:
            out.append("[unused0]")
        elif token.startswith("[") and token.endswith("]"):
            out.append(token)
        else:
            out.append(token[len(marker) :] if token.startswith(marker) else "##" + token)
    return out


def bert_spec(tokens: Sequence[str], *, lowercase: bool | None = None) -> TokenizerJSON:
    """A BERT tokenizer.json's parts for a ``vocab.txt`` (``lowercase`` None: lower-case when no token has an
    upper-case letter, i.e. an uncased model)."""
    from .tokenizer_json import AddedToken

    vocab = {t: i for i, t in enumerate(tokens)}
    if lowercase is None:
        lowercase = not any(t.lower() != t for t in tokens if t not in BERT_SPECIAL and not t.startswith("[unused"))
    added = [AddedToken(vocab[t], t, special=True) for t in BERT_SPECIAL if t in vocab]
    return TokenizerJSON(
        vocab=vocab, merges=[], added_tokens=added, normalizer=BERT_NORMALIZER | {"lowercase": lowercase},
        pre_tokenizer=BERT_PRE_TOKENIZER, decoder=BERT_DECODER, unk_token="[UNK]", model_type="WordPiece",
        continuing_subword_prefix="##", max_input_chars_per_word=100,
    )


def _bert_translate(spec: TokenizerJSON):
    """The normalizer as a plain text function when it is BERT's (a character map), else None."""
    steps = pipeline_steps(spec.normalizer, "normalizers")
    if len(steps) != 1 or steps[0].get("type") != "BertNormalizer":
        return None
    step = steps[0]
    return bert_normalizer(
        step.get("clean_text", True), step.get("handle_chinese_chars", True), step.get("strip_accents"), step.get("lowercase", True)
    )


def _bert_words(spec: TokenizerJSON):
    """``findall`` of one regex giving BERT's words (cut at whitespace, punctuation alone), when the pipeline is
    BERT's own normalizer and pre-tokenizer; else None."""
    steps = pipeline_steps(spec.pre_tokenizer, "pretokenizers")
    if _bert_translate(spec) is None or [s.get("type") for s in steps] != ["BertPreTokenizer"]:
        return None
    space, punct = char_class(SPLIT_SPACE), char_class(PUNCTUATION)
    return regex.compile(f"[^{space}{punct}]+|[{punct}]").findall


class WordPieceTokenizer(VocabFacts, Tokenizer):
    """A WordPiece model with its pipeline, id for id with Hugging Face ``tokenizers``."""

    def __init__(self, spec: TokenizerJSON, *, name: str = ""):
        if spec.model_type != "WordPiece":
            raise UnsupportedTokenizerError(f"this is a {spec.model_type} model, not WordPiece")
        self.decoders = pipeline_steps(spec.decoder, "decoders")
        for step in self.decoders:
            if step.get("type") != "WordPiece":
                raise UnsupportedTokenizerError(f"the {step.get('type')} decoder is not supported with WordPiece yet")
        self.name = name
        self.vocab = spec.vocab
        self.prefix = spec.continuing_subword_prefix
        self.unk_token = spec.unk_token or "[UNK]"
        self.unk_id = spec.vocab[self.unk_token]
        self.max_word_chars = spec.max_input_chars_per_word
        self.longest = max(map(len, spec.vocab))  # no piece is longer, with or without its ## prefix
        self._n_vocab = spec.n_vocab
        self._tokens: list[str | None] = [None] * self._n_vocab
        for token, tid in spec.vocab.items():
            self._tokens[tid] = token
        for added in spec.added_tokens:
            self._tokens[added.id] = added.content
        self._holes = None in self._tokens
        self._special = {t.content: t.id for t in spec.added_tokens if t.special}
        self._added_ids = {t.id for t in spec.added_tokens}
        normalizer = TextNormalizer(spec.normalizer)
        self.added = AddedVocabulary(spec.added_tokens, None if normalizer.identity else normalizer)
        self.pre = PreTokenizer(spec.pre_tokenizer)
        # encode needs no map back to the input: BERT's pipeline then runs as one str.translate and one regex
        self._fast_words = _bert_words(spec)
        if self._fast_words is not None:
            translate = _bert_translate(spec)
            self._encode_added = AddedVocabulary(spec.added_tokens, lambda text: (translate(text), None))
        self._word_cache: dict[str, tuple[tuple[int, int, int], ...]] = {}
        self._id_cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_vocab_txt(cls, data: bytes | str, *, name: str = "", lowercase: bool | None = None) -> WordPieceTokenizer:
        return cls(bert_spec(parse_vocab_txt(data), lowercase=lowercase), name=name)

    # -- vocabulary ------------------------------------------------------------------------------------------------
    def id_to_token(self, token_id: int) -> str:
        token = self._tokens[token_id] if 0 <= token_id < self._n_vocab else None
        if token is None:
            raise KeyError(token_id)
        return token

    def token_bytes(self, token_id: int) -> bytes:
        """What a token stands for: its text, without the ``##`` of a continuation piece."""
        token = self.id_to_token(token_id)
        if token_id not in self._added_ids and self.prefix and token.startswith(self.prefix) and token != self.prefix:
            token = token[len(self.prefix) :]
        return token.encode("utf-8")

    # -- encoding --------------------------------------------------------------------------------------------------
    def word_pieces(self, word: str) -> tuple[tuple[int, int, int], ...]:
        """The pieces of one word as ``(start, end, id)`` (character offsets in the word); one ``[UNK]`` spanning
        it when it is too long or cannot be cut."""
        cached = self._word_cache.get(word)
        if cached is not None:
            return cached
        pieces: tuple[tuple[int, int, int], ...] = ((0, len(word), self.unk_id),)
        if len(word) <= self.max_word_chars:
            found, _ = wordpiece_walk(word, self.vocab, self.prefix, self.longest)
            if found:
                pieces = tuple((a, b, self.vocab[piece]) for a, b, piece in found)
        if len(word) < 64:
            if len(self._word_cache) > 200_000:
                self._word_cache.clear()
            self._word_cache[word] = pieces
        return pieces

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids as ``tokenizers``' ``encode(text, add_special_tokens=False)`` (no ``[CLS]``/``[SEP]`` around them);
        the text of special tokens is plain text unless ``allow_special``."""
        check_text(text)
        ids: list[int] = []
        fast = self._fast_words
        cache = self._id_cache
        for piece in (self._encode_added if fast else self.added).split(text, allow_special):
            if piece.token is not None:
                ids.append(piece.token.id)
                continue
            words = fast(piece.text) if fast else [piece.text[a:b] for a, b in self.pre(piece.text)]
            for word in words:
                got = cache.get(word)
                if got is None:
                    got = tuple(tid for _, _, tid in self.word_pieces(word))
                    if len(word) < 64:
                        if len(cache) > 200_000:
                            cache.clear()
                        cache[word] = got
                ids.extend(got)
        return ids

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        """Tokens placed in the input: each piece covers the input characters its normalized characters came from
        (an ``[UNK]`` the whole word); the spaces and punctuation the pipeline drops belong to no token."""
        check_text(text)
        tokens: list[Token] = []  # only added tokens are special: an [UNK] the model makes is not read from the text
        for piece in self.added.split(text, allow_special):
            if piece.token is not None:
                tokens.append(added_token(piece))
                continue
            spans = input_spans(piece)
            for a, b in self.pre(piece.text):
                for start, end, tid in self.word_pieces(piece.text[a:b]):
                    first, last = spans[a + start][0], spans[a + end - 1][1]
                    tokens.append(Token(tid, self.token_bytes(tid), first, last, self.id_to_token(tid)))
        return TokenizeResult(self.name, text, [t.id for t in tokens], tokens)

    # -- decoding --------------------------------------------------------------------------------------------------
    def decode(self, ids: Sequence[int]) -> str:
        """Text as ``tokenizers``' ``decode(ids, skip_special_tokens=False)``."""
        tokens = [self.id_to_token(i) for i in self.check_ids(ids)]
        if not self.decoders:
            return " ".join(tokens)
        for step in self.decoders:
            prefix, cleanup = step.get("prefix", "##"), step.get("cleanup", True)
            out = []
            for i, token in enumerate(tokens):
                if i:
                    token = token[len(prefix) :] if prefix and token.startswith(prefix) else " " + token
                if cleanup:
                    for old, new in _CLEANUP:
                        token = token.replace(old, new)
                out.append(token)
            tokens = out
        return "".join(tokens)
