"""The JSON API, one module per page: the same engine and result shape as the pages and the CLI.

- :mod:`.tokenize` — ``GET /api/tokenizers``, ``POST /api/tokenize``, ``POST /api/decode`` (the playground);
- :mod:`.explain` — ``POST /api/explain`` (why one token is what it is);
- :mod:`.compare` — ``POST /api/compare``; :mod:`.chat` — ``POST /api/chat``;
- :mod:`.train` — ``/api/train/...`` (the BPE lab);
- :mod:`.languages` — ``/api/languages`` (the token tax of every language).

Errors come from the one table of :mod:`app.web.errors`; CPU-heavy work runs in the CPU lane or a thread pool,
never on the event loop.
"""

from fastapi import APIRouter

from . import chat, compare, explain, languages, tokenize, train

router = APIRouter(prefix="/api", tags=["api"])
for _module in (tokenize, explain, compare, chat, train, languages):
    router.include_router(_module.router)
