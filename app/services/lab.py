"""What the lab's pages and ``/api/train`` do with runs (:mod:`app.lab`): start one from a form, step, force a merge,
trace a text, draw a token's merge tree, download; and the side by side of three algorithms on one corpus.

Training runs in the lab's worker pool; everything here only reads stored step records (:mod:`app.lab.replay`), so
stepping never trains again.
"""

from __future__ import annotations

from app.features.compare import boundaries
from app.lab import export as lab_export
from app.lab.display import MAX_ENCODE_CHARS
from app.lab.examples import DEFAULT_FORM
from app.lab.options import LabOptionsError, Options
from app.lab.replay import replay_for
from app.lab.run_tokenizers import spec_for
from app.lab.runs import Run
from app.lab.service import Lab

from .errors import NotFoundError, TooLargeError, export_format

#: A posted form's fields that are missing take these (as /api/train's defaults); the page's form starts from
#: :data:`app.lab.examples.DEFAULT_FORM`.
POSTED_DEFAULTS = DEFAULT_FORM | {"corpus": "", "pattern": "gpt2", "size": "10"}
EXPORT_FORMATS = ("json", "tiktoken", "model", "tokenizer.json")


def options_of(form: dict) -> Options:
    """The training options a setup form asks for (its fields as :data:`POSTED_DEFAULTS` has them)."""
    try:
        n = int(form["size"])
    except ValueError:
        what = "tokens" if form["size_kind"] != "merges" else "learned pieces" if form["algorithm"] == "unigram" else "merges"
        raise LabOptionsError(f"the number of {what} must be a whole number") from None
    by_vocab = form["size_kind"] == "vocab_size"
    return Options(
        form["algorithm"],
        form["pattern"],
        None if by_vocab else n,
        n if by_vocab else None,
        "first" if form["algorithm"] == "unigram" else form["tie_break"],  # the form hides ties for Unigram
        form["end_of_word"] and form["algorithm"] == "char",
    )


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
        raise LabOptionsError(run.error or "training failed")
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


def merge_tree(run: Run, token_id: int):
    """How the run built token ``token_id``, merge by merge."""
    replay = replay_for(run)
    if token_id not in replay.text:
        raise NotFoundError(f"run {run.id} has no token with id {token_id}")
    return replay.merge_tree(token_id)


def export(run: Run, fmt: str) -> tuple[bytes, str, str]:
    """A run's download: its body, media type and file name (``json``, ``tiktoken`` for byte-level runs, ``model``
    for SentencePiece-style and unigram runs, ``tokenizer.json`` for WordPiece runs)."""
    body, media, ext = lab_export.export(run, export_format(fmt, EXPORT_FORMATS))
    return body, media, f"lab-{run.id}.{ext}"


def summary(run: Run) -> dict:
    """The run's summary; once done, with ``text_tokens``: the corpus as the run's tokenizer cuts it (what
    ``/api/tokenize`` counts with it), beside ``final_tokens``, training's count. A run that ended away from the
    size asked for says why in ``stop_reason``, in the words of its page, and ``reachable`` gives the sizes that
    work on its corpus (``{"vocab_size": {"min", "max"}, "merges": {"min", "max"}}``) when the lab knows them."""
    out = run.summary() | {"url": f"/lab/runs/{run.id}"}
    if run.status == "done":
        replay = replay_for(run)
        outcome = replay.outcome.to_dict()
        out["text_tokens"] = replay.text_tokens(run.n_steps)
        out["stop_reason"] = outcome["reason"] or run.stop_reason
        out["reachable"] = outcome["reachable"]
    return out


def steps_of(run: Run) -> list[dict]:
    """Every step of a finished run: a merge with its pair's text, or a unigram round."""
    if run.unigram:  # rounds: {"round", "removed": [{"piece", "loss"}], "vocab_size", "log_likelihood"}
        return [s.to_dict() for s in run.steps]
    replay = replay_for(run)
    return [s.to_dict() | {"pair_text": replay.pair_text(s.pair)} for s in run.steps]


# -- side by side --------------------------------------------------------------------------------------------------

#: The three algorithms, as the page names them, and the lab algorithm that trains each.
SIDES = {"bpe": "sentencepiece", "wordpiece": "wordpiece", "unigram": "unigram"}
SIDE_LABELS = {"bpe": "BPE", "wordpiece": "WordPiece", "unigram": "Unigram"}
#: The longest text the three cut at once.
MAX_SIDE_TEXT = 2_000


def start_three(lab: Lab, corpus: str, vocab_size: int) -> dict[str, Run]:
    """Queue the three runs of one comparison (each checked before any is queued): SentencePiece-style BPE, so
    that BPE and Unigram share the same ``▁`` words and byte fallback, and WordPiece with BERT's words."""
    options = {
        side: Options(algorithm, "none", None, vocab_size, "first").check(lab.max_merges)
        for side, algorithm in SIDES.items()
    }
    lab.check_corpus(corpus)
    return {side: lab.start(corpus, opts, wait=0.3) for side, opts in options.items()}


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

