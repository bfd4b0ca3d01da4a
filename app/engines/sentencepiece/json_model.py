"""SentencePiece-style BPE ``tokenizer.json`` models (Gemma 3; Llama 2 / Mistral files) run by our SentencePiece engine.

These files describe a SentencePiece model in Hugging Face's terms: pieces written with ``▁`` for a space, a ``merges``
list, byte fallback to ``<0xNN>`` pieces, and a pipeline around the model. Every step is the one Hugging Face
``tokenizers`` takes, so the ids are the library's: added tokens are cut out first (:mod:`..huggingface.added_tokens`;
Gemma's newline and tab runs among them), each piece between them is normalized (:mod:`..huggingface.normalizers`:
``Replace(" ", "▁")``, ``Prepend("▁")``) and split by the pre-tokenizer if any, and each word is merged by
:class:`.model.SentencePieceTokenizer` with the file's merges as pair ranks (only listed pairs merge, the lowest rank
first). A character that is no piece becomes its ``<0xNN>`` byte pieces, or ``<unk>`` (``fuse_unk``: one for a run). No
beginning-of-text token is added. ``decode`` runs the file's decoder (``Replace``, ``ByteFallback``, ``Fuse``,
``Strip``), as the library does with ``skip_special_tokens=False``.

It does not run ``Metaspace`` pre-tokenizers or decoders yet (they are refused, named).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..huggingface.added_tokens import AddedVocabulary, Piece
from ..base import check_text
from ..huggingface.normalizers import TextNormalizer
from ..huggingface.pretokenizers import PreTokenizer
from ..result import Token, TokenizeResult
from ..huggingface.tokenizer_json import TokenizerFileError, TokenizerJSON, UnsupportedTokenizerError, pipeline_steps
from .model import ModelLoadError, SentencePieceTokenizer, piece_to_byte
from .normalizer import SPACE_SYMBOL, Normalizer
from .proto import BYTE, CONTROL, NORMAL, UNKNOWN, NormalizerSpec

_DECODERS = ("Replace", "ByteFallback", "Fuse", "Strip")


class SentencePieceJSONTokenizer(SentencePieceTokenizer):
    """A SentencePiece-style BPE ``tokenizer.json``, id for id with Hugging Face ``tokenizers``."""

    def __init__(self, spec: TokenizerJSON, *, name: str = ""):
        if spec.byte_level:
            raise UnsupportedTokenizerError("this tokenizer.json is byte-level; run it with the BPE engine")
        if spec.unk_token is None:
            raise UnsupportedTokenizerError("SentencePiece-style tokenizer.json files without an unk_token are not supported yet")
        self.decoders = pipeline_steps(spec.decoder, "decoders")
        for step in self.decoders:
            if step.get("type") not in _DECODERS:
                raise UnsupportedTokenizerError(f"the {step.get('type')} decoder is not supported yet")
        self.name = name
        n = spec.n_vocab
        pieces: list[str | None] = [None] * n
        types = [NORMAL] * n
        for piece, tid in spec.vocab.items():
            pieces[tid] = piece
            if piece == spec.unk_token:
                types[tid] = UNKNOWN
            elif piece_to_byte(piece) >= 0:
                types[tid] = BYTE
        for token in spec.added_tokens:
            if pieces[token.id] is None:  # an added token the model itself does not have
                pieces[token.id] = token.content
                types[token.id] = CONTROL
        if None in pieces:
            raise TokenizerFileError(f"no token has id {pieces.index(None)}; ids must run from 0 without gaps")
        self.normalizer_spec = NormalizerSpec(add_dummy_prefix=False, remove_extra_whitespaces=False)
        try:
            self._load(
                pieces,  # type: ignore[arg-type]
                types,
                merges=spec.merges,
                byte_fallback=spec.byte_fallback,
                unk_surface=spec.unk_token,
                normalizer=Normalizer(add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False),
                fuse_unk=spec.fuse_unk,
                space=SPACE_SYMBOL,
            )
        except ModelLoadError as exc:
            raise TokenizerFileError(str(exc)) from None
        self._special = {t.content: t.id for t in spec.added_tokens if t.special}
        normalizer = TextNormalizer(spec.normalizer)
        self.added = AddedVocabulary(spec.added_tokens, None if normalizer.identity else normalizer)
        self.pre = PreTokenizer(spec.pre_tokenizer)

    # -- vocabulary ------------------------------------------------------------------------------------------------
    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special)

    def token_bytes(self, token_id: int) -> bytes:
        """What the piece stands for: ``▁`` as a space, a byte piece as its byte, an added token as its text."""
        if isinstance(token_id, int) and 0 <= token_id < len(self.pieces) and self.types[token_id] in (CONTROL, UNKNOWN):
            return self.pieces[token_id].encode("utf-8")
        return super().token_bytes(token_id)

    # -- encoding --------------------------------------------------------------------------------------------------
    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids as ``tokenizers``' ``encode(text, add_special_tokens=False)``; with ``allow_special`` false special
        tokens are plain text, but non-special added tokens (``<unusedN>``, whitespace runs) still match."""
        check_text(text)
        ids: list[int] = []
        for piece in self.added.split(text, allow_special):
            ids.extend(self._piece_ids_of(piece))
        return ids

    def _piece_ids_of(self, piece: Piece) -> list[int]:
        if piece.token is not None:
            return [piece.token.id]
        ids: list[int] = []
        for a, b in self.pre(piece.text):
            ids.extend(self._encode_normalized(piece.text[a:b]))
        return ids

    def tokenize(self, text: str, *, allow_special: bool = False) -> TokenizeResult:
        """Tokens placed in the input: a piece covers the input characters it came from; the byte pieces of one
        character all get that character's span."""
        check_text(text)
        pieces = self.added.split(text, allow_special)
        # each added-vocabulary piece's pre-tokens, merged once: the ids come from them and placing walks them
        merged = [None if p.token is not None else self._pre_tokens(p.text) for p in pieces]
        per_piece = [[p.token.id] if m is None else [i for *_, got in m for i in got] for p, m in zip(pieces, merged)]
        ids = [i for group in per_piece for i in group]

        def place(offset: int, limit: int | None) -> list[Token]:
            stop = None if limit is None else offset + limit
            tokens: list[Token] = []
            seen = 0
            for piece, pre, group in zip(pieces, merged, per_piece):
                if stop is not None and seen >= stop:
                    break
                if seen + len(group) > offset:
                    start = max(0, offset - seen)
                    tokens.extend(self._place_piece(piece, pre, start, None if stop is None else stop - seen - start))
                seen += len(group)
            return tokens

        return TokenizeResult(self.name, text, ids, place=place)

    def _pre_tokens(self, text: str) -> list[tuple[int, int, list[str], list[int]]]:
        """``text``'s pre-tokens as (start, end, merged pieces, ids)."""
        out = []
        for a, b in self.pre(text):
            merged = self._pieces(text[a:b])
            out.append((a, b, merged, self._piece_ids(merged)))
        return out

    def _place_piece(self, piece: Piece, pre, offset: int, limit: int | None) -> list[Token]:
        """Tokens ``offset`` to ``offset + limit`` of one added-vocabulary piece (``pre``: its :meth:`_pre_tokens`)."""
        if piece.token is not None:
            t = piece.token
            return [Token(t.id, t.content.encode(), piece.start, piece.end, t.content, t.special)]
        spans = piece.spans  # None: the text is the input's own, character for character
        tokens: list[Token] = []
        seen = 0
        for a, b, merged, got in pre:
            if limit is not None and len(tokens) >= limit:
                break
            if seen + len(got) > offset:
                want = None if limit is None else limit - len(tokens)
                for token in self._place(piece.text[a:b], merged, max(0, offset - seen), want):
                    if spans is None:
                        token.start, token.end = piece.start + a + token.start, piece.start + a + token.end
                    else:
                        token.start, token.end = spans[a + token.start][0], spans[a + token.end - 1][1]
                    tokens.append(token)
            seen += len(got)
        return tokens

    # -- decoding --------------------------------------------------------------------------------------------------
    def decode(self, ids: Sequence[int]) -> str:
        """Text for ``ids`` as ``tokenizers``' ``decode(ids, skip_special_tokens=False)``."""
        tokens = [self.pieces[i] for i in self.check_ids(ids)]
        if not self.decoders:
            return " ".join(tokens)
        for step in self.decoders:
            tokens = _decode_step(step, tokens)
        return "".join(tokens)


def _decode_step(step: dict, tokens: list[str]) -> list[str]:
    kind = step["type"]
    if kind == "Replace":
        old = (step.get("pattern") or {}).get("String")
        if old is None:
            raise UnsupportedTokenizerError("Replace decoders with a regex pattern are not supported yet")
        return [t.replace(old, step.get("content", "")) for t in tokens]
    if kind == "Fuse":
        return ["".join(tokens)]
    if kind == "Strip":
        return [_strip(t, step.get("content", " "), step.get("start", 0), step.get("stop", 0)) for t in tokens]
    return _byte_fallback(tokens)


def _strip(token: str, content: str, start: int, stop: int) -> str:
    """Up to ``start`` leading and ``stop`` trailing ``content`` characters removed (the Strip decoder)."""
    head = 0
    while head < min(start, len(token)) and token[head] == content:
        head += 1
    tail = len(token)
    while len(token) - tail < stop and tail > head and token[tail - 1] == content:
        tail -= 1
    return token[head:tail]


def _fallback_byte(token: str) -> int:
    """The byte of a ``<0xNN>`` token as the ByteFallback decoder reads it (either case of hex), or -1."""
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        try:
            return int(token[3:5], 16)
        except ValueError:
            return -1
    return -1


def _byte_fallback(tokens: list[str]) -> list[str]:
    """Runs of ``<0xNN>`` tokens become their text, or one U+FFFD per byte when the run is not UTF-8."""
    out: list[str] = []
    run = bytearray()
    for token in [*tokens, None]:
        b = _fallback_byte(token) if token is not None else -1
        if b >= 0:
            run.append(b)
            continue
        if run:
            try:
                out.append(run.decode("utf-8"))
            except UnicodeDecodeError:
                out.extend("\ufffd" * len(run))
            run.clear()
        if token is not None:
            out.append(token)
    return out
