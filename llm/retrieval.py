"""SSRF-safe web retrieval for `retrieve` tasks.

- Only http and https.
- Every address the host resolves to must be public; this is checked again on every redirect hop.
- The connection goes to the address that was checked (the IP is pinned in the URL, while the Host
  header and TLS SNI/certificate check keep the real host name), so DNS cannot change in between.
- Size and time are capped; only HTML is read ("Content-Type: X - not fetched (non-HTML content)"
  otherwise); the text kept is at most 40,000 characters.

Tests allow a loopback server through the `CINDY_RETRIEVAL_ALLOWED_NETWORKS` setting (a list of CIDR
strings); it is not meant for production.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx
from django.conf import settings

MAX_CHARS = 40_000
MAX_BYTES = 2_000_000
TIMEOUT_SECONDS = 10.0
MAX_REDIRECTS = 5
USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"
)
_HTML_TYPES = ("text/html", "application/xhtml+xml")

Resolver = Callable[[str, int], list[str]]


class RetrievalRefused(Exception):
    """The URL may not be fetched (scheme, private address, too many redirects)."""


@dataclass(frozen=True)
class FetchResult:
    url: str
    content: str
    ok: bool


def resolve_host(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    raw = getattr(settings, "CINDY_RETRIEVAL_ALLOWED_NETWORKS", []) or []
    return [ipaddress.ip_network(n, strict=False) for n in raw]


def is_public_address(address: str) -> bool:
    """Public unicast only: no loopback, private, link-local, CGNAT, multicast or reserved ranges."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip in net for net in _allowed_networks()):
        return True
    return ip.is_global and not ip.is_multicast


def checked_addresses(host: str, port: int, *, resolve: Resolver) -> list[str]:
    """Resolve `host` and require every address to be public; RetrievalRefused otherwise."""
    try:
        addresses = [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        try:
            addresses = resolve(host, port)
        except OSError as exc:
            raise RetrievalRefused(f"cannot resolve {host}: {exc}") from exc
    if not addresses:
        raise RetrievalRefused(f"{host} has no address")
    private = [a for a in addresses if not is_public_address(a)]
    if private:
        raise RetrievalRefused(f"{host} resolves to a non-public address ({', '.join(private)})")
    return addresses


def _pinned_url(parts, address: str) -> str:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    host = f"[{ip}]" if ip.version == 6 else str(ip)
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def fetch_page(
    url: str, *, resolve: Resolver = resolve_host, timeout: float = TIMEOUT_SECONDS
) -> FetchResult:
    """Fetch one page safely. Failures become a short note in `content`, never an exception."""
    deadline = time.monotonic() + timeout
    current = url
    try:
        for _hop in range(MAX_REDIRECTS + 1):
            parts = urlsplit(current)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise RetrievalRefused(f"{current!r} is not an http(s) URL")
            port = parts.port or (443 if parts.scheme == "https" else 80)
            address = checked_addresses(parts.hostname, port, resolve=resolve)[0]
            outcome = _request_once(current, parts, address, deadline)
            if isinstance(outcome, str):
                current = urljoin(current, outcome)
                continue
            return outcome
        raise RetrievalRefused(f"more than {MAX_REDIRECTS} redirects")
    except RetrievalRefused as exc:
        return FetchResult(url, f"Not fetched: {exc}", ok=False)
    except httpx.TimeoutException:
        return FetchResult(
            url, f"Error: Request Timeout - the request timed out after {timeout:g} seconds.", False
        )
    except httpx.HTTPError as exc:
        return FetchResult(url, f"Error: {type(exc).__name__}: {exc}", ok=False)


def _request_once(url: str, parts, address: str, deadline: float) -> FetchResult | str:
    """One hop to the pinned address: a FetchResult, or the Location of a redirect."""
    remaining = max(0.1, deadline - time.monotonic())
    host_header = parts.netloc.rsplit("@", 1)[-1]
    extensions = {"sni_hostname": parts.hostname} if parts.scheme == "https" else {}
    headers = {"Host": host_header, "User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml"}
    # trust_env=False: a proxy from the environment would connect somewhere we did not check.
    with httpx.Client(timeout=remaining, follow_redirects=False, trust_env=False) as client:
        request = client.build_request(
            "GET", _pinned_url(parts, address), headers=headers, extensions=extensions
        )
        response = client.send(request, stream=True)
        try:
            if response.is_redirect and response.headers.get("location"):
                return response.headers["location"]
            content_type = response.headers.get("content-type", "")
            mime = content_type.split(";", 1)[0].strip().lower()
            if mime not in _HTML_TYPES:
                return FetchResult(
                    url, f"Content-Type: {mime or 'unknown'} - not fetched (non-HTML content)", False
                )
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) >= MAX_BYTES or time.monotonic() > deadline:
                    break
            text = bytes(body[:MAX_BYTES]).decode(response.encoding or "utf-8", errors="replace")
        finally:
            response.close()
    status = "" if response.status_code < 400 else f"HTTP {response.status_code}\n\n"
    return FetchResult(url, (status + html_to_text(text))[:MAX_CHARS], ok=response.status_code < 400)


class _TextExtractor(HTMLParser):
    """Visible text with link targets kept (search results need them); scripts and styles dropped."""

    _SKIP = {"script", "style", "noscript", "svg", "template"}
    _BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "title"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._skipping = 0
        self._href: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCK:
            self.out.append("\n")
        if tag == "a":
            href = dict(attrs).get("href") or ""
            self._href = href if href.startswith(("http://", "https://", "/")) else None

    def handle_endtag(self, tag):
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1
        elif tag == "a" and self._href:
            self.out.append(f" ({self._href})")
            self._href = None

    def handle_data(self, data):
        if not self._skipping:
            self.out.append(data)


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.out).splitlines())
    return "\n".join(line for line in lines if line)
