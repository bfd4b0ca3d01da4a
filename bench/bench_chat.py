"""The chat page's server time per tokenizer, beside the reference library encoding the same prompt.

Measured in-process through the ASGI app (no network), as the app's own time from its ``Server-Timing`` header.
Per tokenizer: the first ``GET /chat?tokenizer=NAME`` (loading the tokenizer included, in seconds), then the
fragment the page swaps in while typing (``POST /chat/result``, its form as multipart: one pane, the rendered
prompt's coloured window, its ids) for a system message and a user message of 10 KB and of 1 MB of ``en.txt``
(the shared corpora; generated mixed text when they are absent). Beside it, the reference library alone encoding
the same rendered prompt with its special tokens parsed (tiktoken for OpenAI's encodings, Hugging Face tokenizers
for the tokenizer.json models, the native twins included): the floor a chat answer stands on, same run.

    python bench/bench_chat.py [--repeat 10] [--tokenizers cl100k_base,o200k_harmony,llama-3,...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # helpers shared with the tests

from helpers import realtext  # noqa: E402
from bench_api import server_ms  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from helpers.mixed_text import mixed_text  # noqa: E402
from tokenizers import Tokenizer as HFTokenizer  # noqa: E402

from app.engines import registry  # noqa: E402
from app.features.chat import prompt as chat  # noqa: E402
from app.engines import datafiles  # noqa: E402
from app.engines.huggingface.npm_models import NPM_MODELS  # noqa: E402
from app.web.app import create_app  # noqa: E402

DEFAULT = "cl100k_base,o200k_harmony,llama-3,qwen3,deepseek-v3,gemma-3,native-llama-3,native-gemma-3"
SYSTEM = "You are a helpful assistant."


def text_of(size: int) -> tuple[str, str]:
    if realtext.available():
        return realtext.excerpt("en", 100_000, size), "en.txt"
    return mixed_text(size), "mixed text"


def reference_encoder(name: str):
    """The reference library's encode of a whole prompt, special tokens parsed."""
    entry = registry.spec(name).entry
    if entry in NPM_MODELS:
        ref = HFTokenizer.from_file(str(datafiles.data_path(NPM_MODELS[entry].tokenizer_file)))
        return lambda text: ref.encode(text, add_special_tokens=False).ids
    encoding = registry.get(entry).encoding
    return lambda text: encoding.encode(text, allowed_special="all")


def fragment(client: TestClient, name: str, content: str) -> float:
    fields = [("tokenizer", name), ("role", "system"), ("role", "user"), ("content", SYSTEM), ("content", content)]
    r = client.post("/chat/result", files=[(k, (None, v)) for k, v in fields], headers={"HX-Request": "true"})
    assert r.status_code == 200, r.text[:300]
    return server_ms(r)


def best_and_median(fn, repeat: int) -> tuple[float, float]:
    fn()  # warm-up
    times = [fn() for _ in range(repeat)]
    return min(times), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--tokenizers", default=DEFAULT)
    args = parser.parse_args()
    client = TestClient(create_app())
    client.__enter__()  # run the app's start-up (lifespan) as a real server does
    sizes = {"10 KB": 10_000, "1 MB": 1_000_000}
    texts = {label: text_of(size) for label, size in sizes.items()}
    source = texts["10 KB"][1]
    print(f"user message: {source}; times: server ms, p50 of {args.repeat} (1 MB: best of {max(3, args.repeat // 3)});"
          " ratio = fragment / the reference library's encode of the same prompt (same run)\n")
    print("| tokenizer | format | first GET /chat (s) | text | prompt tokens | fragment | reference encode | ratio |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for name in args.tokenizers.split(","):
        start = time.perf_counter()
        first = client.get(f"/chat?tokenizer={name}")
        assert first.status_code == 200, first.text[:300]
        first_s = time.perf_counter() - start
        tok = registry.get(name)
        encode = reference_encoder(name)
        for label, (content, _) in texts.items():
            messages = [chat.Message("system", SYSTEM), chat.Message("user", content)]
            prompt = chat.render_for(tok, messages)
            repeat = args.repeat if label == "10 KB" else max(3, args.repeat // 3)
            best, median = best_and_median(lambda: fragment(client, name, content), repeat)
            ref_best, ref_median = best_and_median(lambda: _ms(encode, prompt), repeat)
            ours, theirs = (median, ref_median) if label == "10 KB" else (best, ref_best)
            print(f"| {name} | {chat.chat_format(tok)} | {first_s:.2f} | {label} | {len(encode(prompt)):,} "
                  f"| {ours:.1f} | {theirs:.1f} | {ours / theirs:.1f}x |", flush=True)


def _ms(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - start) * 1000


if __name__ == "__main__":
    main()
