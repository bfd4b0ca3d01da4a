"""A token as the lab's pages show it, and how much of a run they show; shared by the replays of every algorithm.

:func:`display_text` is a token's text with bytes that are no text escaped; a :class:`Chip` is what a chip shows
(its text, or its bytes in hex for a piece of a character). The pages show the first :data:`WINDOW_CHARS`
characters of a run's corpus and encode at most :data:`MAX_ENCODE_CHARS` characters of a new text.
:class:`ReplayView` is what every replay shows of its run, whatever the algorithm.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cached_property

from app.engines.result import escape_bytes, hex_bytes

from .byte_hints import ByteHint
from .outcome import Outcome, outcome
from .runs import Run

WINDOW_CHARS = 2_000
MAX_ENCODE_CHARS = 1_000

_CONTROL = {c: f"\\x{c:02x}" for c in [*range(32), 127] if chr(c) not in "\n\t"}


def display_text(data: bytes) -> str:
    r"""A token as text: its UTF-8, or ``\xNN`` escapes when it is not valid UTF-8 on its own; control
    characters other than newline and tab are escaped too (``b"\x00"`` shows as ``\x00``, not as nothing)."""
    return escape_bytes(data).translate(_CONTROL)


@dataclass(frozen=True, slots=True)
class Chip:
    """A token as the lab's chips show it: its text, or, for a piece of a character (a byte-level token that is
    not valid UTF-8 on its own), its bytes in hex."""

    id: int
    text: str  # the token's text, ``\xNN`` escapes for bytes that are no text on their own
    partial: bool
    hex: str  # its bytes in hex, ``E3 81``
    hint: ByteHint | None = None  # a partial token: which characters' bytes it is (RunReplay.chip fills it in)

    @property
    def label(self) -> str:
        """What a screen reader says for it."""
        if self.partial and self.hint is not None:
            return f"bytes {self.hex}, {self.hint.sentence}"
        return f"bytes {self.hex}" if self.partial else self.text


UNKNOWN = Chip(-1, "?", False, "")


def chip_of(tid: int, data: bytes, text: str) -> Chip:
    """The chip of token ``tid``, whose bytes are ``data`` and display text ``text``."""
    try:
        data.decode("utf-8")
        partial = False
    except UnicodeDecodeError:
        partial = True
    return Chip(tid, text, partial, hex_bytes(data))


class ReplayView:
    """What every replay of a finished run shows, whatever its algorithm: its tokens as text and chips, the window
    of its corpus the pages show, and its outcome. :class:`~.replay.RunReplay` (merges) and
    :class:`~.unigram_replay.UnigramReplay` (rounds) add the steps of theirs."""

    def __init__(self, run: Run, window_chars: int = WINDOW_CHARS):
        self.run = run
        self.vocab = run.vocab()
        self.text = {i: display_text(b) for i, b in self.vocab.items()}
        self.chips = {i: chip_of(i, b, self.text[i]) for i, b in self.vocab.items()}
        self.window = run.corpus[:window_chars]
        self.truncated = len(run.corpus) > window_chars
        self._lock = threading.Lock()

    def chip(self, tid: int) -> Chip:
        return self.chips.get(tid, UNKNOWN)

    def token_text(self, tid: int) -> str:
        return self.chip(tid).text

    def pair_text(self, pair) -> list[str]:
        return [self.token_text(pair[0]), self.token_text(pair[1])]

    @cached_property
    def outcome(self) -> Outcome:
        """What the run's vocabulary is made of, and why it ended away from the size asked for (if it did)."""
        return outcome(self.run)
