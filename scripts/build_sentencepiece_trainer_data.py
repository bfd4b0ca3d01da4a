"""Build the data our SentencePiece trainers need to train exactly what ``sentencepiece``'s trainer trains.

    .venv/bin/python scripts/build_sentencepiece_trainer_data.py [--sdist sentencepiece-0.2.3.tar.gz]

It writes two kinds of file under ``tokenizers/sentencepiece/trainer/`` and their entries in
``tokenizers/manifest.json`` (sha256, source, licence Apache-2.0, as sentencepiece is):

- ``<rule>.charsmap`` for each normalization rule the trainer takes by name (``nmt_nfkc``, ``nfkc``, ``nmt_nfkc_cf``,
  ``nfkc_cf``): the ``precompiled_charsmap`` of a model that the installed ``sentencepiece`` package trains on a
  tiny corpus with that ``normalization_rule_name`` (the package compiles the rules into itself; a model it trains
  carries them).
- ``unicode-scripts.tsv``: sentencepiece's own table of Unicode scripts (``src/unicode_script_map.h`` of the
  package's source distribution, the same version as the installed package), as ranges ``first<TAB>last<TAB>script``.
  Its trainer never lets a piece mix scripts, and its table is older than Python's Unicode: a code point it does not
  list is ``Common``. ``--sdist`` names the source archive; without it, ``pip download`` fetches it from PyPI.

Nothing here runs at run time: the app reads the files, checked against the manifest.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tokenizers" / "sentencepiece" / "trainer"
MANIFEST = ROOT / "tokenizers" / "manifest.json"
RULES = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf")

_RANGE = re.compile(r"for \(char32_t c = 0x([0-9A-F]+); c <= 0x([0-9A-F]+); \+\+c\) \(\*smap\)\[c\] = U_(\w+);")
_SINGLE = re.compile(r"\(\*smap\)\[0x([0-9A-F]+)\] = U_(\w+);")


def charsmap(rule: str) -> bytes:
    """The precompiled charsmap the installed sentencepiece writes into a model trained with ``rule``."""
    import sentencepiece as spm

    sys.path.insert(0, str(ROOT))
    from app.engines.sentencepiece.proto import ModelProto

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("abc def\n" * 20)
        out = io.BytesIO()
        spm.SentencePieceTrainer.train(input=str(corpus), model_writer=out, vocab_size=20, model_type="char",
                                       normalization_rule_name=rule, minloglevel=2)
    return ModelProto.parse(out.getvalue()).normalizer_spec.precompiled_charsmap


def script_ranges(header: str) -> list[tuple[int, int, str]]:
    """The script table of ``unicode_script_map.h`` as sorted, merged ranges."""
    points: dict[int, str] = {}
    for line in header.splitlines():
        m = _RANGE.search(line)
        if m:
            for c in range(int(m.group(1), 16), int(m.group(2), 16) + 1):
                points[c] = m.group(3)
            continue
        m = _SINGLE.search(line)
        if m:
            points[int(m.group(1), 16)] = m.group(2)
    ranges: list[list] = []
    for c in sorted(points):
        if ranges and ranges[-1][1] == c - 1 and ranges[-1][2] == points[c]:
            ranges[-1][1] = c
        else:
            ranges.append([c, c, points[c]])
    return [tuple(r) for r in ranges]


def sdist_header(sdist: Path | None, version: str) -> tuple[str, str]:
    """The text of ``src/unicode_script_map.h`` and the archive's name."""
    with tempfile.TemporaryDirectory() as tmp:
        if sdist is None:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                            f"sentencepiece=={version}", "-d", tmp], check=True, capture_output=True)
            sdist = next(Path(tmp).glob("sentencepiece-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("src/unicode_script_map.h"))
            return tar.extractfile(member).read().decode(), sdist.name


def main() -> None:
    import sentencepiece as spm

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sdist", type=Path, help="sentencepiece's source archive (default: pip download it)")
    args = ap.parse_args()
    version = spm.__version__
    OUT.mkdir(parents=True, exist_ok=True)
    entries: dict[str, dict] = {}
    for rule in RULES:
        blob = charsmap(rule)
        rel = f"sentencepiece/trainer/{rule}.charsmap"
        (ROOT / "tokenizers" / rel).write_bytes(blob)
        entries[rel] = {
            "sha256": hashlib.sha256(blob).hexdigest(),
            "source": f"sentencepiece=={version} (wheel): the precompiled_charsmap of a model it trains with "
                      f"normalization_rule_name={rule} (scripts/build_sentencepiece_trainer_data.py)",
            "licence": "Apache-2.0",
            "encoding": f"sentencepiece's {rule} normalization rule, precompiled (Darts trie and outputs)",
        }
    header, archive = sdist_header(args.sdist, version)
    lines = [f"{a:X}\t{b:X}\t{s}\n" for a, b, s in script_ranges(header)]
    text = "".join(lines).encode()
    rel = "sentencepiece/trainer/unicode-scripts.tsv"
    (ROOT / "tokenizers" / rel).write_bytes(text)
    entries[rel] = {
        "sha256": hashlib.sha256(text).hexdigest(),
        "source": f"sentencepiece=={version} (sdist {archive}): src/unicode_script_map.h, rewritten as ranges "
                  "first<TAB>last<TAB>script (scripts/build_sentencepiece_trainer_data.py)",
        "licence": "Apache-2.0",
        "encoding": "sentencepiece's Unicode script table; a code point it does not list is Common",
    }
    manifest = json.loads(MANIFEST.read_text())
    manifest["files"].update(entries)
    MANIFEST.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    for rel, e in entries.items():
        print(rel, e["sha256"])


if __name__ == "__main__":
    main()
