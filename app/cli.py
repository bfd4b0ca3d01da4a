"""The ``tokenplay`` console script: serve the app, encode/decode from the shell, list tokenizers.

``tokenplay encode`` prints exactly the JSON that ``POST /api/tokenize`` answers, ``tokenplay explain`` the JSON of
``POST /api/explain`` (or, with ``--tree``, as text: the merge tree and steps, a WordPiece walk or a unigram
lattice). A tokenizer is a registered name
or alias, or a tokenizer file (``--file PATH``, or a path given to ``-t``): a ``tokenizer.json``, a ``.tiktoken``
file (``--pattern``, ``--special``), a SentencePiece ``.model`` or a model saved by ``tokenplay train --out``.
``tokenplay serve --tokenizer PATH`` (repeatable) registers files for every user of the server; ``tokenplay serve``
loads every tokenizer before forking its workers (:mod:`app.web.server`), and ``tokenplay tables build`` builds the
table files of the shipped tokenizers ahead (:mod:`app.engines.registry.builder`).
``tokenplay languages -t gpt2 -t qwen3 [--lang jpn ...] [--csv]`` prints the token tax of every language (the
numbers of ``/languages``); ``tokenplay count -t NAME TEXT`` prints just the number of tokens. ``tokenplay serve
--class`` serves a class in the room: every network interface, and the students' join link printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from app.engines import registry
from app.engines.base import Tokenizer
from app.engines.errors import TokenplayError, UnknownTokenizerError
from app.engines.training import MAX_VOCAB_SIZE

#: ``tiktoken`` (the default) means the reference library of the model: tiktoken or Hugging Face tokenizers.
ENGINES = ("tiktoken", "native")


def _tokenizer_name(name: str, engine: str) -> str:
    """``--engine native -t cl100k_base`` runs a model in our own engine (registered as native-NAME)."""
    canonical = registry.resolve(name)
    if engine == "native" and registry.spec(canonical).engine != "tokenplay":
        native = f"native-{canonical}"
        if native not in registry.names():
            raise TokenplayError(
                f"{name!r} has no native variant for --engine native "
                f"(try one of: {', '.join(n[7:] for n in registry.names() if n.startswith('native-'))})"
            )
        return native
    return canonical


def _tokenizer(args: argparse.Namespace) -> Tokenizer:
    """The tokenizer of ``encode``/``decode``: ``--file``, a registered name, or a path given to ``-t``."""
    from app.engines.registry.files import load_file

    path = args.file
    if path is None:
        try:
            return registry.get(_tokenizer_name(args.tokenizer, args.engine))
        except UnknownTokenizerError:
            if not os.path.isfile(args.tokenizer):
                raise
            path = args.tokenizer
    engine = "tokenplay" if args.engine == "native" else "huggingface"
    return load_file(path, engine=engine, pattern=args.pattern, special_tokens=args.special, name=path)


def worker_count(value: str) -> int:
    """``--workers``: a number, or ``auto`` for two processes per CPU this process may use.

    Two per CPU, because one Python process runs Python code on one core at a time (the GIL): with one per
    CPU the cores sit partly idle while a process waits, and a busy process queues its requests alone.
    """
    if value == "auto":
        try:
            cpus = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            cpus = os.cpu_count() or 1
        return 2 * cpus
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--workers takes a number or 'auto', not {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("--workers must be at least 1")
    return n


def serve_workers(args: argparse.Namespace) -> int:
    """The worker processes ``tokenplay serve`` starts: ``--workers``; else ``auto`` with ``--class``; else
    ``$TOKENPLAY_WORKERS`` (the Docker image sets ``auto``), or 1."""
    if args.workers is not None:
        return args.workers
    return worker_count("auto" if args.classroom else os.environ.get("TOKENPLAY_WORKERS", "1"))


def cmd_serve(args: argparse.Namespace) -> int:
    """Load every tokenizer here, then fork the workers (app/web/server.py): they share what was loaded.

    ``--class``: listen on every network interface (unless ``--host`` says otherwise), two workers per CPU (unless
    ``--workers`` says otherwise), and print the link students join at, with this machine's network address; the
    join links and QR codes the lab makes use that address too (``TOKENPLAY_PUBLIC_URL``, unless already set). The
    workers learn where the server listens (``TOKENPLAY_LISTEN_HOST``/``_PORT``): on a loopback address the share
    panel says that no phone can join, and how to fix it."""
    from app.web.server import check_port, serve

    host = args.host or ("0.0.0.0" if args.classroom else "127.0.0.1")
    workers = serve_workers(args)
    check_port(host, args.port)  # before the tokenizers load: said at once, in words
    if args.tokenizer:
        _share_tokenizer_files(args.tokenizer)
    if args.corpus_dir:
        from pathlib import Path

        if not Path(args.corpus_dir).is_dir():
            raise TokenplayError(f"--corpus-dir {args.corpus_dir!r} is not a folder")
        os.environ["TOKENPLAY_CORPUS_DIR"] = str(Path(args.corpus_dir).resolve())  # read by every worker's settings
    from app.settings import Settings

    def announce(port: int) -> None:
        os.environ["TOKENPLAY_LISTEN_HOST"], os.environ["TOKENPLAY_LISTEN_PORT"] = host, str(port)
        if args.classroom:
            lines = class_lines(host, port)
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()

    settings = Settings()
    return serve("app.main:app", host=host, port=args.port, workers=workers, log_level=args.log_level,
                 preload_tokenizers=args.preload, drain_seconds=settings.drain_seconds, announce=announce,
                 forwarded_allow_ips=settings.forwarded_allow_ips)


def class_lines(host: str, port: int) -> list[str]:
    """What ``tokenplay serve --class`` prints once it listens: where students join, where the teacher starts; and
    sets the address the lab's join links and QR codes use (the first network address), unless one is set."""
    from app.network import is_loopback, reachable_bases

    bases = reachable_bases(host, port)
    if not bases:
        reason = ("it listens on a loopback address" if is_loopback(host)
                  else "this machine has no network address (connect it to the class's Wi-Fi or cable)")
        return [f"Tokenplay serves at http://{host}:{port}, but no phone can join: {reason}.",
                "Listen on every network interface instead: tokenplay serve --class (or make class)."]
    os.environ.setdefault("TOKENPLAY_PUBLIC_URL", bases[0])
    lines = [
        f"Tokenplay serves the class on port {port}. Students join at (same Wi-Fi or network as this machine):",
        f"  {bases[0]}/follow",
        *(f"  or {base}/follow" for base in bases[1:]),
        f"Teacher: open {bases[0]}/lab, train a run, then \"Share with the class\" (its QR code uses this address).",
    ]
    return lines


def cmd_tables(args: argparse.Namespace) -> int:
    """Build (or check) the table files of the shipped tokenizers our engines run."""
    from app.engines.registry import builder, table_files

    if args.action == "list":
        for name in builder.stored_names():
            path = table_files.registered_path(name)
            print(f"{name}: {path}" + (f" ({path.stat().st_size / 2**20:.1f} MB)" if path.exists() else " (not built)"))
        return 0
    return builder.build_all(args.names or None, jobs=args.jobs)


def cmd_precompute(args: argparse.Namespace) -> int:
    """Compute ahead what pages would compute on their first visit (make install runs it): the UDHR corpus and the
    languages page's default counts, as files in var/precomputed (app/features/precomputed.py)."""
    from app.features import languages, precomputed, udhr

    for name in [udhr.precompute(), *languages.precompute()]:
        print(f"{precomputed.directory() / name}")
    return 0


def _share_tokenizer_files(paths: list[str]) -> None:
    """Check each file (a bad one stops the server before it starts: built into its table, which the server then
    maps), then register them here, before the workers are forked, and name them in the environment
    (app.engines.registry.files) for any process started otherwise."""
    from pathlib import Path

    from app.engines.registry.files import ENV, entry_name, load_file_stored, register_from_environment

    resolved = [str(Path(p).resolve()) for p in paths]
    taken = set(registry.names()) | set(registry.ALIASES)
    for path in resolved:
        name = entry_name(path)
        if name in taken or f"native-{name}" in taken or registry.alias_target(name) is not None:
            raise TokenplayError(f"tokenizer file {path} would be named {name!r}, which is already taken; rename it")
        taken.add(name)
        load_file_stored(path)
    os.environ[ENV] = json.dumps(resolved)
    register_from_environment()


def _read_text(args: argparse.Namespace) -> str:
    if args.text is not None:
        return args.text
    return sys.stdin.read()


def cmd_encode(args: argparse.Namespace) -> int:
    from app.services import model_counts
    from app.settings import Settings

    tok = _tokenizer(args)
    result = tok.tokenize(_read_text(args), allow_special=args.allow_special)
    named = args.tokenizer if args.file is None else args.file  # a model name brings its window and price
    extra = model_counts.added(tok, result.count) | model_counts.facts(named, Settings())
    out = result.to_dict()
    json.dump({k: out[k] for k in ("tokenizer", "count", "chars", "bytes")} | extra | {"ids": out["ids"], "tokens": out["tokens"]},
              sys.stdout, ensure_ascii=False, indent=args.indent)
    sys.stdout.write("\n")
    return 0


def cmd_count(args: argparse.Namespace) -> int:
    """Just the number of tokens (``--with-specials``: with the tokens the model's own default encoding adds)."""
    tok = _tokenizer(args)
    ids = tok.encode(_read_text(args), allow_special=args.allow_special)
    print(len(ids) + (len(tok.added_specials) if args.with_specials else 0))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from app.features.explain import explain

    explanation = explain(_tokenizer(args), _read_text(args), args.index, allow_special=args.allow_special)
    if args.tree:
        sys.stdout.write("\n".join(explanation_lines(explanation)) + "\n")
    else:
        json.dump(explanation.to_dict(), sys.stdout, ensure_ascii=False, indent=args.indent)
        sys.stdout.write("\n")
    return 0


#: Candidates shown per step by ``explain --tree`` (the JSON has them all).
SHOWN_CANDIDATES = 4


def explanation_lines(explanation) -> list[str]:
    """``tokenplay explain --tree``: the explanation as text: the merge tree indented under its token and the
    merges (BPE), the word's walk (WordPiece), or the span's lattice and best segmentations (Unigram)."""
    from app.features.explain.trace import shown

    e, pre = explanation, explanation.pretoken
    lines = [
        f"{e.tokenizer}: token {e.index} {shown(e.token.bytes)!r} (id {e.token.id}, {e.kind}; retraced by {e.engine})",
        f"pre-token {pre.start}..{pre.end} {pre.text!r}: {pre.rule.name} ({pre.rule.source})",
        f"normalizer: {e.normalizer_summary}",
        *(f"  {c.before!r} -> {c.after!r} ({', '.join(c.what)})" for c in e.changes),
    ]
    if e.kind == "wordpiece":
        lines += _walk_lines(e.detail)
    elif e.kind == "unigram":
        lines += _lattice_lines(e.detail)
    else:
        lines += ["merge tree:", *e.tree.lines("  ")]
    if e.steps:
        lines.append("merges in the pre-token (* built this token):")
    for k, step in enumerate(e.steps, 1):
        others = sorted(step.candidates, key=lambda c: c.rank)[:SHOWN_CANDIDATES]
        beaten = ", ".join(f"{shown(c.left)}+{shown(c.right)} {c.rank}" for c in others)
        more = len(step.candidates) - len(others)
        lines.append(
            f"  {'*' if step.in_token else ' '}{k:3}. {shown(step.left)} + {shown(step.right)} -> {shown(step.merged)} "
            f"(rank {step.rank}; candidates {beaten}{f' and {more} more' if more > 0 else ''})"
        )
    lines.extend(f"note: {note}" for note in e.notes)
    return lines


def _walk_lines(d) -> list[str]:
    """WordPiece's walk of a word: at each piece the candidates that missed, then the piece (* this token)."""
    lines = [f"walk of {d.normalized!r} (longest piece first; ✗ not in the vocabulary):"]
    for k, w in enumerate(d.found if d.stuck is not None else d.walk):
        misses = " ".join(f"{m}✗" for m in w.misses)
        mark = "*" if d.stuck is None and k == d.token_piece else " "
        lines.append(f"  {mark} {w.start:3}..{w.end:<3} {(misses + ' ') if misses else ''}{w.piece} (after {w.tried} missed)")
    if d.stuck is not None:
        lines.append(f"  * {d.stuck:3}..    no piece begins here: the word is {d.walk[0].piece}")
    lines.append("pieces: " + " ".join(w.piece for w in d.walk))
    return lines


def _lattice_lines(d) -> list[str]:
    """A unigram span's lattice, one line per position (pieces starting there, + on the best path, * this
    token's), then the best segmentations."""
    lines = [f"lattice of {d.normalized!r} (pieces by where they start, with their scores; + on the best path):"]
    this = d.best[d.token_piece]
    for start in range(len(d.normalized)):
        nodes = [n for n in d.lattice if n.start == start]
        cells = " ".join(
            f"{'*' if (n.start, n.end, n.id) == (this.start, this.end, this.id) else '+' if n.best else ''}"
            f"{n.piece}({n.score:.2f})"
            for n in sorted(nodes, key=lambda n: n.end)
        )
        lines.append(f"  {start:3} {d.normalized[start]} {cells}")
    lines.append(f"best: {' | '.join(s.piece for s in d.best)}  score {d.best_score:.3f}")
    lines.append("n-best:")
    lines += [f"  {k}. {' | '.join(s.piece for s in path)}  {score:.3f}" for k, (path, score) in enumerate(d.nbest, 1)]
    return lines


def cmd_decode(args: argparse.Namespace) -> int:
    raw = args.ids if args.ids else sys.stdin.read().replace(",", " ").replace("[", " ").replace("]", " ").split()
    try:
        ids = [int(x) for x in raw]
    except ValueError:
        raise TokenplayError("ids must be whole numbers separated by spaces or commas") from None
    tok = _tokenizer(args)
    sys.stdout.write(tok.decode(ids) + "\n")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    if args.json:
        json.dump([s.to_dict() for s in registry.specs()], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    width = max(len(n) for n in registry.names())
    for spec in registry.specs():
        print(f"{spec.name:<{width}}  {spec.label}")
    aliases = ", ".join(f"{a} -> {t}" for a, t in registry.ALIASES.items() if t in registry.names())
    prefixes = ", ".join(f"{p}… -> {t}" for p, t in registry.ALIAS_PREFIXES.items() if t in registry.names())
    print(f"\naliases: {aliases}")
    print(f"names starting with: {prefixes}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    """Train on a corpus file: byte-level BPE (our JSON model, a .tiktoken), WordPiece (a tokenizer.json) or
    Unigram (a SentencePiece .model), each file as the lab exports it; progress goes to stderr, a line per file
    written to stdout."""
    import time
    from pathlib import Path

    from app.engines.bpe.model import BPETokenizer

    try:
        corpus = sys.stdin.read() if args.corpus == "-" else Path(args.corpus).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenplayError(f"cannot read corpus {args.corpus!r}: {exc}; pass a UTF-8 text file") from None
    if args.algorithm != "bpe":
        return _train_lab_algorithm(args, corpus)
    started = last = time.monotonic()

    def progress(step: int, total: int, record) -> None:
        nonlocal last
        now = time.monotonic()
        if not args.quiet and (now - last >= 1.0 or step == total):
            last = now
            print(
                f"merge {step}/{total} ({now - started:.1f}s): {record.token!r} count {record.count}", file=sys.stderr
            )

    model, result = BPETokenizer.train(
        corpus,
        args.vocab_size,
        args.pattern,
        args.special,
        args.tie_break,
        min_count=args.min_count,
        top_k=args.top_k,
        max_ties=args.max_ties,
        max_vocab_size=args.max_vocab_size,
        progress=progress,
    )
    model.save(args.out)
    print(f"wrote {args.out}: the BPE model as Tokenplay JSON ({256 + len(result.merges):,} tokens)")
    if args.trace:
        Path(args.trace).write_bytes(result.to_json())
        print(f"wrote {args.trace}: every merge step as JSON")
    if args.export_tiktoken:
        model.export_tiktoken(args.export_tiktoken)
        print(f"wrote {args.export_tiktoken}: the ranks as a .tiktoken file (as the lab exports a byte-level run)")
    final_tokens = result.steps[-1].corpus_tokens if result.steps else result.initial_tokens
    print(
        f"{len(result.merges)} merges ({result.stop_reason}); corpus {result.initial_tokens} -> {final_tokens} "
        f"tokens; model written to {args.out}",
        file=sys.stderr,
    )
    return 0


#: What ``tokenplay train --algorithm`` writes for the lab's algorithms: the lab's export format, and its name.
LAB_EXPORTS = {"wordpiece": ("tokenizer.json", "a WordPiece tokenizer.json"), "unigram": ("model", "a unigram SentencePiece .model")}


def _train_lab_algorithm(args: argparse.Namespace, corpus: str) -> int:
    """``tokenplay train --algorithm wordpiece|unigram``: the lab's trainer and its exports (the model file to
    --out, the lab's JSON of every step or round to --trace), byte for byte what the lab's downloads hold."""
    import time
    from pathlib import Path

    from app.lab.algorithms import train
    from app.lab.export import export
    from app.lab.options import Options
    from app.lab.runs import Run

    refused = [flag for flag, value in (("--special", args.special), ("--export-tiktoken", args.export_tiktoken),
                                        ("--top-k", args.top_k), ("--max-ties", args.max_ties),
                                        ("--min-count", args.min_count != 2)) if value]
    if refused:
        raise TokenplayError(f"{', '.join(refused)} apply to --algorithm bpe only")
    options = Options(algorithm=args.algorithm, vocab_size=args.vocab_size, tie_break=args.tie_break)
    started = last = time.monotonic()
    unit = "round" if args.algorithm == "unigram" else "merge"

    def progress(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if not args.quiet and (now - last >= 1.0 or done == total):
            last = now
            print(f"{unit} {done}/{total} ({now - started:.1f}s)", file=sys.stderr)

    trained = train(corpus, options, max_merges=args.max_vocab_size, progress=progress)
    run = Run("cli", corpus, options, status="done")
    run.apply(trained)
    fmt, what = LAB_EXPORTS[args.algorithm]
    body, _, _ = export(run, fmt)
    Path(args.out).write_bytes(body)
    size = run.extra.get("n_final", len(run.vocab()))
    print(f"wrote {args.out}: {what} ({size:,} tokens), as the lab exports it")
    if args.trace:
        Path(args.trace).write_bytes(export(run, "json")[0])
        print(f"wrote {args.trace}: every {unit} as the lab's JSON export")
    print(f"{run.n_steps} {unit}s ({run.stop_reason})", file=sys.stderr)
    return 0


def cmd_languages(args: argparse.Namespace) -> int:
    """The UDHR in every language through each tokenizer: tokens and premium (tokens / English's)."""
    import hashlib

    from app.engines.registry.files import load_file
    from app.features import languages

    counts = {}
    for name in args.tokenizer or ["gpt2", "cl100k_base", "o200k_base"]:
        try:
            canonical = registry.resolve(name)
            tok, identity = registry.get(canonical), "registry:" + canonical
        except UnknownTokenizerError:
            if not os.path.isfile(name):
                raise
            tok = load_file(name, name=name)
            canonical = name
            with open(name, "rb") as f:
                identity = "file:" + hashlib.sha256(f.read()).hexdigest()
        counts[canonical] = languages.token_counts(tok, identity)
    table = languages.language_table(counts, args.lang or None)
    key = languages.sort_key(args.sort or "", list(table.tokenizers))
    descending = key not in ("name", "code", "script")
    rows = languages.view(table.rows, script=args.script or "", sort=key, descending=descending)
    incomplete = languages.view(table.incomplete, script=args.script or "", sort="name")
    if args.csv:
        sys.stdout.write(languages.csv_text([*rows, *incomplete]))
    else:
        sys.stdout.write(languages.text_table(table, rows, incomplete))
    return 0


def cmd_measure(args: argparse.Namespace) -> int:
    """Measure tokenizers on a corpus (:mod:`app.features.measure`): the report to stdout or --out, a progress bar
    on stderr when it is a terminal; exit status 1 when nothing could be measured."""
    from app.features import measure as m

    if args.conformance:
        return _conformance(args)
    if args.format == "text":
        raise TokenplayError("a measurement answers --format json, csv or html (text is for --conformance)")
    names = [n.strip() for part in args.tokenizers for n in part.split(",") if n.strip()]
    if not names:
        raise TokenplayError("name the tokenizers to measure with: --tokenizers cl100k_base,llama-3 (see tokenplay list)")
    from app.services.measure import cli_ref

    refs = [cli_ref(name) for name in names]
    read = m.ReadOptions(field=args.field, group_by=m.check_group_by(args.group_by),
                         max_document_bytes=int(args.max_document_mb * (1 << 20)))
    options = m.FigureOptions(reference_group=args.reference_group, reference_tokenizer=_reference(args.reference_tokenizer, refs),
                              resamples=args.resamples, seed=args.seed)
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    bar = None

    def on_plan(corpus) -> None:
        nonlocal bar
        if show:
            from tqdm import tqdm

            tqdm.monitor_interval = 0  # no monitor thread: the worker processes are forked from this one
            bar = tqdm(total=corpus.total_bytes, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr,
                       desc="measuring", dynamic_ncols=True)

    def progress(n: int) -> None:
        if bar is not None:
            bar.update(n)

    executor = m.executor_for(args.workers, args.dask)
    try:
        report = m.measure(args.paths, refs, read=read, options=options, executor=executor,
                           part_bytes=int(args.part_mb * (1 << 20)), progress=progress, on_plan=on_plan)
    except KeyboardInterrupt:
        print("tokenplay: measure: interrupted; nothing written", file=sys.stderr)
        return 130
    finally:
        if bar is not None:
            bar.close()
        if isinstance(executor, m.DaskExecutor):
            executor.close()
    _write_report(report, args.format, args.out)
    return _said(report.problems, report.measured)


def _said(problems, measured: bool) -> int:
    """Every problem met on stderr, and the exit status: 1 when nothing could be measured."""
    for problem in problems:
        print(f"tokenplay: measure: {problem.message}", file=sys.stderr)
    if not measured:
        print("tokenplay: measure: nothing could be measured", file=sys.stderr)
        return 1
    return 0


def _reference(name: str | None, refs) -> str | None:
    """The report's name of the reference tokenizer (an alias given for it names the same entry)."""
    if name is None:
        return None
    for ref in refs:
        if name == ref.name:
            return name
    try:
        canonical = registry.resolve(name)
    except UnknownTokenizerError:
        return name  # not measured: measure() says so
    return canonical


def _write_report(report, fmt: str, out: str | None) -> None:
    if fmt == "json":
        data = report.json() + b"\n"
    elif fmt == "csv":
        data = report.csv().encode("utf-8")
    else:
        data = measure_html(report).encode("utf-8")
    _write(data, out)


def _write(data: bytes, out: str | None) -> None:
    if out:
        with open(out, "wb") as f:
            f.write(data)
        print(f"wrote {out}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


def measure_html(report) -> str:
    """The report as a page of its own (``--format html``): the table and charts of the measure page."""
    import jinja2

    from app.settings import Settings

    settings = Settings()
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(settings.templates_dir)), autoescape=True)
    css = (settings.static_dir / "measure.css").read_text(encoding="utf-8")  # our own stylesheet, inlined
    template = env.get_template("measure_report.html")
    # the bars' widths and places are data attributes (the server's pages set them from static/app.js): here a rule
    # per value drawn, in the page's own stylesheet
    drawn = set(re.findall(r'data-(width|left)="([0-9.eE+-]+)"', template.render(report=report.to_dict(), css="")))
    rules = "".join(f'[data-{prop}="{value}"] {{ {prop}: {value}%; }}\n' for prop, value in sorted(drawn))
    return template.render(report=report.to_dict(), css=css + "\n" + rules)


def _conformance(args: argparse.Namespace) -> int:
    from app.features.measure import conformance
    from app.features.measure.sources import ReadOptions

    read = ReadOptions(field=args.field, max_document_bytes=int(args.max_document_mb * (1 << 20)))
    result = conformance.check(args.conformance, args.paths, read=read, context=args.context, limit=args.limit)
    if args.format == "json":
        data = result.json() + b"\n"
    elif args.format == "csv":
        data = result.csv().encode("utf-8")
    elif args.format == "text":
        data = result.text().encode("utf-8")
    else:
        raise TokenplayError("--conformance answers --format json, csv or text")
    _write(data, args.out)
    return _said(result.problems, bool(result.documents))


def _tokenizer_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--tokenizer", default="cl100k_base", help="tokenizer name, model alias or file path")
    p.add_argument("--file", default=None, metavar="PATH", help="use this tokenizer file instead of a name")
    p.add_argument(
        "--engine", choices=ENGINES, default="tiktoken", help="native: our own engine instead of the reference library"
    )
    p.add_argument("--pattern", default=None, help="split pattern of a .tiktoken file: gpt2, gpt4, o200k, none or a regex")
    p.add_argument("--special", action="append", default=[], metavar="TOKEN", help="special token of a .tiktoken file")


def _text_arguments(p: argparse.ArgumentParser) -> None:
    """The text a command reads (the argument, or stdin) and how its JSON is printed."""
    p.add_argument("--allow-special", action="store_true", help="parse <|endoftext|> etc. as special tokens")
    p.add_argument("--indent", type=int, default=None)
    p.add_argument("text", nargs="?", default=None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokenplay", description="See how language models cut text into tokens.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("serve", help="run the web app")
    p.add_argument("--host", default=None,
                   help="the address to listen on (default 127.0.0.1: this machine only; with --class 0.0.0.0)")
    p.add_argument("--port", type=int, default=8000, help="the port to listen on (default 8000)")
    p.add_argument(
        "--class",
        dest="classroom",
        action="store_true",
        help="serve a class in the room: listen on every network interface, two workers per CPU, and print the "
        "link students join at with this machine's network address",
    )
    p.add_argument(
        "--workers",
        type=worker_count,
        default=None,
        help="worker processes: a number, or 'auto' (two per CPU; for a class). Default: $TOKENPLAY_WORKERS or 1 "
        "(with --class: auto)",
    )
    p.add_argument("--log-level", default="info")
    p.add_argument(
        "--tokenizer",
        action="append",
        default=[],
        metavar="PATH",
        help="a tokenizer file every user of the server can pick (repeatable; named after the file)",
    )
    p.add_argument("--corpus-dir", default=None, metavar="DIR",
                   help="a folder of corpora the measure page offers to measure, read where they are")
    p.add_argument(
        "--preload",
        action=argparse.BooleanOptionalAction,
        default=os.environ.get("TOKENPLAY_PRELOAD", "1").lower() not in ("0", "no", "off", "false"),
        help="load every tokenizer before forking the workers, which then share it (default; "
        "--no-preload or TOKENPLAY_PRELOAD=0: each worker loads what it serves, on first use)",
    )
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("tables", help="build the table files of the shipped tokenizers ahead (make install does)")
    p.add_argument("action", choices=("build", "list"), help="build (or check) the tables, or list them")
    p.add_argument("names", nargs="*", help="only these tokenizers (default: every one our engines run)")
    p.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="builders at a time")
    p.set_defaults(func=cmd_tables)

    p = sub.add_parser("precompute", help="compute ahead what pages compute on a first visit (make install does)")
    p.set_defaults(func=cmd_precompute)

    p = sub.add_parser("encode", help="tokenize TEXT (or stdin) and print the same JSON as POST /api/tokenize")
    _tokenizer_arguments(p)
    _text_arguments(p)
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser("count", help="how many tokens TEXT (or stdin) is: just the number")
    _tokenizer_arguments(p)
    p.add_argument("--allow-special", action="store_true", help="parse <|endoftext|> etc. as special tokens")
    p.add_argument("--with-specials", action="store_true",
                   help="add the tokens the model's own default encoding adds (a beginning-of-text token, [CLS]/[SEP])")
    p.add_argument("text", nargs="?", default=None)
    p.set_defaults(func=cmd_count)

    p = sub.add_parser("explain", help="why token INDEX of TEXT is what it is: the same JSON as POST /api/explain")
    _tokenizer_arguments(p)
    p.add_argument("--index", type=int, required=True, help="the token's index in the text's tokens")
    p.add_argument("--tree", action="store_true",
                   help="print it as text, not JSON: the merge tree and steps, a WordPiece walk or a unigram lattice")
    _text_arguments(p)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("decode", help="turn token ids (arguments or stdin) back into text")
    _tokenizer_arguments(p)
    p.add_argument("ids", nargs="*")
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("train", help="train BPE, WordPiece or Unigram on a corpus and save the model")
    p.add_argument("corpus", help="UTF-8 text file ('-' for stdin)")
    p.add_argument("--algorithm", choices=("bpe", "wordpiece", "unigram"), default="bpe",
                   help="bpe: byte-level BPE (Tokenplay JSON to --out, --export-tiktoken); wordpiece: a tokenizer.json; "
                        "unigram: a SentencePiece .model (both as the lab exports them)")
    p.add_argument("--vocab-size", type=int, required=True,
                   help="bpe: 256 bytes + merges; wordpiece, unigram: the vocabulary size to reach")
    p.add_argument("--pattern", choices=("none", "gpt2", "gpt4", "o200k", "digits", "digits-r2l"), default="gpt4",
                   help="pre-tokenizer (digits: gpt4 with every digit alone; digits-r2l: numbers in threes from the right)")
    p.add_argument("--tie-break", choices=("first", "lexical"), default="first")
    p.add_argument("--min-count", type=int, default=2,
                   help="bpe: merge a pair only when it occurs this often (1: pairs seen once too, as tiktoken's "
                        "_educational.bpe_train and minbpe do)")
    p.add_argument("--special", action="append", default=[], metavar="TOKEN", help="special token (repeatable)")
    p.add_argument("--out", required=True,
                   help="model file (bpe: Tokenplay BPE JSON; wordpiece: tokenizer.json; unigram: .model)")
    p.add_argument("--trace", default=None, help="write every merge step (unigram: every round) as JSON here")
    p.add_argument("--top-k", type=int, default=0, help="record the k most frequent pairs before each merge")
    p.add_argument("--max-ties", type=int, default=None, help="keep at most N tied pairs per step in the trace")
    p.add_argument("--max-vocab-size", type=int, default=MAX_VOCAB_SIZE)
    p.add_argument("--export-tiktoken", default=None, metavar="PATH", help="also write a .tiktoken file")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("languages", help="the token tax of every language: the UDHR's tokens and premium per tokenizer")
    p.add_argument("-t", "--tokenizer", action="append", default=[], metavar="NAME",
                   help="tokenizer name, alias or file (repeatable; default: gpt2, cl100k_base, o200k_base)")
    p.add_argument("--lang", action="append", default=[], metavar="CODE",
                   help="only this language, by the udhr package's code: eng, jpn, cmn_hans... (repeatable)")
    p.add_argument("--script", default=None, help="only languages written in this script (Latin, Cyrillic, Han...)")
    p.add_argument("--sort", default=None,
                   help="name, code, script, chars, or tokens:NAME, premium:NAME, cpt:NAME (default: the first "
                        "tokenizer's premium, dearest first)")
    p.add_argument("--csv", action="store_true", help="CSV, one line per language and tokenizer (as /languages' export)")
    p.set_defaults(func=cmd_languages)

    p = sub.add_parser("measure", help="measure tokenizers on a corpus: tokens, bytes/token, fertility, vocabulary "
                       "used, Rényi efficiency, premium; or --conformance MODEL: do its runtimes agree?")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help=".txt (a document each), .jsonl (a document per line), .parquet files, or folders of them; "
                        "optionally .gz or .zst")
    p.add_argument("-t", "--tokenizers", action="append", default=[], metavar="NAME,NAME",
                   help="tokenizers (names, aliases, lab-<id>, upload:<id>, or tokenizer file paths), comma-separated "
                        "or repeated")
    p.add_argument("--field", default="text", help="the .jsonl field or Parquet column holding the text (default: text)")
    p.add_argument("--group-by", default=None, metavar="file|field:NAME",
                   help="figures per file, or per value of a field (a language, say)")
    p.add_argument("--format", choices=("json", "csv", "html", "text"), default="json",
                   help="json (default), csv, html (a page of tables and charts); --conformance: json, csv or text")
    p.add_argument("--out", default=None, metavar="FILE", help="write the report here (default: stdout)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    p.add_argument("--dask", default=None, metavar="ADDRESS",
                   help="run on the Dask cluster whose scheduler is at ADDRESS, or local:N to start one of N workers "
                        "(pip install 'tokenplay[dask]')")
    p.add_argument("--reference-group", default=None, metavar="GROUP",
                   help="premium: each group's tokens over this group's, with a bootstrap interval")
    p.add_argument("--reference-tokenizer", default=None, metavar="NAME",
                   help="tokenizer_premium: each tokenizer's tokens over this one's, on the same documents")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's random seed (default 0)")
    p.add_argument("--max-document-mb", type=float, default=8.0,
                   help="documents larger than this are skipped and reported (default 8)")
    p.add_argument("--part-mb", type=float, default=4.0,
                   help="large .jsonl files are measured in parts of this size (default 4)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a progress bar on stderr (default: when stderr is a terminal)")
    p.add_argument("--conformance", default=None, metavar="MODEL",
                   help="instead: encode every document with each runtime of MODEL and report where their ids differ")
    p.add_argument("--context", type=int, default=40, help="--conformance: characters shown around a difference")
    p.add_argument("--limit", type=int, default=100, help="--conformance: differing documents listed per runtime")
    p.set_defaults(func=cmd_measure)

    p = sub.add_parser("list", help="list the tokenizers")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TokenplayError as exc:
        print(f"tokenplay: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `tokenplay encode ... | head` closed the pipe early: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
