"""Know a vocabulary: what is in a tokenizer, how it was learned, how healthy it is, what two of them share.

- :mod:`.tokens` — every id's bytes, kind and script; the browser's query (substring or regex, kind, pages);
- :mod:`.merges` — how a merge-based vocabulary was learned: each token's rank, its parents (the two tokens whose
  merge made it) and children, and the tokenizer cut down to its first k ranks (the ladder);
- :mod:`.health` — what the files alone say about a vocabulary: tokens its merges or pre-tokenizer never produce,
  partial UTF-8, bytes that never occur in UTF-8, duplicates, special tokens plain text produces, and what a text
  leaves unused; computed once per vocabulary and kept (memory and disk);
- :mod:`.overlap` — two vocabularies compared by their tokens' bytes, per script;
- :mod:`.characters` — a text character by character: code point, name, category, script, UTF-8/16/32, and the
  token of each tokenizer that covers it.

Nothing here imports the web layer, the lab or a service; callers resolve tokenizer names.
"""
