"""A window of coloured tokens, the one thing every page draws: what ``templates/_tokens.html`` renders.

:func:`token_window` turns a :class:`~app.engines.result.TokenizeResult` into a :class:`TokenWindow`: the
tokens ``[offset, offset + limit)`` grouped into :class:`TokenSpan` records (a run of whole characters and the
tokens covering it: a character cut into byte tokens is one span), each with its colour, ids and hover
detail. The playground, compare, chat and the BPE lab all build their views with it and draw them with the
one ``token_span`` macro::

    window = token_window(tokenizer.tokenize(text), offset=0, limit=settings.render_tokens)

Only the window's tokens are ever placed in the text, so a 1 MB text costs little more than encoding it.
Byte-level results (``result.byte_table``) are grouped from the ids alone, with C-level loops, and while someone
types, the spans of the previous window of the same text before the first changed token are reused as they are
(:class:`_RecentWindows`); :class:`SpanCache` renders each distinct span once. Other results are grouped from
their placed Token records. The tests compare both with grouping the full result.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from itertools import accumulate, chain, compress, repeat
from operator import attrgetter, gt, not_, sub

from jinja2 import Environment
from markupsafe import Markup

from app.features.compare import cut_at
from app.engines.result import ByteTable, Segment, Token, TokenizeResult, group_segments, hex_bytes, tokens_after
from app.palette import colour_chain


@dataclass(slots=True)
class TokenSpan:
    """One coloured span of a view: the whole characters ``text[start:end]`` and the tokens that cover them."""

    index: int  # the index of its first token in the whole result (unique and increasing)
    start: int  # character offsets into the text
    end: int
    text: str
    colour: int  # 0..PALETTE-1
    ids: list[int]
    special: bool  # any of its tokens is a special token
    partial: bool  # several tokens share these characters (a character cut into byte tokens)
    table: ByteTable | None = None  # byte-level: the tokens are placed from ``ids`` when first needed
    token_list: list[Token] | None = None
    classes: str = ""  # more CSS classes (compare: boundary differences; lab: made by this step)
    cuts: tuple[int, ...] = ()  # character offsets inside the span where another tokenizer cuts (compare)

    def marked(self, classes: str, cuts: tuple[int, ...]) -> TokenSpan:
        """A copy with these ``classes`` and ``cuts`` (what ``dataclasses.replace`` gives, without its field-by-field
        introspection: compare marks hundreds of spans on every keystroke)."""
        return TokenSpan(self.index, self.start, self.end, self.text, self.colour, self.ids, self.special, self.partial,
                         self.table, self.token_list, classes, cuts)

    @property
    def tokens(self) -> list[Token]:
        """The span's tokens (placed from its ids the first time its markup is rendered)."""
        if self.token_list is None:
            self.token_list = tokens_after(self.ids, self.start, self.table) if self.ids else []
        return self.token_list

    @property
    def hexes(self) -> list[str]:
        """Each token's bytes in hex, e.g. ``E3 81``."""
        return [hex_bytes(t.bytes) for t in self.tokens]

    @property
    def hex_attr(self) -> str:
        """``data-hex`` when the tokens' bytes are not simply the text's UTF-8, else "" and static/app.js derives
        the hex from the text. Never "" for several tokens (the ``|`` between them is not in the text's hex), so
        its entries also count the span's tokens: static/app.js hands out the id list by them."""
        hexes = "|".join(self.hexes)
        return "" if hexes == hex_bytes(self.text.encode("utf-8", "surrogatepass")) else hexes

    @property
    def pieces(self) -> list[str]:
        """The text cut at ``cuts`` (one piece when there are none)."""
        return cut_at(self.text, self.start, self.cuts)


@dataclass(slots=True)
class TokenWindow:
    """The spans of the tokens ``[start, stop)`` of a result, ready for the ``_tokens.html`` macros."""

    result: TokenizeResult
    spans: list[TokenSpan]
    start: int  # the window asked for, as token indexes
    stop: int
    limit: int | None
    token_start: int  # the tokens the spans hold (a character cut across the window's end stays whole)
    token_stop: int
    stats: dict = field(default_factory=dict)
    # while typing: the window of the previous text, and how many leading spans are the same objects as its
    previous: TokenWindow | None = None
    reused: int = 0
    markup: dict[tuple, list[str]] = field(default_factory=dict)  # (show_ws, focusable) -> each span's markup

    @property
    def has_more(self) -> bool:
        return self.stop < self.result.count

    @property
    def truncated(self) -> bool:
        return self.start > 0 or self.has_more

    @property
    def next_start(self) -> int | None:
        return self.stop if self.has_more else None

    @property
    def prev_start(self) -> int | None:
        if self.start <= 0 or not self.limit:
            return None
        return max(0, self.start - self.limit)


def token_window(result: TokenizeResult, offset: int = 0, limit: int | None = None) -> TokenWindow:
    """The spans of the tokens ``[offset, offset + limit)`` of ``result`` (all of them when ``limit`` is None).

    A span belongs to the window where its first token is, so a character cut into byte tokens across the
    window's end stays whole. ``offset`` past the end shows the last window (a stale offset after the text
    shrank still shows tokens). Colours restart with each window (the previous one is not on screen), so
    neighbours never share one.
    """
    n = result.count
    offset = max(0, offset)
    limit = n if limit is None else max(1, limit)
    if n and offset >= n:
        offset = ((n - 1) // limit) * limit
    if result.byte_table is not None:
        return _byte_level_window(result, offset, limit)
    return _placed_window(result, offset, limit)


def with_marks(window: TokenWindow, marks: Iterable[tuple[str, tuple[int, ...]]]) -> TokenWindow:
    """A copy of ``window`` whose spans carry ``(classes, cuts)`` each (compare's boundary marks). Marked spans
    are new objects and the copy reuses no earlier markup, so the window a later keystroke reuses is untouched."""
    spans = [s.marked(c, k) if c or k else s for s, (c, k) in zip(window.spans, marks)]
    return replace(window, spans=spans, previous=None, reused=0, markup={})


def _placed_window(result: TokenizeResult, offset: int, limit: int) -> TokenWindow:
    """The window from the result's placed Token records (any tokenizer)."""
    n, text = result.count, result.text
    slack = 64
    while True:
        lo = max(0, offset - 1)  # one token before the window tells whether its first character started earlier
        tokens = result.window(lo, offset - lo + limit + slack)
        reaches_end = lo + len(tokens) >= n
        segments = group_segments(text, tokens, whole=lo == 0 and reaches_end)
        # characters no token covers before the first token or after the last are a gap of their own, as when
        # the whole result is grouped (a window's spans and marks are the whole view's)
        if segments and lo == 0 and segments[0].start > 0:
            segments.insert(0, Segment(0, segments[0].start, text[: segments[0].start], []))
        if segments and reaches_end and segments[-1].end < len(text):
            segments.append(Segment(segments[-1].end, len(text), text[segments[-1].end :], []))
        first, last = offset - lo, offset - lo + limit  # window bounds as indexes into ``tokens``
        picked = [pos for pos, s in enumerate(segments) if s.tokens and first <= s.tokens[0] < last]
        if picked:  # and the characters no token covers (gaps) between them, before the first and after the last
            a, b = picked[0], picked[-1]
            if a == 1 and lo == 0 and not segments[0].tokens:
                a = 0
            if b == len(segments) - 2 and reaches_end and not segments[-1].tokens:
                b += 1
            picked = range(a, b + 1)
        chosen = [(pos, segments[pos]) for pos in picked]
        if not n and segments:
            chosen = [(0, segments[0])]
        # the last chosen segment must be complete: a later segment follows it, or no token follows at all
        if chosen and chosen[-1][0] == len(segments) - 1 and not reaches_end:
            slack *= 4
            continue
        break
    groups = [[tokens[i] for i in seg.tokens] for _, seg in chosen]
    palette = colour_chain(toks[0].id if toks else None for toks in groups)
    spans = [
        TokenSpan(
            lo + seg.tokens[0] if seg.tokens else 0,
            seg.start,
            seg.end,
            seg.text,
            colour,
            [t.id for t in toks],
            any(t.special for t in toks),
            len(toks) > 1,
            token_list=toks,
        )
        for (_, seg), toks, colour in zip(chosen, groups, palette)
    ]
    token_start = spans[0].index if spans and spans[0].ids else offset
    token_stop = token_start + sum(len(s.ids) for s in spans)
    stop = min(n, offset + limit)
    return TokenWindow(result, spans, offset, stop, limit, token_start, token_stop, result.stats())


def _byte_level_window(result: TokenizeResult, offset: int, limit: int) -> TokenWindow:
    """The window of a byte-level result, grouped from the ids with C-level loops (``map``, ``zip``).

    A token starts a new span unless its first byte continues a character (a UTF-8 continuation byte); spans
    tile the text, so a span's text runs from the characters before it to those after it. Its Token records
    are placed only if its markup is rendered for the first time (:attr:`TokenSpan.tokens`).
    """
    ids, text, table = result.ids, result.text, result.byte_table
    n = len(ids)
    end = min(n, offset + limit)
    infos = list(map(table.__getitem__, ids[:end]))  # byte facts only up to the window's end
    chars = sum(map(_LEADS, infos[:offset]))
    first = offset
    while first < end and infos[first].starts_mid:  # the first character began before the window: it belongs there
        chars += infos[first].leads
        first += 1
    stop = end  # past the window's last span (it may end with continuation tokens beyond ``end``)
    while stop < n and (info := table[ids[stop]]).starts_mid:
        infos.append(info)
        stop += 1
    # Typing changes a text near the caret: spans of an earlier window of this text before the first changed
    # token are reused as they are (same ids, so same characters, colours and indexes), the rest is built.
    key = (result.tokenizer, offset, limit, text[:_KEY_CHARS])
    previous = _RECENT.get(key, table)
    reused = _reusable_spans(previous, ids, end) if previous is not None else 0
    built_from, colour_before = first, -1
    if reused:
        built_from = previous.spans[reused].index
        chars = previous.spans[reused].start
        colour_before = previous.spans[reused - 1].colour
    window = infos[built_from:stop]
    ends = list(accumulate(map(_LEADS, window), initial=chars))  # ends[i]: characters before token built_from + i
    if stop == n:
        ends[-1] = len(text)
    starts = list(compress(range(built_from, stop), map(not_, map(_STARTS_MID, window))))
    cuts = starts[1:] + [stop]
    span_ids = list(map(ids.__getitem__, map(slice, starts, cuts)))
    if len(starts) < len(window):
        char_starts = list(map(ends.__getitem__, map(sub, starts, repeat(built_from))))
    else:
        char_starts = ends[:-1]
    char_ends = char_starts[1:] + [ends[-1]]
    texts = list(map(text.__getitem__, map(slice, char_starts, char_ends)))
    colours = colour_chain(map(ids.__getitem__, starts), colour_before)
    special_ids = table.special_ids
    specials = map(not_, map(special_ids.isdisjoint, span_ids)) if special_ids else repeat(False)
    partial = map(gt, map(sub, cuts, starts), repeat(1))
    spans = list(
        map(TokenSpan, starts, char_starts, char_ends, texts, colours, span_ids, specials, partial, repeat(table))
    )
    if previous is not None:
        previous.previous = None  # one generation back is enough; never a chain
    if reused:
        spans = previous.spans[:reused] + spans
    token_start = first if spans else offset
    token_stop = stop if spans else token_start
    built = TokenWindow(
        result, spans, offset, end, limit, token_start, token_stop, result.stats(), previous if reused else None, reused
    )
    _RECENT.put(key, table, built)
    return built


_KEY_CHARS = 32  # an earlier window is looked up by the text's first characters (and the view's settings)
_LEADS = attrgetter("leads")
_STARTS_MID = attrgetter("starts_mid")


class _RecentWindows:
    """The last windows built (per process), to reuse their spans while someone types. Bounded by spans held."""

    def __init__(self, max_spans: int = 60_000):  # ~25 MB: a dozen typists' 10 KB windows
        self.max_spans = max_spans
        self._entries: OrderedDict[tuple, tuple[ByteTable, TokenWindow]] = OrderedDict()
        self._spans = 0
        self._lock = threading.Lock()

    def get(self, key: tuple, table: ByteTable) -> TokenWindow | None:
        with self._lock:
            found = self._entries.get(key)
        return found[1] if found is not None and found[0] is table else None

    def put(self, key: tuple, table: ByteTable, window: TokenWindow) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._spans -= len(old[1].spans)
            self._entries[key] = (table, window)
            self._spans += len(window.spans)
            while self._spans > self.max_spans and len(self._entries) > 1:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._spans -= len(dropped.spans)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._spans = 0


_RECENT = _RecentWindows()


def _reusable_spans(previous: TokenWindow, ids: list[int], end: int) -> int:
    """How many leading spans of ``previous`` the new window can keep: spans that start before the first id
    that differs, minus the last of those (it may grow, e.g. a character completed by the new token), and
    never a span at or past the new window's end."""
    old_ids = previous.result.ids
    # the length of the common prefix of the two id lists (it matters up to the window's end), by binary
    # search over C-level list comparisons
    lo, hi = 0, min(len(old_ids), len(ids), end + 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old_ids[:mid] == ids[:mid]:
            lo = mid
        else:
            hi = mid - 1
    starts = list(map(_INDEX_OF, previous.spans))
    return max(0, bisect_left(starts, min(lo, end)) - 1)


_INDEX_OF = attrgetter("index")


class SpanCache:
    """Memoised output of the ``token_span`` macro of ``templates/_tokens.html``, and the plain id list.

    Typing re-renders a text that is almost the same as the last one, and any text repeats its tokens, so each
    distinct span (tokenizer, ids, text, colour, flags) is rendered by the macro once; a render joins the
    memoised strings. A span's markup does not depend on where it is (no index in it), so the memo holds it
    whole. The markup itself still comes only from the template. Bounded: the memo is dropped whenever it
    grows past ``max_entries``.
    """

    def __init__(self, env: Environment, max_entries: int = 200_000):
        self.env = env
        self.max_entries = max_entries
        self._spans: dict[tuple, str] = {}

    def tokens(self, window: TokenWindow, show_ws: bool = False, focusable: bool = True) -> Markup:
        macro = self.env.get_template("_tokens.html").module.token_span
        memo, out = self._spans, []
        spans = window.spans
        style = (show_ws, focusable)
        done = 0
        previous = window.previous
        if previous is not None and style in previous.markup:
            done = window.reused
            out = previous.markup[style][:done]  # the spans an earlier window of this text rendered
        get, append = memo.get, out.append
        tokenizer = window.result.tokenizer  # the same ids and text may be other bytes in another tokenizer
        for n in range(done, len(spans)):  # once per token on every keystroke: kept lean
            s = spans[n]
            tabindex = 0 if focusable and n == 0 else None  # app.js gives the other spans -1
            key = (tokenizer, s.colour, s.special, s.text, s.classes, s.cuts, show_ws, tabindex, *s.ids)
            markup = get(key)
            if markup is None:
                if len(memo) >= self.max_entries:
                    memo.clear()
                markup = memo[key] = str(macro(s, show_ws, tabindex))
            append(markup)
        window.markup[style] = out
        window.previous = None  # rendered: the earlier window is no longer needed (memory)
        return Markup("".join(out))

    @staticmethod
    def ids(window: TokenWindow) -> str:
        """The window's ids as plain text, in span order; static/app.js hands them out to the spans."""
        return " ".join(map(str, chain.from_iterable(s.ids for s in window.spans)))


def install(env: Environment) -> None:
    """Give templates ``tokens_markup(window, show_ws, focusable)`` and ``ids_markup(window)`` (used by the
    macros of ``_tokens.html``)."""
    cache = SpanCache(env)
    env.globals["tokens_markup"] = cache.tokens
    env.globals["ids_markup"] = cache.ids
