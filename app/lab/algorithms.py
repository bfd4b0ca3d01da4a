"""One training interface over the lab's algorithms: byte-level BPE, character-level BPE, WordPiece, and
sentencepiece's own BPE and unigram trainers.

Byte- and character-level runs cut text with the lab's pre-tokenizers (:mod:`.splits`: the pattern's matches and
the stretches between them), merge pairs seen ``min_count`` times, may replay a typed merge list
(:mod:`.merge_lists`) and may go on to superword BPE after a transition (:func:`enter_stage_two`).

Every algorithm reduces to the same shape: a *base vocabulary* (id -> surface bytes), the corpus cut into
*words* (id sequences with counts, in first-seen order) and the shared merge loop of
:mod:`app.engines.training`, which emits one :class:`~app.engines.training.steps.MergeStep` per merge and is run by
its one driver (:func:`~app.engines.training.run_merges`, as ``tokenplay train`` is). Byte- and
character-level BPE both use ``BPETrainerState``; they differ only in how text becomes base ids (UTF-8 bytes, or
one id per code point plus an optional end-of-word marker ``</w>``).

SentencePiece BPE and unigram runs are sentencepiece's trainers, followed exactly (:mod:`app.lab.spm_runs`,
:mod:`app.lab.unigram_runs`): they read the corpus a sentence a line, normalized, with the ``sentencepiece`` options
(the ``pattern`` option does not apply), and keep the trained ``.model`` file, which their views run.

:class:`Encoder` turns text into base-id words the same way for training, the step views and "encode a new
text", so the three can never disagree. What a run is asked for and what training returns are
:mod:`app.lab.options`' (:class:`~app.lab.options.Options`, :class:`~app.lab.options.Trained`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence


from app.engines.base import check_text
from app.engines.bpe.trainer import BYTE_VOCAB, BPETrainerState
from app.engines.errors import TokenplayError
from app.engines.merging import merge, merge_table
from app.engines.merging import pair as merge_pair
from app.engines.training.steps import MergeStep
from app.engines.training import STOP_VOCAB_SIZE, MergeState, cycle_collector_paused, replay, run_merges
from app.engines.training import Cancelled as Cancelled  # raised by the loops above; the lab's jobs catch it
from app.engines.wordpiece.trainer import PREFIX as WP_PREFIX
from app.engines.wordpiece.trainer import (
    WordPieceTrainerState,
    corpus_words,
    normalize_word,
    tokenizer_json,
    word_spans,
)

from .options import PLAIN_BPE, LabOptionsError, Options, Trained, stage_two
from .splits import CHECK_SECONDS, TRAIN_SECONDS, split_for
from .spm_runs import train_sentencepiece_run

END_OF_WORD = "</w>"

#: Top pairs recorded before every merge (the step's pair table).
TOP_K = 10
#: Tie lists longer than this are cut when stored (the total is kept in ``n_ties``).
MAX_TIES = 24


# -- pre-tokenizing ------------------------------------------------------------------------------------------



def chunk_spans(
    text: str, pattern: str, pattern_regex: str | None = None, timeout: float | None = CHECK_SECONDS
) -> list[tuple[int, int]]:
    """Character spans of the words of ``text`` (byte- and character-level runs): the matches of the pattern and
    the stretches between them, covering the text (:mod:`.splits`); a ``custom`` pattern's ``pattern_regex`` runs
    within ``timeout`` seconds. Cut as tiktoken cuts (tiktoken's Unicode tables)."""
    return split_for(pattern, pattern_regex).spans(text, timeout)


class Encoder:
    """Text to base-id words for one run. ``base`` maps every base id to its surface bytes.

    ``spans(text)`` gives ``(start, end, lead)`` per word as training cuts the corpus; ``word_ids(text[start:end],
    lead)`` its base ids. A character the base vocabulary lacks becomes -1 (never merged). ``lead`` is ``False`` for
    a word (``None`` for text between words below).

    ``text_spans(text)`` and ``text_ids`` cut a text as the run's tokenizer does ("use in playground",
    ``/api/tokenize``): the words of training and the text between them (lead ``None``: whitespace a words-only
    pre-tokenizer leaves out), whose characters no merge holds; a character the base vocabulary lacks is its UTF-8
    bytes (byte fallback), ids from ``byte_ids_from`` (the id of byte 0).

    SentencePiece BPE and unigram runs have no Encoder: their views run the trained ``.model``
    (:mod:`app.lab.spm_replay`, :mod:`app.lab.unigram_replay`).
    """

    def __init__(
        self, algorithm: str, pattern: str, base: dict[int, bytes], end_of_word: bool = False,
        byte_ids_from: int | None = None, *, pattern_regex: str | None = None, timeout: float | None = CHECK_SECONDS,
    ):
        self.algorithm = algorithm
        self.pattern = pattern
        self.pattern_regex = pattern_regex
        self.timeout = timeout  # seconds a custom pattern may take on one text
        self.split = split_for(pattern, pattern_regex) if algorithm in PLAIN_BPE else None
        self.base = base
        self.end_of_word = end_of_word
        self.char_ids: dict[str, int] = {}
        self.eow_id: int | None = None
        self.byte_ids_from = byte_ids_from
        if algorithm != "byte":
            for i, b in base.items():
                s = b.decode("utf-8")
                if s == END_OF_WORD and end_of_word:
                    self.eow_id = i
                elif len(s) == 1 or (algorithm == "wordpiece" and len(s) == 3 and s.startswith(WP_PREFIX)):
                    self.char_ids.setdefault(s, i)  # not [UNK]

    def spans(self, text: str) -> list[tuple[int, int, bool]]:
        if self.algorithm == "wordpiece":
            return [(a, b, False) for a, b in word_spans(text)]
        # a stretch between the pattern's matches has lead None: it gets no </w> (it is no word)
        return [(a, b, False if word else None) for a, b, word in self.split.kinds(text, self.timeout)]

    def word_ids(self, chunk: str, lead: bool = False) -> list[int]:
        if self.algorithm == "byte":
            return list(chunk.encode("utf-8"))
        if self.algorithm == "wordpiece":
            word = normalize_word(chunk)
            return [self.char_ids.get(c if n == 0 else WP_PREFIX + c, -1) for n, c in enumerate(word)]
        get = self.char_ids.get
        ids = [get(c, -1) for c in chunk]
        if self.eow_id is not None and lead is not None:
            ids.append(self.eow_id)
        return ids

    def text_spans(self, text: str) -> list[tuple[int, int, bool | None]]:
        """``text`` cut as the run's tokenizer cuts it: the words of :meth:`spans` and, as words of their own (lead
        ``None``), the text between them. WordPiece drops the whitespace between words, as BERT's pre-tokenizer
        does."""
        spans: list[tuple[int, int, bool | None]] = list(self.spans(text))
        if self.algorithm == "wordpiece":
            return spans
        out: list[tuple[int, int, bool | None]] = []
        pos = 0
        for a, b, lead in spans:
            if a > pos:
                out.append((pos, a, None))
            out.append((a, b, lead))
            pos = b
        if pos < len(text):
            out.append((pos, len(text), None))
        return out

    def text_ids(self, chunk: str, lead: bool | None = False) -> list[int]:
        """The base ids of a word of :meth:`text_spans` as the run's tokenizer has them: text between words gets
        no marker (``</w>``), and a character the base vocabulary lacks is its UTF-8 bytes."""
        if self.algorithm == "byte":
            return list(chunk.encode("utf-8"))
        symbols = chunk
        ids = [self.char_ids.get(c, -1) for c in chunk] if lead is None else self.word_ids(chunk, lead)
        if self.byte_ids_from is None or -1 not in ids:
            return ids
        out: list[int] = []
        for n, i in enumerate(ids):  # a marker (</w>) comes after the symbols, and is never -1
            if i >= 0:
                out.append(i)
            else:
                out.extend(self.byte_ids_from + b for b in symbols[n].encode("utf-8"))
        return out

    def words(self, text: str) -> list[tuple[list[int], int]]:
        if self.split is not None and self.eow_id is None:  # byte- and character-level: the pieces, no lead
            return [(self.word_ids(chunk), n) for chunk, n in Counter(self.split.pieces(text, self.timeout)).items()]
        counts = Counter((text[a:b], lead) for a, b, lead in self.spans(text))
        return [(self.word_ids(chunk, lead), n) for (chunk, lead), n in counts.items()]


def encoders(options: Options, base: dict[int, bytes], byte_ids_from: int | None = None, *,
             timeout: float | None = CHECK_SECONDS) -> tuple[Encoder, Encoder | None]:
    """The run's encoder and, for a superword run, stage two's (its pattern: ``superwords.pattern``)."""
    one = Encoder(options.algorithm, options.pattern, base, options.end_of_word, byte_ids_from,
                  pattern_regex=options.pattern_regex, timeout=timeout)
    if options.superwords is None:
        return one, None
    sw = stage_two(options)
    two = Encoder(options.algorithm, sw["pattern"], base, options.end_of_word, byte_ids_from,
                  pattern_regex=sw["pattern_regex"], timeout=timeout)
    return one, two


def final_encoder(options: Options, base: dict[int, bytes], n_steps: int, byte_ids_from: int | None = None) -> Encoder:
    """The encoder of a finished run's tokenizer: stage two's, past a superword run's transition."""
    one, two = encoders(options, base, byte_ids_from)
    t = transition_of(options)
    return two if t is not None and n_steps > t else one


def transition_of(options: Options) -> int | None:
    """A superword run's transition (the merges of stage one), or None for another run."""
    return None if options.superwords is None else stage_two(options)["transition"]


def base_vocab_for(text: str, algorithm: str, pattern: str, end_of_word: bool) -> dict[int, bytes]:
    """The base vocabulary: 256 bytes, or every character of the corpus in code-point order (every pattern's
    pre-tokens cover the text)."""
    if algorithm == "byte":
        return dict(BYTE_VOCAB)
    chars = set(text)
    base = {i: c.encode("utf-8") for i, c in enumerate(sorted(chars))}
    if end_of_word:
        base[len(base)] = END_OF_WORD.encode()
    return base


def base_units(text: str, algorithm: str, pattern: str) -> int:
    """What compression is measured against: the corpus's bytes (byte-level) or characters (the others)."""
    if algorithm == "wordpiece":
        return sum(len(normalize_word(text[a:b])) for a, b in word_spans(text))
    if algorithm in ("sentencepiece", "unigram"):
        return sum(len(line) for line in text.split("\n"))
    if algorithm == "byte":  # every pattern's pre-tokens cover the text
        return len(text.encode("utf-8"))
    return len(text)


# -- training ------------------------------------------------------------------------------------------------


def _model_file(state: MergeState) -> bytes | None:
    """What a run exports as a file of its own: WordPiece's ``tokenizer.json`` (SentencePiece runs: their ``.model``,
    made by their own trainers)."""
    if isinstance(state, WordPieceTrainerState):
        return tokenizer_json(state.vocab).encode()
    return None


ProgressFn = Callable[[int, int], None]

#: Why a WordPiece run ends early: unlike BPE it merges a pair seen once, so it runs out of pairs, not of repeats.
WP_NO_PAIR = "no pair left to merge"


def _stop_reason(reason: str, algorithm: str) -> str:
    if reason == STOP_VOCAB_SIZE:
        return "merge count reached"
    return WP_NO_PAIR if algorithm == "wordpiece" else reason


def start(corpus: str, options: Options, *, timeout: float | None = TRAIN_SECONDS) -> tuple[MergeState, dict[int, bytes]]:
    """A training state for ``corpus`` under ``options``, and its base vocabulary (nothing merged yet)."""
    if options.algorithm == "wordpiece":
        try:
            words, base = corpus_words(corpus)
        except TokenplayError as exc:
            raise LabOptionsError(str(exc)) from None
        return WordPieceTrainerState(words, base, tie_break=options.tie_break), base
    base = base_vocab_for(corpus, options.algorithm, options.pattern, options.end_of_word)
    encoder, _ = encoders(options, base, timeout=timeout)
    words = encoder.words(corpus)
    return BPETrainerState(words, base, tie_break=options.tie_break, min_count=options.min_count), base


# -- superword BPE: stage two --------------------------------------------------------------------------------


def merge_in_order(pieces: dict[tuple[str, bool | None], int], encoder: Encoder, merges: Sequence[tuple[int, int]],
                   vocab: dict[int, bytes]) -> list[tuple[list[int] | str, int]]:
    """The words of ``pieces`` (``(text, lead)`` -> count) with ``merges`` applied in order, each replacing its pair
    left to right, as ids (or a ``str`` of them, :class:`~app.engines.training.MergeState`'s layout); ``vocab`` has
    every id they use and make. Done by rank, lowest first and leftmost first, which is the same
    (a merge only makes pairs with its new id, of a later rank): in C (:func:`~app.engines.merging.merge_table`,
    tokens as strings: a byte-level token's bytes as Latin-1) unless a marker (``</w>``) takes part."""
    if encoder.eow_id is not None or not merges:
        ranks = {pair: r for r, pair in enumerate(merges)}
        new_id = {pair: vocab_id for pair, vocab_id in zip(merges, _made_ids(vocab, merges))}
        words = [(encoder.word_ids(text, lead), n) for (text, lead), n in pieces.items()]
        return [(merge(list(ids), ranks.get, key=merge_pair, join=lambda a, b: new_id[(a, b)]), n) for ids, n in words]
    codec = "latin-1" if encoder.algorithm == "byte" else "utf-8"
    token = {i: data.decode(codec) for i, data in vocab.items()}
    ids = {text: i for i, text in token.items()}
    table = merge_table({(token[a], token[b]): r for r, (a, b) in enumerate(merges)}, ids, pair_keys=True)
    as_char = {text: chr(i) for text, i in ids.items()}.__getitem__  # a word as the trainer lays it out (ids as str)
    if encoder.algorithm == "byte":
        return [("".join(map(as_char, table.merge(text.encode().decode("latin-1")))), n) for (text, _), n in pieces.items()]
    return [("".join(map(as_char, table.merge(text))), n) for (text, _), n in pieces.items()]


def _made_ids(vocab: dict[int, bytes], merges: Sequence[tuple[int, int]]) -> list[int]:
    """The ids ``merges`` made, in order: those after the largest id they do not make."""
    first = max(vocab) + 1 - len(merges)
    return list(range(first, first + len(merges)))


def enter_stage_two(state: BPETrainerState, corpus: str, options: Options, encoder: Encoder) -> BPETrainerState:
    """Superword BPE from here on (SuperBPE): the corpus cut by stage two's pattern, each piece from its base ids
    with ``state``'s merges applied in order, and a trainer on those words that carries ``state``'s merges and
    records on (its steps keep their numbers; its new ids follow)."""
    pieces = Counter((corpus[a:b], lead) for a, b, lead in encoder.spans(corpus))
    words = merge_in_order(pieces, encoder, state.merges, state.vocab)
    two = BPETrainerState(words, state.vocab, tie_break=options.tie_break, min_count=options.min_count)
    two.merges, two.steps, two.tie_counts = list(state.merges), list(state.steps), list(state.tie_counts)
    two.initial_tokens = state.initial_tokens
    return two


def state_at(corpus: str, options: Options, steps: Sequence[MergeStep], k: int,
             *, timeout: float | None = TRAIN_SECONDS) -> BPETrainerState:
    """A byte- or character-level run's trainer as it was after its first ``k`` merges (``steps``, the run's
    records: merged again in order), the one merge ``k + 1`` was chosen by: stage two from a superword run's
    transition on (when the run went past it)."""
    state, base = start(corpus, options, timeout=timeout)
    t = transition_of(options)
    pairs = [step.pair for step in steps[:k]]
    for pair in pairs[: k if t is None else min(k, t)]:
        state.step(force_pair=pair, max_ties=0, absent_ok=True)
    if t is not None and t <= k and t < len(steps):
        _, two = encoders(options, base, timeout=timeout)
        state = enter_stage_two(state, corpus, options, two)
        for pair in pairs[t:k]:
            state.step(force_pair=pair, max_ties=0, absent_ok=True)
    return state


def check_on_corpus(corpus: str, options: Options, max_merges: int, seconds: float = CHECK_SECONDS) -> None:
    """What a run's options need of its corpus, checked before the run is queued so that a refusal is an answer
    (422, in words) and not a failed run: a custom pattern runs on the whole corpus within ``seconds``; a typed
    merge list's lines are read against the corpus's base vocabulary; a superword transition is held to the merges a
    ``vocab_size`` leaves on top of it."""
    if options.algorithm not in PLAIN_BPE:
        return
    if options.pattern == "custom":
        split_for("custom", options.pattern_regex).spans(corpus, seconds)
    sw = stage_two(options) if options.superwords is not None else None
    if sw is not None and sw["pattern"] == "custom":
        split_for("custom", sw["pattern_regex"], "superwords.pattern_regex").spans(corpus, seconds)
    if options.merge_list is None and (sw is None or options.vocab_size is None):
        return
    base = base_vocab_for(corpus, options.algorithm, options.pattern, options.end_of_word)
    if options.merge_list is not None:
        from .merge_lists import read_merge_list

        total = len(read_merge_list(options.merge_list, options.algorithm, base, max_merges))
    else:
        total = options.n_merges(len(base), max_merges)
    if sw is not None and sw["transition"] > total:
        raise LabOptionsError(
            f"superwords.transition {sw['transition']:,} is larger than the run's {total:,} merges; "
            f"choose a transition from 0 to {total:,}"
        )


def train(
    corpus: str,
    options: Options,
    *,
    max_merges: int,
    prefix: Sequence[MergeStep] = (),
    prefix_n_ties: Sequence[int] = (),
    force: tuple[int, int] | None = None,
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] | None = None,
    timeout: float | None = TRAIN_SECONDS,
) -> Trained:
    """Train ``corpus`` with ``options``; with ``prefix`` (and ``force``) continue a run from a chosen point.

    ``prefix`` steps are replayed as given (their records are kept), then ``force`` is merged as the next
    step (recorded ``forced=True``) and training continues automatically to the target number of merges.
    A ``merge_list`` run merges the list's pairs in order (every step forced). A superword run switches to
    stage two (:func:`enter_stage_two`) after ``superwords.transition`` merges; a stage one that ends before the
    transition ends the run. ``progress(done, total)`` is called after every merge; ``should_stop()`` returning
    true raises :class:`Cancelled`; a custom pattern may take ``timeout`` seconds on the corpus. Records keep at
    most :data:`MAX_TIES` ties; ``Trained.n_ties`` has the full counts.
    """
    check_text(corpus)  # a lone surrogate has no UTF-8: refuse it clearly (InvalidTextError, 422)
    options.check(max_merges)
    if options.algorithm in ("sentencepiece", "unigram"):
        if prefix or force is not None:
            raise LabOptionsError("sentencepiece's trainers make their own choices in their own order: manual mode "
                                  "(choosing the next merge) is for the lab's byte-level, character-level and "
                                  "WordPiece runs", "algorithm")
        with cycle_collector_paused():  # thousands of step records, no cycles
            return train_sentencepiece_run(corpus, options, max_merges=max_merges,
                                           base_units=base_units(corpus, options.algorithm, options.pattern),
                                           progress=progress, should_stop=should_stop)
    with cycle_collector_paused():
        state, base = start(corpus, options, timeout=timeout)
        typed: list[tuple[int, int]] = []
        if options.merge_list is not None:
            from .merge_lists import read_merge_list

            typed = read_merge_list(options.merge_list, options.algorithm, base, max_merges)
            total = len(typed)
        else:
            total = options.n_merges(len(base), max_merges)
        kept = list(zip(prefix, prefix_n_ties))
        if force is not None:
            total = max(total, len(kept) + 1)
        report = None if progress is None else lambda done, target, _record: progress(done, target)

        def advance(state: MergeState, upto: int) -> str:
            """Bring ``state`` to ``upto`` merges: the kept steps, the forced one, the typed list, then training."""
            replay(state, [step.pair for step, _ in kept[len(state.merges) : upto]], should_stop)
            if force is not None and len(state.merges) == len(kept) < upto:
                try:
                    state.step(force_pair=force, top_k=TOP_K, max_ties=MAX_TIES)
                except TokenplayError as exc:
                    raise LabOptionsError(str(exc)) from None
                if progress is not None:
                    progress(len(state.merges), total)
            while typed and len(state.merges) < upto:
                if should_stop is not None and should_stop():
                    raise Cancelled()
                state.step(force_pair=typed[len(state.merges)], top_k=TOP_K, max_ties=MAX_TIES, absent_ok=True)
                if progress is not None:
                    progress(len(state.merges), total)
            return run_merges(state, upto, top_k=TOP_K, max_ties=MAX_TIES, progress=report, should_stop=should_stop)

        sw = stage_two(options) if options.superwords is not None else None
        if sw is not None and sw["transition"] > total:
            raise LabOptionsError(
                f"superwords.transition {sw['transition']:,} is larger than the run's {total:,} merges; "
                f"choose a transition from 0 to {total:,}"
            )
        if sw is None or sw["transition"] >= total:
            reason = advance(state, total)
        else:
            reason = advance(state, sw["transition"])
            if len(state.merges) == sw["transition"]:
                _, two = encoders(options, base, timeout=timeout)
                state = enter_stage_two(state, corpus, options, two)
                reason = advance(state, total)
            else:
                reason = (f"{reason} in stage one, after {len(state.merges):,} merges, before the superword transition "
                          f"at {sw['transition']:,}: choose a transition of at most {len(state.merges):,} to go on "
                          "to superwords")
        steps = [step for step, _ in kept] + state.steps[len(kept) :]
        trained = Trained(
            base=base,
            steps=steps,
            n_ties=[n for _, n in kept] + state.tie_counts[len(kept) :],
            initial_tokens=state.initial_tokens,
            base_units=base_units(corpus, options.algorithm, options.pattern),
            target_merges=total,
            stop_reason=_stop_reason(reason, options.algorithm),
            top0=list(state.current_top_pairs(TOP_K) if not steps else steps[0].top_pairs),
            model=_model_file(state),
        )
        del state  # gone before the collector resumes: its passes would walk every list of the run once more
    return trained
