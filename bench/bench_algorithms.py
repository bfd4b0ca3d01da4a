"""Benchmark WordPiece and Unigram (issue 17): training and encoding beside the reference libraries, same run.

    .venv/bin/python bench/bench_algorithms.py [--quick] [--repeat N] [--chars N]

Training on ``en.txt`` of the real-text corpora (``tests/helpers/realtext.py``) to 4,096 pieces (2,048 with ``--quick``):

- our WordPiece trainer (score-based merges on the shared core) beside Hugging Face's ``WordPieceTrainer``;
- our Unigram trainer (sentencepiece's, followed exactly, its default options) beside Hugging Face's
  ``UnigramTrainer`` and ``sentencepiece`` (unigram, ``num_threads=1``, its default options).

Target: at most 3x the peer. Encoding 1 MB: our unigram engine (Jurassic-2's model) beside ``sentencepiece``, our
WordPiece engine (BERT base uncased) beside ``tokenizers``, and 1 MB of one repeated character (the reliability
input: linear, not quadratic). Hugging Face's library runs on one thread (``RAYON_NUM_THREADS=1``). CPU seconds of
this process, best of ``--repeat``. Without the corpora the script says so and stops. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers starts its thread pool
os.environ["TOKENIZERS_PARALLELISM"] = "false"

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from helpers import realtext  # noqa: E402
import sentencepiece as spm  # noqa: E402
from bench_sentencepiece import best_of  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: E402
from tokenizers.implementations import BertWordPieceTokenizer  # noqa: E402

from app.engines import registry  # noqa: E402
from app.engines.datafiles import data_path  # noqa: E402
from app.engines.sentencepiece.unigram_trainer import train_unigram  # noqa: E402
from app.engines.wordpiece.trainer import train_wordpiece  # noqa: E402
from app.lab.algorithms import MAX_TIES as LAB_MAX_TIES  # noqa: E402
from app.lab.algorithms import TOP_K as LAB_TOP_K  # noqa: E402

VOCAB = 4096


def hf_train(text: str, kind: str, vocab: int) -> Tokenizer:
    lines = text.splitlines()
    if kind == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=["[UNK]"], show_progress=False)
    else:
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=vocab, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(lines, trainer)
    return tok


def spm_unigram(text: str, vocab: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.txt"
        path.write_text(text, encoding="utf-8")
        spm.SentencePieceTrainer.train(  # its default options, as ours trains (the same pieces)
            input=str(path), model_prefix=str(Path(tmp) / "m"), model_type="unigram", vocab_size=vocab,
            num_threads=1, minloglevel=2,
        )


def training_rows(text: str, repeat: int, vocab: int) -> list[tuple]:
    rows = []
    # ours: the step records the lab keeps (each with its 10-row scored table and up to 24 ties)
    t_ours, _ = best_of(repeat, lambda: train_wordpiece(text, vocab, top_k=LAB_TOP_K, max_ties=LAB_MAX_TIES))
    t_hf, _ = best_of(repeat, lambda: hf_train(text, "wordpiece", vocab))
    rows.append((f"train WordPiece → {vocab:,}, step records with the lab's {LAB_TOP_K}-row scored tables", t_ours,
                 "tokenizers WordPieceTrainer", t_hf))
    t_ours, _ = best_of(repeat, lambda: train_unigram(text, vocab))
    t_hf, _ = best_of(repeat, lambda: hf_train(text, "unigram", vocab))
    t_spm, _ = best_of(repeat, lambda: spm_unigram(text, vocab))
    rows.append((f"train Unigram → {vocab:,}", t_ours, "tokenizers UnigramTrainer", t_hf))
    rows.append((f"train Unigram → {vocab:,}", t_ours, "sentencepiece unigram", t_spm))
    return rows


def encoding_rows(repeat: int, chars: int) -> list[tuple]:
    rows = []
    jurassic = registry.get("jurassic-2")
    sp = spm.SentencePieceProcessor(model_file=str(data_path("sentencepiece/jurassic-2.model")))
    bert = registry.get("bert-base-uncased")
    ref = BertWordPieceTokenizer({bert.id_to_token(i): i for i in range(bert.n_vocab)}, lowercase=True)
    for name in ("en", "ja"):
        text = realtext.read(name)[:chars]
        t_ours, ids = best_of(repeat, lambda: jurassic.encode(text))
        t_ref, ref_ids = best_of(repeat, lambda: sp.encode(text))
        rows.append((f"encode {name} 1 MB, Jurassic-2 (unigram){'' if ids == ref_ids else ' MISMATCH'}", t_ours,
                     "sentencepiece", t_ref))
        t_ours, ids = best_of(repeat, lambda: bert.encode(text))
        t_ref, enc = best_of(repeat, lambda: ref.encode(text, add_special_tokens=False))
        rows.append((f"encode {name} 1 MB, BERT (WordPiece){'' if ids == enc.ids else ' MISMATCH'}", t_ours,
                     "tokenizers", t_ref))
    same = "a" * chars
    t_ours, _ = best_of(repeat, lambda: jurassic.encode(same))
    t_ref, _ = best_of(repeat, lambda: sp.encode(same))
    rows.append(("encode 1 MB of one character, Jurassic-2", t_ours, "sentencepiece", t_ref))
    t_ours, _ = best_of(repeat, lambda: bert.encode(same))
    t_ref, _ = best_of(repeat, lambda: ref.encode(same, add_special_tokens=False))
    rows.append(("encode 1 MB of one character, BERT", t_ours, "tokenizers", t_ref))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 KB and one run each (a smoke run)")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--chars", type=int, default=None, help="characters of en.txt to train on")
    args = parser.parse_args(argv)
    if not realtext.available():
        print(f"The real-text corpora are not in {realtext.CORPORA_DIR}: set TOKENPLAY_CORPORA to run these rows.")
        return 0
    repeat = args.repeat or (1 if args.quick else 3)
    chars = args.chars or (200_000 if args.quick else 1_000_000)
    vocab = VOCAB if chars >= 500_000 else 2048  # a smoke run's 200 KB: a size sentencepiece's unigram trainer fills
    rows = training_rows(realtext.read("en")[:chars], repeat, vocab) + encoding_rows(repeat, chars)
    print("| task | ours (s) | peer | peer (s) | ratio | target |")
    print("|---|---|---|---|---|---|")
    for task, ours, peer, theirs in rows:
        target = "≤ 3x" if task.startswith("train") else ""
        print(f"| {task} | {ours:.2f} | {peer} | {theirs:.2f} | {ours / theirs:.2f}x | {target} |")
    print(f"\nCPU seconds, best of {repeat}, {chars:,} characters; ratio = ours / peer (lower is better).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
