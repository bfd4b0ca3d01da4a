"""What Tokenplay does with many tokenizers at once, above the engines and below the web.

- :mod:`.compare` — one text through several tokenizers: stats, best values, where their cuts differ;
- :mod:`.chat` — chat messages rendered the way each model sees them (its template, harmony, ChatML) and counted;
- :mod:`.explain` — why a token was cut where it was: its pre-token's rule, the merges retraced, its merge tree;
- :mod:`.oddities` — the gallery's tokenization surprises, as data;
- :mod:`.presets` — the compare view's sample texts;
- :mod:`.languages` — the token tax of every language: each tokenizer's counts on the same declaration in
  every language (:mod:`.udhr`: the UDHR translations, read and cut into text).

Each feature works through the engines' contract and registry (:mod:`app.engines`), never through a page; like
the engines, nothing here imports the web layer.
"""
