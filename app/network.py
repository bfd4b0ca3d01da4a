"""Where a server can be reached from: the machine's network addresses, and whether a listening address lets other
machines in (a class's phones) or only this one.

A server listening on a loopback address (``127.0.0.1``, the default of ``make run``) answers this machine alone: a
join link or QR code made of it opens nothing on a phone. Listening on every interface (``0.0.0.0``, ``tokenplay
serve --class``), it answers at each address the machine has on its networks: :func:`reachable_bases` lists them,
the one of the default route first (the address a phone on the same Wi-Fi most likely shares a network with). The
addresses come from psutil (every interface that is up); nothing here sends a packet.
"""

from __future__ import annotations

import ipaddress
import socket

import psutil

ANY_HOSTS = ("0.0.0.0", "::", "")
#: An address of TEST-NET-1 (RFC 5737): "connecting" a UDP socket to it sends nothing, and the socket's own address
#: is then the one of the interface the default route goes out of.
_PROBE = ("192.0.2.1", 9)


def is_loopback(host: str) -> bool:
    """Whether a server listening on ``host`` answers this machine only.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, True, False)
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listens_everywhere(host: str) -> bool:
    """Whether ``host`` is the "every interface" address (``0.0.0.0``, ``::``)."""
    return host in ANY_HOSTS


def _default_route_address() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(_PROBE)
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if is_loopback(address) else address


def network_addresses(ipv6: bool = False) -> list[str]:
    """The machine's addresses on its networks (interfaces that are up; no loopback, no link-local address), the
    default route's first; IPv6 ones after the IPv4 ones when ``ipv6``."""
    stats = psutil.net_if_stats()
    found: list[str] = []
    for name, addresses in psutil.net_if_addrs().items():
        if name in stats and not stats[name].isup:
            continue
        for a in addresses:
            if a.family not in (socket.AF_INET, socket.AF_INET6) or (a.family == socket.AF_INET6 and not ipv6):
                continue
            try:
                ip = ipaddress.ip_address(a.address.split("%", 1)[0])
            except ValueError:
                continue
            if ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
                continue
            found.append(str(ip))
    first = _default_route_address()
    found.sort(key=lambda address: (address != first, ":" in address))
    return list(dict.fromkeys(found))


def url_host(address: str) -> str:
    """An address as a URL writes it (an IPv6 one in brackets)."""
    return f"[{address}]" if ":" in address else address


def reachable_bases(host: str, port: int, scheme: str = "http") -> list[str]:
    """The base URLs other machines reach a server listening on ``host``:``port`` at: every network address of this
    machine when it listens everywhere, ``host`` itself when it is one address of a network, none on loopback."""
    if is_loopback(host):
        return []
    if listens_everywhere(host):
        return [f"{scheme}://{url_host(a)}:{port}" for a in network_addresses(ipv6=host == "::")]
    return [f"{scheme}://{url_host(host)}:{port}"]


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host``:``port`` now (bound as uvicorn binds, then let go at once)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port_after(host: str, port: int, tries: int = 20) -> int | None:
    """The first port after ``port`` that is free on ``host`` (within ``tries``), or None."""
    return next((p for p in range(port + 1, min(port + 1 + tries, 65536)) if port_is_free(host, p)), None)
