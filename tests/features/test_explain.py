"""Explanations checked against the reference libraries, never against Tokenplay's own output.

For every token of real text (a slice of each corpus) and of hard strings, for each shipped BPE model:

- replaying ``steps`` from the pre-token's symbols, each step merges the adjacent pair of lowest rank among all
  adjacent pairs at that moment (leftmost on ties), ranks read from the reference library's own data; each
  step's ``candidates`` are exactly the pairs that could merge then; when the steps end no pair can merge, and the
  parts left are exactly the reference's tokens for that pre-token (in the whole text, and on its own where the
  library can encode one pre-token);
- the merge tree rebuilds the token with the model's rank at every inner node, and the steps marked
  ``in_token`` are the tree's merges;
- a pre-token taken whole is one token for the reference too; special, added and byte-fallback tokens are what
  the reference made of that text.
"""

from __future__ import annotations

import pytest
from helpers import realtext
from helpers.explain_referees import (
    Characters,
    HFByteReferee,
    RunReferee,
    SentencePieceReferee,
    referee,
    tiktoken_referee,
)

from app.engines import registry
from app.features.explain import Explainer

MODELS = [
    "gpt2",
    "p50k_base",
    "cl100k_base",
    "o200k_base",
    "o200k_harmony",
    "llama-3",
    "qwen3",
    "deepseek-v3",
    "gemma-3",
    "mistral-7b",
    # issue 24's models
    "llama-3.1",
    "llama-2",
    "qwen2.5",
    "deepseek-v4",
    "gemma-2",
    "mistral-nemo",
    "claude-legacy",
]
HARD = [
    "  indented code:\n\tif x == 1:\n\t\treturn 'ok'  \n",
    "👨‍👩‍👧‍👦 and 🏳️‍🌈, ꙮ and 東京スカイツリーは634メートルです。",
    "Numbers 1234567 and 3.14159, naïve Cafe\u0301 <|endoftext|> <|im_start|> <think>",
]


def texts() -> list[str]:
    realtext.require()
    return [piece for name in realtext.NAMES for piece in realtext.slices(name, 1, 700, seed=3)] + HARD


def decoder(ref):
    return (lambda h: bytes.fromhex(h).decode("utf-8")) if ref.chars else bytes.fromhex


def replay(explanation: dict, ref) -> list:
    """The parts left after replaying the steps by the reference's ranks, checking every step on the way."""
    pre = explanation["pretoken"]
    decode = decoder(ref)
    parts = ref.symbols(pre["text"])
    if pre["window"]:
        parts = parts[pre["window"]["start"] : pre["window"]["end"]]
    for step in explanation["steps"]:
        ranks = [ref.rank(a, b) for a, b in zip(parts, parts[1:])]
        present = [(parts[i], parts[i + 1], r) for i, r in enumerate(ranks) if r is not None]
        assert [(decode(c["left"]), decode(c["right"]), c["rank"]) for c in step["candidates"]] == present
        low = min(r for r in ranks if r is not None)
        i = ranks.index(low)
        assert (decode(step["left"]), decode(step["right"]), step["rank"]) == (parts[i], parts[i + 1], low)
        assert decode(step["merged"]) == parts[i] + parts[i + 1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    assert all(ref.rank(a, b) is None for a, b in zip(parts, parts[1:])), "a pair could still merge"
    return parts


def tree_symbols(node: dict, ref, inner: list) -> object:
    """Rebuild a tree bottom-up, checking each inner node's bytes and rank; ``inner`` collects the merged parts."""
    decode = decoder(ref)
    data = decode(node["bytes"])
    if not node["children"]:
        assert node["rank"] is None
        return data
    left, right = (tree_symbols(child, ref, inner) for child in node["children"])
    assert left + right == data
    assert node["rank"] == ref.rank(left, right)
    inner.append(data)
    return data


def window_of(parts: list, window: dict | None, ref) -> list:
    """The reference's parts inside the retraced window (its edges must be part edges)."""
    if window is None:
        return parts
    out, pos = [], 0
    for part in parts:
        size = len(ref.symbols(part) if ref.chars else part)
        if window["start"] <= pos and pos + size <= window["end"]:
            out.append(part)
        else:
            assert pos + size <= window["start"] or pos >= window["end"], "the window cuts a token"
        pos += size
    return out


def check(explanation: dict, ref, ref_ids: list[int]) -> None:
    pre, token, kind = explanation["pretoken"], explanation["token"], explanation["kind"]
    first, end = pre["tokens"]
    ids = ref_ids[first:end]
    assert token["id"] == ref_ids[explanation["index"]]
    if kind in ("special", "added"):
        assert ids == [token["id"]] and explanation["steps"] == []
        return
    if kind == "byte_fallback":
        assert ref.piece(token["id"]).startswith("<0x") and explanation["steps"] == []
        return
    assert kind == "merge"
    single = ref.single(pre["text"])
    if single is not None:
        assert single == ids, "the pre-token on its own encodes as in the text"
    inner: list = []
    built = tree_symbols(explanation["tree"], ref, inner)
    if ref.chars:
        assert built == ref.piece(token["id"])
    else:
        assert built.hex() == token["bytes"]
    if pre["whole"]:
        assert ids == [token["id"]] and explanation["steps"] == []
        assert ref.symbols(pre["text"]) == ref.symbols(built) if ref.chars else pre["text"].encode() == built
        return
    assert replay(explanation, ref) == window_of(ref.parts(ids), pre["window"], ref)
    marked = [bytes.fromhex(s["merged"]) for s in explanation["steps"] if s["in_token"]]
    assert sorted(marked) == sorted(p.encode() if ref.chars else p for p in inner)


@pytest.mark.parametrize("name", MODELS)
def test_explanations_replay_by_the_reference(name):
    ref = referee(name)
    tok = registry.get(name)
    for text in texts():
        explainer = Explainer(tok, text)
        ref_ids = ref.encode(text)
        assert explainer.result.ids == ref_ids
        seen: set[str] = set()
        for unit in explainer.units:
            if unit.text in seen:
                continue
            seen.add(unit.text)
            for index in range(unit.first, unit.first + len(unit.ids)):
                check(explainer.explain(index).to_dict(), ref, ref_ids)


# -- Tokenplay's own models: custom-bpe and lab runs, by tiktoken / sentencepiece / the run's records ----------------
LAB_CORPUS = "the lower lowest newer newest wider widest " * 20 + "東京の東京 naïve 😀 code_block = 42\n"


def lab_tokenizer(corpus: str, **options):
    from app.lab.algorithms import train
    from app.lab.options import Options
    from app.lab.runs import Run
    from app.lab.run_tokenizers import spec_for

    opts = Options(**options).check(10_000)
    trained = train(corpus, opts, max_merges=10_000)
    run = Run("t0", corpus, opts, status="done", base=trained.base, steps=trained.steps, model=trained.model)
    return run, spec_for(run).factory()


def check_all(tok, ref, texts: list[str]) -> None:
    for text in texts:
        explainer = Explainer(tok, text)
        ref_ids = ref.encode(text)
        assert explainer.result.ids == ref_ids
        for index in range(len(ref_ids)):
            check(explainer.explain(index).to_dict(), ref, ref_ids)


def test_custom_bpe_explanations_replay_by_tiktoken():
    tok = registry.get("custom-bpe")
    check_all(tok, tiktoken_referee(dict(tok.ranks), tok.pattern), [LAB_CORPUS, HARD[0]])


@pytest.mark.parametrize("pattern", ["gpt4", "whitespace", "none"])
def test_lab_byte_run_explanations_replay_by_tiktoken(pattern):
    _, tok = lab_tokenizer(LAB_CORPUS, algorithm="byte", pattern=pattern, merges=60)
    check_all(tok, tiktoken_referee(dict(tok.ranks), tok.pattern), ["the newest wider 東京 " * 6 + "lowest?"])


def test_lab_sentencepiece_run_explanations_replay_by_sentencepiece():
    # byte fallback on (sentencepiece's default is off): the characters the corpus lacks are explained as bytes
    run, tok = lab_tokenizer(LAB_CORPUS, algorithm="sentencepiece", pattern="none", merges=40,
                             sentencepiece={"byte_fallback": True})
    check_all(tok, SentencePieceReferee(run.model), ["the newest wider ꙮ 東京\nlowest  newer"])


def test_lab_char_run_explanations_replay_by_the_run_records():
    run, tok = lab_tokenizer(LAB_CORPUS, algorithm="char", pattern="whitespace", merges=40, end_of_word=True)
    ref = RunReferee(run.steps)
    text = "the newest  wider lowest ꙮ"
    explainer = Explainer(tok, text)
    kinds = set()
    for index in range(len(explainer)):
        e = explainer.explain(index).to_dict()
        kinds.add(e["kind"])
        assert e["token"]["id"] == tok.encode(text)[index]
        if e["kind"] == "merge":
            parts = replay(e, ref)
            first, end = e["pretoken"]["tokens"]
            ids = tok.encode(text)[first:end]
            if all(i in tok.vocab for i in ids):  # (a character the run never saw falls back to its bytes)
                assert [tok.vocab[i] for i in ids] == parts
            inner: list = []
            tree_symbols(e["tree"], ref, inner)
    assert kinds == {"merge", "byte_fallback"}  # the whitespace between words is a pre-token too: no plain text


# -- uploaded tokenizer files ----------------------------------------------------------------------------------------
def trained_tokenizer_json() -> bytes:
    """A small byte-level BPE trained by Hugging Face tokenizers itself (a file a user might upload)."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([LAB_CORPUS] * 3, trainer=trainer)
    return tok.to_str().encode()


@pytest.mark.parametrize("engine", ["huggingface", "tokenplay"])
def test_an_uploaded_tokenizer_json_is_explained_in_either_engine(engine):
    from app.engines.registry.loaders import load_tokenizer

    data = trained_tokenizer_json()
    tok = load_tokenizer(data, name="my-upload", engine=engine)
    check_all(tok, HFByteReferee(data), ["the newest wider 東京 lowest?"])
    engine_name = Explainer(tok, "newer").explain(0).engine
    assert engine_name == ("native-my-upload" if engine == "huggingface" else "my-upload")


def test_an_uploaded_tiktoken_file_is_explained(tmp_path):
    from app.cli import main
    from app.engines.registry.loaders import load_tokenizer

    ranks_text = registry.get("custom-bpe").tiktoken_ranks_text().encode()
    tok = load_tokenizer(ranks_text, name="ranks", pattern="gpt4")
    check_all(tok, tiktoken_referee(dict(tok.ranks), tok.pattern), [LAB_CORPUS[-60:]])
    path = tmp_path / "ranks.tiktoken"
    path.write_bytes(ranks_text)
    assert main(["explain", "--file", str(path), "--pattern", "gpt4", "--index", "0", "--tree", "lowest"]) == 0


# -- long pre-tokens, special tokens, rules, refusals ------------------------------------------------------------
@pytest.mark.parametrize("name", ["cl100k_base", "llama-3", "gemma-3", "mistral-7b"])
def test_long_pretokens_are_retraced_in_a_window_that_matches_the_reference(name):
    ref, tok = referee(name), registry.get(name)
    for text in ["a" * 3000, "東京スカイツリーは" * 200]:
        explainer = Explainer(tok, text)
        ref_ids = ref.encode(text)
        for index in sorted({0, 1, len(ref_ids) // 2, len(ref_ids) - 1}):
            e = explainer.explain(index).to_dict()
            check(e, ref, ref_ids)
            window = e["pretoken"]["window"]
            if window is not None:
                assert window["end"] - window["start"] <= 64 or len(e["steps"]) + 1 == len(
                    bytes.fromhex(e["token"]["bytes"])
                )
                assert any("window" in note for note in e["notes"])


def test_special_tokens_say_whether_they_were_parsed():
    tok = registry.get("cl100k_base")
    text = "hi<|endoftext|>there"
    parsed = Explainer(tok, text, allow_special=True)
    index = parsed.result.ids.index(100257)
    e = parsed.explain(index).to_dict()
    assert e["kind"] == "special" and e["steps"] == [] and e["token"]["special"]
    assert "allowed" in e["notes"][0]
    plain = Explainer(tok, text)
    assert 100257 not in plain.result.ids
    e = plain.explain(1).to_dict()  # a piece of "<|endoftext|>" as text
    assert any("<|endoftext|>" in note and "not allowed" in note for note in e["notes"])


def test_added_tokens_of_a_tokenizer_json_are_their_own_kind():
    tok = registry.get("qwen3")
    explainer = Explainer(tok, "a <think> b")
    index = explainer.result.ids.index(151667)
    e = explainer.explain(index).to_dict()
    assert e["kind"] == "added" and e["steps"] == [] and e["pretoken"]["text"] == "<think>"


@pytest.mark.parametrize(
    "name, text, piece, rule",
    [
        ("cl100k_base", "x 1234567", "123", "digits, up to three at a time"),
        ("qwen3", "x 1234567", "1", "one digit"),
        ("gpt2", "it's", "'s", "a contraction ('s, 't, 're, 've, 'm, 'll, 'd)"),
        ("deepseek-v3", "hi 東京です", "東京です", "a run of Chinese characters and kana"),
        ("o200k_base", "x    y", "   ", "whitespace, leaving its last character to the word after it"),
    ],
)
def test_a_pretoken_names_the_alternative_that_matched_it(name, text, piece, rule):
    explainer = Explainer(registry.get(name), text)
    unit = next(u for u in explainer.units if u.text == piece)
    e = explainer.explain(unit.first).to_dict()
    assert e["pretoken"]["text"] == piece and e["pretoken"]["rule"] == rule


def test_sentencepiece_explanations_name_the_dummy_prefix_and_byte_fallback():
    tok = registry.get("mistral-7b")
    explainer = Explainer(tok, "Hello ꙮ")
    first = explainer.explain(0).to_dict()
    assert first["pretoken"]["text"].startswith("▁") and any("dummy prefix" in n for n in first["notes"])
    kinds = [explainer.explain(i).to_dict()["kind"] for i in range(len(explainer))]
    assert kinds.count("byte_fallback") == 3


def test_index_out_of_range_and_non_bpe_tokenizers_are_refused():
    from app.features.explain import NotExplainableError, TokenIndexError

    with pytest.raises(TokenIndexError, match="out of range"):
        Explainer(registry.get("gpt2"), "hello").explain(5)

    with pytest.raises(NotExplainableError, match="not a BPE tokenizer"):
        Explainer(Characters(), "hello")


@pytest.mark.parametrize("name", ["llama-3", "qwen3", "deepseek-v3", "llama-3.1", "qwen2.5", "deepseek-v4",
                                  "mistral-nemo", "claude-legacy"])
def test_every_rule_of_a_shipped_split_pattern_has_a_name(name):
    """The explain view says which rule cut a pre-token in words for every shipped model's split regex (Tekken's
    word rules are o200k's without the contractions)."""
    import json

    from app.engines import datafiles
    from app.engines.huggingface.npm_models import NPM_MODELS
    from app.engines.pipeline.pretokenizers import BYTE_LEVEL_PATTERN
    from app.engines.pipeline.tokenizer_json import pipeline_steps
    from app.features.explain.split_rules import alternatives, rule_name

    spec = json.loads(datafiles.verified_bytes(NPM_MODELS[name].tokenizer_file))
    patterns = [step["pattern"]["Regex"] for step in pipeline_steps(spec["pre_tokenizer"], "pretokenizers")
                if step["type"] == "Split"]
    patterns += [BYTE_LEVEL_PATTERN for step in pipeline_steps(spec["pre_tokenizer"], "pretokenizers")
                 if step["type"] == "ByteLevel" and step.get("use_regex", True)]
    assert patterns
    for pattern in patterns:
        alts = alternatives(pattern)
        unnamed = [alt for k, alt in enumerate(alts) if rule_name(alt, k, len(alts)).startswith("alternative ")]
        assert unnamed == [], pattern
