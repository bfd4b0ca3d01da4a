"""The compare page while typing: 10 tokenizers on 7,500 characters of real English and Japanese (issue 21).

Two servers of the same code run in this run, each a uvicorn process of its own: ours, each pane drawing one
window of its tokens (the default ``TOKENPLAY_COMPARE_PANE_TOKENS``), and the peer, every pane drawing every
token (the pane window as large as the text; what the page sent before issue 21). For each:

1. the fragment typing asks for, ``POST /compare/results`` as the page sends it (multipart, ``HX-Request``), the
   text one character longer each time, ``--requests`` times: its size in KB and the server's time (its
   ``Server-Timing``), p50 and p90;
2. in Chromium (Debian's, through Playwright), the page open with the ten tokenizers and the text, then
   ``--keystrokes`` characters typed at its end one at a time: for each, from the moment htmx sends the
   request (``htmx:beforeRequest``, after the page's 200 ms typing delay) to the answer swapped, settled and
   painted (``htmx:afterSettle``, then two animation frames), p50 and p90.

Targets (issue 21): the fragment at most 300 KB, Chromium request-to-settled p90 at most 300 ms. The ratio is
ours / the peer's, same run. The text is ``tests/realtext.en_ja(7500)`` (the shared corpora); the run says so
and stops when they are absent.

    python bench/bench_compare.py [--requests 20] [--keystrokes 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # helpers shared with the tests

import httpx  # noqa: E402
from helpers import realtext  # noqa: E402
from helpers.serving import UvicornProcess  # noqa: E402

TOKENIZERS = ["gpt2", "cl100k_base", "o200k_base", "llama-3", "qwen3", "deepseek-v3", "gemma-3", "mistral-7b",
              "jurassic-2", "bert-base-uncased"]
CHARS = 7_500
TARGET_KB = 300
TARGET_P90_MS = 300
CHROMIUM = os.environ.get("TOKENPLAY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

# Page-side timing: from htmx sending the compare form to the results swapped, settled and painted.
TIMING = """
window.__settled = [];
document.addEventListener("htmx:beforeRequest", (e) => {
  if (e.detail.elt && e.detail.elt.id === "compare-form") window.__sent = performance.now();
});
document.addEventListener("htmx:afterSettle", (e) => {
  if (!e.detail.target || e.detail.target.id !== "compare-results" || window.__sent == null) return;
  const sent = window.__sent;
  window.__sent = null;
  requestAnimationFrame(() => requestAnimationFrame(() => window.__settled.push(performance.now() - sent)));
});
"""


def p(values: list[float], q: float) -> float:
    """The ``q`` quantile (0.5, 0.9) of ``values``, as statistics.quantiles cuts them (inclusive)."""
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1] if len(values) > 1 else values[0]


def server_side(url: str, text: str, requests: int) -> tuple[float, list[float]]:
    """The fragment's size (KB, the last one) and the server's ms per request, the text growing as typed."""
    times, size = [], 0
    with httpx.Client(base_url=url, timeout=120) as client:
        for n in range(requests + 1):  # the first warms every tokenizer up
            fields = [("text", text + "x" * n)] + [("t", name) for name in TOKENIZERS]
            r = client.post("/compare/results", files=[(k, (None, v)) for k, v in fields], headers={"HX-Request": "true"})
            r.raise_for_status()
            size = len(r.content)
            if n:
                times.append(float(r.headers["server-timing"].split("dur=")[1]))
    return size / 1000, times


def in_chromium(browser, url: str, text: str, keystrokes: int) -> list[float]:
    """Request-to-settled ms in Chromium for each of ``keystrokes`` characters typed at the end of the text."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.add_init_script(TIMING)
    page.goto(url + "/compare?" + "&".join(f"t={n}" for n in TOKENIZERS) + "&text=")
    box = page.locator("#compare-text")
    box.fill(text)
    page.wait_for_function("window.__settled.length >= 1", timeout=120_000)
    box.press("Control+End")
    for n in range(keystrokes):
        box.press_sequentially("ab"[n % 2])
        page.wait_for_function(f"window.__settled.length >= {n + 2}", timeout=120_000)
    settled = page.evaluate("window.__settled")[1:]
    page.close()
    return settled


def serve(pane_tokens: int | None, tmp: str) -> UvicornProcess:
    env = {"TOKENPLAY_LAB_RUNS_DIR": f"{tmp}/runs", "TOKENPLAY_UPLOADS_DIR": f"{tmp}/uploads",
           "TOKENPLAY_LAB_POOL": "thread"}
    if pane_tokens:
        env["TOKENPLAY_COMPARE_PANE_TOKENS"] = str(pane_tokens)
    return UvicornProcess(env, args=("--log-level", "error", "--no-access-log"), timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20, help="fragments asked for per server (server time)")
    parser.add_argument("--keystrokes", type=int, default=20, help="characters typed per server in Chromium")
    args = parser.parse_args()
    if not realtext.available():
        print(f"the real-text corpora are not in {realtext.CORPORA_DIR} (set TOKENPLAY_CORPORA): nothing measured")
        return 1
    from playwright.sync_api import sync_playwright

    text = realtext.en_ja(CHARS)
    print(f"{len(TOKENIZERS)} tokenizers ({', '.join(TOKENIZERS)}) on {len(text):,} characters of en.txt then ja.txt "
          f"(realtext.en_ja); server: {args.requests} fragments, p50/p90 of its Server-Timing; Chromium "
          f"{CHROMIUM}: {args.keystrokes} characters typed, request sent to answer settled and painted; "
          f"ratio = ours / the peer's (same run)\n")
    rows = {}
    with tempfile.TemporaryDirectory(prefix="tokenplay-compare-") as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for label, pane_tokens in (("a window of tokens each (ours)", None), ("every token (peer)", 10**7)):
            server = serve(pane_tokens, tmp)
            try:
                kb, server_ms = server_side(server.url, text, args.requests)
                start = time.perf_counter()
                settled = in_chromium(browser, server.url, text, args.keystrokes)
                rows[label] = (kb, server_ms, settled, time.perf_counter() - start)
            finally:
                server.stop()
        browser.close()
    print("| panes draw | fragment KB | server ms p50 | server ms p90 "
          "| Chromium settled ms p50 | Chromium settled ms p90 | target |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for label, (kb, server_ms, settled, _) in rows.items():
        ours = label.endswith("(ours)")
        met = kb <= TARGET_KB and p(settled, 0.9) <= TARGET_P90_MS
        target = f"≤ {TARGET_KB} KB, p90 ≤ {TARGET_P90_MS} ms " + ("(met)" if met else "(missed)") if ours else "—"
        print(f"| {label} | {kb:.1f} | {p(server_ms, 0.5):.1f} | {p(server_ms, 0.9):.1f} | {p(settled, 0.5):.0f} "
              f"| {p(settled, 0.9):.0f} | {target} |")
    (ours_kb, ours_ms, ours_settled, _), (peer_kb, peer_ms, peer_settled, _) = rows.values()
    print(f"\nratio ours / peer: fragment {ours_kb / peer_kb:.2f}x, server p90 {p(ours_ms, 0.9) / p(peer_ms, 0.9):.2f}x, "
          f"Chromium p90 {p(ours_settled, 0.9) / p(peer_settled, 0.9):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
