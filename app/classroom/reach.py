"""Whether a class can reach this server, and at which links: what the share panel and
``POST /api/train/{id}/session`` tell the teacher (issue 37, part 2).

A server listening on a loopback address (``make run``) answers this machine only: a join link or QR code made of
it opens nothing on a phone, so the teacher is told in words, with the command that fixes it. A server listening on
every interface (``make class``) answers at each of the machine's network addresses: every such link is listed
(:func:`app.network.reachable_bases`), the one the QR code uses first. Where the server does not say where it
listens (another server than ``tokenplay serve``), the address the teacher's browser used decides: a loopback one
is warned about too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from app import network

#: The command that makes a server a class can join, as the warning says it.
FIX = "make class (or tokenplay serve --class)"


@dataclass(frozen=True)
class Reach:
    """``base``: where the join link and QR code point; ``bases``: every base a phone on the room's network can
    open (empty when none can); ``warning``: why no phone can join, in words, with the fix (None when they can)."""

    base: str
    bases: list[str] = field(default_factory=list)
    warning: str | None = None


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


def loopback_warning(host: str) -> str:
    return (f"This server listens on {host} only, so no phone or other computer can open this link or its QR code. "
            f"Stop the server and start it with {FIX}: it listens on the local network and prints the link "
            "students join at.")


def reach(listen_host: str | None, listen_port: int | None, public_url: str | None, request_base: str) -> Reach:
    """Where students join a server listening on ``listen_host``:``listen_port`` (None: not known), whose public
    address is ``public_url`` (``TOKENPLAY_PUBLIC_URL``, None when unset), asked by a teacher's browser at
    ``request_base`` (``http://127.0.0.1:8000``)."""
    public = public_url.rstrip("/") if public_url else None
    asked = request_base.rstrip("/")
    if listen_host is None:
        base = public or asked
        if network.is_loopback(_host(base)):
            return Reach(base, [], loopback_warning(_host(base)))
        return Reach(base, [base])
    if network.is_loopback(listen_host):
        return Reach(public or asked, [], loopback_warning(listen_host))
    port = listen_port or urlsplit(asked).port or 80
    found = network.reachable_bases(listen_host, port, urlsplit(asked).scheme or "http")
    # the public address first, then the one the teacher used when a phone can use it too, then the machine's own
    bases = list(dict.fromkeys([b for b in (public, asked) if b and not network.is_loopback(_host(b))] + found))
    if not bases:
        return Reach(asked, [], "This machine has no network address, so no phone can join: connect it to the "
                     "class's Wi-Fi or network, then start the server again.")
    return Reach(bases[0], bases)
