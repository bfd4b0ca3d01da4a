"""Turn one ``make bench`` run's output into README.md's benchmark table, so that every row comes from that run.

    python bench/run_all.py > bench.md && python bench/readme_table.py bench.md

It reads the tables the scripts printed (by their headers and row labels) and prints one markdown table: each
target of issues 14-17 with our figure, the peer's from the same run, the ratio and whether it was met. It measures
nothing itself; a row whose script did not run (or changed its output) is left out and named on stderr.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def tables(text: str) -> dict[str, list[dict[str, str]]]:
    """Every markdown table of the run, keyed by the ``## `` section it is in (rows as header -> cell; a header
    name that repeats gets " 2", as the hostile table's second "again")."""
    out: dict[str, list[dict[str, str]]] = {}
    section, header = "", None
    for line in text.splitlines():
        if line.startswith("## "):
            section, header = line[3:].strip(), None
        elif line.startswith("|") and header is None:
            header = []
            for c in (c.strip() for c in line.strip("|").split("|")):  # a repeated name gets " 2" ("again 2")
                header.append(c if c not in header else f"{c} 2")
        elif line.startswith("|---") or line.startswith("|:"):
            continue
        elif line.startswith("|") and header:
            cells = [c.strip() for c in line.strip("|").split("|")]
            out.setdefault(section, []).append(dict(zip(header, cells)))
        else:
            header = None
    return out


def section(all_tables: dict, words: str) -> list[dict[str, str]]:
    for name, rows in all_tables.items():
        if words in name:
            return rows
    return []


def main(argv: list[str]) -> int:
    text = Path(argv[1]).read_text(encoding="utf-8")
    t = tables(text)
    rows: list[str] = []
    missing: list[str] = []

    def add(what: str, ours: str, peer: str, ratio: str, target: str) -> None:
        rows.append(f"| {what} | {ours} | {peer} | {ratio} | {target} |")

    bpe = section(t, "Byte-level BPE")
    for r in bpe:
        task = r.get("task", "")
        m = re.match(r"train (\w+)\.txt .* -> 4096, (gpt4|none), step records", task)
        if m:
            name, split = m.groups()
            peer = "HF `tokenizers` BpeTrainer, 1 thread" + (", no split, a line a sequence" if split == "none" else "")
            add(f"BPE training, 1 MB {name}.txt → 4,096, {split} split, step records + trace JSON", f"{r['ours (s)']} s",
                f"{peer}: {r['peer (s)']} s", r["ratio"], r["target"])
    for r in bpe:
        m = re.match(r"encode (\w+)\.txt ([\d.]+) MB, cl100k_base ranks, fresh", r.get("task", ""))
        if m:
            add(f"our BPE encoder, fresh, cl100k ranks, {m[1]}.txt ({m[2]} MB), ids equal", f"{r['ours (s)']} s",
                f"tiktoken: {r['peer (s)']} s", r["ratio"], r["target"])
    for r in bpe:
        m = re.match(r"encode en/c/ja mix ([\d.]+) MB .*?, (\w+) ranks, fresh", r.get("task", ""))
        if m:
            add(f"our BPE encoder, fresh, {m[2]} ranks, held-out mix of en/c/ja ({m[1]} MB, 2-4 KB stretches), ids "
                "equal", f"{r['ours (s)']} s", f"tiktoken: {r['peer (s)']} s", r["ratio"], r["target"])
    sp = section(t, "SentencePiece engine")
    for r in sp:
        task = r.get("task", "")
        m = re.match(r"encode (\w+)\.txt ([\d.]+) MB, Mistral 7B", task)
        n = re.match(r"train (\w+)\.txt ([\d.]+) MB to ([\d,]+) pieces, (BPE|unigram), default options", task)
        h = re.match(r"encode Japanese manual with ASCII terms ([\d.]+) MB .*?, (Mistral 7B|Jurassic-2)", task)
        if h:
            target = "≤ 1.0 (at least its speed) " + _verdict(r) if h[2] == "Mistral 7B" else "reported"
            add(f"our SentencePiece engine, {h[2]}, fresh, held-out Japanese manual with ASCII terms ({h[1]} MB), ids "
                "equal", f"{r['ours (s)']} s", f"`sentencepiece`: {r['sentencepiece (s)']} s", r["ratio"], target)
        elif m:
            add(f"our SentencePiece engine, Mistral 7B, fresh, {m[1]}.txt, ids equal", f"{r['ours (s)']} s",
                f"`sentencepiece`: {r['sentencepiece (s)']} s", r["ratio"], "≤ 1.0 (at least its speed) " + _verdict(r))
        elif n:
            add(f"the lab trains {n[1]}.txt ({n[2]} MB) → {n[3]} pieces, sentencepiece's {n[4]}, default options, from "
                "the request to a run whose every step can be shown, same pieces", f"{r['ours (s)']} s",
                f"`sentencepiece` {n[4]} trainer, 1 thread: {r['sentencepiece (s)']} s", r["ratio"], r["target"])
    for r in section(t, "WordPiece and Unigram"):
        if r.get("task", "").startswith("train"):
            add(f"{r['task']}, en.txt (1 MB)", f"{r['ours (s)']} s", f"{r['peer']}: {r['peer (s)']} s", r["ratio"],
                r["target"] + (" (met)" if _ratio(r["ratio"]) <= 3 else " (missed)"))

    api = section(t, "Playground server time")
    hostile = [r for r in api if "fragment first" in r]
    if hostile:
        def worst(kind: str) -> tuple[float, dict]:
            cols = ("fragment first", "again") if kind == "fragment" else ("API first", "again 2")
            return max(((max(float(r[c]) for c in cols if c in r), r) for r in hostile), key=lambda p: p[0])

        frag, fr = worst("fragment")
        api_s, ar = worst("api")
        met = sum(r["targets"] == "met" for r in hostile)
        names = len({r["tokenizer"] for r in hostile})
        missed = sorted({r["tokenizer"] for r in hostile if r["targets"] != "met"})
        add(f"hostile inputs (1 MB of one character, 1 MB of en/ja without whitespace, 200,000 ZWJ emoji), "
            f"{names} tokenizers: worst playground fragment / worst `POST /api/tokenize`, CPU s",
            f"{frag:.2f} s ({fr['tokenizer']}, {fr['input']}) / {api_s:.2f} s ({ar['tokenizer']}, {ar['input']})",
            "—", "—", f"< 1 s / < 2.5 s: {met} of {len(hostile)} met" + (f"; missed: {', '.join(missed)}" if missed
                                                                        else ""))
    per_token = [r for r in api if "bytes / token" in r]
    if per_token:
        top = max(per_token, key=lambda r: float(r["bytes / token"]))
        add("playground fragment, HTML bytes per token (10 KB of en/ja, worst)", top["bytes / token"],
            "—", "—", "≤ 40 " + ("(met)" if float(top["bytes / token"]) <= 40 else "(missed)"))
    for r in api:
        if r.get("text") in ("10 KB", "1 MB") and r.get("answer") == "htmx fragment, typing":
            add(f"playground fragment while typing, {r['text']} of text, p50 / p95 server ms", f"{r['p50']} / {r['p95']}",
                f"tiktoken encode p50 {r['tiktoken encode p50']}", r["ratio"], "—")

    load = re.search(r"0 concurrent trainings.*?typists p95 < 100 ms: \*\*([\d.]+) ms\*\*.*?(\d+) errors", text, re.S)
    if load:
        add("a class: 50 typists, each its own 5 KB en + 5 KB ja, `--workers auto`, client on the same cores, p95",
            f"{load[1]} ms, {load[2]} errors", "—", "—", "< 100 ms, no errors " +
            ("(met)" if float(load[1]) < 100 and load[2] == "0" else "(missed)"))
    else:
        missing.append("load without trainings")
    load5 = re.search(r"5 concurrent trainings.*?typists p95 < 100 ms: \*\*([\d.]+) ms\*\*", text, re.S)
    if load5:
        add("same with 5 trainings running, p95", f"{load5[1]} ms", "—", "—", "reported")
    killed = re.search(r"stored runs lost: \*\*(\d+)\*\* of (\d+)", text)
    if killed:
        add("same, one worker SIGKILLed 8 s in", f"{killed[1]} of {killed[2]} stored runs lost", "—", "—",
            "no run lost " + ("(met)" if killed[1] == "0" else "(missed)"))
    classes = {"view" in chunk.split("### Targets")[0]: chunk for chunk in text.split("## Load: a class of")[1:]
               if "following the teacher" in chunk.splitlines()[0]}
    for fetch, what in ((False, "a class following the teacher: {n} followers (event streams), {s} steps, `--workers auto`, "
                                "client on the same cores, delivery p95"),
                        (True, "same, each phone also fetching its new view per step: delivery p95 / event to new view p95")):
        chunk = classes.get(fetch, "")
        size = re.match(r" (\d+) following the teacher through (\d+) steps", chunk)
        what = what.format(n=size[1], s=size[2]) if size else what
        m = re.search(r"every step in order \| (\d+) of (\d+) \|.*?delivery p50 / p95 / p99 / max ms \| [\d.]+ / ([\d.]+) /",
                      chunk, re.S)
        view = re.search(r"event to new view p50 / p95 / max ms \| [\d.]+ / ([\d.]+)", chunk)
        if m:
            value = f"{m[3]} ms" + (f" / {view[1]} ms" if fetch and view else "")
            ok = float(m[3]) < 300 and m[1] == m[2]
            add(what, f"{value}, {m[1]} of {m[2]} got every step in order", "—", "—",
                "every step in order, p95 < 300 ms " + ("(met)" if ok else "(missed)"))
        else:
            missing.append("class load" + (" with views" if fetch else ""))
    worst_explain = re.search(r"worst token of any 10 KB text: ([\d.]+) ms", text)
    if worst_explain:
        add("explain any token of 10 KB (en/ja/c, 11 models with BERT and Jurassic-2), worst server time",
            f"{worst_explain[1]} ms", "—", "—", "< 50 ms " + ("(met)" if float(worst_explain[1]) < 50 else "(missed)"))
    for r in section(t, "Today's models"):
        if r.get("entry") == "one process" or r.get("tokenizers"):
            add(f"a worker with every tokenizer loaded ({r['tokenizers']})", f"{r['RSS (MB)']} MB", "—", "—",
                r["target"])
    firsts = [r for r in section(t, "Today's models") if "first use (s)" in r]
    if firsts:
        slow = max(firsts, key=lambda r: float(r["first use (s)"]))
        add("first use of a model (load on demand), slowest", f"{slow['first use (s)']} s ({slow['entry']})", "—", "—",
            "< 5 s " + ("(met)" if float(slow["first use (s)"]) < 5 else "(missed)"))
    shared = next((chunk for chunk in text.split("\n## ")[1:] if chunk.startswith("Shared tables")), "")
    if shared:
        first = re.search(r"slowest first request: ours ([\d.]+) s, peer ([\d.]+) s \(answered: (\d+) of (\d+)\), "
                          r"ratio ([\d.]+)", shared)
        ready = re.search(r"\| tokenplay serve \(loads once, forks\) \| ([\d.]+) \|", shared)
        if first:
            add("first use of every model on a fresh `tokenplay serve` (every tokenizer loaded before the workers "
                "fork), slowest first request" + (f"; the server answers {ready[1]} s after it starts" if ready else ""),
                f"{first[1]} s", f"uvicorn --workers, each worker loading: {first[2]} s ({first[3]} of {first[4]} "
                "answered)", f"{float(first[5]):.2f}x", "< 1 s " + ("(met)" if float(first[1]) < 1 else "(missed)"))
        lazy = re.search(r"slowest first use from a table, fresh process: ([\d.]+) s \(([^)]+)\)", shared)
        if lazy:
            add("first use of our engines in a fresh process, from their table files (`--no-preload`, uploads), "
                "slowest", f"{lazy[1]} s ({lazy[2]})", "—", "—", "< 1 s " + ("(met)" if float(lazy[1]) < 1 else "(missed)"))
        mem = [r for r in section(t, "Shared tables") if "PSS of the workers (MB)" in r]
        ours_mem = next((r for r in mem if r.get("", "").startswith("tokenplay serve") or
                         next(iter(r.values()), "").startswith("tokenplay serve")), None)
        peer_mem = next((r for r in mem if next(iter(r.values()), "").startswith("uvicorn")), None)
        if ours_mem and peer_mem:
            head = next(iter(ours_mem))
            add(f"memory (PSS) of the server, {head.split('|')[0].strip()}: total / largest worker",
                f"{ours_mem['total (MB)']} MB / {ours_mem['largest worker (MB)']} MB",
                f"uvicorn --workers: {peer_mem['total (MB)']} MB / {peer_mem['largest worker (MB)']} MB",
                f"{float(ours_mem['total (MB)']) / float(peer_mem['total (MB)']):.2f}x", ours_mem["target"])
        bursts = [r for r in section(t, "Shared tables") if "workers restarted" in r]
        ours_b = next((r for r in bursts if next(iter(r.values()), "").startswith("tokenplay serve")), None)
        peer_b = next((r for r in bursts if next(iter(r.values()), "").startswith("uvicorn")), None)
        if ours_b and peer_b:
            add(f"{next(iter(ours_b))}: answered, workers restarted",
                f"{ours_b['answered']}, {ours_b['workers restarted']} restarted",
                f"uvicorn --workers: {peer_b['answered']}, {peer_b['workers restarted']} restarted", "—", ours_b["target"])
        hostile_rows = [r for r in section(t, "Shared tables") if "fragment first" in r]
        if hostile_rows:
            worst = max(hostile_rows, key=lambda r: max(float(r["fragment first"]), float(r["again"])))
            names = len({r["tokenizer"] for r in hostile_rows})
            met = sum(r["targets"] == "met" for r in hostile_rows)
            add(f"hostile inputs once loaded, {names} tokenizers (an uploaded one included), from the tables: worst "
                "playground fragment, CPU s", f"{max(float(worst['fragment first']), float(worst['again'])):.2f} s "
                f"({worst['tokenizer']}, {worst['input']})", "—", "—", f"< 1 s: {met} of {len(hostile_rows)} met")
    else:
        missing.append("shared tables")
    typing = section(t, "Compare while typing")
    ours = next((r for r in typing if r.get("panes draw", "").endswith("(ours)")), None)
    peer = next((r for r in typing if r.get("panes draw", "").endswith("(peer)")), None)
    if ours and peer:
        settled = "Chromium settled ms p90"
        add("compare while typing, 10 tokenizers on 7,500 chars of en+ja: fragment / server p90 / Chromium "
            "request-to-settled p90",
            f"{ours['fragment KB']} KB / {ours['server ms p90']} ms / {ours[settled]} ms",
            f"every pane every token: {peer['fragment KB']} KB / {peer['server ms p90']} ms / {peer[settled]} ms",
            f"{float(ours[settled]) / float(peer[settled]):.2f}x", ours["target"])
    else:
        missing.append("compare while typing")
    for r in section(t, "BPE lab"):
        if r.get("request (server time, in-process)", "").startswith("step block (htmx)"):
            add("lab: jump to any step, 1 MB corpus, 4,096 merges, p95 server time", f"{r['p95 ms']} ms", "—", "—",
                r["target"])

    for r in section(t, "The token tax of every language"):
        if "first (s)" in r:
            peer = "—" if r["peer"] == "—" else f"{r['peer']}, one thread, the same texts: {r['peer (s)']} s"
            add(f"token tax: {r['tokenizer']} over the 532 UDHR translations, first / again", f"{r['first (s)']} s / "
                f"{r['again (ms)']} ms", peer, r["first / peer"], f"≤ 2 s / ≤ 0.2 s ({r['targets (2 s / 0.2 s)']})")

    measure_rows = section(t, "Measuring a corpus")
    runs = {r.get("run (cl100k_base)", ""): r for r in measure_rows if "run (cl100k_base)" in r}
    peer = runs.get("peer: tiktoken encode_ordinary_batch, 1 thread")
    if peer:
        for name, base in (("1 worker", "tiktoken encode_ordinary_batch, 1 thread"), ("--workers 2", "1 worker"),
                           ("--dask local:2", "1 worker")):
            r = runs.get(name)
            if r:
                base_mbps = peer["MB/s"] if name == "1 worker" else runs["1 worker"]["MB/s"]
                met = "met" if r["met"] == "yes" else f"missed{r['met'][2:]}"
                add(f"measure the mixed corpus (100 MB in make bench) with cl100k_base, every figure: {name} (MB/s)", r["MB/s"],
                    f"{base}: {base_mbps}", r["ratio"].split(" ")[0], f"{r['target']} ({met})")
        for r in measure_rows:
            if "peak memory of one worker" in r:
                add(f"measure, peak memory of one worker, {r['peak memory of one worker']}", f"{r['MB']} MB", "—", "—",
                    f"{r['target']} MB ({'met' if r['met'] == 'yes' else 'missed'})")
    else:
        missing.append("measuring a corpus")

    print("| what | ours | peer (same run) | ratio | target |")
    print("|---|---:|---|---:|---|")
    print("\n".join(rows))
    for name in missing:
        print(f"not in this run: {name}", file=sys.stderr)
    return 0


def _ratio(cell: str) -> float:
    return float(cell.rstrip("x"))


def _verdict(row: dict) -> str:
    return "(met)" if "(met)" in row.get("target", "") else "(missed)"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
