"""Token colours, shared by every view that colours tokens (the playground, compare, chat and the BPE lab).

A token's colour is keyed to its id (Knuth's multiplicative hash into :data:`PALETTE` classes ``c0..c9`` of
``static/app.css``, for light and dark themes), so the same token has the same colour everywhere; a token that
would get the colour of the one before it takes the next colour, so neighbours never share one.
"""

from __future__ import annotations

from collections.abc import Iterable

PALETTE = 10


def base_colour(token_id: int) -> int:
    """The colour an id gets when its neighbour does not already have it: ``base_colour(0) == 0``."""
    return ((token_id * 2654435761) % 4294967296) * PALETTE // 4294967296


def colour_chain(first_ids: Iterable[int | None], prev: int = -1) -> list[int]:
    """:func:`base_colour` of each id (0 for ``None``, a group without tokens), moved on by one where it equals
    the colour before it (``prev`` for the first).

    >>> colour_chain([0, 0, 0])
    [0, 1, 0]
    """
    out = []
    for tid in first_ids:
        colour = 0 if tid is None else base_colour(tid)
        if colour == prev:
            colour = (colour + 1) % PALETTE
        out.append(colour)
        prev = colour
    return out
