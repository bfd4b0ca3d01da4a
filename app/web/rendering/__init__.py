"""What several pages draw alike, built for the templates:

- :mod:`.tokenview` — a window of coloured tokens (``templates/_tokens.html``), the one thing every page draws;
- :mod:`.pickers` — the tokenizer pickers' entries, grouped by maker (``templates/_picker.html``);
- :mod:`.lab_step` — a lab run's corpus at one step (the run's page and the follow page);
- :mod:`.links` — the addresses of pages that other pages link to.
"""
