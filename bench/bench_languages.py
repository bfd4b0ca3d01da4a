"""The token tax of every language (issue 26): one tokenizer over the 532 UDHR translations, first and again.

Measured in-process through the ASGI app (no network), as the app's own time from its ``Server-Timing`` header:
``POST /api/languages {"tokenizers": [NAME]}`` the *first* time a tokenizer is asked for (its model is loaded
beforehand and has encoded two words, so this is the counting of ~5.5 million characters, 7 MB of UTF-8, with the
engine's own caches cold), then the same request again (answered from the cache), then with the count cache emptied
(``recount``: best of ``--repeat``, the engine's caches warm). ``first CPU`` is the process's CPU seconds during the
first request (every thread's: above ``first`` where the library counts on both cores, and a check on a shared machine,
where ``first`` also holds the time others had the cores). Beside it, in the same run, the reference library alone encoding
the same 532 texts one after the other in one thread: tiktoken for OpenAI's encodings, Hugging Face ``tokenizers``
for the tokenizer.json models, ``sentencepiece`` for Mistral 7B and Jurassic-2, ``tokenizers``' WordPiece for BERT (the
peer of a ``native-*`` twin is its model's library). The ratio is first / peer (below 1: our request beats the bare library, because
``encode_batch`` spreads the texts over every core where the library allows). Targets: first at most 2 s, again at
most 0.2 s. Also: reading and parsing the declarations once per process, and the page's results block for three
cached tokenizers.

    python bench/bench_languages.py [--repeat 3] [--tokenizers gpt2,cl100k_base,...|all]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # helpers shared with the tests

from bench_api import server_ms  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from app.engines import datafiles, registry  # noqa: E402
from app.engines.huggingface.npm_models import NPM_MODELS  # noqa: E402
from app.features import languages, udhr  # noqa: E402
from app.web.app import create_app  # noqa: E402

DEFAULT = "gpt2,cl100k_base,o200k_base,llama-3,qwen3,gemma-3,mistral-7b,native-cl100k_base,native-llama-3"
FIRST_TARGET, AGAIN_TARGET = 2.0, 0.2
SENTENCEPIECE = {"mistral-7b": "sentencepiece/mistral-7b-v0.1.model", "jurassic-2": "sentencepiece/jurassic-2.model"}


def peer(name: str):
    """(library, encode) of the reference library of ``name``'s model, or None when it has none."""
    entry = registry.spec(name).entry
    if entry in NPM_MODELS:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(datafiles.data_path(NPM_MODELS[entry].tokenizer_file)))
        tok.encode_special_tokens = True
        return "tokenizers", lambda text: tok.encode(text, add_special_tokens=False).ids
    if entry in SENTENCEPIECE:
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(datafiles.data_path(SENTENCEPIECE[entry])))
        return "sentencepiece", sp.encode
    if entry == "bert-base-uncased":
        from tokenizers.implementations import BertWordPieceTokenizer

        bert = registry.get(entry)
        tok = BertWordPieceTokenizer({bert.id_to_token(i): i for i in range(bert.n_vocab)}, lowercase=True)
        return "tokenizers", lambda text: tok.encode(text, add_special_tokens=False).ids
    if registry.spec(entry).engine == "tiktoken":
        return "tiktoken", registry.get(entry).encoding.encode_ordinary
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="recounts per tokenizer, cache emptied (best is shown)")
    parser.add_argument("--tokenizers", default=DEFAULT, help="comma-separated names, or 'all' (every shipped one)")
    args = parser.parse_args()
    names = [s.name for s in registry.specs()] if args.tokenizers == "all" else args.tokenizers.split(",")

    start = time.perf_counter()
    data = udhr.load()
    load_s = time.perf_counter() - start
    texts = [d.text for d in data.declarations]
    chars = sum(map(len, texts))
    size = sum(len(t.encode("utf-8")) for t in texts)
    print(f"{len(texts)} declarations, {chars:,} characters, {size / 1e6:.1f} MB of UTF-8; read, checked and parsed "
          f"in {load_s:.2f} s (once per process)\n")

    client = TestClient(create_app())
    client.__enter__()
    client.get("/api/languages")  # the corpus, loaded once per process (above), is not part of the rows below
    print(f"first and recount (best of {args.repeat}): server seconds; again: server ms; peer: the library alone, one "
          "thread, same texts, same run\n")
    print("| tokenizer | tokens | first (s) | first CPU (s) | again (ms) | recount (s) | peer | peer (s) | first / peer | "
          "targets (2 s / 0.2 s) |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---|")
    for name in names:
        registry.get(name).encode("warm up")  # the model's own loading is bench_models.py's row, not this one
        languages.CACHE.clear()
        cpu = time.process_time()
        r = client.post("/api/languages", json={"tokenizers": [name]})
        first_cpu = time.process_time() - cpu
        assert r.status_code == 200, r.text[:300]
        first = server_ms(r) / 1000
        again = client.post("/api/languages", json={"tokenizers": [name]})
        again_ms = server_ms(again)
        recounts = []
        for _ in range(max(1, args.repeat)):
            languages.CACHE.clear()
            recounts.append(server_ms(client.post("/api/languages", json={"tokenizers": [name]})) / 1000)
        tokens = sum(row["results"][name]["tokens"] for row in again.json()["languages"] + again.json()["incomplete"])
        ref = peer(name)
        if ref is None:
            library, peer_s, ratio = "—", "—", "—"
        else:
            library, encode = ref
            encode("warm up")
            begin = time.perf_counter()
            for text in texts:
                encode(text)
            elapsed = time.perf_counter() - begin
            peer_s, ratio = f"{elapsed:.2f}", f"{first / elapsed:.2f}x"
        met = "met" if first <= FIRST_TARGET and again_ms / 1000 <= AGAIN_TARGET else "not met"
        print(f"| {name} | {tokens:,} | {first:.2f} | {first_cpu:.2f} | {again_ms:.1f} | {min(recounts):.2f} | {library} | {peer_s} | "
              f"{ratio} | {met} |", flush=True)

    for name in ("gpt2", "cl100k_base", "o200k_base"):
        client.post("/api/languages", json={"tokenizers": [name]})
    times = []
    for _ in range(max(3, args.repeat)):
        r = client.get("/languages?t=gpt2&t=cl100k_base&t=o200k_base", headers={"HX-Request": "true"})
        times.append(server_ms(r))
    print(f"\n/languages results block, 3 cached tokenizers, 527 rows: {min(times):.0f} ms server time (best of "
          f"{len(times)}), {len(r.content) / 1e3:.0f} KB of HTML")
    client.__exit__(None, None, None)


if __name__ == "__main__":
    main()
