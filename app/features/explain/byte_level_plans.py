"""Explaining byte-level BPE: OpenAI's encodings and every ranks + pattern model (:class:`RankPlan`), and byte-level
``tokenizer.json`` models such as Llama 3, Qwen3 and DeepSeek V3 (:class:`JSONPlan`).

Pre-tokens are cut as the engines cut them: special-token text first (when allowed), then the split regex, whose
named alternatives say which rule made each pre-token (:mod:`.split_rules`), with the character classes of the
engine's reference (tiktoken's for ranks + pattern, Oniguruma's for a tokenizer.json); for a tokenizer.json, added
tokens, the normalizer and each ``Split`` step of the pre-tokenizer in turn. A pre-token's ids come from the
engine's own encoder, so the units are exactly its tokens. Merges rank as the engine ranks them: tiktoken's rule
ranks a pair by the rank of its joined bytes, a merges list by the pair's place in the list.

It does not encode anything itself and does not decide how a pre-token is merged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

from app.engines.bpe.json_model import ByteLevelJSONTokenizer
from app.engines.bpe.model import RankTokenizer
from app.engines.bpe.patterns import exact, name_of_regex, split_specials
from app.engines.pipeline.unicode import regex_view
from app.engines.merging import Ranking, pair
from .normalization import Normalization, tokenizer_json_normalization
from .split_rules import Rule, named
from .units import Plan, Unit, added_token_units


def _ranking(encoder) -> Ranking:
    return Ranking(encoder.ranks.get) if encoder.pairs is None else Ranking(encoder.pairs.get, pair)


class _BytePlan(Plan):
    """What both byte-level plans share: the encoder's ranks, its rule for whole pre-tokens, bytes as parts."""

    def __init__(self, tokenizer, encoder):
        super().__init__(tokenizer, _ranking(encoder))
        self.encoder = encoder

    def pair_rank(self, left: bytes, right: bytes) -> int | None:
        pairs, ranks = self.encoder.pairs, self.encoder.ranks
        if pairs is not None:
            return pairs.get((left, right))
        return ranks.get(left + right) if left in ranks and right in ranks else None

    def complete(self, unit: Unit) -> None:
        encoder = self.encoder
        unit.parts = [self.tokenizer.token_bytes(i) for i in unit.ids]
        data = unit.text.encode("utf-8")
        # one byte is a token of its own whatever the rule: only a longer pre-token is "taken whole"
        unit.whole = encoder.whole and len(unit.ids) == 1 and len(data) > 1 and encoder.ranks.get(data) is not None

    def _units(self, spans: Iterable[tuple[int, int, str, object]], first: int) -> Iterator[Unit]:
        """Units for pre-tokens given as ``(start, end, text, context)``, their ids from the encoder's cache a
        batch at a time."""
        spans = iter(spans)
        while batch := list(islice(spans, _BATCH)):
            for (start, end, text, context), ids in zip(batch, self.encoder.pretoken_ids([s[2] for s in batch])):
                yield Unit(start, end, text, first, ids, context=context)
                first += len(ids)


_BATCH = 256  # pre-tokens cut at a time: a token near the start of a long text needs few of them


class RankPlan(_BytePlan):
    """A :class:`~app.engines.bpe.model.RankTokenizer`: native OpenAI encodings, custom-bpe, lab byte-level runs,
    ``.tiktoken`` and Tokenplay BPE uploads."""

    whole_rule = "tiktoken's rule"

    def __init__(self, tokenizer: RankTokenizer):
        super().__init__(tokenizer, tokenizer.encoder)
        pattern = self.encoder.pattern
        self.named = named(pattern) if pattern is not None else None
        # the named alternatives, run with tiktoken's character classes as the encoder's split is
        if self.named is not None:
            self.finder = exact(self.named.regex.pattern, cut_safe=name_of_regex(pattern) is not None)

    def units(self, text: str, allow_special: bool) -> Iterator[Unit]:
        specials = self.tokenizer.special_tokens
        regex = self.encoder.special_regex(specials) if allow_special and specials else None
        pos = first = 0
        for segment, is_special in split_specials(text, regex):
            if is_special:
                yield Unit(pos, pos + len(segment), segment, first, [specials[segment]], "special")
                first += 1
            else:
                if self.named is None:
                    spans = iter([(pos, pos + len(segment), segment, None)])
                else:
                    spans = ((pos + m.start(), pos + m.end(), m.group(), m) for m in self.finder.finditer(segment))
                for unit in self._units(spans, first):
                    yield unit
                    first = unit.first + len(unit.ids)
            pos += len(segment)

    def rule(self, unit: Unit) -> Rule:
        if self.named is None:
            return Rule("no pre-tokenizer: the whole text is one pre-token", None, "this model's split pattern")
        name, alternative = self.named.name_of(unit.context)
        return Rule(name, alternative, "this model's split pattern")


class JSONPlan(_BytePlan):
    """A byte-level ``tokenizer.json`` run by our engine (:class:`~app.engines.bpe.json_model.ByteLevelJSONTokenizer`)."""

    whole_rule = "the model's ignore_merges"

    def __init__(self, tokenizer: ByteLevelJSONTokenizer):
        super().__init__(tokenizer, tokenizer.encoder)

    def units(self, text: str, allow_special: bool) -> Iterator[Unit]:
        return added_token_units(self.tokenizer.added, text, allow_special, self._plain)

    def _plain(self, piece, first: int) -> Iterator[Unit]:
        """The pre-tokens of the normalized text between added tokens, placed back in the input."""
        spans, text, at = piece.spans, piece.text, piece.start
        pre = self.tokenizer.pre
        if pre.transforms:  # a prefix space: the pre-tokens are not slices of the text
            origin = (lambda p: spans[p][0]) if spans else (lambda p: at + p)
            found = (
                ((spans[pos[0]][0], spans[pos[-1]][1]) if spans else (at + pos[0], at + pos[-1] + 1))
                + (word, (text, pos[0], pos[-1] + 1, cut))
                for word, pos, cut in pre.cut_pieces(text, origin)
            )
            return self._units(found, first)
        found = (
            ((spans[a][0], spans[b - 1][1]) if spans else (at + a, at + b)) + (text[a:b], (text, a, b))
            for a, b in pre(text)
        )
        return self._units(found, first)

    def rule(self, unit: Unit) -> Rule:
        if len(unit.context) == 4:
            return rewritten_rule(self.tokenizer.pre, unit.context[3])
        text, a, b = unit.context
        return pretokenizer_rule(self.tokenizer.pre, text, a, b)

    def normalization(self, text: str, allow_special: bool) -> Normalization:
        return tokenizer_json_normalization(self.tokenizer.added, text, allow_special)


def rewritten_rule(pre, cut) -> Rule:
    """The rule of a pipeline that rewrites its pre-tokens (``ByteLevel``'s prefix space): the last step that cut
    the pre-token out of a larger piece (``cut``: :class:`~app.engines.pipeline.pretokenizers.Cut`), by its named
    alternative when it has a regex."""
    if cut is None:
        return Rule("no step cut it: the whole text between added tokens", None, "tokenizer.json pre-tokenizer")
    step = pre.stages[cut.stage]
    source = f"pre-tokenizer step {cut.stage + 1} of {len(pre.stages)} ({step.kind}, {step.behavior})"
    if step.pattern is not None:
        found = named(step.pattern.pattern, step.pattern.flags).rule_at(cut.parent, cut.start, cut.end, source)
        return found or Rule(f"a match of {step.pattern.pattern!r} joined as {step.behavior}", step.pattern.pattern, source)
    return Rule(f"cut by {step.kind}", None, source)


def pretokenizer_rule(pre, text: str, a: int, b: int) -> Rule:
    """The rule of a tokenizer.json pre-tokenizer that cut ``text[a:b]``: the pieces containing it are followed
    through the ``Split`` steps; the last step that cut its piece out of a larger one names it (or, when no step
    cut it, the first step whose regex matched it whole)."""
    steps = pre.steps
    if not steps:
        return Rule("no pre-tokenizer: the whole text between added tokens", None, "tokenizer.json")
    view = regex_view(text)
    rule = Rule("text no split rule matched, kept as it is", None, "tokenizer.json pre-tokenizer")
    named_yet = False
    parent = (0, len(text))
    for n, step in enumerate(steps, 1):
        source = f"pre-tokenizer step {n} of {len(steps)} ({step.kind}, {step.behavior})"
        seen = text if step.raw else view
        piece = next(p for p in step(seen, [parent]) if p[0] <= a and b <= p[1])
        runs = [r for r in step.find(seen, *parent) if piece[0] <= r[0] and r[1] <= piece[1]]
        matches = [r for r in runs if r[2]]
        if piece == parent and (named_yet or not matches):
            continue  # this step did not cut it
        named_yet = True
        if len(runs) == 1 and matches and step.pattern is not None:
            found = named(step.pattern.pattern, step.pattern.flags).rule_at(
                seen[parent[0] : parent[1]], piece[0] - parent[0], piece[1] - parent[0], source
            )
            rule = found or Rule(f"a match of {step.pattern.pattern!r}", step.pattern.pattern, source)
        elif matches:
            rule = Rule(f"a match joined to its neighbour ({step.behavior})", None, source)
        else:
            rule = Rule(f"text between matches of step {n}", None, source)
        parent = piece
    return rule
