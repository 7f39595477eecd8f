"""SSRF-safe web retrieval for `retrieve` tasks.

- Only http and https; a malformed URL (bad port, broken IPv6 literal, invalid host name) gets a short
  note, never an exception.
- Every address the host resolves to must be public (`llm.retrieval_addresses`); this is checked again
  on every redirect hop, and at most `max_redirects` (5) hops are followed.
- The connection goes to the address that was checked (the IP is pinned in the URL, while the Host
  header and TLS SNI/certificate check keep the real host name), so DNS cannot change in between.
- One wall deadline (`timeout`, 10 s) covers resolving, connecting, TLS, headers, every redirect hop
  and the body, however slowly the server trickles bytes (`llm.retrieval_stream.DeadlineBackend`).
- At most `max_bytes` (2 MB) of body are kept, counted after undoing Content-Encoding (gzip, deflate,
  br, stacked up to 3 deep), and decoding stops at that cap; only HTML is read ("Content-Type: X -
  not fetched (non-HTML content)" otherwise), reduced to text by `llm.html_text` in time linear in
  its size; the text kept is at most 40,000 characters.
"""

from __future__ import annotations

import codecs
import time
from dataclasses import dataclass
from urllib.parse import urljoin

import httpcore
import httpx

from llm.html_text import html_to_text
from llm.retrieval_addresses import (
    Resolver,
    RetrievalRefused,
    Target,
    checked_addresses,
    is_public_address,
    parse_target,
    resolve_host,
)
from llm.retrieval_stream import (
    DECODE_ERRORS,
    SUPPORTED_ENCODINGS,
    BoundedDecoder,
    DeadlineBackend,
    UnsupportedEncoding,
)

__all__ = ["FetchResult", "RetrievalRefused", "fetch_page", "html_to_text", "is_public_address"]

MAX_CHARS = 40_000
MAX_BYTES = 2_000_000
TIMEOUT_SECONDS = 10.0
MAX_REDIRECTS = 5
USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"
)
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_REDIRECTS = (301, 302, 303, 307, 308)
_NETWORK_ERRORS = (
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
    httpcore.ProxyError,
)


@dataclass(frozen=True)
class FetchResult:
    url: str
    content: str
    ok: bool
    #: Body bytes kept after decoding (at most max_bytes), and whether the body went on past them.
    size: int = 0
    truncated: bool = False


def fetch_page(
    url: str,
    *,
    resolve: Resolver = resolve_host,
    timeout: float = TIMEOUT_SECONDS,
    max_bytes: int = MAX_BYTES,
    max_redirects: int = MAX_REDIRECTS,
) -> FetchResult:
    """Fetch one page safely, within `timeout` seconds of wall time in all.

    Failures become a short note in `content`, never an exception.
    """
    deadline = time.monotonic() + timeout
    timed_out = FetchResult(
        url, f"Error: Request Timeout - the request timed out after {timeout:g} seconds.", False
    )
    current = url
    try:
        for _hop in range(max_redirects + 1):
            target = parse_target(current)
            address = checked_addresses(target.host, target.port, resolve=resolve, deadline=deadline)[0]
            if time.monotonic() >= deadline:
                return timed_out
            outcome = _request_once(url, target, address, deadline, max_bytes)
            if isinstance(outcome, str):
                try:
                    current = urljoin(current, outcome)
                except ValueError as exc:
                    raise RetrievalRefused(
                        f"the redirect to {outcome[:200]!r} is not a valid URL ({exc})"
                    ) from None
                continue
            return outcome
        raise RetrievalRefused(f"more than {max_redirects} redirects")
    except RetrievalRefused as exc:
        return FetchResult(url, f"Not fetched: {exc}", ok=False)
    except httpcore.TimeoutException:
        return timed_out
    except _NETWORK_ERRORS as exc:
        return FetchResult(url, f"Error: {type(exc).__name__}: {exc or 'connection failed'}", ok=False)


def _pinned_url(target: Target, address: str) -> str:
    host = f"[{address.split('%', 1)[0]}]" if ":" in address else address
    path = target.parts.path or "/"
    query = f"?{target.parts.query}" if target.parts.query else ""
    return f"{target.scheme}://{host}:{target.port}{path}{query}"


def _request_once(
    url: str, target: Target, address: str, deadline: float, max_bytes: int
) -> FetchResult | str:
    """One hop to the pinned address: a FetchResult, or the Location of a redirect."""
    left = max(0.001, deadline - time.monotonic())
    headers = [
        (b"Host", target.host_header.encode("ascii")),
        (b"User-Agent", USER_AGENT.encode()),
        (b"Accept", b"text/html,application/xhtml+xml"),
        (b"Accept-Encoding", ", ".join(SUPPORTED_ENCODINGS).encode()),
    ]
    extensions: dict = {"timeout": {"connect": left, "read": left, "write": left, "pool": left}}
    if target.scheme == "https":
        extensions["sni_hostname"] = target.host
    # No proxy: a proxy from the environment would connect somewhere we did not check.
    with httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(), network_backend=DeadlineBackend(deadline), retries=0
    ) as pool:
        with pool.stream(
            "GET", _pinned_url(target, address), headers=headers, extensions=extensions
        ) as response:
            head = _header_map(response.headers)
            if response.status in _REDIRECTS and head.get("location"):
                return head["location"]
            mime = head.get("content-type", "").split(";", 1)[0].strip().lower()
            if mime not in _HTML_TYPES:
                return FetchResult(
                    url, f"Content-Type: {mime or 'unknown'} - not fetched (non-HTML content)", False
                )
            try:
                decoder = BoundedDecoder(head.get("content-encoding", ""), limit=max_bytes)
            except UnsupportedEncoding as exc:
                return FetchResult(url, f"Not fetched: {exc}", ok=False)
            body, truncated = _read_body(response, decoder, max_bytes)
    text = body.decode(_charset(head.get("content-type", "")), errors="replace")
    status = "" if response.status < 400 else f"HTTP {response.status}\n\n"
    ok = response.status < 400
    return FetchResult(
        url, (status + html_to_text(text))[:MAX_CHARS], ok, size=len(body), truncated=truncated
    )


def _header_map(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Lower-cased names; a repeated Content-Encoding lists all its layers, other repeats keep the first."""
    head: dict[str, str] = {}
    for key, value in raw:
        name, text = key.decode("latin-1").lower(), value.decode("latin-1")
        if name == "content-encoding" and name in head:
            head[name] = f"{head[name]}, {text}"
        else:
            head.setdefault(name, text)
    return head


def _read_body(response: httpcore.Response, decoder: BoundedDecoder, max_bytes: int) -> tuple[bytes, bool]:
    """The decoded body up to `max_bytes`, and whether more was left unread or undecoded.

    Raw bytes are capped too, so an undecodable or endless body stops at the same size.
    """
    body = bytearray()
    raw = 0
    try:
        for chunk in response.iter_stream():
            raw += len(chunk)
            body += decoder.feed(chunk)
            if decoder.full or raw >= max_bytes:
                return bytes(body), True
        body += decoder.flush()
    except DECODE_ERRORS as exc:
        if not body:
            raise RetrievalRefused(f"the body could not be decoded ({exc})") from None
        return bytes(body), True  # a corrupt tail: keep what decoded cleanly
    return bytes(body), decoder.full


def _charset(content_type: str) -> str:
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            candidate = value.strip().strip('"').strip("'")
            try:
                return codecs.lookup(candidate).name
            except LookupError:
                break
    return "utf-8"
