"""What the lab's pages and ``/api/train`` do with runs (:mod:`app.lab`): start one from a form, step, force a merge,
trace a text, draw a token's merge tree, download; cut a text by a pre-tokenizer, page through every pair of a
step, count a new text as runs' vocabularies grow; and the side by side of three algorithms on one corpus.

Training runs in the lab's worker pool; everything here only reads stored step records (:mod:`app.lab.replay`), so
stepping never trains again.
"""

from __future__ import annotations

import re

import orjson

from app.engines.sentencepiece.trainer_options import TrainerOptions
from app.features.compare import boundaries
from app.lab import export as lab_export
from app.lab.display import MAX_ENCODE_CHARS
from app.lab.examples import DEFAULT_FORM, EXAMPLES
from app.lab.options import LabOptionsError, Options
from app.lab.replay import replay_for
from app.lab.run_tokenizers import spec_for
from app.lab.runs import Run
from app.lab import curves as lab_curves
from app.lab import splits
from app.lab.service import Lab, RunNotReady

from .errors import NotFoundError, TooLargeError, export_format

#: The setup form's fields for sentencepiece's trainer options: ``sp_<option>`` each (a list of symbols one a line),
#: and ``sp_present``, which says the section was on the form (a checkbox it leaves out is then false).
SPM_FIELDS = {f"sp_{name}": "" for name in TrainerOptions().to_dict()} | {"sp_present": ""}
#: A posted form's fields that are missing take these (as /api/train's defaults); the page's form starts from
#: :data:`app.lab.examples.DEFAULT_FORM`. ``lesson`` names the example whose lesson the run's page opens with.
POSTED_DEFAULTS = DEFAULT_FORM | {"corpus": "", "pattern": "gpt2", "size": "10", "lesson": ""} | SPM_FIELDS
#: The form's fields for byte- and character-level BPE's own options (issues 33-34), as a posted form that lacks them
#: means them: the run's pattern's regex, min_count, superwords (a checkbox, the transition, stage two's pattern
#: and regex), a typed merge list, and which button was pressed (``mode``: train, or replay the typed merges).
LABBPE_FIELDS = {"pattern_regex": "", "min_count": "2", "superwords": "", "transition": "", "stage_two": "lines-digits-r2l",
                 "stage_two_regex": "", "merge_list": "", "mode": "train"}
POSTED_DEFAULTS = POSTED_DEFAULTS | LABBPE_FIELDS
EXPORT_FORMATS = ("json", "tiktoken", "tiktoken.json", "model", "tokenizer.json")
SENTENCEPIECE_ALGORITHMS = ("sentencepiece", "unigram")
#: Characters of the corpus the pattern box's preview cuts (the step views show the first 2,000).
PREVIEW_CHARS = 3_000


def options_of(form: dict) -> Options:
    """The training options a setup form asks for (its fields as :data:`POSTED_DEFAULTS` has them)."""
    try:
        n = int(form["size"])
    except ValueError:
        what = "tokens" if form["size_kind"] != "merges" else "learned pieces" if form["algorithm"] == "unigram" else "merges"
        raise LabOptionsError(f"the number of {what} must be a whole number") from None
    by_vocab = form["size_kind"] == "vocab_size"
    spm = form["algorithm"] in SENTENCEPIECE_ALGORITHMS
    options = Options(
        form["algorithm"],
        form["pattern"],
        None if by_vocab else n,
        n if by_vocab else None,
        "first" if spm else form["tie_break"],  # the form hides ties for sentencepiece's trainers
        form["end_of_word"] and form["algorithm"] == "char",
        sentencepiece=(spm_options_of(form) if form.get("sp_present") else form.get("sentencepiece")) if spm else None,
    )
    return labbpe_options(form, options)


def whole(value: str, what: str) -> int:
    """``value`` as a whole number, or a refusal naming ``what``."""
    try:
        return int(value)
    except ValueError:
        raise LabOptionsError(f"{what} must be a whole number; got {value!r}") from None


def labbpe_options(form: dict, options: Options) -> Options:
    """``options`` with what the form says of byte- and character-level BPE's own options (:data:`LABBPE_FIELDS`):
    the regex of pattern ``custom``, ``min_count``, superwords, and the typed merges when their button was pressed
    (they replace the size)."""
    if options.algorithm not in ("byte", "char"):
        return options
    options.min_count = whole(form["min_count"], "min_count")
    if options.pattern == "custom":
        options.pattern_regex = form["pattern_regex"]
    if form["superwords"]:
        superwords = {"transition": whole(form["transition"], "the superword transition (after merge ...)"),
                      "pattern": form["stage_two"]}
        if form["stage_two"] == "custom":
            superwords["pattern_regex"] = form["stage_two_regex"]
        options.superwords = superwords
    if form["mode"] == "merges":
        options.merge_list, options.merges, options.vocab_size = form["merge_list"], None, None
    return options


def labbpe_form(options: Options) -> dict:
    """The setup form's fields of byte- and character-level BPE's own options for ``options`` ("New run")."""
    superwords = options.superwords or {}
    form = {
        "pattern_regex": options.pattern_regex or "",
        "min_count": options.min_count,
        "superwords": options.superwords is not None,
        "transition": superwords.get("transition", ""),
        "stage_two": superwords.get("pattern") or "lines-digits-r2l",
        "stage_two_regex": superwords.get("pattern_regex") or "",
        "merge_list": options.merge_list or "",
    }
    if options.merge_list is not None:
        form["size"] = len([line for line in options.merge_list.splitlines() if line.strip() and not line.startswith("#")])
    return form


# -- pre-tokenizers, every pair, curves (issues 33-34) ---------------------------------------------------------------


def preview(text: str, pattern: str, pattern_regex: str | None) -> dict:
    """The pattern box's preview: the start of ``text`` cut by the lab's pre-tokenizer ``pattern`` (its errors in
    words: a bad regex, one that only matches empty strings, one over the request's time budget)."""
    if pattern == "custom" and not pattern_regex:
        raise LabOptionsError("type your regex in the box (the regex module's syntax), e.g. \\p{L}+|\\p{N}|[^\\p{L}\\p{N}]+")
    head = text[:PREVIEW_CHARS]
    cut = cut_text(head, pattern, pattern_regex)
    return cut | {"pattern": pattern, "chars": len(head), "truncated": len(head) == PREVIEW_CHARS}


def cut_text(text: str, pattern: str, pattern_regex: str | None) -> dict:
    """``POST /api/pretokenize``: ``{"pieces", "count"}``."""
    return splits.preview(text, pattern, pattern_regex)


def pairs(run: Run, k: int, offset: int = 0, limit: int = 100, q: str = "") -> dict:
    """Every pair after ``k`` merges (the table merge ``k + 1`` is chosen from), a page of them, filtered."""
    return replay_for(run).pairs(check_step(run, k), offset, limit, q)


_RUN_ID = re.compile(r"(?:^|/)([0-9a-f]{4,32})(?:[/?#]|$)")


def finished_runs(lab: Lab, items: list[str]) -> list[Run]:
    """The finished runs ``items`` name (ids, or links to their pages, separated by spaces), each once, in order."""
    out: list[Run] = []
    for item in " ".join(items).split():
        m = _RUN_ID.search(item)
        if m is None:
            raise LabOptionsError(f"{item[:40]!r} is no run id or link; paste ids like 3f2a9c01d4 or /lab/runs/<id>")
        run = lab.run(m.group(1))
        if run.status != "done":
            raise RunNotReady(run)
        if run not in out:
            out.append(run)
    return out


def curves(runs: list[Run], text: str, points: int) -> dict:
    """``POST /api/train/curves``: each run's tokens of ``text`` at ``points`` steps (:mod:`app.lab.curves`)."""
    return lab_curves.curves(runs, text, points)


def curves_page(runs: list[Run], text: str, points: int) -> dict:
    """What the page's curves fragment shows: the curves, their chart, and the request again (for the CSV)."""
    result = curves(runs, text, points)
    return {"result": result, "chart": lab_curves.chart(result), "text": text, "points": points}


def curves_csv(runs: list[Run], text: str, points: int) -> str:
    return lab_curves.csv_text(curves(runs, text, points))


def lesson_form(key: str) -> dict | None:
    """The setup form of the example ``key`` when it is a lesson (:data:`app.lab.examples.EXAMPLES`), as posted."""
    example = EXAMPLES.get(key)
    if example is None or "lesson" not in example:
        return None
    return POSTED_DEFAULTS | {k: str(v) if k != "sentencepiece" else v for k, v in example["form"].items()} | {
        "lesson": key, "end_of_word": False}


def spm_options_of(form: dict) -> dict:
    """sentencepiece's options as the setup form's ``sp_*`` fields give them, those that differ from its defaults
    (each read as its option's type; :class:`LabOptionsError` naming the option for one that is not)."""
    out = {}
    for name, default in TrainerOptions().to_dict().items():
        raw = str(form.get(f"sp_{name}", "")).strip()
        if isinstance(default, bool):
            value = raw in ("1", "on", "true")
        elif isinstance(default, list):
            value = [line.strip() for line in raw.splitlines() if line.strip()]
        elif isinstance(default, str):
            value = raw or default
        else:
            try:
                value = type(default)(raw) if raw else default
            except ValueError:
                kind = "a whole number" if isinstance(default, int) else "a number"
                raise LabOptionsError(f"sentencepiece.{name} must be {kind}, got {raw!r}", f"sentencepiece.{name}") from None
        if value != default:
            out[name] = value
    return out


def spm_form_values(form: dict) -> dict:
    """The values the setup form's sentencepiece section shows: the form's own (posted again after an error), an
    example's or a run's ``sentencepiece`` options, else sentencepiece's defaults."""
    if form.get("sp_present"):
        try:
            given = spm_options_of(form)
        except LabOptionsError:
            given = {}
    else:
        given = form.get("sentencepiece") or {}
    return TrainerOptions().to_dict() | dict(given)


def corpus_of_file(raw: bytes, filename: str | None, limit: int, lab: Lab) -> str:
    """An uploaded corpus file's text (UTF-8, a byte order mark dropped), refused past ``limit`` bytes."""
    if len(raw) > limit:
        raise TooLargeError(f"the file is larger than the lab's limit of {lab.max_corpus_chars:,} characters")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LabOptionsError(f"{filename} is not UTF-8 text; save it as UTF-8 and upload it again") from None


def started(run: Run) -> Run:
    """``run`` as just started; a training that failed at once raises its message (a 422)."""
    if run.status == "error":
        raise LabOptionsError(run.error or "training failed", run.error_field)
    return run


def check_step(run: Run, k: int) -> int:
    if not 0 <= k <= run.n_steps:
        raise NotFoundError(f"step {k} is out of range: run {run.id} has steps 0..{run.n_steps}")
    return k


def pair_ids(run: Run, k: int, pair: list) -> tuple[int, int]:
    """Two token ids, or two token texts, as ids that exist after ``k`` merges (manual mode's choice)."""
    replay = replay_for(run)
    known = set(run.base) | {s.new_id for s in run.steps[:k]}
    out = []
    for item in pair:
        if isinstance(item, int):
            if item not in known:
                raise LabOptionsError(f"token id {item} does not exist after {k} merges")
            out.append(item)
        else:
            ids = [i for i in known if replay.text[i] == item]
            if not ids:
                raise LabOptionsError(f"no token with text {item!r} exists after {k} merges")
            out.append(min(ids))
    return out[0], out[1]


def force_merge(lab: Lab, run: Run, k: int, pair: list, *, wait: float) -> Run:
    """Manual mode: a new run that keeps ``run``'s first ``k`` merges, merges ``pair`` next, then trains on."""
    check_step(run, k)
    return started(lab.continue_with(run, k, pair_ids(run, k, pair), wait=wait))


def encode_trace(run: Run, text: str, step: int | None) -> tuple[int, dict]:
    """A new text merge by merge with the merges up to ``step`` (default: all), and that step."""
    k = check_step(run, run.n_steps if step is None else step)
    if len(text) > MAX_ENCODE_CHARS:
        raise TooLargeError(f"the text is {len(text):,} characters; encode traces take at most {MAX_ENCODE_CHARS:,}")
    return k, replay_for(run).encode_trace(text, k)


#: A handout lists at most this many merges and vocabulary entries (the newest; the export has them all).
HANDOUT_ITEMS = 600


def handout_word(run: Run) -> str:
    """The word a handout encodes when none is asked for: the corpus's most frequent word of 5 letters or more (the
    merges show in it), else its first word."""
    words = re.findall(r"\w{5,}", run.corpus[:200_000])
    if words:
        counts: dict[str, int] = {}
        for w in words:
            counts[w] = counts.get(w, 0) + 1
        return max(counts, key=lambda w: (counts[w], -words.index(w)))
    return (run.corpus.split() or [""])[0][:MAX_ENCODE_CHARS]


def handout(run: Run, step: int | None, word: str | None) -> dict:
    """A run at step ``k`` as a printed handout: its merges so far in order (a unigram run: its rounds), its
    vocabulary at that step (the base summarized when it is 256 bytes) and one word encoded with that step's
    tokenizer, the trace the run's page shows."""
    k = check_step(run, run.n_steps if step is None else step)
    word = (word or "").strip() or handout_word(run)
    _, trace = encode_trace(run, word, k)
    replay = replay_for(run)
    entries, total = replay.vocab_entries(k, "", HANDOUT_ITEMS)
    if run.options.algorithm == "byte":
        entries = [e for e in entries if e.get("step")]  # the 256 bytes are said in words
    merges = [] if run.unigram else list(enumerate(run.steps[max(0, k - HANDOUT_ITEMS):k], start=max(0, k - HANDOUT_ITEMS) + 1))
    return {"k": k, "word": word, "trace": trace, "vocab": entries, "vocab_total": total, "merges": merges,
            "merges_left_out": max(0, k - HANDOUT_ITEMS) if not run.unigram else 0,
            "rounds": [s for s in run.steps[:k]] if run.unigram else []}


def merge_tree(run: Run, token_id: int):
    """How the run built token ``token_id``, merge by merge."""
    replay = replay_for(run)
    if token_id not in replay.text:
        raise NotFoundError(f"run {run.id} has no token with id {token_id}")
    return replay.merge_tree(token_id)


#: "Use in playground" opens the playground with about this many characters of the run's corpus.
SAMPLE_CHARS = 240


def playground_sample(run: Run) -> str:
    """What "Use in playground" opens the playground with: the corpus's start, its first paragraph up to about
    :data:`SAMPLE_CHARS` characters, cut after a whole word (the text the run learned from, so its merges show).

    >>> from app.lab.options import Options
    >>> playground_sample(Run("r", "\\n  The cat sat.\\n\\nThe dog ran.", Options()))
    'The cat sat.'
    """
    text = run.corpus.lstrip()
    paragraph = re.split(r"\n\s*\n", text, maxsplit=1)[0]
    if len(paragraph) <= SAMPLE_CHARS:
        return paragraph.rstrip()
    cut = paragraph[:SAMPLE_CHARS]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:space] if space > SAMPLE_CHARS // 2 else cut).rstrip()


def export(run: Run, fmt: str) -> tuple[bytes, str, str]:
    """A run's download: its body, media type and file name (``json``, ``tiktoken`` for byte-level runs, ``model``
    for SentencePiece BPE and unigram runs, ``tokenizer.json`` for WordPiece runs)."""
    body, media, ext = lab_export.export(run, export_format(fmt, EXPORT_FORMATS))
    return body, media, f"lab-{run.id}.{ext}"


def summary(run: Run) -> dict:
    """The run's summary; once done, with ``text_tokens``: the corpus as the run's tokenizer cuts it (what
    ``/api/tokenize`` counts with it), beside ``final_tokens``, training's count; ``compression`` is the corpus's
    UTF-8 bytes (``corpus_bytes``) per token of ``text_tokens``, ``training_compression`` training's ``base_units``
    per token of ``final_tokens``. A run that ended away from the
    size asked for says why in ``stop_reason``, in the words of its page, and ``reachable`` gives the sizes that
    work on its corpus (``{"vocab_size": {"min", "max"}, "merges": {"min", "max"}}``) when the lab knows them."""
    out = run.summary() | {"url": f"/lab/runs/{run.id}"}
    if run.status == "done":
        replay = replay_for(run)
        outcome = replay.outcome.to_dict()
        out["text_tokens"] = replay.text_tokens(run.n_steps)
        out["corpus_bytes"] = run.corpus_bytes
        out["compression"] = round(run.bytes_per_token(out["text_tokens"]), 4)
        out["training_compression"] = round(run.compression_at(run.n_steps), 4)
        out["stop_reason"] = outcome["reason"] or run.stop_reason
        out["reachable"] = outcome["reachable"]
    return out


def document(run: Run) -> bytes:
    """``GET /api/train/{id}``'s answer, as JSON: :func:`summary`, and once the run is done, every step
    (:func:`steps_of`). A finished run's document never changes: it is built once (most of a second for 4,096 merges:
    its replay, its corpus cut by its tokenizer, a record per merge) and kept with the run, so asking again costs
    nothing."""
    kept = run.kept.get("document")
    if kept is not None:
        return kept
    out = summary(run)
    if run.status == "done":
        out["steps"] = steps_of(run)
    data = orjson.dumps(out)
    if run.finished:
        run.kept["document"] = data
    return data


def kept_document(run: Run) -> bytes | None:
    """The document :func:`document` built and kept, if it did."""
    return run.kept.get("document")


def steps_of(run: Run) -> list[dict]:
    """Every step of a finished run: a merge with its pair's text, or a unigram round."""
    if run.unigram:  # rounds: {"round", "removed": [{"piece", "loss", "why"}], "vocab_size", "log_likelihood", ...}
        return [s.to_dict() for s in run.steps]
    replay = replay_for(run)
    return [s.to_dict() | {"pair_text": replay.pair_text(s.pair)} for s in run.steps]


# -- side by side --------------------------------------------------------------------------------------------------

#: The three algorithms, as the page names them, and the lab algorithm that trains each.
SIDES = {"bpe": "sentencepiece", "wordpiece": "wordpiece", "unigram": "unigram"}
SIDE_LABELS = {"bpe": "BPE", "wordpiece": "WordPiece", "unigram": "Unigram"}
#: The longest text the three cut at once.
MAX_SIDE_TEXT = 2_000


#: What the three of a comparison have in common: the vocabulary size, or the number of merges (each learns that
#: many pieces beyond its own base: BPE and WordPiece merges, Unigram's learned pieces).
SIDE_MATCHES = {"vocab_size": "the same vocabulary size", "merges": "the same number of merges"}


def start_three(lab: Lab, corpus: str, size: int, match: str = "vocab_size") -> dict[str, Run]:
    """Queue the three runs of one comparison (each checked before any is queued): sentencepiece's BPE and unigram
    trainers with its default options, so that the two read the corpus alike, and WordPiece with BERT's words; all
    at one vocabulary size (``match="vocab_size"``) or with one number of merges (``match="merges"``: the bases
    differ, so the sizes do too)."""
    if match not in SIDE_MATCHES:
        raise LabOptionsError(f"unknown match {match!r}; choose one of: {', '.join(SIDE_MATCHES)}", "match")
    merges, vocab_size = (size, None) if match == "merges" else (None, size)
    options = {
        side: Options(algorithm, "none", merges, vocab_size, "first").check(lab.max_merges)
        for side, algorithm in SIDES.items()
    }
    lab.check_corpus(corpus)
    return {side: lab.start(corpus, opts, wait=0.3) for side, opts in options.items()}


def side_match(runs: dict[str, Run]) -> str:
    """What a comparison's three share (:data:`SIDE_MATCHES`), from its runs' options."""
    return "merges" if next(iter(runs.values())).options.merges is not None else "vocab_size"


def find_three(lab: Lab, ids: dict[str, str | None]) -> dict[str, Run]:
    """The runs of one comparison by their ids (each of the algorithm of its side)."""
    found = {}
    for side, run_id in ids.items():
        run = lab.get(run_id) if run_id else None
        if run is None or run.options.algorithm != SIDES[side]:
            raise NotFoundError(f"no {SIDE_LABELS[side]} run with id {run_id!r}; train the three again at /lab")
        found[side] = run
    return found


def cuts(runs: dict[str, Run], text: str) -> tuple[dict[str, dict], set[int]]:
    """How each finished run cuts ``text`` (its result, tokens, ids, and its cuts that not all make), and the cuts
    all of them make."""
    results = {side: spec_for(run).factory().tokenize(text) for side, run in runs.items() if run.status == "done"}
    agreed = set.intersection(*map(boundaries, results.values())) if results else set()
    out = {}
    for side, result in results.items():
        own = boundaries(result)
        out[side] = {
            "result": result,
            "differ": sorted(own - agreed),
            "tokens": [t.text for t in result.tokens],
            "ids": result.ids,
        }
    return out, agreed

