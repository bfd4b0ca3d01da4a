"""The column-wise JSON of a result (``POST /api/tokenize``) is exactly orjson's dump of ``to_dict()``, and the
token placement it encodes agrees with tiktoken's ``decode_with_offsets`` and the text."""

from __future__ import annotations

import orjson
import pytest
from helpers import realtext
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers.oracles import tiktoken_encoding

from app.engines import registry
from app.engines.result import TokenizeResult
from app.engines.result import result_json

HOSTILE = [
    "",
    "a" * 3000,
    "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466" * 50,
    'quotes " and \\ backslashes, \x00\x1f controls, \u2028 separators',
    "閒閒 <|endoftext|> <s></s> <unk> 🙂👍🏽 \t\n\r\n",
]


def _check(result: TokenizeResult) -> None:
    assert result_json(result) == orjson.dumps(result.to_dict())


@pytest.mark.parametrize("name", registry.names())
@pytest.mark.parametrize("special", [False, True])
def test_json_is_byte_identical_to_the_dicts_on_hostile_text(name, special):
    tok = registry.get(name)
    for text in HOSTILE:
        _check(tok.tokenize(text, allow_special=special))


@settings(max_examples=80, deadline=None)
@given(
    text=st.text(st.characters(exclude_categories=("Cs",)), max_size=60),
    name=st.sampled_from(["gpt2", "o200k_base", "native-cl100k_base", "custom-bpe", "mistral-7b"]),
    special=st.booleans(),
)
def test_json_is_byte_identical_to_the_dicts(text, name, special):
    _check(registry.get(name).tokenize(text, allow_special=special))


@pytest.mark.parametrize("corpus", realtext.NAMES)
def test_json_on_real_text_places_tokens_where_tiktoken_does(corpus):
    realtext.require()
    text = realtext.slices(corpus, 1, 20_000, seed=16)[0]
    for name in ("cl100k_base", "mistral-7b"):
        _check(registry.get(name).tokenize(text))
    # Offsets against the referee: tiktoken's character offsets of each token (the first character it touches).
    referee = tiktoken_encoding("o200k_base")
    ids = referee.encode(text)
    body = orjson.loads(result_json(registry.get("o200k_base").tokenize(text)))
    assert body["ids"] == ids
    assert [t["start"] for t in body["tokens"]] == referee.decode_with_offsets(ids)[1]
    assert bytes.fromhex("".join(t["bytes"] for t in body["tokens"])) == text.encode()


# Engines that write the JSON from Columns (every token's span and per-id facts, no Token per token): the SentencePiece
# .model engine, the library's piece-vocabulary models (placed by bytes or by its offsets), and the others below.
COLUMN_ENGINES = ["mistral-7b", "llama-2", "gemma-3", "gemma-2", "native-llama-2", "native-gemma-3", "native-gemma-2", "bert-base-uncased"]


@pytest.mark.parametrize("name", COLUMN_ENGINES)
def test_columns_give_every_token_as_its_record_does(name):
    tok = registry.get(name)
    texts = ["  leading spaces\n\n\n\ttabs  <unused3> <start_of_turn> ▁literal ▁▁ <0x41> ꙮ" * 3, "a"]
    if realtext.available():
        texts += [realtext.slices(corpus, 1, 3_000, seed=23)[0] for corpus in realtext.NAMES]
    for text in texts:
        for special in (False, True):
            result = tok.tokenize(text, allow_special=special)
            assert result.columns is not None
            columns = result.columns()
            if columns is None:  # this text is one the engine leaves to its Token records
                continue
            tokens = result.tokens
            assert list(columns.spans) == [(t.start, t.end) for t in tokens]
            for t in tokens:
                assert columns.info(t.id)[2:] == (t.special, t.valid_utf8, t.byte_fallback)
            _check(result)


@settings(max_examples=60, deadline=None)
@given(
    text=st.lists(st.one_of(st.characters(exclude_categories=("Cs",)), st.sampled_from(
        [" ", "  ", "\n\n", "\t", "▁", "<unused3>", "<start_of_turn>", "<s>", "<0x41>", "\u200d", "\U0001F468"])),
        max_size=40).map("".join),
    name=st.sampled_from(COLUMN_ENGINES),
    special=st.booleans(),
)
def test_columns_json_is_byte_identical_to_the_dicts(text, name, special):
    _check(registry.get(name).tokenize(text, allow_special=special))
