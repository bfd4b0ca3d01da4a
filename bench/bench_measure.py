"""Measuring a corpus (issue 36): `tokenplay measure` on 100 MB of mixed text, beside tiktoken alone.

The corpus is built here, at run time, from the five real-text corpora (``../shared/corpora``: English, Spanish,
Japanese and Chinese technical prose, C code): each file is cut into documents at blank lines (paragraphs gathered
into documents of about 1 to 6 KB), and those real documents are repeated in a shuffled order (fixed seed) until
the corpus holds ``--mb`` MB, written as four ``.jsonl`` files (field ``text``, and ``lang``) in a temporary folder
that is deleted afterwards. Nothing is committed.

Rows, each the best of ``--repeat`` runs, the runs of each row alternated with the others':

- **peer**: tiktoken's ``encode_ordinary_batch(texts, num_threads=1)`` with cl100k_base over the same documents
  (in memory, in batches of 1,000 documents; reading the files is not counted for it);
- **1 worker**: ``tokenplay measure DIR --tokenizers cl100k_base`` (every figure: words, vocabulary, Rényi...), the
  whole command's wall time (start-up, reading and parsing the files included; Python's bytecode cache on, as on
  any installed machine, after one untimed warm-up command of each kind); target >= 0.9x the peer;
- **--workers 2**: target >= 1.7x one worker; **--dask local:2** (starting the cluster included): >= 1.5x;
- **peak memory** of one worker (the one-worker command's maximum resident set), on the corpus, on a quarter of
  it, and on three documents of the largest size measured (`.txt` files of 7.9 MB each): under 400 MB whatever the
  size.

Parallel rows need free cores: the run first checks how much CPU two busy processes of this session get together,
beside one (``headroom``: 2.0 on an idle two-core machine). On a shared machine Linux puts a session's processes in
one scheduling group (autogroup), which gets its share of the cores however many processes it runs: a headroom
near 1 means no parallel row can be met there, and says so.

Then MB/s of every shipped tokenizer alone, one worker, on ``--per-tokenizer-mb`` MB of the same mix.

    python bench/bench_measure.py [--mb 100] [--repeat 2] [--per-tokenizer-mb 4] [--tokenizers all|a,b] [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # helpers shared with the tests

from helpers import realtext  # noqa: E402

from app.engines import registry  # noqa: E402

FILES = 4
BATCH = 1000
TARGETS = {"1 worker": 0.9, "--workers 2": 1.7, "--dask local:2": 1.5}
MEMORY_TARGET_MB = 400


def real_documents(seed: int = 0) -> list[tuple[str, str]]:
    """The five corpora as documents: paragraphs (split at blank lines) gathered into documents of 1 to 6 KB."""
    rng = random.Random(seed)
    out = []
    for name in realtext.NAMES:
        paragraphs = [p for p in realtext.read(name).split("\n\n") if p.strip()]
        doc, size, want = [], 0, rng.randint(1000, 6000)
        for p in paragraphs:
            doc.append(p)
            size += len(p.encode("utf-8"))
            if size >= want:
                out.append((name, "\n\n".join(doc)))
                doc, size, want = [], 0, rng.randint(1000, 6000)
        if doc:
            out.append((name, "\n\n".join(doc)))
    return out


def build_corpus(folder: Path, mb: float, seed: int = 0) -> tuple[int, int, int]:
    """Write ``mb`` MB of the real documents, repeated and shuffled, as :data:`FILES` .jsonl files; returns
    (documents written, distinct documents, bytes of text)."""
    docs = real_documents(seed)
    rng = random.Random(seed)
    target = int(mb * 1e6)
    lines, written, text_bytes = [], 0, 0
    order: list[int] = []
    while text_bytes < target:
        if not order:
            order = list(range(len(docs)))
            rng.shuffle(order)
        lang, text = docs[order.pop()]
        lines.append(orjson.dumps({"text": text, "lang": lang}) + b"\n")
        text_bytes += len(text.encode("utf-8"))
        written += 1
    folder.mkdir(parents=True, exist_ok=True)
    per = (len(lines) + FILES - 1) // FILES
    for k in range(FILES):
        (folder / f"mixed-{k}.jsonl").write_bytes(b"".join(lines[k * per : (k + 1) * per]))
    return written, len(docs), text_bytes


def texts_of(folder: Path) -> list[str]:
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        with path.open("rb") as f:
            out.extend(orjson.loads(line)["text"] for line in f)
    return out


def peer_seconds(texts: list[str]) -> float:
    """tiktoken alone: encode_ordinary_batch with one thread, batch after batch (the ids dropped as we go)."""
    encoding = registry.get("cl100k_base").encoding
    start = time.perf_counter()
    for k in range(0, len(texts), BATCH):
        encoding.encode_ordinary_batch(texts[k : k + BATCH], num_threads=1)
    return time.perf_counter() - start


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def headroom(seconds: float = 2.0) -> float:
    """CPU seconds two busy processes get together over what one gets alone, in the same time (2.0: two free cores)."""
    import multiprocessing

    got = []
    for n in (1, 2):
        before = os.times()
        procs = [multiprocessing.Process(target=_spin, args=(seconds,)) for _ in range(n)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        after = os.times()
        got.append(after.children_user + after.children_system - before.children_user - before.children_system)
    return got[1] / got[0] if got[0] else 0.0


def big_documents(folder: Path, count: int = 3, size: int = 7_900_000) -> None:
    """``count`` .txt files of ``size`` bytes of the mix each (just under the 8 MB document limit)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = "\n\n".join(t for _, t in real_documents(3))
    data = text.encode("utf-8")
    for k in range(count):
        piece = (data * (size // len(data) + 1))[k * 1000 : k * 1000 + size].decode("utf-8", "ignore")
        (folder / f"big-{k}.txt").write_text(piece, encoding="utf-8")


#: The commands' environment: Python's bytecode cache on, as on any machine the app is installed on (a shell that
#: sets PYTHONDONTWRITEBYTECODE would have every command compile the app's modules again, a serial second of
#: start-up that no worker can share).
CLI_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_cli(args: list[str]) -> tuple[float, float]:
    """(wall seconds, peak resident MB) of one `tokenplay measure` command (its own process, waited for with wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "measure", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=CLI_ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"tokenplay measure {' '.join(args)} failed ({proc.returncode}): {err[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of the mixed corpus (MB of text)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each row (best shown)")
    parser.add_argument("--per-tokenizer-mb", type=float, default=4.0, help="MB of the mix for each tokenizer's MB/s")
    parser.add_argument("--tokenizers", default="all", help="for MB/s: comma-separated names, or all (every shipped)")
    parser.add_argument("--quick", action="store_true", help="10 MB, one run each, 1 MB per tokenizer (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.mb, args.repeat, args.per_tokenizer_mb = 10.0, 1, 1.0
    if not realtext.available():
        print(f"the real-text corpora are not in {realtext.CORPORA_DIR}; set TOKENPLAY_CORPORA")
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="tokenplay-bench-measure-"))
    try:
        return _run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(args, tmp: Path) -> int:
    full, quarter, small, big = tmp / "full", tmp / "quarter", tmp / "small", tmp / "big"
    written, distinct, size = build_corpus(full, args.mb)
    build_corpus(quarter, args.mb / 4, seed=1)
    build_corpus(small, args.per_tokenizer_mb, seed=2)
    big_documents(big)
    print(f"Corpus: {written:,} documents ({size / 1e6:.1f} MB of text), {distinct:,} distinct real documents from "
          f"the five corpora repeated in a shuffled order, in {FILES} .jsonl files; built for this run and deleted.\n")

    texts = texts_of(full)
    for warm in (["--workers", "2"], ["--dask", "local:2"]):  # not timed: the bytecode cache written, files read once
        run_cli([str(small), "--tokenizers", "cl100k_base", *warm])
    rows = {"peer": [], "1 worker": [], "--workers 2": [], "--dask local:2": []}
    memory: dict[str, float] = {}
    common = ["--tokenizers", "cl100k_base"]
    for _ in range(args.repeat):
        rows["peer"].append(peer_seconds(texts))
        seconds, mb = run_cli([str(full), *common])
        rows["1 worker"].append(seconds)
        memory["full"] = max(memory.get("full", 0), mb)
        rows["--workers 2"].append(run_cli([str(full), *common, "--workers", "2"])[0])
        rows["--dask local:2"].append(run_cli([str(full), *common, "--dask", "local:2"])[0])
    del texts
    memory["quarter"] = run_cli([str(quarter), *common])[1]
    memory["big"] = run_cli([str(big), *common])[1]
    room = headroom()

    best = {k: min(v) for k, v in rows.items()}
    mbps = {k: size / 1e6 / s for k, s in best.items()}
    print(f"Parallel headroom of this session: two busy processes got {room:.2f}x the CPU of one "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs).\n")
    print("| run (cl100k_base) | seconds | MB/s | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    print(f"| peer: tiktoken encode_ordinary_batch, 1 thread | {best['peer']:.2f} | {mbps['peer']:.2f} | | | |")
    against = {"1 worker": "peer", "--workers 2": "1 worker", "--dask local:2": "1 worker"}
    met_all = True
    for name, base in against.items():
        ratio = best[base] / best[name]
        met = ratio >= TARGETS[name]
        met_all &= met
        verdict = "yes" if met else "no" if name == "1 worker" or room >= 1.8 else f"no (headroom {room:.2f})"
        print(f"| {name} | {best[name]:.2f} | {mbps[name]:.2f} | {ratio:.2f}x {base} | >= {TARGETS[name]}x | "
              f"{verdict} |")
    print()
    print("| peak memory of one worker | MB | target | met |")
    print("|---|---|---|---|")
    for label, key in ((f"{args.mb / 4:g} MB corpus", "quarter"), (f"{args.mb:g} MB corpus", "full"),
                       ("three 7.9 MB documents", "big")):
        met = memory[key] < MEMORY_TARGET_MB
        met_all &= met
        print(f"| {label} | {memory[key]:.0f} | < {MEMORY_TARGET_MB} | {'yes' if met else 'no'} |")
    print()

    names = [s.name for s in registry.specs()] if args.tokenizers == "all" else args.tokenizers.split(",")
    _per_tokenizer(small, names)
    return 0 if met_all else 1


def _per_tokenizer(folder: Path, names: list[str]) -> None:
    from app.features.measure import measure, registry_ref

    print(f"| tokenizer (one worker, {_mb(folder):.1f} MB of the mix, every figure) | MB/s | tokens | bytes/token |")
    print("|---|---|---|---|")
    for name in names:
        ref = registry_ref(name)
        ref.build()  # loading the tokenizer is not measuring
        start = time.perf_counter()
        report = measure([str(folder)], [ref])
        seconds = time.perf_counter() - start
        f = report.tokenizers[ref.name]
        print(f"| {name} | {f['bytes'] / 1e6 / seconds:.2f} | {f['tokens']:,} | {f['bytes_per_token']:.2f} |", flush=True)
    print()


def _mb(folder: Path) -> float:
    return sum(len(orjson.loads(line)["text"].encode("utf-8")) for p in folder.glob("*.jsonl")
               for line in p.open("rb")) / 1e6


if __name__ == "__main__":
    sys.exit(main())
