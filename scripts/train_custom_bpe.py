"""Build the corpus of the shipped ``custom-bpe`` tokenizer and train it (both steps are deterministic).

    .venv/bin/python scripts/train_custom_bpe.py                 # train from the committed corpus
    .venv/bin/python scripts/train_custom_bpe.py --build-corpus  # rebuild the corpus first, then train
    .venv/bin/python scripts/train_custom_bpe.py --check         # retrain and fail if model.json would change

The corpus (``tokenizers/custom-bpe/corpus.txt``) is committed so training is reproducible anywhere. It was
built by :func:`build_corpus` from the Python Language Reference topics in the stdlib of CPython 3.11.7
(``pydoc_data.topics``, PSF licence) and stdlib docstrings, then generated Japanese text (our own seeded
grammar, ``tests/helpers/sample_text.py``), with ``<|endoftext|>`` between the parts. Rebuilding on another
Python version gives a slightly different English part; the script says so.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the corpus generator is test data

from helpers.sample_text import english_text, japanese_text  # noqa: E402

from app.engines.bpe.model import BPETokenizer  # noqa: E402

OUT_DIR = ROOT / "tokenizers" / "custom-bpe"
CORPUS = OUT_DIR / "corpus.txt"
MODEL = OUT_DIR / "model.json"
VOCAB_SIZE = 4096
PATTERN = "gpt4"
TIE_BREAK = "first"
SPECIALS = ["<|endoftext|>"]
BUILT_WITH = "3.11.7"


def build_corpus() -> str:
    """English from the stdlib (700 kB), then generated Japanese (150 kB), separated by <|endoftext|>."""
    return english_text(700_000) + "<|endoftext|>" + japanese_text(150_000, seed=2024) + "\n"


def train_model(corpus: str) -> BPETokenizer:
    started = time.perf_counter()

    def progress(step: int, total: int, record) -> None:
        if step % 512 == 0 or step == total:
            print(f"  merge {step}/{total}: {record.token!r} x{record.count}", file=sys.stderr)

    model, result = BPETokenizer.train(
        corpus, VOCAB_SIZE, PATTERN, SPECIALS, TIE_BREAK, progress=progress, name="custom-bpe"
    )
    model.training.update(
        {
            "pattern": PATTERN,
            "corpus": "tokenizers/custom-bpe/corpus.txt",
            "corpus_sha256": hashlib.sha256(corpus.encode("utf-8")).hexdigest(),
            "built_by": "scripts/train_custom_bpe.py",
        }
    )
    print(
        f"trained {len(result.merges)} merges in {time.perf_counter() - started:.1f}s ({result.stop_reason})",
        file=sys.stderr,
    )
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-corpus", action="store_true", help="regenerate corpus.txt from the stdlib")
    parser.add_argument("--check", action="store_true", help="fail if retraining would change model.json")
    args = parser.parse_args(argv)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    if args.build_corpus:
        if platform.python_version() != BUILT_WITH:
            print(
                f"note: the committed corpus was built with Python {BUILT_WITH}; this is "
                f"{platform.python_version()}, so the English part may differ",
                file=sys.stderr,
            )
        CORPUS.write_text(build_corpus(), encoding="utf-8")
    corpus = CORPUS.read_text(encoding="utf-8")
    text = train_model(corpus).to_json()
    if args.check:
        if MODEL.read_text(encoding="utf-8") != text:
            print("model.json differs from a fresh training run", file=sys.stderr)
            return 1
        print("model.json is up to date", file=sys.stderr)
        return 0
    MODEL.write_text(text, encoding="utf-8")
    print(f"wrote {MODEL.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
