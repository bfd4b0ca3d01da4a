"""BPE ``tokenizer.json`` models whose words end with a marker (``end_of_word_suffix``, ``</w>``): OpenAI's first GPT
(``openai-gpt``) and files trained by ``tokenizers``' ``CharBPETokenizer``, id for id with Hugging Face ``tokenizers``.

The file's pipeline cuts the text into words (added tokens first, then its normalizer and pre-tokenizer, as for every
tokenizer.json engine: ``openai-gpt`` lower-cases with ``BertNormalizer`` and cuts with ``BertPreTokenizer``). Each word
then starts as its characters, the last one written with the suffix (``cool`` is ``c o o l</w>``, so a word's last
piece differs from the same letters inside a word), and is merged as the library merges it: the listed pair of lowest
rank first, the leftmost on ties. A character the vocabulary lacks is the unknown token (one for a run with
``fuse_unk``), or, without an unknown token, nothing (its neighbours then meet, as in the library). With
``ignore_merges`` a word that is a token is taken whole. ``decode`` runs the file's decoder (``BPEDecoder`` turns the
suffix into a space). A token's bytes are its text without the suffix: the suffix marks where a word ends, it is no
character of the input. Files with byte fallback and a suffix are refused, named (the library falls back to the bytes
of the suffixed symbol).
"""

from __future__ import annotations

from ..pipeline.tokenizer_json import TokenizerFileError, TokenizerJSON, UnsupportedTokenizerError
from ..pipeline.word_models import WordModel
from ..merging import merge

#: A part being merged: its text (None for the unknown token) and the first and last position of the word it covers.
Part = tuple[str | None, int, int]
_CACHE_LIMIT = 100_000


def _pair(a: Part, b: Part) -> tuple[str | None, str | None]:
    return a[0], b[0]


def _join(a: Part, b: Part) -> Part:
    return a[0] + b[0], a[1], b[2]  # type: ignore[operator]  (the unknown token never merges: no pair has it)


class WordEndBPETokenizer(WordModel):
    """A BPE ``tokenizer.json`` with an ``end_of_word_suffix``, id for id with Hugging Face ``tokenizers``."""

    def __init__(self, spec: TokenizerJSON, *, name: str = ""):
        if spec.model_type != "BPE" or not spec.end_of_word_suffix:
            raise TokenizerFileError("this is not a BPE model with an end_of_word_suffix")
        if spec.byte_fallback:
            raise UnsupportedTokenizerError(
                "BPE models with both an end_of_word_suffix and byte_fallback are not supported yet"
            )
        unk = spec.unk_token
        if unk is not None and any(unk in pair for pair in spec.merges):
            raise UnsupportedTokenizerError(
                f"a merge of the unknown token {unk!r} is not supported: the library merges it as a symbol where a "
                "character has no token, which Tokenplay's engine does not"
            )
        self.name = name
        self.suffix = spec.end_of_word_suffix
        self.vocab = spec.vocab
        self.unk_id = spec.vocab[unk] if unk is not None else None
        self.fuse_unk = spec.fuse_unk
        self.whole_words = spec.ignore_merges
        # a later repeat of a pair wins, as in the library's map of merges
        self.ranks = {pair: rank for rank, pair in enumerate(spec.merges)}
        self._set_pipeline(spec)
        self._n_vocab, self._id_bound = spec.reference_size, len(self._tokens)
        self._added_ids = {t.id for t in spec.added_tokens}
        self._cache: dict[str, tuple[Part, ...]] = {}

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_cache"] = {}
        return state

    # -- the model ---------------------------------------------------------------------------------------------------
    def word_parts(self, word: str) -> tuple[Part, ...]:
        """The merged parts of one word: each its token text (None: the unknown token) and the first and last
        position of the word it covers (a character with no token and no unknown token covers nothing)."""
        found = self._cache.get(word)
        if found is not None:
            return found
        if self.whole_words and word in self.vocab:
            found = ((word, 0, len(word) - 1),)
        else:
            found = tuple(merge(self.initial_parts(word), self.ranks.get, key=_pair, join=_join))
        if len(word) <= 256:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[word] = found
        return found

    def initial_parts(self, word: str) -> list[Part]:
        """What a word's merge starts from: its characters, the last written with the suffix; a character the
        vocabulary lacks is the unknown token (one for a run with ``fuse_unk``), or nothing without one."""
        vocab = self.vocab
        parts: list[Part] = []
        last = len(word) - 1
        for i, ch in enumerate(word):
            symbol = ch + self.suffix if i == last else ch
            if symbol in vocab:
                parts.append((symbol, i, i))
            elif self.unk_id is not None:
                if self.fuse_unk and parts and parts[-1][0] is None and parts[-1][2] == i - 1:
                    parts[-1] = (None, parts[-1][1], i)
                else:
                    parts.append((None, i, i))
        return parts

    def _part_id(self, part: Part) -> int:
        return self.unk_id if part[0] is None else self.vocab[part[0]]  # type: ignore[return-value]

    def word_tokens(self, word: str) -> list[tuple[int, int, int]]:
        return [(self._part_id(part), part[1], part[2]) for part in self.word_parts(word)]

    # -- the Tokenizer contract --------------------------------------------------------------------------------------
    def token_bytes(self, token_id: int) -> bytes:
        """A token's text without the end-of-word suffix (an added token: its text)."""
        token = self.id_to_token(token_id)
        if token_id not in self._added_ids and token.endswith(self.suffix) and token != self.suffix:
            token = token[: -len(self.suffix)]
        return token.encode("utf-8")
