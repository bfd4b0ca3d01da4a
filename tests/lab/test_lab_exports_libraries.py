"""A byte- or character-level run's exports load in their libraries and encode as the lab does (issue 34 part 2):
the ``tokenizer.json`` in Hugging Face's ``tokenizers``, the ``tiktoken.json`` in ``tiktoken`` (``tiktoken.Encoding``
made from it), superword runs with their stage-two pre-tokenizer. The lab's count is its encode view's, at the
run's last step."""

from __future__ import annotations

import base64
import json

import pytest
import tiktoken
from helpers import realtext
from helpers.lab_training import done_run
from tokenizers import Tokenizer

from app.lab.export import ExportError, export, oniguruma
from app.lab.replay import RunReplay
from app.lab.run_tokenizers import spec_for
from app.lab.runs import Run

CORPUS = (
    "The cat sat on the mat. It's 12,345,678 cats, and 2024 dogs!\n"
    "Of the cats on the mats, of the dogs in the fog: don't they'll we've?\n"
    "  Indented line\twith a tab, café, naïve, 日本語のテキスト, emoji 🙂🙂.\n"
) * 12
TEXTS = [
    "the dog sat on the log. 7654321 dogs, 42 cats!",
    "Of the cats, of the dogs\n\n  in the fog: don't they'll?",
    "café 日本語 🙂 naïve\r\nNEW LINE   spaces\t\ttabs",
    "",
    "x",
]


def lab_ids(run: Run, text: str) -> list[int]:
    return RunReplay(run).encode_trace(text, run.n_steps)["ids"]


def hugging_face(run: Run) -> Tokenizer:
    body, media, ext = export(run, "tokenizer.json")
    assert media == "application/json" and ext == "tokenizer.json"
    return Tokenizer.from_str(body.decode())


def tiktoken_encoding(run: Run) -> tiktoken.Encoding:
    d = json.loads(export(run, "tiktoken.json")[0])
    ranks = {base64.b64decode(token): rank for token, rank in d["mergeable_ranks"].items()}
    return tiktoken.Encoding(d["name"], pat_str=d["pat_str"], mergeable_ranks=ranks, special_tokens=d["special_tokens"])


BYTE_RUNS = {
    "gpt4": {"pattern": "gpt4"},
    "gpt2": {"pattern": "gpt2"},
    "o200k": {"pattern": "o200k"},
    "digits": {"pattern": "digits"},
    "digits-r2l": {"pattern": "digits-r2l"},
    "whitespace": {"pattern": "whitespace"},
    "none": {"pattern": "none"},
    "custom, every character": {"pattern": "custom", "pattern_regex": r"\p{L}+|\p{N}{1,2}|[^\p{L}\p{N}]"},
    "custom, stretches between": {"pattern": "custom", "pattern_regex": r" ?\p{L}+"},
    "superwords": {"pattern": "gpt4", "superwords": {"transition": 120}},
    "superwords, digits-r2l then whitespace": {"pattern": "digits-r2l",
                                                "superwords": {"transition": 100, "pattern": "whitespace"}},
    "superwords, custom stage two": {"pattern": "gpt2",
                                     "superwords": {"transition": 100, "pattern_regex": r"[^.!?\n]+[.!?]?"}},
    "min_count 1": {"pattern": "gpt4", "min_count": 1},
}


@pytest.mark.parametrize("opts", list(BYTE_RUNS.values()), ids=list(BYTE_RUNS))
def test_byte_level_exports_encode_as_the_lab_does(opts):
    run = done_run(CORPUS, algorithm="byte", merges=240, **opts)
    hf, tt = hugging_face(run), tiktoken_encoding(run)
    playground = spec_for(run).factory()  # "use in playground"
    for text in [*TEXTS, CORPUS[:500]]:
        want = lab_ids(run, text)
        assert hf.encode(text).ids == want, text
        assert tt.encode(text) == want, text
        assert playground.encode(text) == want, text
        assert hf.decode(want) == text and tt.decode(want) == text


@pytest.mark.parametrize(
    "opts",
    [{"pattern": "gpt2"}, {"pattern": "whitespace"}, {"pattern": "gpt4", "superwords": {"transition": 80}}],
    ids=["gpt2", "whitespace", "superwords"],
)
def test_character_level_tokenizer_json_encodes_as_the_lab_does(opts):
    run = done_run(CORPUS, algorithm="char", merges=160, **opts)
    hf = hugging_face(run)
    playground = spec_for(run).factory()  # "use in playground"
    for text in [*TEXTS, "ünseen çharacters ∑ 𝐀", CORPUS[:400]]:
        assert hf.encode(text).ids == lab_ids(run, text), text
        assert playground.encode(text) == lab_ids(run, text), text


def test_superword_exports_on_real_text():
    realtext.require()
    (corpus,) = realtext.slices("en", 1, 60_000, seed=9)
    (held_out,) = realtext.slices("en", 1, 5_000, seed=10)
    run = done_run(corpus, algorithm="byte", pattern="gpt4", merges=800, superwords={"transition": 600})
    assert any(b" " in s.token.strip() for s in run.steps[600:])  # superwords were learned
    want = lab_ids(run, held_out)
    assert hugging_face(run).encode(held_out).ids == want
    assert tiktoken_encoding(run).encode(held_out) == want


def test_oniguruma_spelling_and_refusals():
    assert oniguruma(r"\p{N}{1,3}+|\s+") == r"\p{N}{1,3}|\s+"
    with pytest.raises(ExportError, match=r"possessive repeat count"):
        oniguruma(r"a{2}+")
    with pytest.raises(ExportError, match=r"reads otherwise"):
        oniguruma(r"\w+")


def test_exports_refused_where_the_format_cannot_hold_the_run():
    eow = done_run("low lower lowest " * 3, algorithm="char", pattern="whitespace", merges=4, end_of_word=True)
    with pytest.raises(ExportError, match="tokenizer.json has no token of its own for </w>"):
        export(eow, "tokenizer.json")
    with pytest.raises(ExportError, match="tiktoken holds byte-level vocabularies only"):
        export(eow, "tiktoken.json")
    words = done_run("low lower lowest " * 3, algorithm="byte", pattern="custom", pattern_regex=r"\w+", merges=4)
    with pytest.raises(ExportError, match=r"uses \\w"):
        export(words, "tokenizer.json")
