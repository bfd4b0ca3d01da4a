"""WordPiece (BERT and its family) run by Tokenplay's own code, id for id with Hugging Face ``tokenizers``.

A WordPiece model is a vocabulary of whole-word pieces (``play``) and continuation pieces (``##ing``). Text is
normalized and cut into words by the file's pipeline (BERT's: clean text, space out CJK ideographs, strip accents,
lower-case; cut at whitespace and punctuation; see :mod:`..pipeline.bert_text`), added tokens such as ``[CLS]`` being
cut out first (:mod:`..pipeline.added_tokens`). Each word is then cut greedily, longest match first: from the start
of the word, the longest vocabulary piece that begins there (written with the ``##`` prefix unless it starts the word),
then the same from where it ended. A word longer than ``max_input_chars_per_word`` characters, or one with a stretch
that no piece covers, becomes a single ``[UNK]``. :func:`wordpiece_walk` records that walk for the lab's "encoding a
word" view.

The walk from a position tries at most as many lengths as the longest piece has characters, so a word costs its length
times that, never its length squared. The tokenizer itself walks forwards instead (:class:`_PieceTable`: every prefix of
a piece is a key, so the walk stops at the first length that starts no piece), and remembers the pieces of each word
(words repeat). With BERT's own pipeline, a text is normalized with one ``str.translate``, cut with one stdlib ``re``
pattern, and its ids are looked up word by word at C level; ``tokenize`` places tokens in the input only when they are
asked for (a view of a 1 MB text places one window of them), mapping normalized offsets back through
:class:`~..pipeline.bert_text.InputOffsets`. :class:`WordPieceTokenizer` is built from a ``tokenizer.json``
(:func:`~..pipeline.tokenizer_json.parse_tokenizer_json`) or from a BERT ``vocab.txt`` (:func:`parse_vocab_txt`, with
BERT's own pipeline). Decoding runs the file's decoder (BERT's ``WordPiece``: ``##`` pieces glued to the one before,
the others after a space, then the library's clean-up of spaces before punctuation). Nothing here trains a model.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import accumulate, chain, islice, repeat
from operator import add

from ..pipeline.added_tokens import AddedVocabulary, added_token, input_spans
from ..pipeline.decoders import decoder
from ..base import TokenStrings, Tokenizer, check_text
from ..pipeline.bert_text import InputOffsets, bert_normalizer, bert_words
from ..pipeline.normalizers import TextNormalizer
from ..pipeline.pretokenizers import PreTokenizer
from ..result import Columns, Token, TokenizeResult
from ..pipeline.post_processor import from_post_processor
from ..pipeline.tokenizer_json import (
    AddedToken,
    TokenizerFileError,
    TokenizerJSON,
    UnsupportedTokenizerError,
    pipeline_steps,
)

#: BERT's pipeline around a ``vocab.txt`` (what ``BertWordPieceTokenizer`` writes into a tokenizer.json).
BERT_NORMALIZER = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None}
BERT_PRE_TOKENIZER = {"type": "BertPreTokenizer"}
BERT_DECODER = {"type": "WordPiece", "prefix": "##", "cleanup": True}
BERT_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


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
    vocab = {t: i for i, t in enumerate(tokens)}
    if lowercase is None:
        lowercase = not any(t.lower() != t for t in tokens if t not in BERT_SPECIAL and not t.startswith("[unused"))
    added = [AddedToken(vocab[t], t, special=True) for t in BERT_SPECIAL if t in vocab]
    return TokenizerJSON(
        vocab=vocab, merges=[], added_tokens=added, normalizer=BERT_NORMALIZER | {"lowercase": lowercase},
        pre_tokenizer=BERT_PRE_TOKENIZER, decoder=BERT_DECODER, post_processor=bert_post_processor(vocab),
        unk_token="[UNK]", model_type="WordPiece", continuing_subword_prefix="##", max_input_chars_per_word=100,
    )


def bert_post_processor(vocab: dict[str, int]) -> dict | None:
    """``[CLS]`` before a text and ``[SEP]`` after it, the template ``transformers`` gives a BERT ``vocab.txt``
    (its ``BertTokenizerFast``: ``[CLS]:0 $A:0 [SEP]:0``); None for a vocabulary without both tokens."""
    if "[CLS]" not in vocab or "[SEP]" not in vocab:
        return None
    return {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
        "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]} for t in ("[CLS]", "[SEP]")},
    }


def _bert_translate(spec: TokenizerJSON):
    """The normalizer as a plain text function when it is BERT's (a character map), else None."""
    steps = pipeline_steps(spec.normalizer, "normalizers")
    if len(steps) != 1 or steps[0].get("type") != "BertNormalizer":
        return None
    step = steps[0]
    return bert_normalizer(
        step.get("clean_text", True), step.get("handle_chinese_chars", True), step.get("strip_accents"), step.get("lowercase", True)
    )


def _bert_words(spec: TokenizerJSON) -> re.Pattern | None:
    """The pattern of BERT's words (cut at whitespace, punctuation alone), when the pre-tokenizer is BERT's own;
    else None."""
    steps = pipeline_steps(spec.pre_tokenizer, "pretokenizers")
    return bert_words() if [s.get("type") for s in steps] == ["BertPreTokenizer"] else None


class _PieceTable(dict):
    """Every prefix of every piece of one kind (word-initial or continuation), mapped to the piece's id, or -1 for
    a prefix that is no piece itself: walking forwards from a position, the first length missing here ends the
    search, and the last length with an id is the longest match."""

    def __init__(self, pieces: dict[str, int]):
        super().__init__()
        for piece in pieces:
            for k in range(1, len(piece)):
                self.setdefault(piece[:k], -1)
        self.update(pieces)

    def longest(self, word: str, start: int) -> tuple[int, int]:
        """``(end, id)`` of the longest piece at ``word[start:]``, ``(start, -1)`` when none starts there."""
        best, best_id = start, -1
        end, n = start + 1, len(word)
        while end <= n:
            got = self.get(word[start:end])
            if got is None:
                break
            if got >= 0:
                best, best_id = end, got
            end += 1
        return best, best_id


class _WordMemo(dict):
    """Word -> one fact about its pieces (their ids, or where they start or end in it), made on first sight, so
    that the words of a text are looked up at C level."""

    def __init__(self, make: Callable[[str], tuple[int, ...]], keep: int):
        super().__init__()
        self.make = make
        self.keep = keep

    def __missing__(self, word: str) -> tuple[int, ...]:
        value = self.make(word)
        if len(word) <= self.keep:  # a longer word is one [UNK] at once: never kept, so no text fills the memo
            if len(self) >= 200_000:
                self.clear()
            self[word] = value
        return value


@dataclass(frozen=True, slots=True)
class WordSpan:
    """A word of the input as the encoder cuts it (:meth:`WordPieceTokenizer.words`): input characters
    ``start..end``, the normalized ``word`` and its ``pieces`` as ``(start, end, id)``; or an added token."""

    start: int
    end: int
    word: str
    pieces: tuple[tuple[int, int, int], ...]
    token: AddedToken | None = None


@dataclass(slots=True)
class _Stretch:
    """Plain input between raw added tokens (``text``, at ``base`` in the input) and its normalized text."""

    text: str
    base: int
    normalized: str
    char_map: dict[int, str]
    offsets: InputOffsets | None = None  # made when the first token of the stretch is placed

    def origins(self, positions: list[int], many: bool = False) -> list[int]:
        """The input offsets of normalized positions (see :meth:`~.bert_text.InputOffsets.origins`)."""
        if self.offsets is None:
            self.offsets = InputOffsets(self.text, self.char_map, self.base)
        return self.offsets.origins(positions, many)


@dataclass(slots=True)
class _Run:
    """The tokens of ``stretch.normalized[a:b]``: one normalized added token, or the pieces of ``words``."""

    count: int
    stretch: _Stretch
    a: int
    b: int
    words: list[str] | None = None
    token: AddedToken | None = None
    word_ends: list[int] | None = None  # tokens through each word (made when placing)


_MATCH_START = re.Match.start


class WordPieceTokenizer(TokenStrings, Tokenizer):
    """A WordPiece model with its pipeline, id for id with Hugging Face ``tokenizers``."""

    def __init__(self, spec: TokenizerJSON, *, name: str = ""):
        if spec.model_type != "WordPiece":
            raise UnsupportedTokenizerError(f"this is a {spec.model_type} model, not WordPiece")
        self._decode = decoder(spec.decoder)
        self.name = name
        self.spec = spec
        self.added_specials = from_post_processor(spec.post_processor)  # set here: a table rebuilds from the spec
        self.vocab = spec.vocab
        self.prefix = spec.continuing_subword_prefix
        self.unk_token = spec.unk_token or "[UNK]"
        self.unk_id = spec.vocab[self.unk_token]
        self.max_word_chars = spec.max_input_chars_per_word
        self.longest = max(map(len, spec.vocab))  # no piece is longer, with or without its ## prefix
        self._set_tokens(spec.tokens_by_id())
        self._special = {t.content: t.id for t in spec.added_tokens if t.special}
        self._added_ids = {t.id for t in spec.added_tokens}
        normalizer = TextNormalizer(spec.normalizer)
        self.added = AddedVocabulary(spec.added_tokens, None if normalizer.identity else normalizer)
        self.pre = PreTokenizer(spec.pre_tokenizer)
        self._head = _PieceTable(spec.vocab)  # a word's first piece may be any token, ## or not
        prefix = self.prefix
        tails = {t[len(prefix) :]: i for t, i in spec.vocab.items() if t.startswith(prefix) and t != prefix}
        self._tail = _PieceTable(tails) if prefix else self._head
        self._word_cache: dict[str, tuple[tuple[int, int, int], ...]] = {}
        keep = self.max_word_chars
        self._piece_ids = _WordMemo(lambda word: tuple(t for _, _, t in self.word_pieces(word)), keep)
        self._piece_starts = _WordMemo(lambda word: tuple(a for a, _, _ in self.word_pieces(word)), keep)
        self._piece_lasts = _WordMemo(lambda word: tuple(b - 1 for _, b, _ in self.word_pieces(word)), keep)
        self._shown: tuple[list[bytes], list[str]] | None = None  # per id: a placed token's bytes and text
        # BERT's own pipeline runs as one str.translate and one re pattern, offsets mapped back only when placing
        translate = _bert_translate(spec)
        self._words = _bert_words(spec) if translate is not None else None
        if self._words is not None:
            self._translate = translate
            self._encode_added = AddedVocabulary(spec.added_tokens, lambda text: (self._translate(text), None))

    def __reduce__(self):
        """Pickled as its spec, built again from it (a tokenizer's table: its memos hold closures; the vocabulary is
        the one big part, and BERT's builds in a tenth of a second)."""
        return _from_spec, (self.spec, self.name)

    @classmethod
    def from_vocab_txt(cls, data: bytes | str, *, name: str = "", lowercase: bool | None = None) -> WordPieceTokenizer:
        return cls(bert_spec(parse_vocab_txt(data), lowercase=lowercase), name=name)

    # -- vocabulary ------------------------------------------------------------------------------------------------
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
        unknown = ((0, len(word), self.unk_id),)
        if len(word) > self.max_word_chars:
            return unknown
        pieces: list[tuple[int, int, int]] = []
        start, table = 0, self._head
        while start < len(word):
            end, tid = table.longest(word, start)
            if tid < 0:
                pieces = list(unknown)
                break
            pieces.append((start, end, tid))
            start, table = end, self._tail
        if len(self._word_cache) >= 200_000:
            self._word_cache.clear()
        found = self._word_cache[word] = tuple(pieces)
        return found

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids as ``tokenizers``' ``encode(text, add_special_tokens=False)`` (no ``[CLS]``/``[SEP]`` around them);
        the text of special tokens is plain text unless ``allow_special``."""
        check_text(text)
        ids: list[int] = []
        lookup = self._piece_ids.__getitem__
        for piece in (self._encode_added if self._words else self.added).split(text, allow_special):
            if piece.token is not None:
                ids.append(piece.token.id)
                continue
            if self._words:
                words = self._words.findall(piece.text)
            elif self.pre.transforms:
                words = [word for word, _ in self.pre.pieces(piece.text, piece.origin())]
            else:
                words = [piece.text[a:b] for a, b in self.pre(piece.text)]
            ids.extend(chain.from_iterable(map(lookup, words)))
        return ids

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        """Tokens placed in the input: each piece covers the input characters its normalized characters came from
        (an ``[UNK]`` the whole word); the spaces and punctuation the pipeline drops belong to no token."""
        check_text(text)
        if self._words is None:
            return self._tokenize_any(text, allow_special)
        ids: list[int] = []
        runs: list[Token | _Run] = []  # a raw added token is placed at once; the rest when asked for
        lookup = self._piece_ids.__getitem__
        char_map = self._translate.char_map
        for start, end, token in self.added.raw.split(text, allow_special):
            if token is not None:
                ids.append(token.id)
                runs.append(Token(token.id, token.content.encode(), start, end, token.content, token.special))
                continue
            plain = text[start:end]
            stretch = _Stretch(plain, start, self._translate(plain), char_map)
            for a, b, inner in self.added.normalized.split(stretch.normalized, allow_special):
                if inner is not None:
                    ids.append(inner.id)
                    runs.append(_Run(1, stretch, a, b, token=inner))
                    continue
                words = self._words.findall(stretch.normalized, a, b)
                before = len(ids)
                ids.extend(chain.from_iterable(map(lookup, words)))
                runs.append(_Run(len(ids) - before, stretch, a, b, words))
        return TokenizeResult(
            self.name, text, ids, place=partial(self._place, runs), columns=partial(self._columns, runs)
        )

    def words(self, text: str, allow_special: bool = False) -> Iterator[WordSpan]:
        """The words of ``text`` as the encoder cuts them, in order, placed in the input: each normalized word with
        its pieces, or an added token (the explain view's units). With BERT's own pipeline the text is normalized
        and cut as :meth:`tokenize` cuts it (one ``str.translate``, one ``re`` pattern), a stretch at a time."""
        check_text(text)
        if self._words is None:
            for piece in self.added.split(text, allow_special):
                if piece.token is not None:
                    yield WordSpan(piece.start, piece.end, piece.token.content, (), piece.token)
                    continue
                spans = input_spans(piece)
                for a, b in self.pre(piece.text):
                    word = piece.text[a:b]
                    yield WordSpan(spans[a][0], spans[b - 1][1], word, self.word_pieces(word))
            return
        char_map = self._translate.char_map
        for start, end, token in self.added.raw.split(text, allow_special):
            if token is not None:
                yield WordSpan(start, end, token.content, (), token)
                continue
            stretch = _Stretch(text[start:end], start, self._translate(text[start:end]), char_map)
            for a, b, inner in self.added.normalized.split(stretch.normalized, allow_special):
                if inner is not None:
                    first, last = stretch.origins([a, b - 1])
                    yield WordSpan(first, last + 1, inner.content, (), inner)
                    continue
                found = [(m.start(), m.end()) for m in self._words.finditer(stretch.normalized, a, b)]
                starts = stretch.origins([x for x, _ in found], True)
                lasts = stretch.origins([y - 1 for _, y in found], True)
                for (x, y), first, last in zip(found, starts, lasts):
                    word = stretch.normalized[x:y]
                    yield WordSpan(first, last + 1, word, self.word_pieces(word))

    def normalized_stretches(self, text: str, allow_special: bool = False) -> list[tuple[int, int, str, list[tuple[int, int]]]]:
        """The plain stretches of ``text`` (between added tokens) as the model normalizes them: ``(start, end,
        normalized, spans)``, ``spans[i]`` being the input span normalized character ``i`` came from."""
        check_text(text)
        if self._words is None:
            return [(p.start, p.end, p.text, input_spans(p)) for p in self.added.split(text, allow_special) if p.token is None]
        out = []
        char_map = self._translate.char_map
        for start, end, token in self.added.raw.split(text, allow_special):
            if token is None:
                stretch = _Stretch(text[start:end], start, self._translate(text[start:end]), char_map)
                origins = stretch.origins(range(len(stretch.normalized)), True)
                out.append((start, end, stretch.normalized, list(zip(origins, map(add, origins, repeat(1))))))
        return out

    def _place(self, runs: list[Token | _Run], offset: int, limit: int | None) -> list[Token]:
        """The Token records of tokens ``[offset, offset + limit)`` of a :meth:`tokenize` result."""
        stop = float("inf") if limit is None else offset + limit
        tokens: list[Token] = []
        done = 0  # tokens before the run
        for run in runs:
            count = 1 if isinstance(run, Token) else run.count
            if done + count > offset and done < stop:
                if isinstance(run, Token):
                    tokens.append(run)
                elif run.token is not None:
                    t = run.token
                    first, last = run.stretch.origins([run.a, run.b - 1])
                    tokens.append(Token(t.id, t.content.encode(), first, last + 1, t.content, t.special))
                else:
                    tokens.extend(self._place_words(run, max(0, offset - done), min(count, stop - done)))
            done += count
            if done >= stop:
                break
        return tokens

    def _columns(self, runs: list[Token | _Run]) -> Columns | None:
        """Every token's span as :meth:`_place` places it, without a Token per token (None when an added token's
        id is also a word piece's in this text: the Token records tell them apart)."""
        spans: list[Iterable[tuple[int, int]]] = []  # per run
        added: dict[int, tuple[bytes, str, bool, bool, bool]] = {}
        seen: set[int] = set()  # ids of word pieces
        for run in runs:
            if isinstance(run, Token):
                spans.append(((run.start, run.end),))
                added.setdefault(run.id, (run.bytes, run.text, run.special, run.valid_utf8, run.byte_fallback))
            elif run.token is not None:
                t = run.token
                first, last = run.stretch.origins([run.a, run.b - 1])
                spans.append(((first, last + 1),))
                added.setdefault(t.id, (t.content.encode(), t.content, t.special, True, False))
            elif run.count:
                tids, starts, ends = self._word_spans(run, 0, run.count)
                seen.update(tids)
                spans.append(zip(starts, ends))
        if not seen.isdisjoint(added):
            return None
        shown_bytes, shown_text = self._shown_tokens()

        def info(tid: int) -> tuple[bytes, str, bool, bool, bool]:
            found = added.get(tid)
            return found if found is not None else (shown_bytes[tid], shown_text[tid], False, True, False)

        return Columns(chain.from_iterable(spans), info)

    def _place_words(self, run: _Run, first: int, stop: int) -> list[Token]:
        """The Token records of tokens ``[first, stop)`` of a run of words (indexes within the run)."""
        tids, starts, ends = self._word_spans(run, first, stop)
        shown_bytes, shown_text = self._shown_tokens()
        return list(map(Token, tids, map(shown_bytes.__getitem__, tids), starts, ends, map(shown_text.__getitem__, tids)))

    def _word_spans(self, run: _Run, first: int, stop: int) -> tuple[list[int], list[int], Iterator[int]]:
        """The ids, starts and ends of tokens ``[first, stop)`` of a run of words, built column by column with
        C-level loops over the words that hold them."""
        if run.word_ends is None:
            run.word_ends = list(accumulate(map(len, map(self._piece_ids.__getitem__, run.words))))
        word_ends = run.word_ends
        w0, w1 = bisect_right(word_ends, first), bisect_right(word_ends, stop - 1) + 1  # the words holding the tokens
        before = word_ends[w0 - 1] if w0 else 0
        words = run.words[w0:w1]
        found = map(_MATCH_START, islice(self._words.finditer(run.stretch.normalized, run.a, run.b), w0, w1))
        word_at = list(chain.from_iterable(map(repeat, found, map(len, map(self._piece_ids.__getitem__, words)))))
        cut = slice(first - before, stop - before)
        tids = list(chain.from_iterable(map(self._piece_ids.__getitem__, words)))[cut]
        starts = list(map(add, word_at, chain.from_iterable(map(self._piece_starts.__getitem__, words))))[cut]
        lasts = list(map(add, word_at, chain.from_iterable(map(self._piece_lasts.__getitem__, words))))[cut]
        many = len(tids) > 50_000  # a view's window maps its few offsets by binary search, the API all by a table
        return tids, run.stretch.origins(starts, many), map(add, run.stretch.origins(lasts, many), repeat(1))

    def _shown_tokens(self) -> tuple[list[bytes], list[str]]:
        """Per id, a placed token's bytes and text."""
        if self._shown is None:
            texts = [t or "" for t in self._tokens]
            self._shown = [self.token_bytes(i) if t else b"" for i, t in enumerate(texts)], texts
        return self._shown

    def _tokenize_any(self, text: str, allow_special: bool) -> TokenizeResult:
        """:meth:`tokenize` for any other pipeline, through its normalizer's map of every character."""
        tokens: list[Token] = []  # only added tokens are special: an [UNK] the model makes is not read from the text
        shown_bytes, shown_text = self._shown_tokens()
        for piece in self.added.split(text, allow_special):
            if piece.token is not None:
                tokens.append(added_token(piece))
                continue
            spans = input_spans(piece)
            if self.pre.transforms:
                words = self.pre.pieces(piece.text, piece.origin())
            else:
                words = [(piece.text[a:b], range(a, b)) for a, b in self.pre(piece.text)]
            for word, pos in words:
                for start, end, tid in self.word_pieces(word):
                    first, last = spans[pos[start]][0], spans[pos[end - 1]][1]
                    tokens.append(Token(tid, shown_bytes[tid], first, last, shown_text[tid]))
        return TokenizeResult(self.name, text, [t.id for t in tokens], tokens)

    # -- decoding --------------------------------------------------------------------------------------------------
    def decode(self, ids: Sequence[int]) -> str:
        """Text as ``tokenizers``' ``decode(ids, skip_special_tokens=False)``: the file's decoder (BERT's
        ``WordPiece``: ``##`` pieces glued to the one before, the others after a space, then the library's clean-up
        of spaces before punctuation; :mod:`..pipeline.decoders`)."""
        return self._decode([self.id_to_token(i) for i in self.check_ids(ids)])


def _from_spec(spec: TokenizerJSON, name: str) -> WordPieceTokenizer:
    return WordPieceTokenizer(spec, name=name)
