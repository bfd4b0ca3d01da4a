"""The real-text corpora that tests and benchmarks read: English, Spanish, Japanese and Chinese technical prose,
and C code, 1 MB each (see the README next to them for their sources and licences).

They are never copied into the repository: they are looked for in ``$TOKENPLAY_CORPORA``, else in
``<repo>/../shared/corpora``, else in ``/work/shared/corpora``. A test that needs them calls :func:`require`
(it skips, saying where it looked, when they are absent); a benchmark checks :func:`available` and says so.
``bench/`` puts ``tests/`` on ``sys.path`` to share this module.
"""

from __future__ import annotations

import functools
import re
import os
import random
from pathlib import Path

NAMES = ("en", "es", "ja", "zh", "c")


def _corpora_dir() -> Path:
    env = os.environ.get("TOKENPLAY_CORPORA")
    if env:
        return Path(env)
    beside = Path(__file__).resolve().parents[3] / "shared" / "corpora"
    return beside if beside.is_dir() else Path("/work/shared/corpora")


CORPORA_DIR = _corpora_dir()


def path(name: str) -> Path:
    return CORPORA_DIR / f"{name}.txt"


def available() -> bool:
    """True when every corpus file is there."""
    return all(path(name).is_file() for name in NAMES)


def require() -> None:
    """In a test: skip it, saying where the corpora were looked for, when they are absent."""
    if not available():
        import pytest

        pytest.skip(f"the real-text corpora ({', '.join(NAMES)}) are not in {CORPORA_DIR}; set TOKENPLAY_CORPORA")


@functools.cache
def read(name: str) -> str:
    """The whole corpus ``name`` (one of :data:`NAMES`)."""
    return path(name).read_text(encoding="utf-8")


@functools.cache
def _utf8(name: str) -> bytes:
    return read(name).encode("utf-8")


def excerpt(name: str, offset: int, size: int) -> str:
    """The text of ``size`` bytes of corpus ``name`` from byte ``offset`` (taken modulo what fits, so any offset
    gives a whole excerpt), without the pieces of characters cut at either end.

    Byte sizes, as "10 KB of ja.txt" means: about 3,300 Japanese characters, 10,000 English ones.
    """
    data = _utf8(name)
    start = offset % max(1, len(data) - size)
    return data[start : start + size].decode("utf-8", "ignore")


def slices(name: str, count: int, chars: int, seed: int = 0) -> list[str]:
    """``count`` pieces of corpus ``name`` of about ``chars`` characters each, made of whole lines, from
    positions drawn by a generator seeded with ``seed`` (the same pieces every time).

    A piece is at least one line: the lines from a drawn one for as long as they fit in ``chars``.
    """
    lines = read(name).splitlines(keepends=True)
    rng = random.Random(f"{name}/{seed}")
    out: list[str] = []
    for _ in range(count):
        i = rng.randrange(len(lines))
        piece = [lines[i]]
        size = len(lines[i])
        for line in lines[i + 1 :]:
            if size + len(line) > chars:
                break
            piece.append(line)
            size += len(line)
        out.append("".join(piece))
    return out


def unspaced(name: str, chars: int, seed: int = 0) -> str:
    """About ``chars`` characters of corpus ``name`` from a position drawn with ``seed``, every whitespace character
    taken out: one long run of words, as a hostile input pastes it."""
    text = read(name)
    start = random.Random(f"{name}/unspaced/{seed}").randrange(max(1, len(text) - 2 * chars))
    return "".join(text[start : start + 2 * chars].split())[:chars]


def long_runs(chars: int = 20_000) -> dict[str, str]:
    """Texts that an engine meets as one long run (no pre-tokenizer or chunking cut inside): one character
    ``chars`` times, and about ``chars`` characters of each corpus file with its whitespace taken out."""
    require()
    runs = {f"{c!r} x {chars:,}": c * chars for c in ("a", "ア", "😀", "=", "\u200d")}
    return runs | {f"{name}.txt, no whitespace": unspaced(name, chars) for name in NAMES}


def en_ja(chars: int = 7_500, seed: int = 0) -> str:
    """Exactly ``chars`` characters of real prose: English, then Japanese (half each), whole lines of each corpus
    from a position drawn with ``seed`` (the text ends wherever ``chars`` falls). The compare page's typing
    benchmark (bench/bench_compare.py) and its fragment-size test use it."""
    out = []
    for name, want in (("en", chars // 2), ("ja", chars - chars // 2)):
        lines = read(name).splitlines(keepends=True)
        i = random.Random(f"{name}/en_ja/{seed}").randrange(len(lines) // 2)
        piece = ""
        while len(piece) < want:
            piece += lines[i]
            i += 1
        out.append(piece[:want])
    return "".join(out)


# -- texts built from the corpora, for the held-out encode gaps (issue 23) ------------------------------------------
# Neither is generated text: every character comes from the corpora; only the order (and, for the Japanese
# manual, the reflow of its lines and where the ASCII terms go) is drawn, with a seeded generator.


def _paragraphs(name: str) -> list[str]:
    """Corpus ``name`` cut into paragraphs at blank lines (each without its trailing blank lines)."""
    return [p for p in re.split(r"\n[ \t\xa0]*\n", read(name)) if p.strip()]


def _blocks(name: str, most: int) -> list[str]:
    """The paragraphs of ``name``, each ending in one blank line; one longer than ``most`` bytes is cut at line
    ends into blocks of at most ``most`` bytes (a line longer than that stays whole)."""
    out: list[str] = []
    for para in _paragraphs(name):
        block, size = "", 0
        for line in para.splitlines(keepends=True):
            n = len(line.encode("utf-8"))
            if block and size + n > most:
                out.append(block.rstrip("\n") + "\n\n")
                block, size = "", 0
            block += line
            size += n
        out.append(block.rstrip("\n") + "\n\n")
    return out


def mixed_stretches(size: int = 1_000_000, seed: int = 0) -> list[tuple[str, str]]:
    """The stretches of :func:`mixed_en_c_ja`, each with the corpus it comes from: ``[("en", text), ("c", text),
    ("ja", text), ("en", text), ...]``."""
    rng = random.Random(f"mixed_en_c_ja/{seed}")
    sources = {name: _blocks(name, 4096) for name in ("en", "c", "ja")}
    cursor = {name: rng.randrange(len(blocks)) for name, blocks in sources.items()}
    out: list[tuple[str, str]] = []
    total = 0
    while total < size:
        for name, blocks in sources.items():
            want = rng.randint(2048, 4096)
            stretch: list[str] = []
            got = 0
            while got < want:
                block = blocks[cursor[name] % len(blocks)]
                cursor[name] += 1
                stretch.append(block)
                got += len(block.encode("utf-8"))
            out.append((name, "".join(stretch)))
            total += got
            if total >= size:
                break
    return out


def mixed_en_c_ja(size: int = 1_000_000, seed: int = 0) -> str:
    """About ``size`` bytes of English prose, C code and Japanese prose interleaved: stretches of 2-4 KB (a
    drawn length, whole paragraphs) taken in turn from en.txt, c.txt and ja.txt, each corpus read on from a
    drawn position (wrapping at its end), until the text reaches ``size`` bytes; a paragraph longer than 4 KB (a
    long C function) is cut at line ends, and every paragraph ends in one blank line. What a page of notes on C
    with Japanese comments and English documentation looks like: the text switches script every few KB.

    >>> len(mixed_en_c_ja(20_000).encode()) >= 20_000
    True
    """
    return "".join(text for _, text in mixed_stretches(size, seed))


_JA_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff00-\uffef]")  # kana, CJK ideographs, full-width forms
_HIRAGANA = re.compile(r"[\u3041-\u309f]")


def _japanese_share(text: str) -> float:
    visible = len(text) - sum(map(str.isspace, text))
    return len(_JA_CHAR.findall(text)) / visible if visible else 0.0


def _reflow(paragraph: str) -> str:
    """A hard-wrapped paragraph as one line, as a manual page shows it: the lines without their indent, joined
    with nothing between two Japanese characters and with one space otherwise."""
    out = ""
    for line in paragraph.splitlines():
        line = line.strip(" \t\xa0")
        if not line:
            continue
        if out and not (_JA_CHAR.match(out[-1]) and _JA_CHAR.match(line[0])):
            out += " "
        out += line
    return out


@functools.cache
def technical_terms() -> dict[str, list[str]]:
    """ASCII technical terms as they occur in the corpora, one entry per occurrence (so common ones are drawn
    more often): C identifiers with an underscore or an inner capital (c.txt), commands typed after a shell
    prompt, with their first option (en.txt), numbers with units and file paths (en.txt)."""
    c, en = read("c"), read("en")
    return {
        "identifier": [
            m
            for m in re.findall(r"\b[A-Za-z_][A-Za-z0-9_]{3,31}\b", c)
            if "_" in m.strip("_") or re.search("[a-z][A-Z]", m)
        ],
        "command": re.findall(r"^\s*[$#] +([a-z][\w.+-]*(?: -{1,2}[\w-]+)?)", en, re.M),
        "quantity": re.findall(r"\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B|kB|bytes|MHz|GHz|ms|bit|bps|%)(?!\w)", en),
        "path": re.findall(r"(?<![\w/.~-])/(?:[\w.+-]+/)+[\w.+-]*\w", en),
    }


def ja_technical(size: int = 400_000, seed: int = 0) -> str:
    """Up to ``size`` bytes of Japanese technical prose with ASCII terms in it, as a Japanese manual of a
    programming tool reads: the paragraphs of ja.txt that are mostly Japanese (at least half their visible
    characters), reflowed to one line each (:func:`_reflow`), in order from a drawn one (wrapping at the end),
    with a term of :func:`technical_terms` (a drawn kind, a drawn occurrence) put after every 40-80 Japanese
    characters (a drawn count) where a word ends, before its particle (a kanji or katakana followed by a
    hiragana: ``設定 /etc/fstab を``), half the time with a space on each side. No paragraph is used twice
    or cut, so the text stops short of ``size`` before the first paragraph that would pass it, and when ja.txt
    runs out (at about 390 KB).

    >>> text = ja_technical(60_000, seed=2)
    >>> 50_000 < len(text.encode()) <= 60_000 and text.endswith(2 * chr(10))
    True
    """
    rng = random.Random(f"ja_technical/{seed}")
    paragraphs = [p for p in _paragraphs("ja") if _japanese_share(p) >= 0.5]
    first = rng.randrange(len(paragraphs))
    terms = technical_terms()
    kinds = sorted(terms)
    out: list[str] = []
    total = 0
    gap = rng.randint(40, 80)
    for k in range(len(paragraphs)):
        text = _reflow(paragraphs[(first + k) % len(paragraphs)])
        pieces: list[str] = []
        start = 0
        for i, ch in enumerate(text):
            if not _JA_CHAR.match(ch):
                continue
            gap -= 1
            if gap <= 0 and i + 1 < len(text) and not _HIRAGANA.match(ch) and _HIRAGANA.match(text[i + 1]):
                term = rng.choice(terms[rng.choice(kinds)])
                pieces.append(text[start : i + 1])
                pieces.append(f" {term} " if rng.random() < 0.5 else term)
                start = i + 1
                gap = rng.randint(40, 80)
        pieces.append(text[start:] + "\n\n")
        para = "".join(pieces)
        n = len(para.encode("utf-8"))
        if total + n > size:
            break
        out.append(para)
        total += n
    return "".join(out)
