"""Do two runtimes of one model agree on every document? (``tokenplay measure --conformance MODEL``)

Each document of the corpus is encoded by every runtime available for the model and each runtime's ids are compared
with the reference library's (the first runtime listed): for every document where they differ, the first differing
position (a token index, and the character offset where that token starts), the ids from there on in each, and the
text around it. This answers "your count does not match mine".

Runtimes of a model (:func:`runtimes`), special-token text always plain text as everywhere in Tokenplay:

- ``tiktoken`` — OpenAI's encodings (``encode_ordinary``), and any byte-level BPE Tokenplay runs from ranks and a
  split pattern (``custom-bpe``), given to tiktoken as such;
- ``tokenizers`` — Hugging Face's library on the model's ``tokenizer.json`` (``encode(..., add_special_tokens=False)``
  with special tokens matched as text); BERT's vocabulary as ``BertWordPieceTokenizer``;
- ``sentencepiece`` — the model's ``.model`` file (``encode``), when the ``sentencepiece`` package is installed;
- ``tokenplay`` — Tokenplay's own engine (``native-<model>``, or the model itself when our engine is its runtime).

A model is a registered name or alias, or the path of a ``tokenizer.json`` or SentencePiece ``.model`` file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import orjson

from app.engines import registry
from app.engines.errors import TokenplayError, UnknownTokenizerError

from .sources import Problems, ReadOptions, open_corpus, read_part

#: The shipped models our SentencePiece engines run, and their ``.model`` files.
SENTENCEPIECE_FILES = {"mistral-7b": "sentencepiece/mistral-7b-v0.1.model", "jurassic-2": "sentencepiece/jurassic-2.model"}
CONTEXT = 40


class ConformanceError(TokenplayError):
    """A model with fewer than two runtimes here, or no such model."""


@dataclass
class Runtime:
    name: str  # tiktoken, tokenizers, sentencepiece, tokenplay
    encode: Callable[[str], list[int]]
    detail: str = ""
    tokenizer: object = None  # Tokenplay's tokenizer, for the tokenplay runtime: it places tokens in the text


@dataclass
class Difference:
    where: str
    position: int  # token index of the first differing id
    offset: int | None  # character offset where that token starts (None when it could not be placed)
    reference_ids: list[int]
    ids: list[int]
    reference_count: int
    count: int
    context: str
    context_start: int

    def to_dict(self) -> dict:
        return {"document": self.where, "position": self.position, "offset": self.offset,
                "reference_ids": self.reference_ids, "ids": self.ids, "reference_tokens": self.reference_count,
                "tokens": self.count, "context": self.context, "context_start": self.context_start}


@dataclass
class Comparison:
    runtime: str
    detail: str
    documents: int = 0
    differing: int = 0
    failed: int = 0
    differences: list[Difference] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"runtime": self.runtime, "detail": self.detail, "documents": self.documents,
                "differing": self.differing, "failed": self.failed,
                "differences": [d.to_dict() for d in self.differences]}


@dataclass
class ConformanceReport:
    model: str
    reference: str
    reference_detail: str
    unavailable: dict[str, str]
    comparisons: list[Comparison]
    documents: int
    problems: list

    def to_dict(self) -> dict:
        return {"model": self.model, "reference": self.reference, "reference_detail": self.reference_detail,
                "documents": self.documents, "runtimes": [c.to_dict() for c in self.comparisons],
                "unavailable": self.unavailable, "problems": [p.to_dict() for p in self.problems]}

    def json(self) -> bytes:
        return orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2)

    def csv(self) -> str:
        """A row per differing document listed: the runtime, where, the first differing token and the text there."""
        import csv
        import io

        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["runtime", "document", "position", "offset", "reference_tokens", "tokens", "reference_ids",
                         "ids", "context"])
        for c in self.comparisons:
            for d in c.differences:
                writer.writerow([c.runtime, d.where, d.position, "" if d.offset is None else d.offset,
                                 d.reference_count, d.count, " ".join(map(str, d.reference_ids)),
                                 " ".join(map(str, d.ids)), d.context])
        return buffer.getvalue()

    def text(self) -> str:
        lines = [f"{self.model}: {self.documents:,} documents; reference: {self.reference} ({self.reference_detail})"]
        for c in self.comparisons:
            verdict = "agrees on every document" if not c.differing else f"differs on {c.differing:,}"
            lines.append(f"  {c.runtime} ({c.detail}): {verdict} of {c.documents:,}"
                         + (f"; {c.failed:,} it could not encode" if c.failed else ""))
            for d in c.differences:
                at = f"character {d.offset:,}" if d.offset is not None else "an unknown character"
                lines.append(f"    {d.where}: token {d.position:,} (at {at}): {self.reference} {d.reference_ids} "
                             f"vs {d.ids}; {d.reference_count:,} vs {d.count:,} tokens")
                lines.append(f"      text: {d.context!r}")
        for name, why in self.unavailable.items():
            lines.append(f"  {name}: not available ({why})")
        return "\n".join(lines) + "\n"


def _plain_hf(library):
    library.encode_special_tokens = True  # special-token text is plain text, as Tokenplay encodes everywhere
    library.no_truncation()
    library.no_padding()
    return lambda text: library.encode(text, add_special_tokens=False).ids


def _sentencepiece(data: bytes) -> Runtime:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=data)
    return Runtime("sentencepiece", sp.encode, f"sentencepiece {spm.__version__}")


def _tiktoken_of(tok) -> Runtime:
    import tiktoken

    encoding = tiktoken.Encoding(f"conformance-{tok.name}", pat_str=tok.pattern, mergeable_ranks=dict(tok.ranks),
                                 special_tokens=dict(tok.special_tokens))
    return Runtime("tiktoken", encoding.encode_ordinary, f"tiktoken {tiktoken.__version__}, the ranks and pattern")


def runtimes(model: str) -> tuple[str, list[Runtime], dict[str, str]]:
    """The model's name, its runtimes (the reference library first) and the runtimes not available here, why."""
    try:
        canonical = registry.resolve(model)
    except UnknownTokenizerError:
        if os.path.isfile(model):
            return _file_runtimes(model)
        raise
    spec = registry.spec(canonical)
    base = spec.model or canonical
    names = registry.names()
    out: list[Runtime] = []
    missing: dict[str, str] = {}
    base_spec = registry.spec(base)
    if base_spec.engine == "tiktoken":
        tok = registry.get(base)
        out.append(Runtime("tiktoken", tok.encode, f"tiktoken, {base}"))
    elif base_spec.engine == "huggingface":
        tok = registry.get(base)
        out.append(Runtime("tokenizers", _plain_hf(tok.library), f"Hugging Face tokenizers, {base}'s tokenizer.json"))
    elif base in SENTENCEPIECE_FILES:
        from app.engines.datafiles import verified_bytes

        try:
            out.append(_sentencepiece(verified_bytes(SENTENCEPIECE_FILES[base])))
        except ImportError:
            missing["sentencepiece"] = "pip install sentencepiece"
    elif base == "bert-base-uncased":
        from tokenizers.implementations import BertWordPieceTokenizer

        ours = registry.get(base)
        ref = BertWordPieceTokenizer({ours.id_to_token(i): i for i in range(ours.n_vocab)}, lowercase=True)
        out.append(Runtime("tokenizers", _plain_hf(ref._tokenizer), "Hugging Face tokenizers, BertWordPieceTokenizer"))
    elif hasattr(registry.get(base), "ranks") and getattr(registry.get(base), "pattern", None):
        out.append(_tiktoken_of(registry.get(base)))
    native = f"native-{base}"
    if native in names:
        tok = registry.get(native)
        out.append(Runtime("tokenplay", tok.encode, f"Tokenplay's engine, {native}", tok))
    elif base_spec.engine == "tokenplay":
        tok = registry.get(base)
        out.append(Runtime("tokenplay", tok.encode, f"Tokenplay's engine, {base}", tok))
    return base, out, missing


def _file_runtimes(path: str) -> tuple[str, list[Runtime], dict[str, str]]:
    from app.engines.registry.files import entry_name, read_file
    from app.engines.registry.loaders import detect_format, load_tokenizer

    data = read_file(path)
    kind = detect_format(data)
    name = entry_name(path)
    out, missing = [], {}
    if kind == "tokenizer.json":
        import tokenizers

        out.append(Runtime("tokenizers", _plain_hf(tokenizers.Tokenizer.from_str(data.decode("utf-8"))),
                           f"Hugging Face tokenizers, {path}"))
    elif kind == "sentencepiece":
        try:
            out.append(_sentencepiece(data))
        except ImportError:
            missing["sentencepiece"] = "pip install sentencepiece"
    ours = load_tokenizer(data, name=name, engine="tokenplay", filename=os.path.basename(path))
    out.append(Runtime("tokenplay", ours.encode, f"Tokenplay's engine, {path}", ours))
    return name, out, missing


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where ``a`` and ``b`` differ (the shorter one's length when one is a prefix), or None.

    >>> first_difference([1, 2, 3], [1, 2, 4]), first_difference([1, 2], [1, 2, 5]), first_difference([1], [1])
    (2, 2, None)
    """
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return k
    return None if len(a) == len(b) else min(len(a), len(b))


def _offset(text: str, ids: list[int], position: int, placer) -> int | None:
    """The character offset where token ``position`` of ``ids`` starts, from Tokenplay's placement of the same ids."""
    if placer is None:
        return None
    try:
        result = placer.tokenize(text)
    except TokenplayError:
        return None
    if result.ids[:position] != ids[:position]:
        return None
    if position >= len(result.ids):
        return len(text)
    return result.window(position, 1)[0].start


def check(model: str, paths: Iterable[str], *, read: ReadOptions = ReadOptions(), context: int = CONTEXT,
          limit: int = 100) -> ConformanceReport:
    """Compare every runtime of ``model`` with its reference on every document under ``paths``."""
    name, found, missing = runtimes(model)
    if len(found) < 2:
        have = ", ".join(r.name for r in found) or "none"
        raise ConformanceError(
            f"{model!r} has only one runtime here ({have}); conformance compares two or more"
            + (f" (not available: {', '.join(f'{k}: {v}' for k, v in missing.items())})" if missing else "")
        )
    reference, others = found[0], found[1:]
    placer = next((r.tokenizer for r in found if r.tokenizer is not None), None)
    corpus = open_corpus(paths, part_bytes=1 << 62)  # whole files: documents say their line
    problems: Problems = corpus.problems
    comparisons = [Comparison(r.name, r.detail) for r in others]
    documents = 0
    for part in corpus.parts:
        for doc in read_part(part, read, problems):
            try:
                want = list(reference.encode(doc.text))
            except TokenplayError as exc:
                problems.add(part.file.label, "encode_failed", 0, doc.where or "the file", str(exc)[:200])
                continue
            documents += 1
            where = f"{part.file.label}" + (f" {doc.where}" if doc.where else "")
            for runtime, comparison in zip(others, comparisons):
                comparison.documents += 1
                try:
                    got = list(runtime.encode(doc.text))
                except TokenplayError:
                    comparison.failed += 1
                    continue
                k = first_difference(want, got)
                if k is None:
                    continue
                comparison.differing += 1
                if len(comparison.differences) < limit:
                    offset = _offset(doc.text, want, k, placer)
                    at = offset if offset is not None else 0
                    start = max(0, at - context)
                    comparison.differences.append(Difference(
                        where, k, offset, want[k : k + 8], got[k : k + 8], len(want), len(got),
                        doc.text[start : at + context], start))
    return ConformanceReport(name, reference.name, reference.detail, missing, comparisons, documents,
                             problems.sorted())
