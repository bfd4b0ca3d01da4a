r"""Downloads of a run and its chart: our JSON; for byte-level runs ``.tiktoken`` (the ranks) and
``tiktoken.json`` (the arguments of ``tiktoken.Encoding``: name, ``pat_str``, ranks); ``.model`` for
SentencePiece BPE and unigram runs; ``tokenizer.json`` for WordPiece, byte- and character-level runs.

A byte- or character-level run's files carry its pre-tokenizer as its tokenizer has it after the last merge (a
superword run's stage two): ``tokenizer.json`` as a ``Split`` step with behavior ``Isolated`` (the lab's
pre-tokens exactly: matches and the stretches between them), written for Oniguruma, the library's regex engine
(:func:`oniguruma`); ``tiktoken.json`` as a ``pat_str`` whose matches are those pre-tokens
(:func:`~.splits.findall_regex`), since tiktoken keeps only matches. tiktoken joins the pair whose joined bytes
rank lowest, Hugging Face's BPE the listed pair of lowest rank, which the lab does too: the two agree on a trained
run's merges; a typed merge list (:mod:`.merge_lists`) may name merges only the second runs as the lab does.
A user's own pattern that a library would read otherwise is refused for that library in words (:func:`refusals`:
``\w`` for both, an empty match for tiktoken, which keeps only matches and stops at an empty one).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from functools import partial

import regex

from app.engines.errors import TokenplayError
from app.engines.pipeline.onig_regex import translate
from app.engines.pipeline.tokenizer_json import BYTE_OF_CHAR, UnsupportedTokenizerError
from app.engines.result import escape_bytes

from .algorithms import END_OF_WORD, final_encoder, transition_of
from .options import stage_two
from .runs import Run
from .splits import CHECK_SECONDS, findall_regex

_CHAR_OF_BYTE = {b: ch for ch, b in BYTE_OF_CHAR.items()}


class ExportError(TokenplayError):
    """A run that cannot be written in the asked format."""


def to_json(run: Run) -> dict:
    vocab = run.vocab()
    if run.unigram:
        return {
            "format": "tokenplay-lab",
            "version": 1,
            "id": run.id,
            "options": run.options.to_dict(),
            "rounds": [r.to_dict() for r in run.steps],
            "vocab": {str(i): escape_bytes(vocab[i]) for i in range(run.extra["n_final"])},
        }
    return {
        "format": "tokenplay-lab",
        "version": 1,
        "id": run.id,
        "options": run.options.to_dict(),
        "base_vocab": {str(i): escape_bytes(b) for i, b in sorted(run.base.items())},
        "merges": [
            {"step": s.step, "pair": list(s.pair), "left": escape_bytes(s.left), "right": escape_bytes(s.right),
             "id": s.new_id, "token": escape_bytes(vocab[s.new_id]), "count": s.count, "forced": s.forced}
            for s in run.steps
        ],
        "vocab": {str(i): escape_bytes(b) for i, b in sorted(vocab.items())},
    }


def _read_otherwise(pattern: str) -> bool:
    r"""Whether ``pattern`` has an escape or class another regex engine reads otherwise than the ``regex`` module
    (``\w``, ``\b``, ``\h``, a POSIX class: :func:`~app.engines.pipeline.onig_regex.translate` rewrites or refuses
    them)."""
    try:
        return translate(pattern) != pattern
    except UnsupportedTokenizerError:
        return True


def oniguruma(pattern: str, field: str = "the run's pattern") -> str:
    r"""``pattern`` (the ``regex`` module's) as Oniguruma reads it the same way, for a tokenizer.json: GPT-4's
    possessive ``\p{N}{1,3}+`` as ``\p{N}{1,3}`` (Oniguruma reads ``{1,3}+`` as a repeat of ``{1,3}``; nothing
    follows it in its alternative, so the two match alike); a pattern with another possessive repeat count, or
    with an escape Oniguruma reads otherwise (``\w``, ``\b``, ``\h``), is refused in words."""
    out = pattern.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")
    if regex.search(r"(?<!\\)\{\d*(?:,\d*)?\}\+", out):  # a repeat count, not \p{L}+
        raise ExportError(f"{field} has a possessive repeat count ({{m,n}}+), which Hugging Face's regex engine "
                          "reads as a repeat of the count; write it without the +, or as (?>...{m,n})")
    if _read_otherwise(out):
        raise ExportError(f"{field} uses \\w, \\b or \\h, which Hugging Face's regex engine reads otherwise; write "
                          "the classes out (e.g. [\\p{L}\\p{N}_] for \\w)")
    return out


def _split_steps(run: Run) -> list[dict]:
    """The tokenizer.json pre-tokenizer steps that cut text as the run's tokenizer does."""
    split = final_encoder(run.options, run.base, run.n_steps).split
    if split.regex is None:
        return []
    return [{"type": "Split", "pattern": {"Regex": oniguruma(split.regex)}, "behavior": "Isolated", "invert": False}]


#: Texts a custom pattern is tried on before its tiktoken export, beside the run's corpus: each kind of character
#: alone and together (a lookahead or ``x*`` matches the empty string somewhere in them).
_EMPTY_PROBES = (" ", "a", "A", "0", "_", ".", "\n", "\t", "é", "中", "🙂", "'", "aA0 _.,-\n\té中🙂's 12", "")


def _tiktoken_pattern(run: Run, *, whole_corpus: bool = True) -> str | None:
    r"""The ``pat_str`` of a byte-level run's tiktoken export: a pattern whose matches are the pre-tokens of its
    tokenizer (:func:`~.splits.findall_regex`). A custom pattern is refused in words where tiktoken would not cut
    as the lab does: one with ``\w``, ``\b``, ``\h`` or a POSIX class (tiktoken's regex engine reads them with
    other tables), and one that matches the empty string somewhere (tiktoken stops with an error at an empty
    match, and the text around it would be lost): on a few texts of every kind of character and, unless
    ``whole_corpus`` is false, on the run's corpus."""
    encoder = final_encoder(run.options, run.base, run.n_steps)
    pattern = findall_regex(encoder.pattern, encoder.pattern_regex)
    if encoder.pattern != "custom":
        return pattern
    mine = encoder.pattern_regex
    t = transition_of(run.options)
    field = "the run's stage-two pattern_regex" if t is not None and run.n_steps > t else "the run's pattern_regex"
    if _read_otherwise(mine):
        raise ExportError(f"{field} uses \\w, \\b, \\h or a POSIX class, which tiktoken's regex engine reads with "
                          "other Unicode tables than the lab's; write the classes out (e.g. [\\p{L}\\p{N}_] for "
                          "\\w) to export it for tiktoken, or export tokenizer.json")
    compiled = regex.compile(mine)
    for text in (*_EMPTY_PROBES, run.corpus) if whole_corpus else _EMPTY_PROBES:
        try:
            empty = next((m for m in compiled.finditer(text, timeout=CHECK_SECONDS) if m.start() == m.end()), None)
        except TimeoutError:  # the corpus passed its check when the run started; a slow moment is not a verdict
            continue
        if empty is not None:
            where = (f"at offset {empty.start():,} of the corpus" if text is run.corpus
                     else f"in the text {text!r}" if text else "in an empty text")
            raise ExportError(f"{field} matches the empty string ({where}): tiktoken keeps only a pattern's "
                              "matches and stops at an empty one. Make every match take a character (x+ rather "
                              "than x*, no lookahead alone) to export it for tiktoken, or export tokenizer.json, "
                              "which cuts as the lab does")
    return pattern


def refusals(run: Run) -> dict[str, str]:
    """Why the run's pattern keeps an export from cutting as the lab does, by format (``tokenizer.json``,
    ``tiktoken.json``): the run page shows the reason where the download would be, rather than a download that
    fails. Only a user's own pattern can be refused; worked out on short texts, well under a millisecond (the
    download also tries the corpus)."""
    stage_two_pattern = stage_two(run.options)["pattern"] if run.options.superwords is not None else None
    if run.options.algorithm not in ("byte", "char") or "custom" not in (run.options.pattern, stage_two_pattern):
        return {}
    checks = {"tokenizer.json": _split_steps}
    if run.options.algorithm == "byte":  # the short texts only: the page is not held up by a scan of the corpus,
        checks["tiktoken.json"] = partial(_tiktoken_pattern, whole_corpus=False)  # which the download does
    found = {}
    for fmt, check in checks.items():
        try:
            check(run)
        except ExportError as exc:
            found[fmt] = str(exc)
    return found


def tokenizer_json(run: Run) -> str:
    """A byte- or character-level run as a Hugging Face ``tokenizer.json``: its pre-tokenizer (a ``Split``), a
    BPE model with its vocabulary (ids as the run's) and merges in order; a byte-level run writes tokens in GPT-2's
    byte alphabet through ``ByteLevel`` steps, a character-level one as text with the byte pieces ``<0x00>`` ...
    ``<0xFF>`` after its vocabulary for the characters the corpus lacked (its tokenizer's byte fallback)."""
    algorithm = run.options.algorithm
    if algorithm == "char" and run.options.end_of_word:
        raise ExportError(f"tokenizer.json has no token of its own for {END_OF_WORD}: export this run as json, or "
                          "train it without end_of_word")
    steps = _split_steps(run)
    vocab = run.vocab()
    if algorithm == "byte":
        text = {i: "".join(_CHAR_OF_BYTE[b] for b in data) for i, data in vocab.items()}
        steps = steps + [{"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]
        decoder = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
        byte_fallback = False
    else:
        text = {i: data.decode("utf-8") for i, data in vocab.items()}
        after = max(vocab) + 1
        text |= {after + b: f"<0x{b:02X}>" for b in range(256)}
        decoder = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]}
        byte_fallback = True
    if len(set(text.values())) != len(text):
        raise ExportError("two tokens of this run have the same text; tokenizer.json keys tokens by their text")
    model = {
        "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
        "fuse_unk": False, "byte_fallback": byte_fallback, "ignore_merges": False,
        "vocab": {t: i for i, t in sorted(text.items())},
        "merges": [[text[s.pair[0]], text[s.pair[1]]] for s in run.steps],
    }
    pre = None if not steps else steps[0] if len(steps) == 1 else {"type": "Sequence", "pretokenizers": steps}
    body = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
            "pre_tokenizer": pre, "post_processor": None, "decoder": decoder, "model": model}
    return json.dumps(body, ensure_ascii=False, indent=1)


def tiktoken_json(run: Run) -> dict:
    """A byte-level run as the arguments of ``tiktoken.Encoding``: ``name``, ``pat_str`` (the pre-tokenizer of its
    tokenizer, as a pattern whose matches are its pre-tokens), ``mergeable_ranks`` (base64 of a token's bytes ->
    its id, as in a ``.tiktoken`` file) and ``special_tokens``."""
    if run.options.algorithm != "byte":
        raise ExportError("tiktoken holds byte-level vocabularies only; export this run as json or tokenizer.json")
    pattern = _tiktoken_pattern(run)
    vocab = run.vocab()
    if len(set(vocab.values())) != len(vocab):
        raise ExportError("two tokens of this run have the same bytes; tiktoken keys tokens by their bytes")
    return {
        "name": f"lab-{run.id}",
        "pat_str": pattern if pattern is not None else r"[\s\S]+",
        "mergeable_ranks": {base64.b64encode(data).decode(): i for i, data in sorted(vocab.items())},
        "special_tokens": {},
    }


def export(run: Run, fmt: str) -> tuple[bytes, str, str]:
    """(body, media type, file extension) of ``run`` in ``fmt``: ``json``, ``tiktoken``, ``tiktoken.json``,
    ``model`` or ``tokenizer.json``."""
    if fmt == "json":
        return json.dumps(to_json(run), ensure_ascii=False, indent=1).encode(), "application/json", "json"
    if fmt == "tiktoken.json":
        return json.dumps(tiktoken_json(run), indent=1).encode(), "application/json", "tiktoken.json"
    if fmt == "tiktoken":
        if run.options.algorithm != "byte":
            raise ExportError("the .tiktoken format holds byte-level vocabularies only; export this run as json")
        from app.engines.bpe import BPEModelError, BPETokenizer

        try:
            body = BPETokenizer([s.pair for s in run.steps], "none").tiktoken_ranks_text()
        except BPEModelError as exc:
            raise ExportError(str(exc)) from None
        return body.encode("ascii"), "text/plain", "tiktoken"
    if fmt == "model":
        if not run.model or run.options.algorithm not in ("sentencepiece", "unigram"):
            raise ExportError("the .model format is for SentencePiece BPE and unigram runs; export this run as json")
        return run.model, "application/octet-stream", "model"
    if fmt == "tokenizer.json":
        if run.options.algorithm in ("byte", "char"):
            return tokenizer_json(run).encode(), "application/json", "tokenizer.json"
        if run.options.algorithm != "wordpiece":
            raise ExportError("the tokenizer.json format is for WordPiece, byte- and character-level runs; export "
                              "this run as json or model")
        return run.model, "application/json", "tokenizer.json"
    raise ExportError(f"unknown export format {fmt!r}; choose json, tiktoken, tiktoken.json, model or tokenizer.json")


# -- chart ---------------------------------------------------------------------------------------------------

W, H, PAD = 600, 180, 36


def chart(run: Run, k: int, text_tokens: Callable[[int], int]) -> dict:
    """An SVG line chart of compression against merges or rounds, with step ``k`` marked: the corpus's bytes per
    token as step ``i``'s tokenizer cuts it (``text_tokens(i)``, :meth:`~app.lab.runs.Run.bytes_per_token`)."""
    n = run.n_steps
    t = transition_of(run.options) if not run.unigram else None
    points = list(range(0, n + 1, max(1, n // 300)))
    if points[-1] != n:
        points.append(n)
    ys = [run.bytes_per_token(text_tokens(i)) for i in points]
    at_k = run.bytes_per_token(text_tokens(k))
    y_max = max(ys + [1.0])
    y_min = min(ys + [1.0]) if ys else 0.0
    y_min = min(y_min, 1.0)
    span = (y_max - y_min) or 1.0

    def x(i: int) -> float:
        return PAD + (W - 2 * PAD) * (i / n if n else 0)

    def y(v: float) -> float:
        return H - PAD + -(H - 2 * PAD) * ((v - y_min) / span)

    return {
        "w": W,
        "h": H,
        "pad": PAD,
        "points": " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in zip(points, ys)),
        "mx": round(x(k), 1),
        "my": round(y(at_k), 1),
        "value": round(at_k, 3),
        "y_max": round(y_max, 2),
        "y_min": round(y_min, 2),
        "n": n,
        "tx": None if t is None or not 0 < t < n else round(x(t), 1),  # a superword run's transition
        "unit": "bytes",
        "steps": "rounds" if run.unigram else "merges",
    }
