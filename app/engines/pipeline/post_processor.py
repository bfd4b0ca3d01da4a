"""The tokens a model's own default encoding adds around a text: a beginning-of-text token, BERT's ``[CLS]`` and
``[SEP]``.

Every tokenizer here counts a text as the text alone (``encode(text, add_special_tokens=False)`` in Hugging Face's
terms), which is what a view of the text's tokens needs. The model reads more: Hugging Face's ``encode(text)`` runs
the file's post-processor with its defaults, and Gemma 3 then reads ``<bos>`` before "Hello world"; a
SentencePiece model adds ``<s>`` when its configuration says ``add_bos``. :class:`AddedSpecials` is that, for one
tokenizer: the tokens in order, each at the start or at the end, and where it was read (in words).

- a ``tokenizer.json``: its ``post_processor`` (:func:`from_post_processor`): ``TemplateProcessing`` (the single
  template's special tokens before and after ``$A``), ``BertProcessing`` and ``RobertaProcessing`` (``cls`` first,
  ``sep`` last), ``ByteLevel`` (offsets only: nothing added) and ``Sequence`` (each in turn, the later around the
  earlier), as Hugging Face ``tokenizers`` applies them;
- any other tokenizer: what its loader or registry entry says (BERT's ``vocab.txt``: ``[CLS]``/``[SEP]``, as
  ``transformers``' ``BertTokenizer`` adds them; a SentencePiece model: ``add_bos`` as its model's configuration
  sets it); by default nothing (tiktoken adds nothing).

The tests hold every shipped tokenizer to the reference libraries: ``len(encode(text))`` of ``tokenizers`` (and
``transformers``) with their defaults, and ``sentencepiece`` with the model's ``add_bos``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TokenplayError

START, END = "start", "end"


class PostProcessorError(TokenplayError):
    """A ``post_processor`` that cannot be read (a type Hugging Face ``tokenizers`` does not have, a token missing)."""


@dataclass(frozen=True, slots=True)
class AddedSpecial:
    id: int
    text: str
    at: str  # START or END

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "at": self.at}


@dataclass(frozen=True, slots=True)
class AddedSpecials:
    """The tokens a model's default encoding puts before (``at == "start"``) and after (``"end"``) a text's own.

    >>> bos = AddedSpecials((AddedSpecial(2, "<bos>", START),), "the post-processor")
    >>> bos.around([9259, 1902]), len(bos), bos.texts
    ([2, 9259, 1902], 1, ['<bos>'])
    """

    tokens: tuple[AddedSpecial, ...] = ()
    source: str = ""

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def texts(self) -> list[str]:
        return [t.text for t in self.tokens]

    def around(self, ids: list[int]) -> list[int]:
        """``ids`` as the model reads them: the start tokens, the text's ids, the end tokens."""
        return (
            [t.id for t in self.tokens if t.at == START] + list(ids) + [t.id for t in self.tokens if t.at == END]
        )

    def to_list(self) -> list[dict]:
        return [t.to_dict() for t in self.tokens]

    def wrapped_in(self, outer: AddedSpecials) -> AddedSpecials:
        """These tokens with ``outer``'s around them (a ``Sequence`` post-processor applies its parts in turn)."""
        start = [t for t in outer.tokens if t.at == START] + [t for t in self.tokens if t.at == START]
        end = [t for t in self.tokens if t.at == END] + [t for t in outer.tokens if t.at == END]
        return AddedSpecials(tuple(start + end), outer.source or self.source)


#: A tokenizer whose default encoding adds nothing (tiktoken's, every lab run's, a file without a post-processor).
NOTHING = AddedSpecials()


def bos(token_id: int, text: str, source: str) -> AddedSpecials:
    """One beginning-of-text token."""
    return AddedSpecials((AddedSpecial(token_id, text, START),), source)


def cls_sep(cls: tuple[str, int], sep: tuple[str, int], source: str) -> AddedSpecials:
    """``cls`` before the text, ``sep`` after it (BERT, RoBERTa)."""
    return AddedSpecials((AddedSpecial(cls[1], cls[0], START), AddedSpecial(sep[1], sep[0], END)), source)


def from_post_processor(obj: dict | None) -> AddedSpecials:
    """What a ``tokenizer.json``'s ``post_processor`` adds to one text, as Hugging Face ``tokenizers`` applies it
    with ``add_special_tokens=True`` (its default).

    >>> template = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
    ...     {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    >>> from_post_processor(template).around([22557, 1526])
    [1, 22557, 1526]
    >>> from_post_processor({"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}).around([7592])
    [101, 7592, 102]
    >>> len(from_post_processor({"type": "ByteLevel"})), len(from_post_processor(None))
    (0, 0)
    """
    if obj is None:
        return NOTHING
    if not isinstance(obj, dict):
        raise PostProcessorError('"post_processor" must be an object or null')
    kind = obj.get("type")
    if kind == "TemplateProcessing":
        return _template(obj)
    if kind in ("BertProcessing", "RobertaProcessing"):
        what = f"its post-processor ({kind})"
        return cls_sep(_pair(obj.get("cls"), "cls"), _pair(obj.get("sep"), "sep"), what)
    if kind == "ByteLevel":
        return NOTHING
    if kind == "Sequence":
        processors = obj.get("processors")
        if not isinstance(processors, list):
            raise PostProcessorError('a "Sequence" post-processor needs a "processors" list')
        added = NOTHING
        for part in processors:
            added = added.wrapped_in(from_post_processor(part))
        return added
    raise PostProcessorError(f"the post-processor type {kind!r} is not one Hugging Face tokenizers has")


def _pair(value, name: str) -> tuple[str, int]:
    if (
        not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str)
        or not isinstance(value[1], int) or isinstance(value[1], bool)
    ):
        raise PostProcessorError(f'the post-processor\'s "{name}" must be [token, id], not {value!r}')
    return value[0], value[1]


def _template(obj: dict) -> AddedSpecials:
    """The ``single`` template: special tokens before the sequence are at the start, after it at the end; a
    special token of the template may stand for several ids (its ``ids`` and ``tokens``)."""
    single = obj.get("single")
    specials = obj.get("special_tokens") or {}
    if not isinstance(single, list) or not isinstance(specials, dict):
        raise PostProcessorError('a "TemplateProcessing" post-processor needs a "single" list and "special_tokens"')
    tokens: list[AddedSpecial] = []
    at = START
    for piece in single:
        if not isinstance(piece, dict) or len(piece) != 1:
            raise PostProcessorError(f"a template piece must be a SpecialToken or a Sequence, not {piece!r}")
        (kind, value), = piece.items()
        if kind == "Sequence":
            at = END
            continue
        if kind != "SpecialToken" or not isinstance(value, dict):
            raise PostProcessorError(f"a template piece must be a SpecialToken or a Sequence, not {piece!r}")
        entry = specials.get(value.get("id"))
        if not isinstance(entry, dict):
            raise PostProcessorError(f"the template's special token {value.get('id')!r} is not in its special_tokens")
        ids, texts = entry.get("ids"), entry.get("tokens")
        if not isinstance(ids, list) or not isinstance(texts, list) or len(ids) != len(texts):
            raise PostProcessorError(f"the special token {value.get('id')!r} needs as many ids as tokens")
        tokens += [AddedSpecial(i, t, at) for i, t in zip(ids, texts)]
    return AddedSpecials(tuple(tokens), "its post-processor (TemplateProcessing)")
