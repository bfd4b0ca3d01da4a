"""The JSON API, one module per area, each with its own router (``create_app`` mounts them under ``/api``): the same
services (:mod:`app.services`) and result shape as the pages and the CLI. An API module never imports a page's.

- :mod:`.tokenize` — ``GET /api/tokenizers``, ``POST /api/tokenize``, ``POST /api/decode`` (the playground);
- :mod:`.explain` — ``POST /api/explain`` (why one token is what it is);
- :mod:`.compare` — ``POST /api/compare``; :mod:`.chat` — ``POST /api/chat``;
- :mod:`.train` — ``/api/train/...`` (the BPE lab), :mod:`.pretokenize` — ``POST /api/pretokenize`` (its pattern
  box); :mod:`.sessions` — ``/api/sessions/...`` (a class following
  the teacher through a run);
- :mod:`.languages` — ``/api/languages`` (the token tax of every language);
- :mod:`.measure` — ``/api/measure`` (tokenizers measured on a corpus, as a job).

The response models two areas share are in :mod:`.schemas`. Each operation has one tag (:data:`TAGS`, the sections
of ``/docs``), a written summary and a one-line description. Errors come from the one table of
:mod:`app.web.errors`; CPU-heavy work runs in the CPU lane or a thread pool, never on the event loop.
"""

#: The sections of ``/docs``, in order: each operation is in exactly one.
TAGS = [
    {"name": "tokens", "description": "Cut a text into tokens, turn ids back into text, see why a token was cut, "
     "compare tokenizers, tokenize a chat prompt."},
    {"name": "tokenizers", "description": "The tokenizers you can use, and adding your own file."},
    {"name": "vocabulary", "description": "What is in a vocabulary: its tokens page by page, a token's merge tree, "
     "the ladder of counts with its first k ranks, its health, two vocabularies compared, a text character by "
     "character, how numbers are cut."},
    {"name": "lab", "description": "Train BPE, WordPiece or Unigram on your corpus and step through the training."},
    {"name": "measure", "description": "Measure tokenizers on a corpus (uploaded files or the server's corpus "
     "folder): tokens, bytes per token, fertility, vocabulary used, Rényi efficiency, premium."},
    {"name": "class", "description": "Share a lab run with a class: students follow the teacher's steps live "
     "(Server-Sent Events) and predict the next merge."},
]
