"""Which addresses retrieval may connect to, and URL parts it can trust.

An address is public only when it is global unicast and, for the IPv6 forms that carry an IPv4
address (IPv4-mapped, IPv4-translated, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32), the
IPv4 address inside is public too: otherwise `[64:ff9b::7f00:1]` or `[2002:7f00:1::]` would reach
127.0.0.1 through a translator. The deprecated IPv4-compatible range ::/96 and the local-use NAT64
prefix 64:ff9b:1::/48 are never public.

Tests allow a loopback server through the `CINDY_RETRIEVAL_ALLOWED_NETWORKS` setting (a list of CIDR
strings); it is not meant for production.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from django.conf import settings

Resolver = Callable[[str, int], list[str]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


class RetrievalRefused(Exception):
    """The URL may not be fetched (malformed, scheme, private address, too many redirects)."""


@dataclass(frozen=True)
class Target:
    """One URL taken apart: what to check, where to connect, and what to send as Host."""

    parts: SplitResult
    scheme: str
    host: str  # the host name (IDNA-encoded) or the IP literal without brackets
    port: int
    host_header: str


def parse_target(url: str) -> Target:
    """The parts of an http(s) URL, or RetrievalRefused with a short reason (never ValueError)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
        hostname = parts.hostname
    except ValueError as exc:
        raise RetrievalRefused(f"{_short(url)} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not hostname:
        raise RetrievalRefused(f"{_short(url)} is not an http(s) URL")
    if port == 0:
        raise RetrievalRefused(f"{_short(url)} has port 0")
    try:
        host = hostname if _ip_or_none(hostname) else hostname.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise RetrievalRefused(f"{_short(url)} has an invalid host name ({exc})") from None
    if any(c in host for c in " \t\r\n\0/\\"):
        raise RetrievalRefused(f"{_short(url)} has an invalid host name")
    default_port = 443 if parts.scheme == "https" else 80
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port in (None, default_port) else f"{shown}:{port}"
    return Target(parts, parts.scheme, host, port or default_port, host_header)


def _short(url: str) -> str:
    return repr(url if len(url) <= 200 else url[:200] + "…")


def _ip_or_none(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    raw = getattr(settings, "CINDY_RETRIEVAL_ALLOWED_NETWORKS", []) or []
    return [ipaddress.ip_network(n, strict=False) for n in raw]


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries for translation or tunnelling (maybe none)."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _IPV4_TRANSLATED or ip in _NAT64:
        return [low32]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    return []


def is_public_address(address: str) -> bool:
    """Public unicast only: no loopback, private, link-local, CGNAT, multicast or reserved ranges,
    and no IPv6 form that carries such an IPv4 address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip.version == net.version and ip in net for net in _allowed_networks()):
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _IPV4_COMPATIBLE or ip in _NAT64_LOCAL:
            return False
        if not all(v4.is_global and not v4.is_multicast for v4 in embedded_ipv4(ip)):
            return False
    return ip.is_global and not ip.is_multicast


def resolve_host(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def resolve_within(resolve: Resolver, host: str, port: int, *, deadline: float) -> list[str]:
    """`resolve(host, port)`, given up at `deadline` (time.monotonic()).

    getaddrinfo has no timeout of its own, so it runs on a daemon thread that is left to finish on
    its own if the deadline passes first; the caller is never held past the deadline.
    """
    outcome: dict[str, object] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["addresses"] = resolve(host, port)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name=f"resolve {host}", daemon=True).start()
    if not done.wait(max(0.0, deadline - time.monotonic())):
        raise TimeoutError(f"resolving {host} took too long")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["addresses"]  # type: ignore[return-value]


def checked_addresses(host: str, port: int, *, resolve: Resolver, deadline: float | None = None) -> list[str]:
    """Resolve `host` and require every address to be public; RetrievalRefused otherwise."""
    literal = _ip_or_none(host.strip("[]"))
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            if deadline is None:
                addresses = resolve(host, port)
            else:
                addresses = resolve_within(resolve, host, port, deadline=deadline)
        except TimeoutError:
            raise RetrievalRefused(f"cannot resolve {host}: no answer in time") from None
        except (OSError, ValueError) as exc:  # UnicodeError is a ValueError
            raise RetrievalRefused(f"cannot resolve {host}: {exc}") from None
    if not addresses:
        raise RetrievalRefused(f"{host} has no address")
    private = [a for a in addresses if not is_public_address(a)]
    if private:
        raise RetrievalRefused(f"{host} resolves to a non-public address ({', '.join(private)})")
    return addresses
