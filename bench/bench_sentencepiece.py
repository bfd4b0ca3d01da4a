"""Benchmark our SentencePiece engine and trainer against the ``sentencepiece`` library, in the same run.

    .venv/bin/python bench/bench_sentencepiece.py [--quick] [--repeat N]

Prints a markdown table: task | ours (s) | sentencepiece (s) | ratio | target, where ratio is our time over the
library's (lower is better). Targets from issue 4:

- encoding with Mistral 7B v0.1, the whole text at once: at least half the library's throughput (ratio <= 2);
  measured cold (a fresh tokenizer, empty chunk cache) and warm (the same text again);
- training a BPE on each real-text corpus (``tests/realtext.py``: en, es, ja, zh, c, 1 MB each) to 4096 pieces:
  within 3x of the library's BPE trainer with ``num_threads=1`` and our trainer's options (issue 16); without the
  corpora these rows are skipped, and the output says so.

Encoding texts are generated deterministically from what is on this machine: the docstrings of the CPython
standard library, shuffled by a seeded generator, with a fixed set of Japanese, Korean, Chinese, emoji and code
lines mixed in. Times are CPU seconds of this process (the library encodes in one thread and trains with
``num_threads=1``), the best of ``--repeat`` runs. Nothing here is a test; numbers are reported as they come out.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # realtext: where the real-text corpora are

import sentencepiece as spm  # noqa: E402

from app.engines.datafiles import data_path  # noqa: E402
from app.engines.sentencepiece import SentencePieceTokenizer  # noqa: E402
from app.engines.sentencepiece.trainer import train_sentencepiece  # noqa: E402

MISTRAL = "sentencepiece/mistral-7b-v0.1.model"

EXTRA_LINES = [
    "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。",
    "東京スカイツリーは634メートルです。自然言語処理は面白い。",
    "안녕하세요, 세계! 한국어 텍스트를 토큰화합니다. 다람쥐 헌 쳇바퀴에 타고파.",
    "我能吞下玻璃而不伤身体。自然语言处理很有趣。",
    "Family: 👨‍👩‍👧‍👦, flags: 🇯🇵🇫🇷, skin tones: 👍🏽👋🏿 🤖🚀",
    "    def encode(self, text: str) -> list[int]:",
    "        return [self.ranks[b] for b in text.encode('utf-8')]  # comment",
    "\tindented with a tab\t\tand inner tabs",
    "   leading spaces, trailing spaces   ",
]


def stdlib_lines() -> list[str]:
    """Non-empty docstring lines of the standard library's top-level modules, in a fixed order."""
    stdlib = sysconfig.get_paths()["stdlib"]
    lines: list[str] = []
    for path in sorted(Path(stdlib).glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node)
                if doc:
                    lines.extend(line for line in doc.splitlines() if line.strip())
    return lines


def corpus(n_bytes: int, *, seed: int = 0, extra_every: int = 0) -> str:
    """About ``n_bytes`` of UTF-8 text: shuffled docstring lines (repeated if needed), optionally with one of the
    multilingual/code lines after every ``extra_every`` lines."""
    rng = random.Random(seed)
    base = stdlib_lines()
    out: list[str] = []
    size = 0
    while size < n_bytes:
        lines = base[:]
        rng.shuffle(lines)
        for k, line in enumerate(lines):
            if extra_every and k % extra_every == 0:
                line = rng.choice(EXTRA_LINES)
            out.append(line)
            size += len(line.encode("utf-8")) + 1
            if size >= n_bytes:
                break
    return "\n".join(out) + "\n"


def best_of(repeat: int, fn):
    """Best CPU time of ``repeat`` calls (process time: other load on a shared machine does not count), and the
    last value. Both sides run in this one process, single-threaded."""
    best = float("inf")
    value = None
    for _ in range(repeat):
        t0 = time.process_time()
        value = fn()
        best = min(best, time.process_time() - t0)
    return best, value


def bench_encode(n_bytes: int, repeat: int) -> list[tuple[str, float, float, str]]:
    text = corpus(n_bytes, seed=1, extra_every=7)
    path = data_path(MISTRAL)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    t_sp, ids_sp = best_of(repeat, lambda: sp.encode(text))

    def cold():
        return SentencePieceTokenizer.from_file(path).encode(text)

    t_load, _ = best_of(repeat, lambda: SentencePieceTokenizer.from_file(path))
    t_cold, ids_cold = best_of(repeat, cold)
    tok = SentencePieceTokenizer.from_file(path)
    tok.encode(text)
    t_warm, ids_warm = best_of(repeat, lambda: tok.encode(text))
    assert ids_cold == ids_sp and ids_warm == ids_sp, "ids differ from sentencepiece"
    mb = len(text.encode("utf-8")) / 1e6
    return [
        (f"encode {mb:.2f} MB, Mistral 7B, cold cache (excl. {t_load:.2f}s load)", t_cold - t_load, t_sp, "<= 2.0"),
        (f"encode {mb:.2f} MB, Mistral 7B, warm cache", t_warm, t_sp, "<= 2.0"),
    ]


#: sentencepiece's trainer with our trainer's options (see app/engines/sentencepiece/trainer.py): the ``identity``
#: normalizer, spaces kept, dummy prefix, byte fallback, every character, pieces of at most 16 characters, and no
#: split by Unicode script or by digits (ours splits only before each ``▁``); one thread, every sentence.
SP_TRAINER_OPTIONS = dict(
    model_type="bpe", num_threads=1, byte_fallback=True, character_coverage=1.0, normalization_rule_name="identity",
    remove_extra_whitespaces=False, add_dummy_prefix=True, split_by_unicode_script=False, split_by_number=False,
    max_sentencepiece_length=16, input_sentence_size=0, max_sentence_length=1 << 20, hard_vocab_limit=False,
    minloglevel=2,
)


def bench_train(size: int, vocab_size: int, repeat: int) -> list[tuple[str, float, float, str]]:
    """Training on every real-text corpus (cut to ``size`` characters at a line end), ours vs the library."""
    import realtext

    if not realtext.available():
        print(f"Real-text corpora not found in {realtext.CORPORA_DIR} (set TOKENPLAY_CORPORA): training rows skipped.\n")
        return []
    rows = []
    for name in realtext.NAMES:
        text = realtext.read(name)
        if len(text) > size:
            text = text[: text.rfind("\n", 0, size) + 1]
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "corpus.txt")
            Path(src).write_text(text, encoding="utf-8")
            prefix = os.path.join(tmp, "lib")
            t_sp, _ = best_of(
                repeat,
                lambda: spm.SentencePieceTrainer.train(
                    input=src, model_prefix=prefix, vocab_size=vocab_size, **SP_TRAINER_OPTIONS
                ),
            )
            t_ours, (model, result) = best_of(repeat, lambda: train_sentencepiece(text, vocab_size))
            check = spm.SentencePieceProcessor(model_proto=model.serialize())
            sample = text[:20000]
            assert check.encode(sample) == model.tokenizer().encode(sample), "saved model encodes differently"
        label = f"train {name}.txt {len(text.encode()) / 1e6:.2f} MB to {vocab_size} pieces ({result.stop_reason})"
        rows.append((label, t_ours, t_sp, "<= 3.0"))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller texts, one run each")
    parser.add_argument("--repeat", type=int, default=0, help="runs per measurement (default 3, or 1 with --quick)")
    parser.add_argument("--only", choices=("train", "encode"), default=None, help="run only these rows")
    args = parser.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 3)
    size = 200_000 if args.quick else 1_000_000
    rows = [] if args.only == "train" else bench_encode(size, repeat)
    if args.only != "encode":
        rows += bench_train(250_000 if args.quick else 1_000_000, 1024 if args.quick else 4096, repeat)
    print("| task | ours (s) | sentencepiece (s) | ratio | target |")
    print("|---|---:|---:|---:|---|")
    for task, ours, theirs, target in rows:
        ratio = ours / theirs if theirs else float("inf")
        ok = "met" if ratio <= float(target.split()[-1]) else "missed"
        print(f"| {task} | {ours:.3f} | {theirs:.3f} | {ratio:.2f} | {target} ({ok}) |")
    print(f"\nCPU seconds, best of {repeat}; ratio = ours / sentencepiece (lower is better).")


if __name__ == "__main__":
    main()
