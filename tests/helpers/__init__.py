"""What the tests share, and bench/ imports from here too: reference implementations the engines are held to
(bpe_reference, unigram_reference, chat_reference, oracles, explain_referees, sentencepiece_referee), texts (realtext:
the real-text corpora; sample_text, samples, mixed_text, word_corpus), a server in a subprocess (serving), XSS payloads
(xss_payloads) and lab runs trained through the API, held or awaited (lab_helpers, lab_training).

pyproject.toml puts tests/ on the path, so a test writes ``from helpers.oracles import tiktoken_encoding``;
bench/ scripts put tests/ on ``sys.path`` themselves.
"""
