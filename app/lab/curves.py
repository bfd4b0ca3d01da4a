"""Compression against vocabulary size on a text the runs never saw: for each run, the tokens a text takes after
``k`` merges (or unigram rounds), at a few ``k`` from 0 to the run's last step.

Each point is exactly the count ``/api/train/{id}/encode`` gives for that text at step ``k``. For a merge-based
run (byte-, character-level, SentencePiece-style BPE) one pass gives every point: the text is cut and merged with
all the run's merges once, and the merges of rank below ``k`` are a prefix of that (a merge only makes pairs of
later ranks), so the tokens after ``k`` merges are the base tokens less the merges below ``k`` it took
(:meth:`~.replay.Merges.ranks_in`). A superword run cuts the text with stage one's pattern up to its transition
and with stage two's after it, so it is merged once with each. WordPiece's greedy walk and unigram's rounds are
encoded at each point.
"""

from __future__ import annotations

from bisect import bisect_left

from app.engines.errors import TokenplayError

from .replay import RunReplay, replay_for
from .runs import Run

#: The most points a curve may have, and the longest text it may count.
MAX_POINTS = 200
MAX_TEXT_CHARS = 100_000
#: The most runs on one chart.
MAX_RUNS = 8


class CurvesError(TokenplayError):
    """Curves the lab cannot draw (too many points or runs)."""


def steps_for(n: int, points: int, transition: int | None = None) -> list[int]:
    """``points`` steps spread evenly from 0 to ``n`` (fewer when ``n`` is small), and a superword run's
    transition: ``steps_for(10, 3) == [0, 5, 10]``."""
    ks = {round(i * n / (points - 1)) for i in range(points)} if points > 1 else {n}
    if transition is not None and 0 <= transition <= n:
        ks.add(transition)
    return sorted(ks)


def _merge_counts(replay: RunReplay, text: str, ks: list[int]) -> list[int]:
    """The tokens of ``text`` after each of ``ks`` merges, from one merge of the text per stage."""
    out: list[int] = []
    by_stage: dict[int, tuple[int, list[int]]] = {}
    for k in ks:
        stage = replay.stage(k)
        found = by_stage.get(stage)
        if found is None:
            encoder = replay.encoder_at(k)
            words = [encoder.text_ids(text[a:b], lead) for a, b, lead in encoder.text_spans(text)]
            made: list[int] = []
            for ids in words:
                made += replay.merges.ranks_in(ids)
            made.sort()
            found = by_stage[stage] = (sum(map(len, words)), made)
        base, made = found
        out.append(base - bisect_left(made, k))
    return out


def curve(run: Run, text: str, points: int) -> dict:
    """One run's line: ``{"id", "points": [{"merges", "tokens", "vocab_size"}], "transition"}``."""
    replay = replay_for(run)
    transition = getattr(replay, "transition", None)
    ks = steps_for(run.n_steps, points, transition)
    if isinstance(replay, RunReplay) and run.options.algorithm in ("byte", "char"):
        counts = _merge_counts(replay, text, ks)
    else:  # WordPiece's walk, sentencepiece's step models: the encode view's own count at each point
        counts = [len(replay.encode_trace(text, k)["ids"]) for k in ks]
    return {
        "id": run.id,
        "label": run.label(),
        "options": run.options.to_dict(),
        "transition": transition,
        "points": [{"merges": k, "tokens": n, "vocab_size": run.vocab_size_at(k)} for k, n in zip(ks, counts)],
    }


def curves(runs: list[Run], text: str, points: int) -> dict:
    """``{"runs": [curve, ...]}`` for ``runs`` (finished), in order."""
    if not runs or len(runs) > MAX_RUNS:
        raise CurvesError(f"runs must list 1 to {MAX_RUNS} run ids; got {len(runs)}")
    if not 2 <= points <= MAX_POINTS:
        raise CurvesError(f"points must be from 2 to {MAX_POINTS}; got {points}")
    if len(text) > MAX_TEXT_CHARS:
        raise CurvesError(f"the text is {len(text):,} characters; curves count at most {MAX_TEXT_CHARS:,}")
    return {"runs": [curve(run, text, points) for run in runs]}


# -- the chart and its numbers --------------------------------------------------------------------------------------

W, H, PAD = 640, 240, 44


def chart(result: dict) -> dict:
    """An SVG line chart of :func:`curves`' answer: tokens against vocabulary size, one line per run (``lines``:
    ``points`` for a polyline, ``transition``: a superword run's transition as ``(x, y)``), with the axes' ends."""
    runs = result["runs"]
    points = [p for run in runs for p in run["points"]]
    if not points:
        return {"w": W, "h": H, "pad": PAD, "lines": []}
    x_min = min(p["vocab_size"] for p in points)
    x_max = max(p["vocab_size"] for p in points)
    low, high = min(p["tokens"] for p in points), max(p["tokens"] for p in points)
    y_min = max(0, low - max(1, (high - low) // 10))  # the lines fill the chart; the axis says where it starts
    y_max = high or 1
    x_span, y_span = (x_max - x_min) or 1, (y_max - y_min) or 1

    def x(v: int) -> float:
        return round(PAD + (W - 2 * PAD) * (v - x_min) / x_span, 1)

    def y(v: int) -> float:
        return round(H - PAD - (H - 2 * PAD) * (v - y_min) / y_span, 1)

    lines = []
    for n, run in enumerate(runs):
        at = {p["merges"]: p for p in run["points"]}
        t = run.get("transition")
        mark = at.get(t) if t is not None else None
        lines.append({
            "id": run["id"],
            "label": run["label"],
            "series": n % 6,
            "points": " ".join(f"{x(p['vocab_size'])},{y(p['tokens'])}" for p in run["points"]),
            "transition": None if mark is None else (x(mark["vocab_size"]), y(mark["tokens"]), t),
            "last": run["points"][-1],
        })
    return {"w": W, "h": H, "pad": PAD, "lines": lines, "x_min": x_min, "x_max": x_max, "y_min": y_min, "y_max": y_max}


def csv_text(result: dict) -> str:
    """:func:`curves`' answer as CSV: a row per point (run id, merges, vocab_size, tokens, whether it is the run's
    superword transition)."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "label", "merges", "vocab_size", "tokens", "transition"])
    for run in result["runs"]:
        for p in run["points"]:
            writer.writerow([run["id"], run["label"], p["merges"], p["vocab_size"], p["tokens"],
                             int(p["merges"] == run.get("transition"))])
    return out.getvalue()
