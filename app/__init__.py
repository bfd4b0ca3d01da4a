"""Tokenplay: see how language models cut text into tokens.

``app.engines`` is the tokenizer library (no web imports); ``app.web`` is the FastAPI/HTMX layer on top of it;
``app.cli`` is the ``tokenplay`` console script.
"""

__version__ = "0.1.0"
