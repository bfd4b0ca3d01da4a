"""What the coloured-token macros in ``templates/_tokens.html`` render: a window of a result's segments.

:func:`token_view` turns a :class:`~app.engines.result.TokenizeResult` into a :class:`TokenView`: for each
segment in the window, its colour, its token ids and the detail shown on hover or focus. Pages build a view
in Python (cheap, exact for any window) and hand it to the macros::

    view = token_view(result, start=0, limit=settings.render_tokens)

Colours are keyed to the token id (a multiplicative hash into a palette of :data:`PALETTE` classes
``c0..c9``); when a segment would get the same colour as the one before it, it takes the next colour, so
neighbours never share one. The colour chain is computed from the first segment, so a later window starts with
exactly the colours the full view would have.

The playground calls :func:`window_view` on every keystroke. For byte-level tokenizers it builds the window's
rows with C-level loops (:func:`byte_level_window`), reuses the rows and span markup of the previous window of
the same text before the first changed token (``_RECENT``), and :class:`SpanCache` renders each distinct span
once. The tests compare all of this with the plain path (:func:`generic_window` and the macros themselves).
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate, chain, compress, repeat
from operator import attrgetter, gt, itemgetter, not_, sub

from jinja2 import Environment
from markupsafe import Markup

from app.engines.base import Tokenizer
from app.engines.result import Segment, Token, TokenizeResult, _ByteInfo, group_segments, hex_bytes, tokens_after

PALETTE = 10  # colour classes c0..c9 in static/app.css, for light and dark themes


def base_colour(token_id: int) -> int:
    """The colour an id gets when its neighbour does not already have it (Knuth's multiplicative hash)."""
    return ((token_id * 2654435761) % 4294967296) * PALETTE // 4294967296


def colours(segments: list[Segment], tokens: list[Token], stop: int | None = None) -> list[int]:
    """Colour index of each segment up to ``stop``: keyed to its first token id, never equal to the previous."""
    return colour_chain([tokens[seg.tokens[0]].id if seg.tokens else None for seg in segments[:stop]])


def colour_chain(first_ids: Iterable[int | None], prev: int = -1) -> list[int]:
    """:func:`base_colour` of each segment's first id (0 for a segment without tokens), moved on by one where it
    equals the colour before it (``prev`` for the first)."""
    out = []
    for tid in first_ids:
        colour = 0 if tid is None else base_colour(tid)
        if colour == prev:
            colour = (colour + 1) % PALETTE
        out.append(colour)
        prev = colour
    return out


@dataclass(slots=True)
class SegmentView:
    index: int  # position of the segment in the whole result (``data-seg``)
    text: str  # the segment's characters, exactly as in the input
    colour: int  # 0..PALETTE-1
    ids: list[int]
    special: bool  # any of its tokens is a special token
    partial: bool  # several tokens share these characters (a character cut into byte tokens)
    token_list: list[Token] | None = None  # the segment's tokens; None: built from ``lazy`` when first needed
    lazy: tuple | None = None  # tokens_after's (first character, token_bytes, byte-info cache, special ids)

    def as_row(self) -> tuple:
        """The positional fields, as a :class:`SegmentRows` row."""
        return (self.index, self.text, self.colour, self.ids, self.special, self.partial, self.token_list, self.lazy)

    @property
    def tokens(self) -> list[Token]:
        """The segment's tokens (hexes and detail are derived from them when a span is first rendered)."""
        if self.token_list is None:
            self.token_list = tokens_after(self.ids, *self.lazy)
        return self.token_list

    @property
    def ids_attr(self) -> str:
        return " ".join(map(str, self.ids))

    @property
    def hexes(self) -> list[str]:
        """Each token's bytes in hex, e.g. ``E3 81``."""
        return [hex_bytes(t.bytes) for t in self.tokens]

    @property
    def hex_attr(self) -> str:
        """``data-hex`` when the tokens' bytes are not simply the text's UTF-8 (several tokens share characters,
        or a tokenizer spells the text differently), else "" and static/app.js derives the hex from the text."""
        hexes = "|".join(self.hexes)
        return "" if hexes == hex_bytes(self.text.encode("utf-8", "surrogatepass")) else hexes

    @property
    def detail(self) -> str:
        """Plain-text detail for the tooltip: ids, bytes in hex, text."""
        return _detail(self.text, self.tokens, self.special)


class SegmentRows(Sequence):
    """A window's segments as plain tuples, the positional fields of :class:`SegmentView`; a SegmentView is
    made only when an item is accessed. The playground's memoised render reads ``rows`` directly, so a
    keystroke builds no object per token."""

    __slots__ = ("rows", "ids", "reused", "previous", "markup")

    def __init__(
        self, rows: list[tuple], ids: list[int] | None = None, reused: int = 0, previous: SegmentRows | None = None
    ):
        self.rows = rows
        self.ids = ids  # every id of the text (to compare with a later text's)
        self.reused = reused  # leading rows equal to those of ``previous`` (an earlier window of a similar text)
        self.previous = previous
        self.markup: dict[tuple, list[str]] = {}  # (show_ws, focusable) -> each row's span markup, once rendered

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [SegmentView(*row) for row in self.rows[i]]
        return SegmentView(*self.rows[i])


@dataclass(slots=True)
class TokenView:
    """A window ``[start, stop)`` of a result's segments, ready for the ``_tokens.html`` macros."""

    result: TokenizeResult
    items: list[SegmentView]
    start: int  # segment indexes: the window is segments [start, stop)
    stop: int
    limit: int | None
    token_start: int  # token indexes: the window shows tokens [token_start, token_stop)
    token_stop: int
    has_more: bool  # segments after the window
    stats: dict = field(default_factory=dict)

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


def _detail(text: str, tokens: list[Token], special: bool) -> str:
    lines = []
    for tok in tokens:
        line = f"id {tok.id} · bytes {hex_bytes(tok.bytes)}"
        if not tok.valid_utf8 or len(tokens) > 1:
            line += f" · {tok.text}"
        lines.append(line)
    kind = "special token" if special else ("one character, several tokens" if len(tokens) > 1 else "text")
    lines.append(f"{kind}: {text!r}")
    return "\n".join(lines)


def segments_until(result: TokenizeResult, stop: int) -> tuple[list[Segment], bool]:
    """The first ``stop`` segments of ``result`` (exactly as ``result.segments()[:stop]``) and whether more follow.

    Grouping only a prefix of the tokens keeps a window of a very long text cheap: a segment is complete once a
    later token has started the next one, so the prefix is grown until it holds ``stop + 1`` segments.
    """
    tokens = result.tokens
    k = stop + 1
    while True:
        if k >= len(tokens):
            segments = group_segments(result.text, tokens)
            return segments[:stop], len(segments) > stop
        segments = group_segments(result.text, tokens[:k])
        if len(segments) > stop:
            return segments[:stop], True
        k = 2 * k + 16


def token_view(
    result: TokenizeResult,
    start: int = 0,
    limit: int | None = None,
    segments: list[Segment] | None = None,
) -> TokenView:
    """The segments ``[start, start + limit)`` of ``result`` (all of them when ``limit`` is None).

    ``start`` past the end shows the last window, so a stale offset after the text shrank still shows tokens.
    Pass ``segments`` when you already have ``result.segments()``; otherwise only the segments up to the end
    of the window are grouped.
    """
    start = max(0, start)
    if limit is not None and limit > 0:
        if segments is not None:
            prefix, has_more = segments[: start + limit], len(segments) > start + limit
        else:
            prefix, has_more = segments_until(result, start + limit)
        if start >= len(prefix) and prefix:
            start = ((len(prefix) - 1) // limit) * limit
        elif not prefix:
            start = 0
        stop = min(len(prefix), start + limit)
    else:
        prefix = result.segments() if segments is None else segments
        start, stop, has_more = 0, len(prefix), False
    palette = colours(prefix, result.tokens, stop)
    items = []
    tokens = result.tokens
    for index in range(start, stop):
        seg = prefix[index]
        toks = [tokens[i] for i in seg.tokens]
        special = any(t.special for t in toks)
        items.append(SegmentView(index, seg.text, palette[index], [t.id for t in toks], special, len(toks) > 1, toks))
    with_tokens = [prefix[i].tokens for i in range(start, stop) if prefix[i].tokens]
    token_start = with_tokens[0][0] if with_tokens else 0
    token_stop = with_tokens[-1][-1] + 1 if with_tokens else token_start
    return TokenView(result, items, start, stop, limit, token_start, token_stop, has_more, result.stats())


def window_view(tokenizer, text: str, *, offset: int = 0, limit: int = 3000, allow_special: bool = False) -> TokenView:
    """Exact ids and counts for all of ``text``, coloured segments only for one window of its tokens.

    Builds Token records only around the window (``Tokenizer.tokenize_window``), so a 1M-character text costs
    little more than encoding it. The window holds the segments whose first token index is in
    ``[offset, offset + limit)``: a character cut into byte tokens across the boundary stays whole, in the
    window where it starts. ``offset`` past the end shows the last window. Here ``view.start``/``view.stop``
    and ``next_start``/``prev_start`` are token indexes, and ``SegmentView.index`` is the index of the
    segment's first token (unique and increasing, as ``data-seg`` needs). Colours restart with each window
    (the previous window is not on screen), so neighbours never share one.

    Byte-level tokenizers take a fused path (:func:`byte_level_window`, the same view) that builds no Token or
    Segment records up front: the playground calls this on every keystroke.
    """
    if type(tokenizer).tokenize is Tokenizer.tokenize:
        return byte_level_window(tokenizer, text, offset=offset, limit=limit, allow_special=allow_special)
    return generic_window(tokenizer, text, offset=offset, limit=limit, allow_special=allow_special)


def byte_level_window(
    tokenizer, text: str, *, offset: int = 0, limit: int = 3000, allow_special: bool = False
) -> TokenView:
    """:func:`window_view` for a byte-level tokenizer, built with C-level loops (``map``, ``zip``, ``accumulate``).

    A token starts a new segment unless its first byte continues a character (a UTF-8 continuation byte);
    segments tile the text, so a segment's text runs from the characters before it to those after it. Its
    Token records are built only if its span is rendered for the first time (``SegmentView.tokens``).
    ``view.result`` holds every id but no Token records.
    """
    limit = max(1, limit)
    offset = max(0, offset)
    ids = tokenizer.encode(text, allow_special=allow_special)
    n = len(ids)
    if n and offset >= n:
        offset = ((n - 1) // limit) * limit
    cache = tokenizer._byte_info_cache()
    token_bytes = tokenizer.token_bytes

    def info_of(tid: int) -> _ByteInfo:
        info = cache.get(tid)
        if info is None:
            info = cache[tid] = _ByteInfo(token_bytes(tid))
        return info

    end = min(n, offset + limit)
    # Byte facts only for the ids up to the window's end (a 1 MB text has ~250k ids; the window 3,000).
    infos = list(map(cache.get, ids[:end]))
    if None in infos:  # ids seen for the first time
        infos = list(map(info_of, ids[:end]))
    chars = sum(map(_LEADS, infos[:offset]))
    k = offset
    while k < end and infos[k].starts_mid:  # the first character began before the window: it belongs there
        chars += infos[k].leads
        k += 1
    special_ids = tokenizer.special_ids
    check_special = allow_special and bool(special_ids)  # special ids come only from allowed special text
    first = k
    stop = end  # past the window's last segment (it may end with continuation tokens beyond ``end``)
    while stop < n and (info := info_of(ids[stop])).starts_mid:
        infos.append(info)
        stop += 1
    # Typing changes a text near the caret: rows of an earlier window of this text before the first changed
    # token are reused as they are (same ids, so same characters, colours and indexes), the rest is built.
    key = (tokenizer.name, offset, limit, allow_special, text[:_KEY_CHARS])
    previous = _RECENT.get(key, tokenizer)
    reused = 0
    built_from, colour_before = first, -1
    if previous is not None:
        reused = _reusable_rows(previous, ids, end)
        if reused:
            built_from = previous.rows[reused][0]
            chars = previous.rows[reused][7][0]
            colour_before = previous.rows[reused - 1][2]
    window = infos[built_from:stop]
    # Segments by C loops: a token starts one unless it begins inside a character; char offsets accumulate.
    ends = list(accumulate(map(_LEADS, window), initial=chars))  # ends[i]: characters before token built_from + i
    if stop == n:
        ends[-1] = len(text)
    starts = list(compress(range(built_from, stop), map(not_, map(_STARTS_MID, window))))
    cuts = starts[1:] + [stop]
    seg_ids = list(map(ids.__getitem__, map(slice, starts, cuts)))
    if len(starts) < len(window):
        char_starts = list(map(ends.__getitem__, map(sub, starts, repeat(built_from))))
    else:
        char_starts = ends[:-1]
    char_ends = char_starts[1:] + [ends[-1]]
    texts = list(map(text.__getitem__, map(slice, char_starts, char_ends)))
    colours = colour_chain(map(ids.__getitem__, starts), colour_before)
    specials = [not special_ids.isdisjoint(x) for x in seg_ids] if check_special else repeat(False)
    partial = map(gt, map(sub, cuts, starts), repeat(1))
    lazy = zip(char_starts, repeat(token_bytes), repeat(cache), repeat(special_ids))
    rows = list(zip(starts, texts, colours, seg_ids, specials, partial, repeat(None), lazy))
    if reused:
        rows = previous.rows[:reused] + rows
    token_start = first if rows else offset
    token_stop = stop if rows else token_start
    result = TokenizeResult(tokenizer.name, text, ids, [], offset, n == 0)
    if previous is not None:
        previous.previous = None  # one generation back is enough; never a chain
    items = SegmentRows(rows, ids, reused, previous)
    _RECENT.put(key, tokenizer, items)
    return TokenView(result, items, offset, end, limit, token_start, token_stop, end < n, result.stats())


_KEY_CHARS = 32  # an earlier window is looked up by the text's first characters (and the view's settings)


class _RecentWindows:
    """The last windows built (per process), to reuse their rows while someone types. Bounded by rows held."""

    def __init__(self, max_rows: int = 60_000):  # ~25 MB: a dozen typists' 10 KB windows
        self.max_rows = max_rows
        self._entries: OrderedDict[tuple, tuple] = OrderedDict()  # key -> (tokenizer, SegmentRows)
        self._rows = 0
        self._lock = threading.Lock()

    def get(self, key: tuple, tokenizer) -> SegmentRows | None:
        with self._lock:
            found = self._entries.get(key)
        return found[1] if found is not None and found[0] is tokenizer else None

    def put(self, key: tuple, tokenizer, items: SegmentRows) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._rows -= len(old[1].rows)
            self._entries[key] = (tokenizer, items)
            self._rows += len(items.rows)
            while self._rows > self.max_rows and len(self._entries) > 1:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._rows -= len(dropped.rows)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._rows = 0


_RECENT = _RecentWindows()


def _reusable_rows(previous: SegmentRows, ids: list[int], end: int) -> int:
    """How many leading rows of ``previous`` the new window can keep: rows that start before the first id that
    differs, minus the last of those (it may grow, e.g. a character completed by the new token), and never a
    row at or past the new window's end."""
    old_ids = previous.ids or []
    # the length of the common prefix of the two id lists (it matters up to the window's end), by binary
    # search over C-level list comparisons
    lo, hi = 0, min(len(old_ids), len(ids), end + 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old_ids[:mid] == ids[:mid]:
            lo = mid
        else:
            hi = mid - 1
    starts = list(map(itemgetter(0), previous.rows))  # the token index where each row starts
    limit = min(lo, end)
    return max(0, bisect_left(starts, limit) - 1)


_LEADS = attrgetter("leads")
_STARTS_MID = attrgetter("starts_mid")


def generic_window(
    tokenizer, text: str, *, offset: int = 0, limit: int = 3000, allow_special: bool = False
) -> TokenView:
    """:func:`window_view` for any tokenizer, from ``Tokenizer.tokenize_window``'s Token records."""
    limit = max(1, limit)
    offset = max(0, offset)
    slack = 64
    while True:
        lo = max(0, offset - 1)  # one token before the window tells whether its first character started earlier
        result = tokenizer.tokenize_window(
            text, offset=lo, limit=offset - lo + limit + slack, allow_special=allow_special
        )
        n = len(result.ids)
        if n and offset >= n:
            offset = ((n - 1) // limit) * limit
            continue
        tokens = result.tokens
        reaches_end = result.offset + len(tokens) >= n
        if result.complete:
            segments = group_segments(text, tokens)
        else:
            segments = group_segments(text, tokens, whole=False)
            if lo == 0 and segments:
                segments[0].start = 0
                segments[0].text = text[: segments[0].end]
            if reaches_end and segments:
                segments[-1].end = len(text)
                segments[-1].text = text[segments[-1].start :]
        base = result.offset
        lo_index, hi_index = offset - base, offset + limit - base  # window bounds as indexes into ``tokens``
        chosen = [
            (pos, seg)
            for pos, seg in enumerate(segments)
            if (seg.tokens and lo_index <= seg.tokens[0] < hi_index) or (not seg.tokens and n == 0)
        ]
        # The last chosen segment must be complete: a later segment follows it, or no tokens follow at all.
        if chosen and chosen[-1][0] == len(segments) - 1 and not reaches_end:
            slack *= 4
            continue
        break
    chosen_tokens = [[tokens[i] for i in seg.tokens] for _, seg in chosen]
    palette = colour_chain(toks[0].id if toks else None for toks in chosen_tokens)
    items = [
        SegmentView(
            base + seg.tokens[0] if seg.tokens else 0,
            seg.text,
            colour,
            [t.id for t in toks],
            any(t.special for t in toks),
            len(toks) > 1,
            toks,
        )
        for (_, seg), toks, colour in zip(chosen, chosen_tokens, palette)
    ]
    with_tokens = [seg.tokens for _, seg in chosen if seg.tokens]
    token_start = base + with_tokens[0][0] if with_tokens else offset
    token_stop = base + with_tokens[-1][-1] + 1 if with_tokens else token_start
    stop = min(n, offset + limit)
    return TokenView(result, items, offset, stop, limit, token_start, token_stop, stop < n, result.stats())


# Stands for the segment index in a memoised span: the one part of a segment's markup that depends on where
# the segment is. Segments whose text contains it are rendered directly, never memoised.
_INDEX = "\x00"


class SpanCache:
    """Memoised output of the ``token_span`` macro of ``templates/_tokens.html``, and the plain id list.

    Typing re-renders a text that is almost the same as the last one, and any text repeats its tokens, so each
    distinct segment (ids, text, colour, flags) is rendered by the macro once; a render joins the memoised
    pieces around the segment's index. The markup itself still comes only from the template. Bounded: the
    memo is dropped whenever it grows past ``max_entries``.
    """

    def __init__(self, env: Environment, max_entries: int = 200_000):
        self.env = env
        self.max_entries = max_entries
        self._spans: dict[tuple, list[str]] = {}

    @property
    def _module(self):
        return self.env.get_template("_tokens.html").module

    def _pieces(self, memo: dict, key: tuple, macro, s: SegmentView, *args) -> list[str]:
        """The macro's output for ``s`` split around its index (rendered once per key)."""
        pieces = memo.get(key)
        if pieces is None:
            if len(memo) >= self.max_entries:
                memo.clear()
            pieces = memo[key] = str(macro(replace(s, index=_INDEX), *args)).split(_INDEX)
        return pieces

    def tokens(self, view: TokenView, show_ws: bool = False, focusable: bool = True) -> Markup:
        span = self._module.token_span
        memo, out = self._spans, []
        items = view.items
        fast = isinstance(items, SegmentRows)  # the playground's keystroke path: no SegmentView per span
        rows = items.rows if fast else [s.as_row() for s in items]
        style = (show_ws, focusable)
        done = 0
        if fast and items.previous is not None and style in items.previous.markup:
            done = items.reused
            out = items.previous.markup[style][:done]  # the rows an earlier window of this text rendered
        get, append = memo.get, out.append
        for n in range(done, len(rows)):  # once per token on every keystroke: kept lean
            row = rows[n]
            index, text, colour, ids, special = row[:5]
            tabindex = 0 if focusable and n == 0 else None  # app.js gives the other spans -1
            if _INDEX in text:
                append(str(span(SegmentView(*row), show_ws, tabindex)))
                continue
            key = (colour, special, text, show_ws, tabindex, *ids)
            pieces = get(key)
            if pieces is None:
                pieces = self._pieces(memo, key, span, SegmentView(*row), show_ws, tabindex)
            append(str(index).join(pieces))
        if fast:
            items.markup[style] = out
            items.previous = None  # rendered: the earlier window is no longer needed (memory)
        return Markup("".join(out))

    def ids(self, view: TokenView) -> Markup:
        """The window's ids as plain text; static/app.js turns them into linked, coloured spans."""
        items = view.items
        per_segment = map(itemgetter(3), items.rows) if isinstance(items, SegmentRows) else (s.ids for s in items)
        ids = " ".join(map(str, chain.from_iterable(per_segment)))
        return Markup(f'<span class="id-list" data-id-list>{ids}</span>')


def install(env: Environment) -> None:
    """Give templates ``tokens_markup(view, show_ws, focusable)`` and ``ids_markup(view)`` (used by the macros)."""
    cache = SpanCache(env)
    env.globals["tokens_markup"] = cache.tokens
    env.globals["ids_markup"] = cache.ids
