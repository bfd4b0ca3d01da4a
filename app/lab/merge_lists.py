"""A merge list typed by a teacher, read as the merges a run replays in order instead of training.

The text is written as a ``merges.txt`` is: one merge a line, its two tokens separated by one space; lines that
start with ``#`` (``#version: 0.2``) and empty lines are skipped. Byte-level tokens are written in GPT-2's printable
byte alphabet (``Ġ`` a space, ``Ċ`` a line break, ``Ã©`` the two bytes of ``é``); character-level tokens as their
text, with GPT-2's names for a space and the control characters (``Ġ``, ``Ċ``, ``ĉ``), as a line cannot hold a
space inside a token. Each token must exist when its line comes: a base token (a byte, a character of the corpus,
``</w>``) or one an earlier line made; a line that makes a token an earlier line made already is refused too (a
token is made once). Every refusal names the line.

Nothing here trains: :func:`read_merge_list` gives the pairs of ids, which :func:`app.lab.algorithms.train` merges.
"""

from __future__ import annotations

from app.engines.pipeline.tokenizer_json import BYTE_OF_CHAR

from .options import LabOptionsError

#: GPT-2's names of the characters a token of a line cannot hold as themselves (space, control characters).
_CONTROL_NAMES = {ch: chr(b) for ch, b in BYTE_OF_CHAR.items() if b <= 0x20 or b == 0x7F}


class MergeListError(LabOptionsError):
    """A typed merge list with a line the lab cannot replay (the message names the line)."""


def token_bytes(token: str, algorithm: str) -> bytes:
    """The bytes a token of a line stands for: ``token_bytes("Ġthe", "byte") == b" the"``."""
    if algorithm == "byte":
        return bytes(BYTE_OF_CHAR[ch] for ch in token)  # the caller checked the alphabet
    return "".join(_CONTROL_NAMES.get(ch, ch) for ch in token).encode("utf-8")


def _show(data: bytes) -> str:
    return repr(data.decode("utf-8", errors="backslashreplace"))


def read_merge_list(
    text: str, algorithm: str, base: dict[int, bytes], max_merges: int
) -> list[tuple[int, int]]:
    """The pairs of ids the lines of ``text`` merge, in order, over ``base`` (id -> bytes), new ids following
    the largest base id; :class:`MergeListError` naming the line for a line that cannot be replayed."""
    ids = {data: i for i, data in sorted(base.items(), reverse=True)}  # the smallest id of equal bytes wins
    made_by: dict[bytes, int] = {}
    next_id = max(base) + 1 if base else 0
    pairs: list[tuple[int, int]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise MergeListError(
                f"merge_list line {n} ({line[:60]!r}) is not two tokens separated by one space, as in a merges.txt "
                "(e.g. 'Ġ t'; write a space inside a token as Ġ)"
            )
        if algorithm == "byte":
            for part in parts:
                strange = next((ch for ch in part if ch not in BYTE_OF_CHAR), None)
                if strange is not None:
                    raise MergeListError(
                        f"merge_list line {n}: {strange!r} is not in GPT-2's byte alphabet; write byte-level tokens "
                        "as a merges.txt does (Ġ for a space, Ċ for a line break, Ã© for the bytes of é)"
                    )
        if len(pairs) >= max_merges:
            raise MergeListError(f"merge_list has more than {max_merges:,} merges (line {n}); the lab's limit is {max_merges:,}")
        left, right = (token_bytes(part, algorithm) for part in parts)
        for part, data in ((parts[0], left), (parts[1], right)):
            if data not in ids:
                raise MergeListError(
                    f"merge_list line {n}: the token {part!r} ({_show(data)}) does not exist yet: it is no base "
                    "token of this corpus and no earlier line makes it; put the line that makes it first"
                )
        joined = left + right
        if joined in ids:
            earlier = made_by.get(joined)
            where = f"line {earlier} makes it already" if earlier is not None else "it is a base token"
            raise MergeListError(
                f"merge_list line {n}: {parts[0]} + {parts[1]} makes {_show(joined)}, but {where}; a token is made once"
            )
        pairs.append((ids[left], ids[right]))
        ids[joined] = next_id
        made_by[joined] = n
        next_id += 1
    if not pairs:
        raise MergeListError("merge_list has no merges: type one merge a line, two tokens separated by one space (e.g. 't h')")
    return pairs
