"""Why a text was cut where it was, token by token, for every model Tokenplay serves: BPE merges, WordPiece
walks, Unigram lattices, and what each model's normalizer changed first.

- :mod:`.explainer` — :func:`explain` (one token: its pre-token and rule, what the normalizer changed, and the
  merge steps with their candidates and its merge tree, or its word's walk, or its span's lattice),
  :func:`explain_pieces` (a text tokenized piece by piece, such as a chat prompt) and :func:`pretoken_spans`
  (every pre-token of a text, for the views' pre-tokens layer);
- :mod:`.units` — what a tokenizer family tells the explainer (:class:`~.units.Plan`, :class:`~.units.Unit`,
  :class:`~.units.Detail`);
- :mod:`.byte_level_plans`, :mod:`.sentencepiece_plans` — the BPE families (a tokenizer class defined outside the
  engines, such as the lab's, brings its own plan: an ``explain_plan()`` method); :mod:`.wordpiece_plans` —
  WordPiece's greedy walk; :mod:`.unigram_plans` — the unigram lattice, its best path and n-best list;
- :mod:`.normalization` — what a normalizer changed, named; :mod:`.split_rules` — the named alternatives of a
  split regex; :mod:`.trace` — a merge retraced step by step.

It explains with the engines' own data, merge loop, walk and lattice; it renders nothing and never changes how
text is encoded.
"""

from .errors import NotExplainableError, TokenIndexError
from .explainer import Explainer, Explanation, explain, explain_pieces, plan_for, pretoken_spans

__all__ = [
    "Explainer",
    "Explanation",
    "NotExplainableError",
    "TokenIndexError",
    "explain",
    "explain_pieces",
    "plan_for",
    "pretoken_spans",
]
