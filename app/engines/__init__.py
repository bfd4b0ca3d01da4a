"""The tokenizer engines, usable as a plain library.

Every tokenizer answers the same small contract (:class:`app.engines.base.Tokenizer`) and returns one rich
result (:class:`app.engines.result.TokenizeResult`). Tokenizers are looked up by name in
:mod:`app.engines.registry`. Nothing in this package imports the web layer.
"""
