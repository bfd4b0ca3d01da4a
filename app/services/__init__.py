"""What a page or an API call does, in plain Python: each function takes data (the request's
:class:`~app.services.catalog.Tokenizers`, the app's :class:`~app.settings.Settings`, texts, names, ids) and returns
data or raises a :class:`~app.engines.errors.TokenplayError`; none reads a request, writes a response or renders HTML
(tests/test_layout.py checks that no service imports the web). The pages (:mod:`app.web.pages`) and the JSON API
(:mod:`app.web.api`) are two doors into the same functions.

- :mod:`.catalog` — the tokenizers one browser may use and list (shipped, its lab runs, its uploads), by name;
- :mod:`.uploads` — the tokenizer files users bring, kept in a store every worker shares;
- :mod:`.tokenize`, :mod:`.explain`, :mod:`.compare`, :mod:`.chat`, :mod:`.languages`, :mod:`.oddities` — what
  the playground, compare, chat, the languages page and the oddities gallery compute;
- :mod:`.lab` — the lab's runs as its pages and ``/api/train`` use them (start, step, force a merge, trace, export,
  the side by side);
- :mod:`.errors` — the errors of limits and names, and the size checks every door makes.

A class following the teacher is :mod:`app.classroom`, which the follow pages and the session API call directly.
"""
