"""WordLevel ``tokenizer.json`` models (a vocabulary of whole words, as ``tokenizers``' ``WordLevelTrainer`` writes
them) run by Tokenplay's own code, id for id with Hugging Face ``tokenizers``.

The file's pipeline cuts the text into words (added tokens first, then its normalizer and pre-tokenizer, as for
every tokenizer.json engine), and each word is one token: its id in the vocabulary, or the unknown token's. A model
whose unknown token is not in its vocabulary cannot encode a word it does not know: the library fails, and so does
this engine, with :class:`~..errors.InvalidTextError` naming the word. No beginning-of-text token is added;
``decode`` runs the file's decoder (:mod:`..pipeline.decoders`). Nothing here trains a model.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..base import TokenStrings, Tokenizer, check_text
from ..errors import InvalidTextError
from ..pipeline.added_tokens import AddedVocabulary, Piece, added_token, input_spans
from ..pipeline.decoders import decoder
from ..pipeline.normalizers import TextNormalizer
from ..pipeline.pretokenizers import PreTokenizer
from ..pipeline.tokenizer_json import TokenizerFileError, TokenizerJSON
from ..result import Token, TokenizeResult


class WordLevelTokenizer(TokenStrings, Tokenizer):
    """A WordLevel ``tokenizer.json``, id for id with Hugging Face ``tokenizers``."""

    def __init__(self, spec: TokenizerJSON, *, name: str = ""):
        if spec.model_type != "WordLevel":
            raise TokenizerFileError(f"this is a {spec.model_type} model, not WordLevel")
        self.name = name
        self.vocab = spec.vocab
        self.unk_id = spec.vocab[spec.unk_token] if spec.unk_token is not None else None
        self._set_tokens(spec.tokens_by_id())
        self._special = {t.content: t.id for t in spec.added_tokens if t.special}
        normalizer = TextNormalizer(spec.normalizer)
        self.added = AddedVocabulary(spec.added_tokens, None if normalizer.identity else normalizer)
        self.pre = PreTokenizer(spec.pre_tokenizer)
        self._decode = decoder(spec.decoder)

    def token_bytes(self, token_id: int) -> bytes:
        return self.id_to_token(token_id).encode("utf-8")

    def word_id(self, word: str) -> int:
        tid = self.vocab.get(word, self.unk_id)
        if tid is None:
            raise InvalidTextError(
                f"this tokenizer has no token for the word {word[:40]!r} and no unknown token, so it cannot encode "
                "this text"
            )
        return tid

    def _words(self, piece: Piece) -> list[tuple[str, int, int]]:
        """A plain piece's words, each with the first and last position in the piece's text it stands for."""
        if not self.pre.transforms:
            return [(piece.text[a:b], a, b - 1) for a, b in self.pre(piece.text)]
        origin = piece.origin()
        return [(word, pos[0], pos[-1]) for word, pos in self.pre.pieces(piece.text, origin)]

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids as ``tokenizers``' ``encode(text, add_special_tokens=False)``."""
        check_text(text)
        ids: list[int] = []
        for piece in self.added.split(text, allow_special):
            if piece.token is not None:
                ids.append(piece.token.id)
            else:
                ids.extend(self.word_id(word) for word, _, _ in self._words(piece))
        return ids

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        """Each word placed on the input characters it came from."""
        check_text(text)
        tokens: list[Token] = []
        for piece in self.added.split(text, allow_special):
            if piece.token is not None:
                tokens.append(added_token(piece))
                continue
            spans = input_spans(piece)
            for word, first, last in self._words(piece):
                tid = self.word_id(word)
                tokens.append(Token(tid, self.token_bytes(tid), spans[first][0], spans[last][1], self._tokens[tid]))
        return TokenizeResult(self.name, text, [t.id for t in tokens], tokens)

    def decode(self, ids: Sequence[int]) -> str:
        """Text as ``tokenizers``' ``decode(ids, skip_special_tokens=False)``."""
        return self._decode([self.id_to_token(i) for i in self.check_ids(ids)])
