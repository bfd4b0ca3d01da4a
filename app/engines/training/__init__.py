"""The training core every BPE-family trainer shares: one incremental pair-counting merge loop and one driver.

- :mod:`.merge_state` — :class:`MergeState`, the merge loop with its tie-breaks and step records, and the
  :class:`MergeRule` hook through which a trainer limits which pairs may merge;
- :mod:`.pair_counts` — counts of pairs grouped by count, the winner and its ties (where a scoring rule such as
  WordPiece's would plug in);
- :mod:`.words` — the corpus's words in two layouts (short pre-tokens as strings, long words as a linked list);
- :mod:`.driver` — :func:`run_merges`, the loop to a target used by the CLI, the trainers and the lab, with
  the shared limits and stop reasons;
- :mod:`.word_table` — a corpus's words (the regex module's ``\\w+``) tallied by a table of known words, for
  measuring a corpus (``app.features.measure``).

The trainers themselves say what text becomes: :mod:`app.engines.bpe.trainer` (byte-level BPE),
:mod:`app.engines.wordpiece.trainer` and :mod:`app.lab.algorithms` (the lab's byte- and character-level runs).
sentencepiece's own trainers (:mod:`app.engines.sentencepiece.bpe_trainer`, ``unigram_trainer``) have loops of their
own, as sentencepiece has. Nothing here reads text, prints or encodes.
"""

from .driver import (
    MAX_VOCAB_SIZE,
    STOP_NO_PAIR,
    STOP_VOCAB_SIZE,
    Cancelled,
    ProgressFn,
    cycle_collector_paused,
    replay,
    run_merges,
)
from .merge_state import MergeRule, MergeState, TrainingError, check_min_count, check_tie_break, no_pair_reason

__all__ = [
    "MAX_VOCAB_SIZE",
    "STOP_NO_PAIR",
    "STOP_VOCAB_SIZE",
    "Cancelled",
    "MergeRule",
    "MergeState",
    "ProgressFn",
    "TrainingError",
    "check_min_count",
    "check_tie_break",
    "cycle_collector_paused",
    "no_pair_reason",
    "replay",
    "run_merges",
]
