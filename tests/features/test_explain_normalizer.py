"""What the normalizer changed, for every kind of model, checked against the reference libraries' normalizers.

Replacing each change's ``before`` by its ``after`` in the input gives exactly the library's normalized text
(``sentencepiece``'s ``normalize``, ``tokenizers``' ``normalize_str``; tiktoken's encodings have no normalizer and
change nothing); every change's ``before`` is the input at its place; the changes of any stretch are those of the
whole text that touch it; and each explanation's changes turn its pre-token's input into the text the model cut.
"""

from __future__ import annotations

import random

import pytest
from helpers import realtext
from helpers.walk_referees import UnigramReferee, WordPieceReferee

from app.engines import datafiles, registry
from app.engines.huggingface.npm_models import NPM_MODELS
from app.features.explain import Explainer
from app.features.explain.normalization import merged, what_changed

HARD = [
    "  Héllo  Wörld, naïve CAFÉ  ",
    "e\u0301 \u0041\u030a ﬁne ①② ＡＢＣ ｶﾞ \u00a0nbsp\tand\ttabs\n\nnew lines \x00\x01 zero\u200bwidth",
    "北京欢迎你 東京スカイツリーは634メートルです。 한국어 😀👍🏽",
]
MODELS = ["gpt2", "o200k_base", "custom-bpe", "llama-3", "qwen3", "deepseek-v3", "gemma-3", "mistral-7b", "jurassic-2",
          "bert-base-uncased", "llama-3.1", "llama-2", "qwen2.5", "deepseek-v4", "gemma-2", "mistral-nemo",
          "claude-legacy"]


def texts() -> list[str]:
    realtext.require()
    return [piece for name in realtext.NAMES for piece in realtext.slices(name, 1, 500, seed=17)] + HARD


def reference_normalizer(name: str):
    """The reference library's normalization of a whole text, for a registered model."""
    if name in ("gpt2", "o200k_base", "custom-bpe"):
        return lambda text: text
    if name in ("mistral-7b", "jurassic-2"):
        path = {"mistral-7b": "sentencepiece/mistral-7b-v0.1.model", "jurassic-2": "sentencepiece/jurassic-2.model"}
        return UnigramReferee(datafiles.verified_bytes(path[name])).library.normalize
    if name == "bert-base-uncased":
        tok = registry.get(name)
        lib = WordPieceReferee.bert([tok.id_to_token(i) for i in range(tok.n_vocab)]).library
        return lib.normalizer.normalize_str
    from tokenizers import Tokenizer

    lib = Tokenizer.from_file(str(datafiles.data_path(NPM_MODELS[name].tokenizer_file)))
    return (lambda text: text) if lib.normalizer is None else lib.normalizer.normalize_str


def applied(text: str, changes, start: int = 0, end: int | None = None) -> str:
    """``text[start:end]`` with every change made."""
    end = len(text) if end is None else end
    out, pos = [], start
    for c in changes:
        assert pos <= c.start and c.end <= end, "changes are in order, apart, inside the stretch"
        out.append(text[pos : c.start] + c.after)
        pos = c.end
    return "".join(out) + text[pos:end]


@pytest.mark.parametrize("name", MODELS)
def test_the_changes_turn_the_text_into_the_librarys_normalized_text(name):
    normalize = reference_normalizer(name)
    tok = registry.get(name)
    rng = random.Random(3)
    for text in texts():
        norm = Explainer(tok, text).normalization
        changes = norm.changes(0, len(text))
        assert applied(text, changes) == normalize(text)
        for c in changes:
            assert text[c.start : c.end] == c.before != c.after and c.what
        if name in ("gpt2", "o200k_base", "custom-bpe", "llama-3", "llama-3.1", "mistral-nemo"):
            assert norm.steps == [] and changes == [] and "no normalizer" in norm.summary(changes)
        for _ in range(5):
            a = rng.randrange(len(text))
            b = rng.randrange(a, len(text) + 1)
            assert norm.changes(a, b) == [c for c in changes if c.start < b and c.end > a]


@pytest.mark.parametrize(
    "name", ["qwen3", "gemma-3", "mistral-7b", "jurassic-2", "bert-base-uncased", "gpt2", "llama-2", "claude-legacy",
             "native-gemma-2", "native-mistral-nemo"],
)
def test_each_explanation_carries_its_pretokens_normalization(name):
    tok = registry.get(name)
    for text in HARD:
        explainer = Explainer(tok, text)
        for unit in explainer.units:
            if unit.kind != "merge":
                continue
            e = explainer.explain(unit.first).to_dict()
            pre, normalizer = e["pretoken"], e["normalizer"]
            changes = merged(explainer.normalization.changes(pre["start"], max(pre["end"], pre["start"] + 1)))
            assert [c.to_dict() for c in changes] == normalizer["changes"]
            start = min([pre["start"]] + [c.start for c in changes])
            end = max([pre["end"]] + [c.end for c in changes])
            made = applied(text, changes, start, end)
            if e["kind"] == "wordpiece":  # the pre-tokenizer drops the spaces the normalizer may put around a word
                assert made.strip() == pre["text"] == e["normalized"]
            elif name in ("mistral-7b", "llama-2"):  # the dummy prefix ▁ may be a unit of its own, made by its neighbour's change
                assert pre["text"] in made                             # ("北" -> "▁北", " " -> "▁▁")
            else:
                assert made == pre["text"]
            assert normalizer["summary"] and (normalizer["steps"] or not normalizer["changes"])


@pytest.mark.parametrize(
    "name, text, before, after, what",
    [
        ("bert-base-uncased", "Café", "C", "c", ["lowercased"]),
        ("bert-base-uncased", "Café", "é", "e", ["accents stripped"]),
        ("bert-base-uncased", "ÉCOLE", "É", "e", ["accents stripped", "lowercased"]),
        ("bert-base-uncased", "ÉCOLE", "COLE", "cole", ["lowercased"]),  # neighbours of one kind read as one
        ("bert-base-uncased", "a北b", "北", " 北 ", ["spaced out (a CJK character is a word of its own)"]),
        ("bert-base-uncased", "a\x00b", "\x00", "", ["removed"]),
        ("bert-base-uncased", "a\tb", "\t", " ", ["whitespace → space"]),
        ("jurassic-2", "ﬁne", "ﬁ", "fi", ["NFKC"]),
        ("jurassic-2", "a b", " ", "▁", ["space → ▁"]),
        ("jurassic-2", "①", "①", "1", ["NFKC"]),
        ("qwen3", "e\u0301", "e\u0301", "é", ["NFC"]),
        ("gemma-3", "a b", " ", "▁", ["space → ▁"]),
        ("mistral-7b", "Hello", "H", "▁H", ["dummy prefix ▁"]),
    ],
)
def test_changes_are_named_by_what_explains_them(name, text, before, after, what):
    e = Explainer(registry.get(name), text).explain(0).to_dict()
    changes = merged(Explainer(registry.get(name), text).normalization.changes(0, len(text)))
    assert {"start": text.index(before), "end": text.index(before) + len(before), "before": before, "after": after,
            "what": what} in [c.to_dict() for c in changes]
    assert e["normalizer"]["steps"]


def test_a_model_without_a_normalizer_says_so_and_a_model_with_one_says_when_it_changed_nothing():
    gpt2 = Explainer(registry.get("gpt2"), "Héllo").explain(0).to_dict()["normalizer"]
    assert gpt2 == {"steps": [], "changes": [], "summary": "This model has no normalizer: it cuts the text exactly as it was typed."}
    qwen = Explainer(registry.get("qwen3"), "hello").explain(0).to_dict()["normalizer"]
    assert qwen["steps"] == ["NFC"] and qwen["changes"] == [] and "changed nothing" in qwen["summary"]
    bert = Explainer(registry.get("bert-base-uncased"), "Héllo").explain(0).to_dict()["normalizer"]
    assert "lower-cased" in bert["steps"][0] and "changed 2 things here: lowercased, accents stripped" in bert["summary"]


def test_what_changed_prefers_the_fewest_steps():
    assert what_changed("  ", "▁") == ("extra spaces removed", "space → ▁")
    assert what_changed("Ａ", "a") == ("NFKC", "lowercased")
    assert what_changed("x", "y") == ("replaced",)
    assert what_changed("", "▁") == ("dummy prefix ▁",)
