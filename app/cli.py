"""The ``tokenplay`` console script: serve the app, encode/decode from the shell, list tokenizers.

``tokenplay encode`` prints exactly the JSON that ``POST /api/tokenize`` answers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from app.engines import registry
from app.engines.errors import TokenplayError
from app.engines.training import MAX_VOCAB_SIZE

ENGINES = ("tiktoken", "native")


def _tokenizer_name(name: str, engine: str) -> str:
    """``--engine native -t cl100k_base`` runs OpenAI's ranks in our own engine (registered as native-NAME)."""
    canonical = registry.resolve(name)
    if engine == "native" and not canonical.startswith("native-"):
        native = f"native-{canonical}"
        if native not in registry.names():
            raise TokenplayError(
                f"--engine native runs OpenAI's encodings only; {name!r} has no native variant "
                f"(try one of: {', '.join(n[7:] for n in registry.names() if n.startswith('native-'))})"
            )
        return native
    return canonical


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


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    uvicorn.run("app.main:app", host=args.host, port=args.port, workers=args.workers, log_level=args.log_level)
    return 0


def _read_text(args: argparse.Namespace) -> str:
    if args.text is not None:
        return args.text
    return sys.stdin.read()


def cmd_encode(args: argparse.Namespace) -> int:
    tok = registry.get(_tokenizer_name(args.tokenizer, args.engine))
    result = tok.tokenize(_read_text(args), allow_special=args.allow_special)
    json.dump(result.to_dict(), sys.stdout, ensure_ascii=False, indent=args.indent)
    sys.stdout.write("\n")
    return 0


def cmd_decode(args: argparse.Namespace) -> int:
    raw = args.ids if args.ids else sys.stdin.read().replace(",", " ").replace("[", " ").replace("]", " ").split()
    try:
        ids = [int(x) for x in raw]
    except ValueError:
        raise TokenplayError("ids must be whole numbers separated by spaces or commas") from None
    tok = registry.get(_tokenizer_name(args.tokenizer, args.engine))
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
    print(f"\naliases: {aliases}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    """Train byte-level BPE on a corpus file; progress goes to stderr, the model to --out."""
    import time
    from pathlib import Path

    from app.engines.bpe.model import BPETokenizer

    try:
        corpus = sys.stdin.read() if args.corpus == "-" else Path(args.corpus).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenplayError(f"cannot read corpus {args.corpus!r}: {exc}; pass a UTF-8 text file") from None
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
        top_k=args.top_k,
        max_ties=args.max_ties,
        max_vocab_size=args.max_vocab_size,
        progress=progress,
    )
    model.save(args.out)
    if args.trace:
        Path(args.trace).write_bytes(result.to_json())
    if args.export_tiktoken:
        model.export_tiktoken(args.export_tiktoken)
    final_tokens = result.steps[-1].corpus_tokens if result.steps else result.initial_tokens
    print(
        f"{len(result.merges)} merges ({result.stop_reason}); corpus {result.initial_tokens} -> {final_tokens} "
        f"tokens; model written to {args.out}",
        file=sys.stderr,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokenplay", description="See how language models cut text into tokens.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("serve", help="run the web app")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--workers",
        type=worker_count,
        default=os.environ.get("TOKENPLAY_WORKERS", "1"),
        help="worker processes: a number, or 'auto' (two per CPU; for a class). Default: $TOKENPLAY_WORKERS or 1",
    )
    p.add_argument("--log-level", default="info")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("encode", help="tokenize TEXT (or stdin) and print the same JSON as POST /api/tokenize")
    p.add_argument("-t", "--tokenizer", default="cl100k_base", help="tokenizer name or model alias")
    p.add_argument("--engine", choices=ENGINES, default="tiktoken", help="native: OpenAI ranks in our own engine")
    p.add_argument("--allow-special", action="store_true", help="parse <|endoftext|> etc. as special tokens")
    p.add_argument("--indent", type=int, default=None)
    p.add_argument("text", nargs="?", default=None)
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser("decode", help="turn token ids (arguments or stdin) back into text")
    p.add_argument("-t", "--tokenizer", default="cl100k_base")
    p.add_argument("--engine", choices=ENGINES, default="tiktoken")
    p.add_argument("ids", nargs="*")
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("train", help="train byte-level BPE on a corpus and save the model")
    p.add_argument("corpus", help="UTF-8 text file ('-' for stdin)")
    p.add_argument("--vocab-size", type=int, required=True, help="256 bytes + merges")
    p.add_argument("--pattern", choices=("none", "gpt2", "gpt4", "o200k"), default="gpt4", help="pre-tokenizer")
    p.add_argument("--tie-break", choices=("first", "lexical"), default="first")
    p.add_argument("--special", action="append", default=[], metavar="TOKEN", help="special token (repeatable)")
    p.add_argument("--out", required=True, help="model file (Tokenplay BPE JSON)")
    p.add_argument("--trace", default=None, help="write every merge step as JSON here")
    p.add_argument("--top-k", type=int, default=0, help="record the k most frequent pairs before each merge")
    p.add_argument("--max-ties", type=int, default=None, help="keep at most N tied pairs per step in the trace")
    p.add_argument("--max-vocab-size", type=int, default=MAX_VOCAB_SIZE)
    p.add_argument("--export-tiktoken", default=None, metavar="PATH", help="also write a .tiktoken file")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_train)

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
