"""The BPE lab without the web: train on a corpus, keep every merge, show any step without training again.

- :mod:`.service` — :class:`~app.lab.service.Lab`, what the web layer holds: start, continue, cancel, look up runs;
- :mod:`.algorithms` — byte-level, character-level (optionally ``</w>``) BPE, WordPiece, and sentencepiece's own BPE
  and unigram trainers (:mod:`.spm_runs`, :mod:`.unigram_runs`) behind one ``train(corpus, options)``, on the
  trainers of :mod:`app.engines`;
- :mod:`.runs` — the run record and its JSON form; :mod:`.stores` — where runs are kept (a directory or Redis);
- :mod:`.jobs`, :mod:`.workers` — the bounded training pools (threads or processes: queue, progress, cancel);
- :mod:`.replay` — a finished run replayed at step k: corpus window, pair table, encode trace, merge trees,
  vocabulary (SentencePiece BPE runs: :mod:`.spm_replay`, with their step's ``.model``; unigram runs:
  :mod:`.unigram_replay`);
- :mod:`.run_tokenizers` — "use in playground": a run as a registered tokenizer (which browsers list it is
  :mod:`app.services.catalog`'s);
- :mod:`.export` — downloads (JSON, ``.tiktoken``, ``.model``) and the compression chart.
"""
