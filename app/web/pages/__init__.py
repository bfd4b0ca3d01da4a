"""The HTML pages, one module per page, each with its own router (``create_app`` mounts them): a route reads the
request, calls the services (:mod:`app.services`) and renders a template or one block of it
(:func:`app.web.render.page_or_block`). A page module never imports another page's or the JSON API's; what pages
share is in :mod:`app.web.rendering` (token windows, pickers, the addresses of pages), :mod:`app.web.deps` and
:mod:`app.web.cookies`.

- :mod:`.playground` — ``/``, ``/render``, ``/explain``, ``/decode``, ``/ids``;
- :mod:`.compare` — ``/compare`` and its results, panes, explanations and downloads;
- :mod:`.oddities` — ``/oddities``; :mod:`.chat` — ``/chat``; :mod:`.languages` — ``/languages``;
- :mod:`.lab` — ``/lab`` and a run's pages; :mod:`.side_by_side` — ``/lab/side-by-side``;
- :mod:`.share` — the teacher's share panel on a run's page; :mod:`.follow` — a student's ``/follow`` pages;
- :mod:`.add_tokenizer` — ``POST /tokenizers``, the "Add a tokenizer…" form without JavaScript.
"""
