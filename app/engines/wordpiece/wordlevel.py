"""WordLevel ``tokenizer.json`` models (a vocabulary of whole words, as ``tokenizers``' ``WordLevelTrainer`` writes
them) run by Tokenplay's own code, id for id with Hugging Face ``tokenizers``.

The file's pipeline cuts the text into words (added tokens first, then its normalizer and pre-tokenizer, as for
every tokenizer.json engine), and each word is one token: its id in the vocabulary, or the unknown token's. A model
whose unknown token is not in its vocabulary cannot encode a word it does not know: the library fails, and so does
this engine, with :class:`~..errors.InvalidTextError` naming the word. No beginning-of-text token is added;
``decode`` runs the file's decoder (:mod:`..pipeline.decoders`). Nothing here trains a model.
"""

from __future__ import annotations

from ..errors import InvalidTextError
from ..pipeline.tokenizer_json import TokenizerFileError, TokenizerJSON
from ..pipeline.word_models import WordModel


class WordLevelTokenizer(WordModel):
    """A WordLevel ``tokenizer.json``, id for id with Hugging Face ``tokenizers``."""

    def __init__(self, spec: TokenizerJSON, *, name: str = ""):
        if spec.model_type != "WordLevel":
            raise TokenizerFileError(f"this is a {spec.model_type} model, not WordLevel")
        self.name = name
        self.vocab = spec.vocab
        self.unk_id = spec.vocab[spec.unk_token] if spec.unk_token is not None else None
        self._set_pipeline(spec)

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

    def word_tokens(self, word: str) -> list[tuple[int, int, int]]:
        """The word is one token: its id, or the unknown token's."""
        return [(self.word_id(word), 0, len(word) - 1)]
