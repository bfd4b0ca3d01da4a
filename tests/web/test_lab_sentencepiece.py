"""The lab's SentencePiece runs over HTTP (issue 33, parts 1, 2, 6): ``POST /api/train`` with the ``sentencepiece``
options object trains what sentencepiece's own trainer trains (the referee: ``SentencePieceTrainer.train`` on the
same corpus and options), ``export?format=model`` is that model, bad options are a 422 naming the field and a size
the corpus cannot fill one with sentencepiece's limit in words; the setup page's options section and its Llama 2
preset, and the two byte-fallback lessons, one click each."""

from __future__ import annotations

import html
import json
import re

import pytest
from helpers.lab_training import LOW, train
from helpers.spm_trainer import processor, reference

from app.engines.sentencepiece.proto import ModelProto
from app.lab.examples import EXAMPLES, KOREAN, PRESETS, SAMPLE_CORPUS

CORPUS = SAMPLE_CORPUS + "Numbers: 2024, 12345 and 3.14.\n    indented  code(x)  # twice\n"


def export(client, run: dict) -> bytes:
    r = client.get(f"/api/train/{run['id']}/export", params={"format": "model"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
    return r.content


@pytest.mark.parametrize("model_type, algorithm", [("bpe", "sentencepiece"), ("unigram", "unigram")])
@pytest.mark.parametrize("options", [{}, {"byte_fallback": True, "split_digits": True},
                                     PRESETS["llama-2"]["options"],
                                     {"normalization_rule_name": "nfkc_cf", "user_defined_symbols": ["tokens"],
                                      "treat_whitespace_as_suffix": True, "unk_id": 2, "eos_id": 0}],
                         ids=["defaults", "bytes-digits", "llama-2", "symbols-suffix"])
def test_the_options_object_trains_sentencepieces_model(client, tmp_path, model_type, algorithm, options):
    run = train(client, corpus=CORPUS, algorithm=algorithm, vocab_size=400 if "byte_fallback" in options else 180,
                sentencepiece=options)
    assert run["options"]["sentencepiece"] == options and run["vocab_size"] in (180, 400)
    got = ModelProto.parse(export(client, run)).pieces
    want = reference(tmp_path, CORPUS, run["vocab_size"], model_type, **options).pieces
    assert [(p.piece, p.type) for p in got] == [(p.piece, p.type) for p in want]
    assert max(abs(a.score - b.score) for a, b in zip(got, want)) <= 1e-4
    ours = processor(export(client, run))
    for text in ("The tokens, 2024!", KOREAN, "  two  spaces\tand a tab"):
        assert client.post(f"/api/train/{run['id']}/encode", json={"text": text}).json()["ids"] == ours.encode(text)


@pytest.mark.parametrize(
    "body, field, words",
    [
        ({"sentencepiece": {"no_such_option": 1}}, "sentencepiece.no_such_option", "unknown option"),
        ({"sentencepiece": {"byte_fallback": "yes"}}, "sentencepiece.byte_fallback", "must be true or false"),
        ({"sentencepiece": {"character_coverage": 0}}, "sentencepiece.character_coverage", "must be in (0, 1]"),
        ({"sentencepiece": {"character_coverage": 1.5}}, "sentencepiece.character_coverage", "must be in (0, 1]"),
        ({"sentencepiece": {"normalization_rule_name": "nfd"}}, "sentencepiece.normalization_rule_name", "nmt_nfkc"),
        ({"sentencepiece": {"bos_id": 0}}, "sentencepiece.bos_id", "is already sentencepiece.unk_id"),
        ({"sentencepiece": {"max_sentencepiece_length": 2.5}}, "sentencepiece.max_sentencepiece_length", "integer"),
        ({"algorithm": "byte", "sentencepiece": {}}, "sentencepiece", "applies to the 'sentencepiece' and 'unigram'"),
        ({"tie_break": "lexical"}, "tie_break", "sentencepiece's trainer orders equal counts its own way"),
        ({"vocab_size": 5000}, "vocab_size", "choose a vocab_size of at most"),
        ({"vocab_size": 20}, "vocab_size", "raise vocab_size or lower character_coverage"),
        ({"merges": 2000, "vocab_size": None}, "merges", "choose at most"),
    ],
)
def test_bad_options_are_a_422_naming_the_field(client, body, field, words):
    before = train(client, corpus=LOW, algorithm="sentencepiece", merges=3)
    r = client.post("/api/train", json={"corpus": SAMPLE_CORPUS, "algorithm": "sentencepiece", "vocab_size": 300} | body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field and field in r.json()["detail"] and words in r.json()["detail"]
    assert not re.search(r"[A-Z]\w*Error|Traceback", r.json()["detail"])
    assert client.get(f"/api/train/{before['id']}").json()["status"] == "done"  # nothing stored is lost


def test_a_size_out_of_reach_is_sentencepieces_own_limit(client, tmp_path):
    r = client.post("/api/train", json={"corpus": LOW, "algorithm": "sentencepiece", "vocab_size": 1000,
                                        "sentencepiece": {"byte_fallback": True}})
    most = int(re.search(r"at most (\d+)", r.json()["detail"]).group(1))
    assert r.status_code == 422 and most > 259  # the byte pieces count in the size
    with pytest.raises(RuntimeError, match="Vocabulary size"):
        reference(tmp_path, LOW, most + 1, "bpe", byte_fallback=True)
    run = train(client, corpus=LOW, algorithm="sentencepiece", vocab_size=most, sentencepiece={"byte_fallback": True})
    assert len(processor(export(client, run))) == most


def test_steps_are_sentencepieces_merges_with_their_frequency(client, tmp_path):
    run = train(client, corpus=CORPUS, algorithm="sentencepiece", vocab_size=300)
    steps = client.get(f"/api/train/{run['id']}").json()["steps"]
    want = reference(tmp_path, CORPUS, 300, "bpe").pieces
    assert [s["token"] for s in steps] == [p.piece for p in want[3 : 3 + len(steps)]]
    counts = [s["count"] for s in steps]
    assert counts == sorted(counts, reverse=True)  # a merge only lowers other pairs' counts, or makes smaller ones
    for s in steps[:40]:  # each merge heads the pair table it was chosen from, with its count
        view = client.get(f"/api/train/{run['id']}/steps/{s['step']}").json()
        assert view["top_pairs"][0]["winner"] and view["top_pairs"][0]["count"] == s["count"] == view["count"]


# -- the setup page ---------------------------------------------------------------------------------------------


def test_the_form_trains_with_the_options_it_shows(client, tmp_path):
    page = client.get("/lab").text
    assert 'name="sp_present"' in page and 'name="sp_byte_fallback" value="1">' in page  # off by default
    assert 'name="sp_add_dummy_prefix" value="1" checked' in page and 'value="0.9995"' in page
    form = {"corpus": CORPUS, "algorithm": "sentencepiece", "pattern": "none", "size": "400", "size_kind": "vocab_size",
            "tie_break": "first", "sp_present": "1", "sp_byte_fallback": "1", "sp_split_digits": "1",
            "sp_add_dummy_prefix": "1", "sp_remove_extra_whitespaces": "1", "sp_split_by_unicode_script": "1",
            "sp_split_by_number": "1", "sp_split_by_whitespace": "1", "sp_normalization_rule_name": "nmt_nfkc",
            "sp_character_coverage": "0.9995", "sp_max_sentencepiece_length": "16", "sp_unk_id": "0", "sp_bos_id": "1",
            "sp_eos_id": "2", "sp_pad_id": "-1", "sp_user_defined_symbols": "", "sp_max_sentence_length": "4192",
            "sp_shrinking_factor": "0.75", "sp_num_sub_iterations": "2"}
    r = client.post("/lab/train", data=form, follow_redirects=False)
    assert r.status_code == 303, r.text
    run_id = r.headers["location"].split("/")[-1].split("?")[0]
    run = client.get(f"/api/train/{run_id}").json()
    assert run["options"]["sentencepiece"] == {"byte_fallback": True, "split_digits": True}
    want = reference(tmp_path, CORPUS, 400, "bpe", byte_fallback=True, split_digits=True).pieces
    assert [p.piece for p in ModelProto.parse(export(client, run)).pieces] == [p.piece for p in want]
    again = client.get(f"/lab?from={run_id}").text  # "New run" shows the run's options
    assert 'name="sp_byte_fallback" value="1" checked' in again and 'name="sp_split_digits" value="1" checked' in again
    bad = client.post("/lab/train", data=form | {"sp_character_coverage": "most"})
    assert bad.status_code == 422 and "sentencepiece.character_coverage must be a number" in html.unescape(bad.text)
    assert html.escape(CORPUS[:200]) in bad.text  # the corpus stays in its box


def test_the_llama2_preset_and_where_its_values_come_from(client):
    page = client.get("/lab").text
    button = re.search(r"<button[^>]*class=\"btn btn-small spm-preset\" data-preset='([^']*)'[^>]*>Llama 2</button>",
                       page)
    assert json.loads(html.unescape(button.group(1))) == PRESETS["llama-2"]["options"]
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "Where the Llama 2 preset's values come from" in text and "That file is not shipped here" in text
    for name, source in PRESETS["llama-2"]["sources"].items():
        assert f"{name} = {json.dumps(PRESETS['llama-2']['options'][name])}: {source}" in text


# -- the lessons --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["byte-fallback", "no-byte-fallback"])
def test_a_lesson_is_one_click(client, key):
    assert f'name="lesson" value="{key}"' in client.get("/lab").text
    r = client.post("/lab/train", data={"lesson": key}, follow_redirects=False)
    assert r.status_code == 303
    url = r.headers["location"]
    run_id = url.split("/")[-1].split("?")[0]
    run = client.get(f"/api/train/{run_id}").json()
    assert url == f"/lab/runs/{run_id}?step={run['merges']}&lesson={key}" and run["vocab_size"] == 400
    assert run["options"]["sentencepiece"] == {"byte_fallback": key == "byte-fallback"}
    page = client.get(url).text
    assert EXAMPLES[key]["lesson"]["text"] in html.unescape(page)
    assert f'value="{KOREAN}"' in page and 'hx-trigger="load, submit"' in page  # the Korean text, encoded at once
    vocab = client.get(f"/lab/runs/{run_id}/vocab", params={"step": run["merges"]}).text
    kinds = re.findall(r'<span class="muted small">(special|byte|#\d+|character)</span>', vocab)
    order = [k if not k.startswith("#") else "merged" for k in kinds]
    assert [k for i, k in enumerate(order) if i == 0 or order[i - 1] != k] == (
        ["special", "byte", "merged", "character"] if key == "byte-fallback" else ["special", "merged", "character"])
    assert len(kinds) == 400 and order.count("byte") == (256 if key == "byte-fallback" else 0)
    trace = client.post(f"/lab/runs/{run_id}/encode", data={"text": KOREAN, "step": run["merges"]}).text
    if key == "byte-fallback":
        assert "&lt;0xEC&gt;" in trace and "&lt;unk&gt;" not in trace and "a byte piece per byte" in trace
    else:
        assert "&lt;unk&gt;" in trace and "&lt;0x" not in trace and "no byte fallback" in trace
