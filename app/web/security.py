"""Safe by default in a browser: the headers every answer carries, and no request that changes something from
another site. Two pure ASGI middlewares (like :class:`app.web.app.ServerTiming`), installed by ``create_app``.

:class:`SecurityHeaders` adds to every answer:

- ``Content-Security-Policy`` (:data:`POLICY`): scripts, styles, images, fonts and requests only from this
  server, no inline script or style, no ``eval``, no plugins, forms posted only here, and ``frame-ancestors
  'none'`` (no other site may frame a page: clickjacking). The app serves its own scripts (``static/*.js``,
  htmx); the pages hold no inline script, no ``on*=`` attribute and no ``style=`` attribute (a lattice's grid
  places come as ``data-*`` attributes that ``static/app.js`` applies; tests/web/test_security.py reads every
  template). A route that needs more may set its own header, which is kept (none does: ``/docs`` starts Swagger UI
  from ``static/docs.js``);
- ``X-Content-Type-Options: nosniff`` (a file is what its type says, never sniffed into a script);
- ``Referrer-Policy: same-origin``: the playground's address holds the typed text; it never leaves in a
  ``Referer`` to another site;
- ``X-Frame-Options: DENY``, for browsers older than ``frame-ancestors``;
- ``Secure`` on every cookie when the request came over HTTPS: the connection's own scheme, or behind a reverse
  proxy its ``X-Forwarded-Proto``, trusted only from the proxies the operator names
  (``TOKENPLAY_FORWARDED_ALLOW_IPS``, passed to uvicorn's proxy headers by ``tokenplay serve``).

:class:`CrossSite` refuses, with a 403 in words, a request that changes something (POST, PUT, PATCH, DELETE) when
the browser says it comes from another site: ``Sec-Fetch-Site`` other than ``same-origin`` or ``none`` (a
bookmark, an address typed), or, from a browser that does not send it, an ``Origin`` other than this server's.
It covers every route, the forms and htmx posts of the pages **and the JSON API**: the API's cookies
(``tp_tok``, ``tp_lab``, ``tp_follower``) would otherwise let another site's form post a tokenizer into a
visitor's pickers (multipart) or add a lab run to them (``POST /api/train/{id}/use`` needs no body). A JSON body
needs ``Content-Type: application/json``, which another site can only send after a CORS preflight this app never
grants, but the check does not rely on that. Programs (curl, scripts, the CLI) send neither header and are never
refused; nor is a request whose ``Origin`` is this server's address as ``TOKENPLAY_PUBLIC_URL`` names it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request

from . import errors

#: The policy of every page: only this server's own files; nothing inline; no other site may frame it.
POLICY = "; ".join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",  # data: for the empty favicon of base.html
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))

_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
]

#: Methods that change something; GET, HEAD and OPTIONS never do here.
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class SecurityHeaders:
    """Adds the headers of the module docstring to every HTTP answer, and ``Secure`` to its cookies over HTTPS."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        https = scope.get("scheme") == "https"

        async def guarded_send(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", POLICY.encode()))
                headers += [(name, value) for name, value in _HEADERS if name not in names]
                if https:
                    headers = [(n, _secure(v)) if n.lower() == b"set-cookie" else (n, v) for n, v in headers]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, guarded_send)


def _secure(cookie: bytes) -> bytes:
    return cookie if b"; secure" in cookie.lower() else cookie + b"; Secure"


class CrossSite:
    """Refuses a request that changes something when a browser says it comes from another site (403); see the
    module docstring. ``public_url``: this server's address as students open it, also accepted as an ``Origin``."""

    def __init__(self, app, public_url: str | None = None):
        self.app = app
        self.public_origin = _origin(public_url) if public_url else None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] in UNSAFE:
            refused = self.refusal(scope)
            if refused is not None:
                response = errors.answer(Request(scope), 403, refused)
                return await response(scope, receive, send)
        await self.app(scope, receive, send)

    def refusal(self, scope) -> str | None:
        """Why the request is refused, in words, or None when it may go on."""
        headers = dict(scope["headers"])
        site = headers.get(b"sec-fetch-site", b"").decode("latin-1").strip().lower()
        origin = headers.get(b"origin", b"").decode("latin-1").strip()
        if site:
            if site in ("same-origin", "none"):
                return None
            return (f"this request was sent by another site (Sec-Fetch-Site: {site}), and Tokenplay takes what "
                    "changes something only from its own pages; open the page on this server and send it from there")
        if not origin:
            return None  # a program (curl, a script): no browser, no visitor's cookies to abuse
        own = {_own_origin(scope)} | ({self.public_origin} if self.public_origin else set())
        if origin.lower() in own:
            return None
        shown = origin if len(origin) <= 100 else origin[:100] + "…"
        return (f"this request was sent by another site ({shown}), and Tokenplay takes what changes something only "
                "from its own pages; open the page on this server and send it from there")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _own_origin(scope) -> str:
    """This server's origin as the request names it: its scheme (behind a trusted proxy, the proxy's) and Host."""
    host = dict(scope["headers"]).get(b"host", b"").decode("latin-1").strip().lower()
    scheme = scope.get("scheme", "http")
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    if default and host.endswith(default):
        host = host[: -len(default)]
    return f"{scheme}://{host}"
