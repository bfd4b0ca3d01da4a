"""What a step of a lab run looks like wherever it is shown: the lab's run page and a student's follow page."""

from __future__ import annotations

from .tokenview import TokenWindow, token_window, with_marks


def corpus_window(replay, k: int) -> TokenWindow:
    """The corpus at step ``k`` of a run's replay (:class:`app.lab.replay.RunReplay`) as coloured tokens; those made
    by merge ``k`` marked ``new``, unknown characters ``unk``, a superword run's superwords made so far
    ``superword``."""
    window = token_window(replay.corpus_at(k))
    new_id = replay.run.steps[k - 1].new_id if k > 0 and not replay.run.unigram else None
    superwords = getattr(replay, "superwords", {})

    def mark(span) -> str:
        classes = "new" if new_id in span.ids else "unk" if -1 in span.ids else ""
        if superwords and any(superwords.get(i, k + 1) <= k for i in span.ids):
            classes = f"{classes} superword".strip()
        return classes

    return with_marks(window, [(mark(s), ()) for s in window.spans])
