"""What the ``tokenizer.json`` engines that work word by word share: the file's pipeline cuts the text into words
(added tokens first, then the normalizer and the pre-tokenizer, as the library does), and the model turns each word
into tokens. A subclass says how (:meth:`WordModel.word_tokens`: each token's id and the first and last position of
the word it covers); encoding, placing the tokens on the input and decoding come from here. WordLevel
(:mod:`app.engines.wordpiece.wordlevel`) and BPE with an end-of-word suffix (:mod:`app.engines.bpe.word_end_model`)
are such models.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from ..base import TokenStrings, Tokenizer, check_text
from ..result import Token, TokenizeResult
from .added_tokens import AddedVocabulary, Piece, added_token, input_spans
from .decoders import decoder
from .normalizers import TextNormalizer
from .pretokenizers import PreTokenizer
from .tokenizer_json import TokenizerJSON


class WordModel(TokenStrings, Tokenizer):
    """A ``tokenizer.json`` model run word by word, id for id with Hugging Face ``tokenizers``."""

    def _set_pipeline(self, spec: TokenizerJSON) -> None:
        """The file's tokens, special tokens, added tokens, normalizer, pre-tokenizer and decoder."""
        self._set_tokens(spec.tokens_by_id())
        self._special = {t.content: t.id for t in spec.added_tokens if t.special}
        normalizer = TextNormalizer(spec.normalizer)
        self.added = AddedVocabulary(spec.added_tokens, None if normalizer.identity else normalizer)
        self.pre = PreTokenizer(spec.pre_tokenizer)
        self._decode = decoder(spec.decoder)

    @abstractmethod
    def word_tokens(self, word: str) -> Sequence[tuple[int, int, int]]:
        """Each token of one word: its id and the first and last position of the word it covers."""

    def words(self, piece: Piece) -> list[tuple[str, Sequence[int]]]:
        """A plain piece's words, each with the position in the piece's text of each of its characters."""
        if not self.pre.transforms:
            return [(piece.text[a:b], range(a, b)) for a, b in self.pre(piece.text)]
        return [(word, pos) for word, pos in self.pre.pieces(piece.text, piece.origin())]

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids as ``tokenizers``' ``encode(text, add_special_tokens=False)``."""
        check_text(text)
        return [tid for piece in self.added.split(text, allow_special) for tid in self._piece_ids(piece)]

    def _piece_ids(self, piece: Piece) -> list[int]:
        if piece.token is not None:
            return [piece.token.id]
        return [tid for word, _ in self.words(piece) for tid, _, _ in self.word_tokens(word)]

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        """Each token placed on the input characters it came from."""
        check_text(text)
        tokens: list[Token] = []
        for piece in self.added.split(text, allow_special):
            if piece.token is not None:
                tokens.append(added_token(piece))
                continue
            spans = input_spans(piece)
            for word, positions in self.words(piece):
                for tid, first, last in self.word_tokens(word):
                    start, end = spans[positions[first]][0], spans[positions[last]][1]
                    tokens.append(Token(tid, self.token_bytes(tid), start, end, self._tokens[tid]))
        return TokenizeResult(self.name, text, [t.id for t in tokens], tokens)

    def decode(self, ids: Sequence[int]) -> str:
        """Text as ``tokenizers``' ``decode(ids, skip_special_tokens=False)``."""
        return self._decode([self.id_to_token(i) for i in self.check_ids(ids)])
