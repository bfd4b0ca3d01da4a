"""Why a text was cut where it was, token by token, for every BPE model Tokenplay serves.

- :mod:`.explainer` — :func:`explain` (one token: its pre-token and rule, the merge steps with their candidates,
  its merge tree) and :func:`pretoken_spans` (every pre-token of a text, for the views' pre-tokens layer);
- :mod:`.units` — what a tokenizer family tells the explainer (:class:`~.units.Plan`, :class:`~.units.Unit`);
- :mod:`.byte_level_plans`, :mod:`.sentencepiece_plans` — the families (a tokenizer class defined outside the
  engines, such as the lab's, brings its own plan: an ``explain_plan()`` method);
- :mod:`.split_rules` — the named alternatives of a split regex; :mod:`.trace` — a merge retraced step by step.

It explains with the engines' own data and merge loop; it renders nothing and never changes how text is encoded.
"""

from .errors import NotExplainableError, TokenIndexError
from .explainer import Explainer, Explanation, explain, plan_for, pretoken_spans

__all__ = [
    "Explainer",
    "Explanation",
    "NotExplainableError",
    "TokenIndexError",
    "explain",
    "plan_for",
    "pretoken_spans",
]
