"""WordPiece walks and Unigram lattices checked against the reference libraries, never against Tokenplay's output.

WordPiece (``tokenizers``): for every token of real text and hard strings, the explanation's ``normalized`` is the
library's word (normalized, then pre-tokenized) that holds the token, the walk's pieces are exactly the library's
model's pieces of that word, each piece spells its characters of the word (``##`` after the first) and is in the
vocabulary, and each of the ``tried`` longer candidates at its start is not, up to the longest entry's length.

Unigram (``sentencepiece``): ``best`` is exactly the library's pieces for those tokens of the whole text (byte
pieces read back as the character they spell), they spell ``normalized``, which is the library's normalization
of the text there; ``nbest`` is the library's n-best segmentation of that span (given to it exactly, through a
copy of the model that does not normalize again), scores included, the first equal to ``best``.
"""

from __future__ import annotations

import json

import pytest
from helpers import realtext
from helpers.walk_referees import UnigramReferee, WordPieceReferee, unbyte

from app.engines import registry
from app.engines.datafiles import verified_bytes
from app.engines.registry.loaders import load_tokenizer
from app.features.explain import Explainer
from app.features.explain.unigram_plans import NBEST

HARD = [
    "Héllo, Wörld! naïve CAFÉ unaffable UNAFFABLE",
    "北京欢迎你 東京スカイツリーは634メートルです。",
    "don't I'm we've 1,234.56 $%& e\u0301\u0327 ①② ＡＢＣ ｶﾞ",
    "a" * 150 + " " + "x" + "é" * 99 + " ꙮ 😀👍🏽 \x00tab\there",
    "  indented:\n\tif x == 1:\n\t\treturn 'ok'  \n",
]


def texts(size: int = 600) -> list[str]:
    realtext.require()
    return [piece for name in realtext.NAMES for piece in realtext.slices(name, 1, size, seed=11)] + HARD


# -- WordPiece -------------------------------------------------------------------------------------------------------
def check_wordpiece(tok, ref: WordPieceReferee, text: str) -> int:
    """Every token of ``text`` explained and checked; returns how many."""
    explainer = Explainer(tok, text)
    assert explainer.result.ids == ref.ids(text)
    words = ref.words(text)
    units = [u for u in explainer.units if u.kind == "merge"]
    assert [u.text for u in units] == words
    unk = tok.unk_token
    checked = 0
    for unit, word in zip(units, words):
        pieces = ref.word_pieces(word)
        for k in range(len(unit.ids)):
            e = explainer.explain(unit.first + k).to_dict()
            checked += 1
            assert e["kind"] == "wordpiece" and e["normalized"] == word
            assert e["token"]["id"] == explainer.result.ids[e["index"]]
            assert [w["piece"] for w in e["walk"]] == pieces
            assert e["pretoken"]["tokens"] == [unit.first, unit.first + len(unit.ids)]
            if pieces == [unk]:
                assert len(e["walk"]) == 1 and (e["stuck"] is not None or len(word) > tok.max_word_chars)
                continue
            assert e["token_piece"] == k and e["stuck"] is None
            pos = 0
            for n, w in enumerate(e["walk"]):
                prefix = "" if n == 0 else tok.prefix
                assert w["start"] == pos < w["end"]
                assert prefix + word[w["start"] : w["end"]] == w["piece"] and w["piece"] in ref.vocab
                for longer in range(w["end"] + 1, w["end"] + w["tried"] + 1):
                    assert prefix + word[w["start"] : longer] not in ref.vocab
                assert w["end"] + w["tried"] == min(len(word), w["start"] + ref.longest)
                pos = w["end"]
            assert pos == len(word)
    return checked


@pytest.fixture(scope="module")
def bert():
    tok = registry.get("bert-base-uncased")
    return tok, WordPieceReferee.bert([tok.id_to_token(i) for i in range(tok.n_vocab)])


def test_bert_walks_are_the_libraries_pieces_on_real_text(bert):
    tok, ref = bert
    assert sum(check_wordpiece(tok, ref, text) for text in texts()) > 500


def test_a_bert_walk_says_what_it_tried_and_where_it_got_stuck(bert):
    tok, _ = bert
    explainer = Explainer(tok, "unaffable \u0bf5\u0bf5x PLAYING")
    e = explainer.explain(1).to_dict()
    assert e["token"]["text"] == "##ffa" and e["normalized"] == "unaffable"
    assert e["walk"] == [
        {"piece": "una", "start": 0, "end": 3, "tried": 6},
        {"piece": "##ffa", "start": 3, "end": 6, "tried": 3},
        {"piece": "##ble", "start": 6, "end": 9, "tried": 0},
    ]
    assert "looked up 3 longer candidates first ('##ffable', '##ffabl', '##ffab')" in e["notes"][0]
    stuck = explainer.explain(3).to_dict()
    assert stuck["token"]["text"] == "[UNK]" and stuck["walk"][0]["piece"] == "[UNK]"
    assert stuck["stuck"]["start"] == 0 and "no piece" in stuck["notes"][0]
    playing = explainer.explain(4).to_dict()
    assert playing["normalized"] == "playing" and playing["walk"][0]["piece"] == "playing"


@pytest.mark.parametrize("kind", ["uncased", "cased", "whitespace"])
def test_walks_of_models_the_library_trained_are_its_pieces(kind):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from tokenizers.implementations import BertWordPieceTokenizer

    realtext.require()
    corpus = [t for n in realtext.NAMES for t in realtext.slices(n, 30, 2000, seed=21)]
    if kind == "whitespace":
        lib = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=12))
        lib.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        lib.pre_tokenizer = pre_tokenizers.Whitespace()
        lib.decoder = decoders.WordPiece()
        lib.train_from_iterator(corpus, trainers.WordPieceTrainer(vocab_size=1200, special_tokens=["[UNK]"]))
    else:
        trainer = BertWordPieceTokenizer(lowercase=kind == "uncased", strip_accents=None)
        trainer.train_from_iterator(corpus, vocab_size=1500)
        lib = trainer._tokenizer
    data = lib.to_str()
    tok = load_tokenizer(data.encode(), name=f"wp-{kind}")
    ref = WordPieceReferee.from_json(data)
    for text in texts(400):
        check_wordpiece(tok, ref, text)


def test_an_uploaded_vocab_txt_and_a_lab_wordpiece_run_are_walked_as_the_library_walks(bert):
    from app.lab.algorithms import train
    from app.lab.options import Options

    tok, ref = bert
    vocab = "".join(tok.id_to_token(i) + "\n" for i in range(tok.n_vocab)).encode()
    upload = load_tokenizer(vocab, name="my-vocab")
    for text in HARD:
        check_wordpiece(upload, ref, text)
    corpus = "the lower lowest newer newest wider widest " * 20 + "東京の東京 naïve code_block = 42\n"
    trained = train(corpus, Options(algorithm="wordpiece", merges=60).check(10_000), max_merges=10_000)
    run_tok = load_tokenizer(trained.model, name="lab-wp")
    run_ref = WordPieceReferee.from_json(trained.model)
    for text in ["the newest wider lowest", "unknown ꙮ words, newer!", corpus[:300]]:
        check_wordpiece(run_tok, run_ref, text)


# -- Unigram ---------------------------------------------------------------------------------------------------------
TOL = 2e-3


def check_unigram(tok, ref: UnigramReferee, text: str, every: bool = True) -> int:
    """Tokens of ``text`` explained and checked (every token, or the first of each unit); returns how many."""
    explainer = Explainer(tok, text)
    assert explainer.result.ids == ref.library.encode(text)
    pieces = ref.pieces(text)
    normalized = ref.normalize(text)
    assert "".join(unbyte(pieces)) == normalized
    checked = 0
    for unit in explainer.units:
        for index in range(unit.first, unit.first + len(unit.ids)) if every else [unit.first]:
            e = explainer.explain(index).to_dict()
            checked += 1
            check_unigram_explanation(e, ref, text, pieces, normalized)
    return checked


def check_unigram_explanation(e: dict, ref: UnigramReferee, text: str, pieces: list[str], normalized: str) -> None:
    assert e["kind"] == "unigram"
    first, end = e["span"]["tokens"]
    assert first <= e["index"] < end
    best = e["best"]
    # the encoder's pieces for those tokens of the whole text, spelling the library's normalization there
    assert [b["piece"] for b in best] == unbyte(pieces[first:end])
    span = e["normalized"]
    at = len("".join(unbyte(pieces[:first])))
    assert normalized[at : at + len(span)] == span == "".join(b["piece"] for b in best)
    pos = 0
    for b in best:
        assert b["start"] == pos and b["end"] == pos + len(b["piece"])
        pos = b["end"]
        if not b.get("unknown") and not ref.library.IsUnused(b["id"]) and b["score"] <= 0:
            assert abs(b["score"] - ref.library.GetScore(b["id"])) < 1e-6 and ref.library.IdToPiece(b["id"]) == b["piece"]
    assert abs(e["best_score"] - sum(b["score"] for b in best)) < 1e-6
    token = best[e["token_piece"]]
    if not token.get("unknown"):
        assert e["token"]["text"] == token["piece"]
    else:
        assert e["token"]["byte_fallback"] and e["token"]["text"] in token["byte_pieces"]
    # the lattice marks exactly the best path
    marked = [(n["start"], n["end"], n["piece"]) for n in e["lattice"] if n["best"]]
    assert marked == [(b["start"], b["end"], b["piece"]) for b in best]
    # the n best: sentencepiece's on exactly this span
    theirs = [(unbyte(p), s) for p, s in ref.nbest(span, 64)]
    ours = e["nbest"]
    assert ours[0]["pieces"] == [b["piece"] for b in best] and abs(ours[0]["score"] - e["best_score"]) < 1e-9
    assert len(ours) == min(NBEST, len(theirs)) and len(ours) >= min(2, len(theirs))
    their_scores = [s for _, s in theirs]
    assert abs(ours[0]["score"] - their_scores[0]) <= TOL, "the encoder's segmentation is a best one"
    for rank, entry in enumerate(ours):
        assert "".join(entry["pieces"]) == span
        assert abs(sorted((o["score"] for o in ours), reverse=True)[rank] - their_scores[rank]) <= TOL
        found = [s for p, s in theirs if p == entry["pieces"]]
        if found:
            assert abs(found[0] - entry["score"]) <= TOL
        else:  # a tie cut off the library's list of 64
            assert len(theirs) == 64 and abs(their_scores[-1] - entry["score"]) <= TOL
    # what sentencepiece sees when given the span's own characters (a model that adds nothing to a text's start)
    if ref.normalize("a") == "a":
        start, stop = e["span"]["start"], e["span"]["end"]
        assert ref.normalize(text[start:stop]) == span
        direct = [(unbyte(p), s) for p, s in ref.nbest(text[start:stop], NBEST, ref.library)]
        assert abs(direct[0][1] - e["best_score"]) <= TOL


@pytest.fixture(scope="module")
def jurassic():
    return registry.get("jurassic-2"), UnigramReferee(verified_bytes("sentencepiece/jurassic-2.model"))


def test_jurassic_lattices_are_the_libraries_segmentations_on_real_text(jurassic):
    tok, ref = jurassic
    assert sum(check_unigram(tok, ref, text) for text in texts(400)) > 500


def test_long_stretches_are_shown_in_a_window_of_whole_tokens(jurassic):
    tok, ref = jurassic
    for text in ["a" * 3000, "東京スカイツリーは" * 60, "x" + " " * 90 + "y", "https://example.com/" + "ab/" * 40]:
        explainer = Explainer(tok, text)
        pieces, normalized = ref.pieces(text), ref.normalize(text)
        n = len(explainer)
        for index in sorted({0, 1, n // 2, n - 1}):
            e = explainer.explain(index).to_dict()
            check_unigram_explanation(e, ref, text, pieces, normalized)
            assert len(e["normalized"]) <= 40 or len(e["best"]) == 1
            if len(e["pretoken"]["text"]) > 40:
                assert e["pretoken"]["window"] is not None and any("window" in n or "whole tokens" in n for n in e["notes"])


def test_a_stretch_longer_than_what_is_looked_at_says_so(jurassic):
    tok, ref = jurassic
    text = "a" * 20_000  # runs of a's are pieces: no position of it is a cut
    explainer = Explainer(tok, text)
    e = explainer.explain(len(explainer) // 2).to_dict()
    check_unigram_explanation(e, ref, text, ref.pieces(text), ref.normalize(text))
    assert 0 < e["pretoken"]["start"] and e["pretoken"]["end"] < len(text)
    assert any("more than" in n for n in e["notes"]) and any("looked at" in n for n in e["notes"])


def test_ties_put_the_encoders_choice_first_and_say_so(jurassic):
    tok, ref = jurassic
    text = "x     y"  # five spaces: ▁▁▁▁▁, which ▁, ▁▁ and ▁▁▁▁ cut in ten ways of the same score
    explainer = Explainer(tok, text)
    index = next(i for i, t in enumerate(explainer.result.window(0, len(explainer))) if t.text.startswith("▁"))
    e = explainer.explain(index).to_dict()
    scores = [entry["score"] for entry in e["nbest"]]
    assert max(scores) - min(scores) <= TOL and len(scores) == NBEST
    assert any("score the same" in n for n in e["notes"])
    check_unigram_explanation(e, ref, text, ref.pieces(text), ref.normalize(text))


def test_byte_fallback_and_user_defined_pieces_are_named(jurassic):
    tok, _ = jurassic
    explainer = Explainer(tok, "Hello ꙮ, world")
    kinds = [explainer.explain(i).to_dict() for i in range(len(explainer))]
    fallback = [e for e in kinds if e["token"]["byte_fallback"]]
    assert len(fallback) == 3 and all("byte fallback" in e["notes"][0] for e in fallback)
    assert [e["notes"][0].split("this is ")[1] for e in fallback] == ["byte 1 of 3.", "byte 2 of 3.", "byte 3 of 3."]
    unknown = fallback[0]["best"][fallback[0]["token_piece"]]
    assert unknown["piece"] == "ꙮ" and unknown["unknown"] and unknown["id"] == tok.unk_id
    assert unknown["byte_pieces"] == ["<0xEA>", "<0x99>", "<0xAE>"] and unknown["score"] == pytest.approx(tok.min_score - 10)
    comma = next(e for e in kinds if e["token"]["text"] == ",")
    assert "user-defined" in comma["notes"][0] and comma["best"][comma["token_piece"]]["score"] == 0.0


def lab_unigram_model(corpus: str, vocab_size: int) -> bytes:
    from app.lab.algorithms import train
    from app.lab.options import Options

    # byte fallback on (sentencepiece's default is off): characters the corpus lacks become byte pieces
    options = Options(algorithm="unigram", vocab_size=vocab_size, sentencepiece={"byte_fallback": True})
    trained = train(corpus, options.check(10_000), max_merges=10_000)
    return trained.model


def test_a_lab_unigram_run_and_an_uploaded_model_are_explained_as_sentencepiece_segments(jurassic):
    realtext.require()
    corpus = realtext.slices("en", 1, 20_000, seed=5)[0]
    model = lab_unigram_model(corpus, 400)
    tok, ref = load_tokenizer(model, name="lab-uni"), UnigramReferee(model)
    for text in [corpus[:500], "the newest  wider ꙮ 東京\nlowest", "  leading and trailing  "]:
        check_unigram(tok, ref, text)
    upload = load_tokenizer(verified_bytes("sentencepiece/jurassic-2.model"), name="up-unigram")
    check_unigram(upload, jurassic[1], HARD[0] + " " + HARD[2])


def test_explanations_answer_json_that_round_trips(jurassic, bert):
    for tok in (jurassic[0], bert[0]):
        e = Explainer(tok, "Héllo wörld").explain(0).to_dict()
        assert json.loads(json.dumps(e)) == e


def test_a_stretch_found_from_its_token_is_the_one_cut_in_order(jurassic):
    """A token far into a text is explained without cutting every stretch before it: the stretch found from the
    token is the one found by cutting from the start, for every token (and for every character offset)."""
    tok, ref = jurassic
    realtext.require()
    text = realtext.slices("en", 1, 6000, seed=2)[0] + " " + realtext.slices("ja", 1, 3000, seed=2)[0] + " ꙮ  x"
    explainer = Explainer(tok, text)
    units = explainer.units
    by_token = {i: u for u in units for i in range(u.first, u.first + len(u.ids))}
    plan = explainer.plan
    for index in range(0, len(explainer), 7):
        found = plan.locate(text, False, index=index)
        unit = by_token[index]
        assert (found.start, found.end, found.first, list(found.ids)) == (unit.start, unit.end, unit.first, list(unit.ids))
    for offset in range(0, len(text), 13):
        fresh = Explainer(tok, text)  # nothing cut yet: found from the offset
        assert fresh.index_at(offset) == explainer.index_at(offset)
    last = Explainer(tok, text).explain(len(explainer) - 1).to_dict()  # found without cutting from the start
    check_unigram_explanation(last, ref, text, ref.pieces(text), ref.normalize(text))
