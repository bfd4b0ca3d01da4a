"""Run every benchmark in turn and print their tables (what README.md's benchmark section shows).

    python bench/run_all.py [--quick] [--only bench_compare.py bench_languages.py ...]

Each script runs in its own process, one after the other, so none competes with another for the two cores.
Every table compares us with the peer measured in the same run; nothing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    (
        "Playground server time, HTML per token, hostile inputs (issues 2, 16)",
        "bench_api.py",
        [],
        ["--repeat", "5", "--hostile-tokenizers", "cl100k_base,mistral-7b"],
    ),
    ("Byte-level BPE: training and encoding, the held-out mix of en/c/ja (issues 3, 23)", "bench_bpe.py", [],
     ["--quick"]),
    ("SentencePiece engine, the held-out Japanese manual, and sentencepiece's trainers through the lab (issues 4, 23, "
     "33)", "bench_sentencepiece.py", [], ["--quick"]),
    ("BPE lab: jump to any step (issue 5)", "bench_lab.py", [], ["--chars", "200000", "--merges", "1024"]),
    ("Lab pre-tokenizers and superwords: a superword run, a custom pattern's preview, curves (issue 34)",
     "bench_lab_superwords.py", [], ["--quick", "--repeat", "1"]),
    ("WordPiece and Unigram: training and encoding beside tokenizers and sentencepiece (issue 17)",
     "bench_algorithms.py", [], ["--quick"]),
    ("Today's models: first use, memory, 1 MB encoding, reliability (issue 14)", "bench_models.py", [], ["--quick"]),
    ("Shared tables, a server that loads once: first use, memory of the workers, a burst of first uses, hostile "
     "inputs per tokenizer (issue 23)", "bench_tables.py", [], ["--quick"]),
    ("Chat page: one pane per chosen tokenizer, beside its reference library (issue 14)", "bench_chat.py", [],
     ["--repeat", "3", "--tokenizers", "cl100k_base,o200k_harmony,qwen3"]),
    ("Explain a token: server time for any token of 10 KB (issue 15)", "bench_explain.py", [], ["--quick"]),
    ("Compare while typing: 10 tokenizers on 7,500 characters, fragment and Chromium (issue 21)", "bench_compare.py",
     [], ["--requests", "5", "--keystrokes", "5"]),
    ("The token tax of every language: one tokenizer over 532 UDHR translations, first and again (issue 26)",
     "bench_languages.py", [], ["--repeat", "1", "--tokenizers", "gpt2,o200k_base,mistral-7b"]),
    ("First visits: every page of a freshly started server, once, under 1 s (issue 37)", "bench_first_visits.py", [],
     []),
    ("Know a vocabulary: a page of a 262k vocabulary, the health report of o200k_base cold and again, a ladder of 10 "
     "sizes on 10 KB, the pages' server time (issue 35)", "bench_vocab.py", ["--pages"], ["--quick", "--pages"]),
    ("Measuring a corpus: 100 MB of mixed text with cl100k_base beside tiktoken, workers, Dask, memory, MB/s of every "
     "shipped tokenizer (issue 36)", "bench_measure.py", [], ["--quick"]),
    (
        "Load: a class of 50 typists, each its own real text, --workers auto (issue 16)",
        "load.py",
        ["--trainings", "0"],
        ["--duration", "8", "--typists", "10", "--trainings", "0"],
    ),
    (
        "Load: 50 typists and 5 trainings on loopback (issue 7)",
        "load.py",
        [],
        ["--duration", "8", "--typists", "10"],
    ),
    (
        "Load again, with a worker SIGKILLed 8 s in: no stored run lost (issue 7)",
        "load.py",
        ["--kill-worker-at", "8"],
        ["--duration", "8", "--typists", "10", "--kill-worker-at", "4"],
    ),
    (
        "Load: a class of 100 following the teacher, every step in order (issue 27)",
        "load_class.py",
        [],
        ["--followers", "20", "--steps", "5"],
    ),
    (
        "Load: the same class, each phone also fetching its new view (issue 27)",
        "load_class.py",
        ["--fetch-view"],
        ["--followers", "20", "--steps", "5", "--fetch-view"],
    ),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs (a smoke run, not the README numbers)")
    parser.add_argument("--only", nargs="+", metavar="SCRIPT", help="run only these scripts (every section of each)")
    args = parser.parse_args()
    unknown = set(args.only or ()) - {script for _, script, _, _ in SCRIPTS}
    if unknown:
        parser.error(f"no such benchmark: {', '.join(sorted(unknown))}")
    print(f"# Tokenplay benchmarks — {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, "
          f"{platform.machine()}\n")
    failed = 0
    for title, script, full, quick in SCRIPTS:
        if args.only and script not in args.only:
            continue
        print(f"## {title}\n\n`python bench/{script} {' '.join(quick if args.quick else full)}`\n", flush=True)
        proc = subprocess.run([sys.executable, str(HERE / script), *(quick if args.quick else full)])
        failed += proc.returncode != 0
        print(flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
