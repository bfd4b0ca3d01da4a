"""Benchmark today's models (issue 14): Llama 3, Qwen3, DeepSeek V3, Gemma 3 and o200k_harmony, in both engines.

    .venv/bin/python bench/bench_models.py [--quick] [--repeat N]

Prints four markdown tables:

1. first use per registry entry, each in a fresh process: seconds from nothing loaded to the first answer (load
   the hash-checked file, build the tokenizer, encode one sentence), and the memory (RSS) that adds to the
   process. Target: under 5 s.
2. encoding the real-text corpora en.txt and ja.txt (about 1 MB each, ``tests/helpers/realtext.py`` finds them): CPU
   seconds of the reference library called directly (Hugging Face ``tokenizers`` / tiktoken), of the entry the
   library serves, and of our engine (``native-*``) cold (first encode) and warm (best of ``--repeat``), and the
   ratio of our warm time to the reference. Without the corpora this table is skipped, and the output says so.
3. the reliability inputs: 1 MB of one character, 1 MB without whitespace (en.txt with its whitespace removed, or
   generated letters without the corpora), 200,000 ZWJ emoji sequences: CPU seconds per entry, each in a fresh
   process with a 120 s limit.
4. a worker with every registered tokenizer loaded (each has encoded a sentence): its RSS. Target: under 1 GB.

Times are CPU seconds (``time.process_time``). Nothing here is a test; numbers are reported as they come out.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # realtext: where the real-text corpora are

from helpers import realtext  # noqa: E402

MODELS = ["llama-3", "qwen3", "deepseek-v3", "gemma-3", "o200k_harmony"]
SENTENCE = "Tokenizers cut text into tokens: 東京スカイツリー, 🙂, and code like f(x) = 42."
RELIABILITY = ("1 MB of one character", "1 MB without whitespace", "200,000 ZWJ emoji")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


# -- child processes: one measurement each, printed as JSON -----------------------------------------------------------
def child_first_use(name: str) -> dict:
    from app.engines import registry

    registry.names()  # the shipped entries registered, nothing built
    before = rss_mb()
    start = time.perf_counter()
    registry.get(name).encode(SENTENCE)
    return {"seconds": time.perf_counter() - start, "rss_mb": rss_mb() - before}


def reliability_text(which: str) -> str:
    if which == RELIABILITY[0]:
        return "a" * 1_000_000
    if which == RELIABILITY[1]:
        if realtext.available():
            return (re.sub(r"\s+", "", realtext.read("en")) * 2)[:1_000_000]
        return "".join(chr(97 + (i * 7919) % 26) for i in range(1_000_000))
    return "\U0001f469\u200d\U0001f4bb" * 200_000


def child_reliability(name: str, which: str) -> dict:
    from app.engines import registry

    tok = registry.get(name)
    text = reliability_text(which)
    start = time.process_time()
    tok.encode(text)
    return {"seconds": time.process_time() - start}


def child_everything() -> dict:
    from app.engines import registry

    before = rss_mb()
    for name in registry.names():
        registry.get(name).encode(SENTENCE)
    return {"names": len(registry.names()), "rss_mb": rss_mb(), "added_mb": rss_mb() - before}


def run_child(*args: str, timeout: float = 300) -> dict | None:
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- tables ------------------------------------------------------------------------------------------------------------
def entries() -> list[str]:
    return [n for m in MODELS for n in (m, f"native-{m}")]


def table_first_use() -> None:
    print("| entry | first use (s) | RSS added (MB) |\n|---|---:|---:|")
    for name in entries():
        got = run_child("first-use", name)
        if got is None:
            print(f"| {name} | failed | |")
        else:
            print(f"| {name} | {got['seconds']:.2f} | {got['rss_mb']:.0f} |")
    print()


def reference(model: str):
    """The reference library's own encode function for a model (special-token text as plain text)."""
    from app.engines import datafiles
    from app.engines.huggingface.npm_models import NPM_MODELS

    if model in NPM_MODELS:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(datafiles.data_path(NPM_MODELS[model].tokenizer_file)))
        tok.encode_special_tokens = True
        return lambda text: tok.encode(text, add_special_tokens=False).ids
    from helpers.oracles import tiktoken_reference

    return tiktoken_reference(model).encode_ordinary


def best(fn, text: str, repeat: int) -> tuple[float, float]:
    """(first, best) CPU seconds of ``fn(text)`` over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn(text)
        times.append(time.process_time() - start)
    return times[0], min(times)


def table_encode(repeat: int, quick: bool) -> None:
    if not realtext.available():
        print(f"(skipped: the real-text corpora are not in {realtext.CORPORA_DIR}; set TOKENPLAY_CORPORA)\n")
        return
    from app.engines import registry

    print("| model | text | reference (s) | library entry (s) | ours cold (s) | ours warm (s) | ours / reference |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for model in MODELS:
        ref = reference(model)
        served, ours = registry.get(model), registry.get(f"native-{model}")
        for corpus in ("en", "ja"):
            text = realtext.read(corpus)[: 200_000 if quick else None]
            _, ref_s = best(ref, text, repeat)
            _, served_s = best(served.encode, text, repeat)
            cold, warm = best(ours.encode, text, max(repeat, 2))
            print(f"| {model} | {corpus}.txt ({len(text.encode()) / 1e6:.2f} MB) | {ref_s:.2f} | {served_s:.2f} | "
                  f"{cold:.2f} | {warm:.2f} | {warm / ref_s:.2f} |")
    print()


def table_reliability() -> None:
    print("| entry | " + " | ".join(RELIABILITY) + " |\n|---|" + "---:|" * len(RELIABILITY))
    for name in entries():
        cells = []
        for which in RELIABILITY:
            got = run_child("reliability", name, which, timeout=120)
            cells.append("over 120" if got is None else f"{got['seconds']:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


def table_everything() -> None:
    got = run_child("everything")
    print("| worker with every tokenizer loaded | tokenizers | RSS (MB) | added by loading them (MB) | target |")
    print("|---|---:|---:|---:|---|")
    if got is None:
        print("| failed | | | | |\n")
        return
    print(f"| one process | {got['names']} | {got['rss_mb']:.0f} | {got['added_mb']:.0f} | under 1,024 MB |\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 kB of each corpus, no reliability table")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        handler = {"first-use": child_first_use, "reliability": child_reliability, "everything": child_everything}
        print(json.dumps(handler[kind](*rest)))
        return 0
    table_first_use()
    table_encode(1 if args.quick else args.repeat, args.quick)
    if not args.quick:
        table_reliability()
    table_everything()
    return 0


if __name__ == "__main__":
    sys.exit(main())
