"""The addresses of pages that other pages and answers link to, built in one place: a page that links to another
(the oddities to the playground, the languages to compare, the share panel to the follow page) asks here, never
the other page's module.
"""

from __future__ import annotations

from urllib.parse import urlencode


def playground_url(
    tokenizer: str,
    text: str,
    *,
    url_text_limit: int,
    special: bool = False,
    ws: bool = False,
    pre: bool = False,
    norm: bool = False,
    explain: int | None = None,
) -> str:
    """``/?tokenizer=..``: the playground showing ``text`` (left out when longer than ``url_text_limit``) with
    these switches on and the token ``explain`` explained.

    >>> playground_url("gpt2", "hi", url_text_limit=10, explain=0)
    '/?tokenizer=gpt2&text=hi&explain=0'
    """
    params: list[tuple[str, str]] = [("tokenizer", tokenizer)]
    if text and len(text) <= url_text_limit:
        params.append(("text", text))
    for name, on in (("special", special), ("ws", ws), ("pre", pre), ("norm", norm)):
        if on:
            params.append((name, "1"))
    if explain is not None:
        params.append(("explain", str(explain)))
    return "/?" + urlencode(params)


def compare_language_url(code: str, names: list[str]) -> str:
    """Compare opened on a language's UDHR text, with these tokenizers.

    >>> compare_language_url("jpn", ["gpt2"])
    '/compare?lang=jpn&t=gpt2'
    """
    return "/compare?" + urlencode([("lang", code), *(("t", n) for n in names)])


def compare_url(names: list[str]) -> str:
    return "/compare?" + urlencode([("t", n) for n in names])


def chat_url(names: list[str]) -> str:
    """``/chat?tokenizer=..`` (and ``&compare=..``): the choice, which a copied link reproduces."""
    return "/chat?" + urlencode(list(zip(("tokenizer", "compare"), names)))


def languages_url(
    names: list[str], *, path: str = "/languages", q: str = "", script: str = "", sort: str = "",
    descending: bool | None = None,
) -> str:
    """The languages page (or its ``path``: an export) with these tokenizers, filter and order."""
    params: list[tuple[str, str]] = [("t", n) for n in names]
    if q:
        params.append(("q", q))
    if script:
        params.append(("script", script))
    if sort:
        params.append(("sort", sort))
    if descending is not None:
        params.append(("order", "desc" if descending else "asc"))
    return f"{path}?{urlencode(params)}"


def run_url(run_id: str, step: int | None = None, present: bool = False, lesson: str | None = None) -> str:
    """A lab run's page, at ``step``, in presentation mode, with an example's ``lesson``.

    >>> run_url("ab12", 3), run_url("ab12", 3, lesson="byte-fallback")
    ('/lab/runs/ab12?step=3', '/lab/runs/ab12?step=3&lesson=byte-fallback')
    """
    q: dict = {}
    if step is not None:
        q["step"] = step
    if present:
        q["present"] = 1
    if lesson:
        q["lesson"] = lesson
    return f"/lab/runs/{run_id}" + (f"?{urlencode(q)}" if q else "")


def follow_path(code: str) -> str:
    """The page a student follows a class on."""
    return f"/follow/{code}"


def follow_url(base: str, code: str) -> str:
    """The join link students open, on this server's public address ``base``."""
    return base + follow_path(code)


def vocab_url(name: str) -> str:
    """The vocabulary browser of tokenizer ``name``."""
    return "/vocab?" + urlencode({"tokenizer": name})
