"""Quiz mode: at step k each student predicts merge k+1 by choosing one of the pairs that could merge next, and
stepping on to k+1 reveals who was right. This module says which pairs are the choices and counts the votes; the
votes themselves are kept by the session stores (:mod:`.stores`) and checked by :class:`~.service.Classroom`."""

from __future__ import annotations

#: Candidate pairs a student chooses from in quiz mode (the pair table's rows before the next merge).
QUIZ_CHOICES = 10

#: Why a unigram run has no quiz: what its rounds do cannot be predicted by looking at the corpus.
UNIGRAM_OFF = ("quiz mode is off for a Unigram run: it merges no pair; each round keeps the pieces that explain the "
               "corpus best and removes those whose loss is smallest, which nobody can read off the corpus")

#: WordPiece's rule, as the quiz and its reveal write it.
SCORE_RULE = "count(ab) / (count(a) · count(b))"


def question(run) -> dict | None:
    """The quiz's question for the run's algorithm, ``{"title", "hint"}``: each algorithm's own (BPE: the most
    frequent pair; WordPiece: the best score); None for a unigram run (:data:`UNIGRAM_OFF` says why)."""
    if run.unigram:
        return None
    if run.options.algorithm == "wordpiece":
        return {"title": "Which pair has the best score?",
                "hint": f"WordPiece merges the pair with the best score, {SCORE_RULE}: not the most frequent pair, "
                        "but two tokens seen together often and apart seldom."}
    return {"title": "Which pair merges next?",
            "hint": "Look at the corpus below: which two neighbouring tokens come together most often?"}


def score_reveal(replay, k: int) -> dict | None:
    """WordPiece at step ``k``: merge ``k``'s score in numbers (``count``, ``left``, ``right``, ``score``) and, when
    another of that step's candidates was seen together more often, that pair (``busiest``: its text, count and
    score); None for a run that does not merge by score."""
    if k < 1 or replay.run.unigram or replay.run.options.algorithm != "wordpiece":
        return None
    rec = replay.run.steps[k - 1]
    out = {"count": rec.count, "left": rec.left_count, "right": rec.right_count, "score": rec.score, "busiest": None}
    rows = [row for row in replay.table(k)["rows"] if "score" in row]
    busiest = max(rows, key=lambda row: row["count"], default=None)
    if busiest is not None and not busiest["winner"] and busiest["count"] > rec.count:
        out["busiest"] = {"pair": busiest["text"], "ids": busiest["pair"], "count": busiest["count"],
                          "score": busiest["score"]}
    return out


def pair_words(pair) -> str:
    """A pair for a message, each token quoted (tokens are often a space and a letter).

    >>> pair_words([" ", "c"])
    '" " + "c"'
    """
    return " + ".join(f'"{t}"' for t in pair)


def tally(votes: dict[str, list[str]]) -> list[dict]:
    """Votes (follower -> pair) counted per pair: most votes first, then by the pair's text.

    >>> tally({"a": ["t", "h"], "b": ["h", "e"], "c": ["t", "h"]})
    [{'pair': ['t', 'h'], 'count': 2}, {'pair': ['h', 'e'], 'count': 1}]
    """
    counts: dict[tuple[str, str], int] = {}
    for pair in votes.values():
        key = (pair[0], pair[1])
        counts[key] = counts.get(key, 0) + 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [{"pair": list(pair), "count": n} for pair, n in ordered]


def quiz_choices(replay, k: int) -> list[dict]:
    """The pairs a student chooses from at step ``k`` (predicting merge ``k + 1``), each ``{"pair": [text, text],
    "ids": [id, id]}``: the pair table's rows before that merge, in alphabetical order so the list's order gives
    nothing away."""
    if k >= replay.run.n_steps or replay.run.unigram:
        return []
    rows = replay.table(k + 1)["rows"]
    shown = rows[:QUIZ_CHOICES]
    if not any(row["winner"] for row in shown):  # a pair chosen by hand outside the top: still a choice
        shown = shown[:-1] + [row for row in rows if row["winner"]]
    return sorted(({"pair": row["text"], "ids": row["pair"]} for row in shown), key=lambda c: (c["pair"][0], c["pair"][1]))


def with_ids(votes: list[dict], replay, k: int) -> list[dict]:
    """A tally of step ``k`` with each pair's token ids (for its chips), from the choices of that step."""
    ids = {tuple(c["pair"]): c["ids"] for c in quiz_choices(replay, k)}
    return [v | {"ids": ids.get(tuple(v["pair"]))} for v in votes]


def reveal(votes: dict[str, list[str]], replay, k: int) -> dict | None:
    """At step ``k``: ``votes``, those of step ``k - 1``, against merge ``k`` (how many predicted it), or None when
    nobody voted there."""
    if k < 1 or replay.run.unigram or not votes:
        return None
    pair = replay.pair_text(replay.run.steps[k - 1].pair)
    return {
        "step": k,
        "pair": pair,
        "right": sum(1 for p in votes.values() if p == pair),
        "voters": len(votes),
        "votes": tally(votes),
    }


def scoreboard(revealed: dict[int, dict[str, list[str]]], replay, names: dict[str, str]) -> dict:
    """Who predicted which revealed merges: ``revealed`` the votes of each step whose merge the class has seen
    (``{step k: {follower: pair}}``, the votes for merge k + 1), ``names`` the followers' nicknames. Rows of the
    named students, most right first (then by name); the others counted together."""
    right: dict[str, int] = {}
    answered: dict[str, int] = {}
    for k, votes in revealed.items():
        if k >= replay.run.n_steps:
            continue
        pair = replay.pair_text(replay.run.steps[k].pair)
        for follower, vote in votes.items():
            answered[follower] = answered.get(follower, 0) + 1
            right[follower] = right.get(follower, 0) + (vote == pair)
    rows = sorted(({"name": names[f], "right": right[f], "answered": answered[f]} for f in answered if f in names),
                  key=lambda row: (-row["right"], row["name"].casefold(), row["name"]))
    others = [f for f in answered if f not in names]
    unnamed = {"students": len(others), "right": sum(right[f] for f in others), "answered": sum(answered[f] for f in others)}
    return {"rows": rows, "unnamed": unnamed, "revealed": len(revealed)}

