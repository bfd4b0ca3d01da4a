"""Knowing a vocabulary (issue 35): the browser, ranks/parents/children, the ladder, the health report, the overlap of
two vocabularies, the characters table. Referees: tiktoken (its own definitions of the encodings, truncated
``mergeable_ranks``, its educational BPE), Hugging Face ``tokenizers`` (truncated files, its merges lists) and
``unicodedata``; the health figures of gpt2, cl100k_base and o200k_base are recomputed here from their definitions.
"""

from __future__ import annotations

import json
import random
import unicodedata

import pytest
import regex
import tiktoken
import tokenizers
from helpers import realtext
from helpers.oracles import tiktoken_reference
from tiktoken import _educational

from app.engines import registry
from app.engines.datafiles import verified_bytes
from app.engines.huggingface.npm_models import NPM_MODELS
from app.engines.pipeline.tokenizer_json import byte_level_bytes
from app.features.vocab import health as H
from app.features.vocab.characters import CharactersTooLongError, characters, describe
from app.features.vocab.merges import LadderSizeError, NotMergeBasedError, merge_model
from app.features.vocab.overlap import overlap
from app.features.vocab.tokens import KINDS, VocabQueryError, browse, kind_of, vocabulary

OPENAI = ("gpt2", "cl100k_base", "o200k_base")


def _ranks(name: str) -> dict[bytes, int]:
    return tiktoken_reference(name)._mergeable_ranks


def _text(seed: int = 35, chars: int = 4_000) -> str:
    realtext.require()
    return "".join(realtext.slices(name, 1, chars // 5, seed=seed)[0] for name in realtext.NAMES)


# -- the browser -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["o200k_base", "native-o200k_base", "gpt2"])
def test_browser_lists_every_token_of_tiktoken_by_id(name):
    ref = tiktoken_reference(name.removeprefix("native-"))
    vocab = vocabulary(registry.get(name))
    assert vocab.n_vocab == ref.n_vocab  # o200k_base: 200,019, the reference's own figure
    total, ids = browse(vocab, offset=1000, limit=50)
    assert total == len(vocab.ids) and ids == sorted(ids) and len(ids) == 50
    for tid in ids:
        assert vocab.bytes_of(tid) == ref.decode_single_token_bytes(tid)


def test_browser_finds_by_substring_regex_and_kind():
    ref = tiktoken_reference("cl100k_base")
    vocab = vocabulary(registry.get("cl100k_base"))
    total, ids = browse(vocab, q=" token", limit=1000)
    want = sorted(i for b, i in ref._mergeable_ranks.items() if b" token" in b and b.decode("utf-8", "replace") == b.decode("utf-8", "ignore"))
    assert ids == want[:1000] and total == len(want)
    total, ids = browse(vocab, q="/^ [A-Z][a-z]+ing$/", limit=1000)
    pattern = regex.compile(r"^ [A-Z][a-z]+ing$")
    want = sorted(i for b, i in ref._mergeable_ranks.items() if pattern.search(b.decode("utf-8", "replace")))
    assert ids == want and total == len(want) > 10
    total, ids = browse(vocab, kind="digits", limit=1000)

    def digits(b: bytes) -> bool:  # the definition: decimal digits only, after any leading spaces
        text = b.decode("utf-8", "replace").lstrip(" ")
        return bool(text) and all(unicodedata.category(c) == "Nd" for c in text)

    want = sorted(i for b, i in ref._mergeable_ranks.items() if digits(b))
    assert total == len(want) > 1_000 and ids == want[:1000]
    total, _ = browse(vocab, kind="special")
    assert total == len(registry.get("cl100k_base").special_tokens)


@pytest.mark.parametrize(
    ("query", "words"),
    [({"q": "/(/"}, "not a valid regex"), ({"kind": "emoji"}, "none of"), ({"limit": 0}, "limit"),
     ({"limit": 5000}, "limit"), ({"offset": -1}, "offset")],
)
def test_browser_refuses_bad_queries_in_words(query, words):
    with pytest.raises(VocabQueryError, match=words):
        browse(vocabulary(registry.get("gpt2")), **query)


def test_a_slow_regex_stops_at_its_time_limit(monkeypatch):
    """The search's clock is the test's: each reading of it is a second later, so the limit is reached at once."""
    from app.features.vocab import tokens

    ticks = iter(range(0, 10_000))
    monkeypatch.setattr(tokens, "_now", lambda: float(next(ticks)))
    vocab = vocabulary(registry.get("cl100k_base"))
    with pytest.raises(VocabQueryError, match="longer than"):
        browse(vocab, q="/e/")


def test_kinds():
    assert set(KINDS) == {"byte", "partial-utf8", "word", "space", "digits", "punctuation", "special", "other"}
    assert kind_of(" Привет".encode()) == ("word", "Cyrillic")
    assert kind_of("東京".encode()) == ("word", "Han")
    assert kind_of(b"\t\n") == ("space", "")
    assert kind_of("東".encode()[:2]) == ("partial-utf8", "")
    assert kind_of(b"x", fallback=True) == ("byte", "")
    assert kind_of(b"<|endoftext|>", special=True) == ("special", "")
    vocab = vocabulary(registry.get("mistral-7b"))
    fallback = [vocab.entry(i) for i in vocab.ids if vocab.entry(i).get("piece", "").startswith("<0x")]
    assert len(fallback) == 256 and all(e["kind"] == "byte" for e in fallback)


# -- ranks, parents, children, the ladder ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_parents_are_tiktokens_own_bpe_truncated_at_the_rank(name):
    """tiktoken's educational BPE over a token's bytes with only the ranks below its own ends in its two parents."""
    ranks = _ranks(name)
    model = merge_model(registry.get(name))
    rng = random.Random(7)
    by_rank = sorted(ranks.items(), key=lambda kv: kv[1])
    for data, rank in rng.sample(by_rank[256:], 25):
        truncated = {b: r for b, r in by_rank[:rank]}
        parts = _educational.bpe_encode(truncated, data, visualise=None)
        assert model.parents(rank) == (tuple(parts) if len(parts) == 2 else None), data
        assert model.rank_of_id(rank) == rank
    for child in model.children(model.parents(ranks[b" the"])[0]):
        assert model.parents(ranks[b" the"])[0] in model.parents(child)


def test_parents_and_children_of_a_tokenizer_json_are_its_merges():
    obj = json.loads(verified_bytes(NPM_MODELS["llama-3"].tokenizer_file))
    merges = [m.split(" ") if isinstance(m, str) else m for m in obj["model"]["merges"]]
    vocab = obj["model"]["vocab"]
    order = list(dict.fromkeys(a + b for a, b in merges))  # what the merges make, in order (some make a token twice)
    first = {}
    for a, b in merges:
        first.setdefault(a + b, (a, b))
    for engine in ("llama-3", "native-llama-3"):
        model = merge_model(registry.get(engine))
        for k in (0, 1, 500, 70_000, len(order) - 1):
            a, b = first[order[k]]
            made = vocab[a + b]
            assert model.parents(made) == (vocab[a], vocab[b])  # the first merge that makes it
            assert made in model.children(vocab[a]) and made in model.children(vocab[b])
            assert model.rank_of_id(made) == 256 + k  # the 256 bytes first, then what the merges make, in order


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_ladder_is_tiktoken_with_the_ranks_below_k(name):
    ref = tiktoken_reference(name)
    ranks = _ranks(name)
    text = _text()
    sizes = [256, 257, 300, 1_000, 10_000, len(ranks)]
    for engine in (name, f"native-{name}"):
        got = merge_model(registry.get(engine)).ladder(text, sizes)
        want = []
        for k in sizes:
            truncated = tiktoken.Encoding(name=f"{name}-{k}", pat_str=ref._pat_str,
                                          mergeable_ranks={b: r for b, r in ranks.items() if r < k}, special_tokens={})
            want.append((k, len(truncated.encode_ordinary(text))))
        assert got == want


def _truncated_library(obj: dict, k: int) -> tokenizers.Tokenizer:
    """The library's tokenizer of a tokenizer.json cut to size k: the tokens no merge makes, then the tokens of the
    merges in order until k tokens, and the merges among them."""
    model = obj["model"]
    merges = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
    made = {a + b for a, b in merges}
    keep = {t for t in model["vocab"] if t not in made}
    for a, b in merges:
        if len(keep) >= k:
            break
        keep.add(a + b)
    cut = json.loads(json.dumps(obj))
    cut["model"]["vocab"] = {t: i for t, i in model["vocab"].items() if t in keep}
    cut["model"]["merges"] = [[a, b] for a, b in merges if a in keep and b in keep and a + b in keep]
    tok = tokenizers.Tokenizer.from_str(json.dumps(cut))
    tok.encode_special_tokens = True
    return tok


@pytest.mark.parametrize("name", ["llama-3", "llama-2", "qwen3"])
def test_ladder_of_a_tokenizer_json_is_the_library_with_a_truncated_file(name):
    obj = json.loads(verified_bytes(NPM_MODELS[name].tokenizer_file))
    text = _text(seed=3, chars=3_000)
    for engine in (name, f"native-{name}"):
        model = merge_model(registry.get(engine))
        sizes = [model.n_base, model.n_base + 1, model.n_base + 700, model.size]
        for size, count in model.ladder(text, sizes):
            ref = _truncated_library(obj, size)
            assert count == len(ref.encode(text, add_special_tokens=False).ids), (engine, size)


def test_ladder_refuses_sizes_out_of_range_and_models_without_merges():
    model = merge_model(registry.get("cl100k_base"))
    for sizes, words in (([255], "out of range"), ([100_257], "out of range"), ([], "at least one"),
                         (list(range(300, 320)), "at most")):
        with pytest.raises(LadderSizeError, match=words):
            model.ladder("hi", sizes)
    for name in ("bert-base-uncased", "jurassic-2"):
        with pytest.raises(NotMergeBasedError, match="not a BPE tokenizer"):
            merge_model(registry.get(name))


# -- health ----------------------------------------------------------------------------------------------------------
def _definitions(name: str) -> dict[str, set[int]]:
    """The health figures of a tiktoken encoding, computed here from their definitions with tiktoken itself."""
    ref = tiktoken_reference(name)
    ranks = _ranks(name)
    split = regex.compile(ref._pat_str)
    out = {"unreachable_bpe": set(), "unreachable_pretokenizer": set(), "partial_utf8": set(),
           "never_valid_bytes": set(), "duplicates": set(), "special_reachable": set()}
    for data, rank in ranks.items():
        if len(data) > 1 and _educational.bpe_encode(ranks, data, visualise=None) != [rank]:
            out["unreachable_bpe"].add(rank)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            out["partial_utf8"].add(rank)
        else:
            if len(split.findall(text)) > 1:
                out["unreachable_pretokenizer"].add(rank)
        if any(b in (0xC0, 0xC1) or b >= 0xF5 for b in data):
            out["never_valid_bytes"].add(rank)
    for text, sid in ref._special_tokens.items():
        try:
            if sid in ref.encode(text):
                out["special_reachable"].add(sid)
        except ValueError:
            pass
    return out


@pytest.mark.parametrize("name", OPENAI)
def test_health_figures_of_openai_encodings_are_their_definitions(name):
    want = _definitions(name)
    report = H.compute(registry.get(name))
    assert report["n_vocab"] == tiktoken_reference(name).n_vocab
    for figure, ids in want.items():
        got = report["figures"][figure]
        assert got["count"] == len(ids), figure
        assert [e["id"] for e in got["examples"]] == sorted(ids)[: H.EXAMPLES], figure
    assert report["figures"]["never_valid_bytes"]["count"] == 13  # C0, C1, F5..FF: one token each


def test_health_of_a_tokenizer_json_agrees_between_the_library_and_our_engine():
    a, b = H.compute(registry.get("llama-3")), H.compute(registry.get("native-llama-3"))
    assert a["figures"] == b["figures"]
    lib = registry.get("llama-3").library
    special = {i for i, t in lib.get_added_tokens_decoder().items() if t.special}
    assert a["figures"]["special_reachable"]["count"] == len(special)  # the library reads special text by default
    vocab = lib.get_vocab()
    merges = json.loads(verified_bytes(NPM_MODELS["llama-3"].tokenizer_file))["model"]["merges"]
    pairs = {tuple(m.split(" ") if isinstance(m, str) else m): r for r, m in enumerate(merges)}
    example = a["figures"]["unreachable_bpe"]["examples"][0]
    token = next(t for t, i in vocab.items() if i == example["id"])
    parts = list(token)
    while True:  # the library's BPE by the definition: the listed pair of lowest rank, leftmost first
        found = [(pairs[p], k) for k, p in enumerate(zip(parts, parts[1:])) if p in pairs]
        if not found:
            break
        _, k = min(found)
        parts[k : k + 2] = [parts[k] + parts[k + 1]]
    assert parts != [token] and [byte_level_bytes(p).decode("utf-8", "replace") for p in parts] == example["bpe_gives"]


def test_health_reports_are_kept_on_disk_and_read_back(tmp_path, monkeypatch):
    tok = registry.get("gpt2")
    first = H.HealthStore(tmp_path).report(tok)
    assert list(tmp_path.glob("health-*.json"))
    monkeypatch.setattr(H, "compute", lambda tok: pytest.fail("computed again"))
    again = H.HealthStore(tmp_path).report(tok)
    assert again == first


def test_usage_counts_what_a_text_leaves_unused():
    text = _text()
    ref = tiktoken_reference("cl100k_base")
    used = set(ref.encode_ordinary(text))
    report = H.usage(registry.get("cl100k_base"), text)
    normal = len(ref._mergeable_ranks)
    assert report["used"] == len(used)
    assert report["unused"]["count"] == normal - len(used)
    assert report["share"] == round(len(used) / normal, 6)
    assert not used & {e["id"] for e in report["unused"]["examples"]}


# -- two vocabularies --------------------------------------------------------------------------------------------------
def test_llama_3_kept_cl100ks_tokens():
    lib = registry.get("llama-3").library
    special = set(registry.get("llama-3").special_tokens.values())
    llama = {byte_level_bytes(t) for t, i in lib.get_vocab().items() if i not in special}
    cl100k = set(_ranks("cl100k_base"))
    got = overlap(registry.get("llama-3"), registry.get("cl100k_base"))
    assert got["shared"] == len(llama & cl100k) == 100_256
    assert got["only_b"] == 0 and got["only_a"] == len(llama - cl100k)
    assert got["jaccard"] == round(len(llama & cl100k) / len(llama | cl100k), 6)
    assert sum(s["shared"] for s in got["scripts"]) == got["shared"]


def test_o200k_against_cl100k_by_their_bytes():
    a, b = set(_ranks("o200k_base")), set(_ranks("cl100k_base"))
    got = overlap(registry.get("o200k_base"), registry.get("cl100k_base"))
    assert (got["shared"], got["only_a"], got["only_b"]) == (len(a & b), len(a - b), len(b - a))
    cyrillic = next(s for s in got["scripts"] if s["script"] == "Cyrillic")
    assert cyrillic["only_a"] > 10 * cyrillic["only_b"]  # o200k learned far more Cyrillic


# -- characters --------------------------------------------------------------------------------------------------------
def test_characters_table_describes_each_character_and_its_tokens():
    text = "né 東京 🙂\u0301"
    got = characters(text, [registry.get("gpt2"), registry.get("o200k_base")])
    assert [r["char"] for r in got["rows"]] == list(text)
    for row, ch in zip(got["rows"], text):
        assert row["code_point"] == f"U+{ord(ch):04X}"
        assert row["category"] == unicodedata.category(ch)
        assert bytes.fromhex(row["utf8"]) == ch.encode("utf-8")
        assert bytes.fromhex(row["utf16"]) == ch.encode("utf-16-be")
        assert bytes.fromhex(row["utf32"]) == ch.encode("utf-32-be")
    gpt2 = tiktoken_reference("gpt2")
    ids = gpt2.encode(text)
    ends = [0]
    for i in ids:
        ends.append(ends[-1] + len(gpt2.decode_single_token_bytes(i)))
    for k, ch in enumerate(text):  # the tokens holding some of each character's bytes, by byte offsets
        start = len(text[:k].encode())
        end = start + len(ch.encode())
        want = [ids[t] for t in range(len(ids)) if ends[t] < end and ends[t + 1] > start]
        cell = got["rows"][k]["tokens"]["gpt2"]
        assert [t["id"] for t in cell["tokens"]] == want and cell["split"] == (len(want) > 1), ch
    assert got["rows"][3]["tokens"]["gpt2"]["split"]  # 東 is cut between tokens by GPT-2
    assert describe("\u0301")["script"] == "Inherited" and describe("\x07")["name"] == "<control-0007>"
    with pytest.raises(CharactersTooLongError):
        characters("a" * 10_000, [])


# -- lab runs ------------------------------------------------------------------------------------------------------------
LAB_CORPUS = "the lower lowest newer newest wider widest " * 20 + "東京の東京 naïve 😀 code_block = 42\n"


def _lab_tokenizer(**options):
    from app.lab.algorithms import train
    from app.lab.options import Options
    from app.lab.runs import Run
    from app.lab.run_tokenizers import spec_for

    opts = Options(**options).check(10_000)
    trained = train(LAB_CORPUS, opts, max_merges=10_000)
    run = Run("t0", LAB_CORPUS, opts, status="done", base=trained.base, steps=trained.steps, model=trained.model)
    tok = spec_for(run).factory()
    tok.name = "lab-t0"
    return run, tok


@pytest.mark.parametrize("end_of_word", [False, True])
def test_a_character_lab_runs_tree_and_ladder_are_its_step_records(end_of_word):
    run, tok = _lab_tokenizer(algorithm="char", merges=40, end_of_word=end_of_word)
    model = merge_model(tok)
    for step in run.steps:  # the run's records: each merge's pair and the id it made
        assert model.parents(step.new_id) == tuple(step.pair)
        assert step.new_id in model.children(step.pair[0])
    text = "the newest widest 東京 lowest naïve"
    sizes = [model.n_base, model.n_base + 5, model.size]
    ladder = model.ladder(text, sizes)
    assert ladder[-1] == (model.size, len(tok.encode(text)))
    assert [n for _, n in ladder] == sorted((n for _, n in ladder), reverse=True)
    assert H.compute(tok)["figures"]["unreachable_bpe"]["count"] == 0


def test_ranks_and_tree_kept_once_are_read_back_by_another_process(tmp_path, monkeypatch):
    from app.features.vocab import browser
    from app.features.vocab.store import JSONStore

    tok = registry.get("gpt2")
    before = browser.VocabIndex(tok, JSONStore(tmp_path)).token(31373)  # "hello"
    assert before == browser.token(tok, 31373)  # what the index computes without a store
    assert sorted(p.name.split("-")[0] for p in tmp_path.glob("*.json")) == ["parents", "ranks"]
    monkeypatch.setattr(browser, "merge_model", lambda tok: pytest.fail("computed again"))
    again = browser.VocabIndex(tok, JSONStore(tmp_path))  # a new process: nothing in memory
    assert again.token(31373) == before
    assert again.page(offset=31373, limit=1)["tokens"][0]["rank"] == 31373
    assert [p["text"] for p in before["parents"]] == ["hell", "o"]


@pytest.mark.parametrize("name", ["gemma-3", "gemma-2"])
def test_added_tokens_written_with_the_space_symbol_stand_for_spaces(name):
    """Gemma lists its runs of spaces (``▁▁`` ...) among its added tokens: each stands for what Hugging Face's library
    decodes it to, spaces (not the character ``▁``), in the vocabulary as in the native twin's."""
    ref, native = registry.get(name), registry.get(f"native-{name}")
    added = ref.library.get_added_tokens_decoder()
    runs = [i for i, t in added.items() if not t.special and t.content and set(t.content) == {"▁"}]
    assert len(runs) >= 20
    for token_id in runs:
        want = ref.library.decode([token_id], skip_special_tokens=False).encode()
        assert want.strip(b" ") == b"" and ref.token_bytes(token_id) == want == native.token_bytes(token_id)
    vocab = vocabulary(ref)
    k = vocab.position[runs[0]]
    assert vocab.data[k] == b" " * len(added[runs[0]].content) and vocab.kind_at(k)[0] == "space"
    assert vocab.data == vocabulary(native).data
