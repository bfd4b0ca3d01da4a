"""XSS payloads for the hostile-input tests. Every one names the marker ``pwned``: if any ever ran or made an
element, an attribute or a script, the marker would show up where only inert text may hold it.

:func:`injected` parses HTML and lists what a payload must never create: an element with ``id=pwned`` (or a
``pwned`` class), an ``on*`` / ``hx-*`` / ``srcdoc`` / ``style`` attribute holding the marker, a ``javascript:``
(``data:``, ``vbscript:``) URL holding it, a ``<script>`` / ``<style>`` whose code holds it, a ``<base>``/``<meta refresh>`` made from
input, and evaluated template syntax (``pwned49``).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

MARK = "pwned"

PAYLOADS = [
    "<script>window.pwned=1;alert('pwned')</script>",
    "<img id=pwned src=x onerror=\"alert('pwned')\">",
    "<svg id=pwned onload=alert('pwned')></svg>",
    "\"><img id=pwned src=x onerror=alert('pwned')>",
    "'><img id=pwned src=x onerror=alert('pwned')>",
    "</textarea><img id=pwned src=x onerror=alert('pwned')>",
    "</title><script>alert('pwned')</script>",
    "</script><script>alert('pwned')</script>",
    "<a id=pwned href=\"javascript:alert('pwned')\">click</a>",
    "javascript:alert('pwned')",
    '" onmouseover="alert(\'pwned\')" x="',
    "' onfocus='alert(`pwned`)' autofocus x='",
    "<iframe id=pwned srcdoc=\"<script>parent.alert('pwned')</script>\"></iframe>",
    "<details id=pwned open ontoggle=alert('pwned')>",
    "<math><mtext></mtext><mglyph><svg><mtext><style><img id=pwned src=x onerror=alert('pwned')></style>",
    '<div id=pwned hx-get="/pwned" hx-trigger="load">htmx</div>',
    "<form id=pwned action=\"javascript:alert('pwned')\"><button>go</button></form>",
    "<style>body{background:url(\"javascript:alert('pwned')\")}</style>",
    '<base href="//pwned.invalid/">',
    "<meta http-equiv=refresh content=\"0;url=javascript:alert('pwned')\">",
    "<!--<img id=pwned src=x onerror=alert('pwned')>-->",
    "<![CDATA[<img id=pwned src=x onerror=alert('pwned')>]]>",
    "&lt;img id=pwned src=x onerror=alert('pwned')&gt;",
    "pwned{{7*7}}{% raw %}${7*7}#{7*7}",
    "<IMG ID=pwned SRC=x OnErRoR=alert('pwned')>",
    "<img id=pwned src=x onerror=\u0061lert('pwned')>",
    "\u202e<img id=pwned src=x onerror=alert('pwned')>\u202c",
    "<scr<script>ipt>alert('pwned')</scr</script>ipt>",
    "<|endoftext|><img id=pwned src=x onerror=alert('pwned')><|im_start|>",
]

#: All payloads in one text, one a line (what a corpus or a long text would hold).
ALL = "\n".join(PAYLOADS)

_SCHEME = re.compile(r"^[\s\x00-\x1f]*(javascript|vbscript|data):", re.IGNORECASE)
_URL_ATTRS = {"href", "src", "action", "formaction", "srcdoc", "style", "content", "data", "xlink:href", "background"}


class _Finder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag, attrs):
        self._check(tag, attrs)
        if tag in ("script", "style"):
            self._in.append(tag)

    def handle_startendtag(self, tag, attrs):
        self._check(tag, attrs)

    def handle_endtag(self, tag):
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data):
        if self._in and MARK in data:
            self.found.append(f"<{self._in[-1]}> holding {data[:80]!r}")

    def _check(self, tag, attrs):
        for name, value in attrs:
            value = value or ""
            if name == "id" and MARK in value:
                self.found.append(f"<{tag} id={value!r}>")
            elif name == "class" and MARK in value.split():
                self.found.append(f"<{tag} class={value!r}>")
            elif (
                (name.startswith(("on", "hx-")) or name in ("srcdoc", "style"))
                and MARK in value
                or name in _URL_ATTRS
                and _SCHEME.match(value)
                and MARK in value
            ):
                self.found.append(f"<{tag} {name}={value[:80]!r}>")
        if tag == "base":
            self.found.append("<base>")
        refresh = tag == "meta" and any(n == "http-equiv" and (v or "").lower() == "refresh" for n, v in attrs)
        if refresh and any(MARK in (v or "") or "javascript" in (v or "") for _, v in attrs):
            self.found.append("<meta refresh>")


def injected(html: str) -> list[str]:
    """What the markup holds that only an unescaped payload could have made (empty when all is inert)."""
    finder = _Finder()
    finder.feed(html)
    finder.close()
    found = list(finder.found)
    if "pwned49" in html:
        found.append("template syntax evaluated (pwned49)")
    return found
