"""The BPE lab without the web: train on a corpus, keep every merge, show any step without training again.

- :mod:`.algorithms` — byte-level, character-level (optionally ``</w>``) and SentencePiece-style BPE behind one
  ``train(corpus, options)``, on the incremental trainer of :mod:`app.engines.bpe`;
- :mod:`.runs` — the run record and its store (memory LRU + one JSON file per run);
- :mod:`.jobs` — the bounded worker pool (queue, progress, cancel);
- :mod:`.views` — the state at step k: corpus window, pair table, encode trace, merge trees, vocabulary;
- :mod:`.tokenizers` — "use in playground": a run as a registered tokenizer, scoped per user by a cookie.

For the playground's picker: ``user_tokenizers(request.cookies.get("tp_lab"))`` lists the lab tokenizers a
user added; ``is_lab_name(spec.name)`` tells lab entries apart so other users' ones can be hidden.
"""

from .tokenizers import COOKIE, is_lab_name, user_tokenizers

__all__ = ["COOKIE", "is_lab_name", "user_tokenizers"]
