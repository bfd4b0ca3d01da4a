"""Quiz mode: at step k each student predicts merge k+1 by choosing one of the pairs that could merge next, and
stepping on to k+1 reveals who was right. This module says which pairs are the choices and counts the votes; the
votes themselves are kept by the session stores (:mod:`.stores`) and checked by :class:`~.service.Classroom`."""

from __future__ import annotations

#: Candidate pairs a student chooses from in quiz mode (the pair table's rows before the next merge).
QUIZ_CHOICES = 10


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
