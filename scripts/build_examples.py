"""Build the files the README's examples use, in ``examples/`` (small, real, reproducible here):

- ``corpus.txt``: the first 100,000 characters (whole lines) of ``tokenizers/custom-bpe/corpus.txt``, that is of the
  Python Language Reference topics shipped with CPython 3.11.7 (Python Software Foundation License);
- ``my-tokenizer.json``: a byte-level BPE ``tokenizer.json`` of 1,000 tokens trained on it by Hugging Face
  ``tokenizers`` (the reference library's own trainer), with ``<|endoftext|>``, ``<|im_start|>`` and ``<|im_end|>``
  as special tokens;
- ``my-config.json``: its ``tokenizer_config.json``: a ChatML chat template written for these examples;
- ``other.model``: a SentencePiece unigram model of 1,000 pieces trained on it by ``sentencepiece`` itself (no
  normalization rule, so the file stays small).

Run ``.venv/bin/python scripts/build_examples.py`` (the dev install has both libraries); ``--check`` builds them in a
temporary directory and fails if a committed file differs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "examples"
SOURCE = ROOT / "tokenizers" / "custom-bpe" / "corpus.txt"
CHARS = 100_000
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def corpus() -> str:
    text = SOURCE.read_text(encoding="utf-8")[:CHARS]
    return text[: text.rindex("\n") + 1]


def tokenizer_json(corpus_path: Path) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([str(corpus_path)], trainer)
    return json.dumps(json.loads(tok.to_str()), ensure_ascii=False, indent=1) + "\n"


def config() -> str:
    return json.dumps({"chat_template": CHATML, "bos_token": None, "eos_token": "<|im_end|>",
                       "model_max_length": 2048, "tokenizer_class": "PreTrainedTokenizerFast"}, indent=1) + "\n"


def sentencepiece_model(corpus_path: Path, out: Path) -> None:
    import sentencepiece as spm

    spm.set_random_generator_seed(37)  # one thread and one seed: the same model on every run
    here = os.getcwd()
    os.chdir(out.parent)  # the model records its input's path: a relative one is the same wherever it is built
    try:
        spm.SentencePieceTrainer.train(
            input=corpus_path.name, model_prefix=out.stem, vocab_size=1000, model_type="unigram",
            normalization_rule_name="identity", num_threads=1, shuffle_input_sentence=False, minloglevel=2,
        )
    finally:
        os.chdir(here)
    out.with_suffix(".vocab").unlink()


def build(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "corpus.txt").write_text(corpus(), encoding="utf-8")
    (directory / "my-tokenizer.json").write_text(tokenizer_json(directory / "corpus.txt"), encoding="utf-8")
    (directory / "my-config.json").write_text(config(), encoding="utf-8")
    sentencepiece_model(directory / "corpus.txt", directory / "other.model")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="build in a temporary directory and compare")
    args = parser.parse_args()
    if not args.check:
        build(OUT)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        differ = [n for n in ("corpus.txt", "my-tokenizer.json", "my-config.json", "other.model")
                  if (Path(tmp) / n).read_bytes() != (OUT / n).read_bytes()]
    print("differ: " + ", ".join(differ) if differ else "the committed examples are what this script builds")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
