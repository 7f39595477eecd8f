"""The origin check for the dashboard socket (cross-site WebSocket hijacking).

A browser sends cookies with a WebSocket handshake to any site, so a page elsewhere could open the
socket with an operator's session unless the origin is checked. Channels' AllowedHostsOriginValidator
compares the Origin with ALLOWED_HOSTS, which accepts every origin when ALLOWED_HOSTS holds "*".
This check instead follows Django's CSRF origin check: an Origin is accepted only when it is this site
itself - the same scheme (https when the socket is wss, or when SECURE_PROXY_SSL_HEADER says the
proxy received https), host and port (default ports made explicit) as the Host header, which must be
one of ALLOWED_HOSTS - or one of CSRF_TRUSTED_ORIGINS (scheme included; wildcards as in Django's CSRF
check). Everything else, including a missing Origin and an http page opening an https site's
socket, is closed with code 4403.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

CLOSE_NOT_ALLOWED = 4403
#: What Django allows when DEBUG is on and ALLOWED_HOSTS is empty.
DEBUG_HOSTS = [".localhost", "127.0.0.1", "[::1]"]
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1").strip()
    return ""


def is_secure(scope: dict[str, Any]) -> bool:
    """Whether the browser reached this site over TLS: wss, or the proxy header Django trusts."""
    if scope.get("scheme") in ("wss", "https"):
        return True
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if not proxy_header:
        return False
    meta_name, secure_value = proxy_header
    name = meta_name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1")
    return _header(scope, name).split(",", 1)[0].strip() == secure_value


def _origin_key(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with the default port filled in, or None when malformed."""
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path or parts.username:
        return None
    return parts.scheme, parts.hostname, port or _DEFAULT_PORTS[parts.scheme]


def _trusted(origin_key: tuple[str, str, int], scheme: str, netloc: str) -> bool:
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        parts = urlsplit(trusted.lower().rstrip("/"))
        if "*" in parts.netloc:
            if parts.scheme == scheme and is_same_domain(netloc, parts.netloc.lstrip("*")):
                return True
        elif origin_key == _origin_key(parts.scheme, parts.netloc):
            return True
    return False


def origin_allowed(*, origin: str, host: str, secure: bool) -> bool:
    """Whether a socket handshake with these Origin and Host headers comes from this site.

    `secure`: the connection reached the site over TLS (see `is_secure`), so the site's own origin
    is https.
    """
    origin = origin.lower().rstrip("/")
    host = host.lower()
    parts = urlsplit(origin) if "://" in origin else None
    if parts is None or not host:
        return False
    origin_key = _origin_key(parts.scheme, parts.netloc)
    if origin_key is None:
        return False
    domain, _ = split_domain_port(host)
    allowed_hosts = settings.ALLOWED_HOSTS or (DEBUG_HOSTS if settings.DEBUG else [])
    if not domain or not validate_host(domain, allowed_hosts):
        return False
    site_key = _origin_key("https" if secure else "http", host)
    return origin_key == site_key or _trusted(origin_key, parts.scheme, parts.netloc)


class _OriginDenier(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        await self.close(code=CLOSE_NOT_ALLOWED)


class SameOriginValidator:
    """ASGI middleware: lets a WebSocket through only when `origin_allowed`."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(
            origin=_header(scope, b"origin"), host=_header(scope, b"host"), secure=is_secure(scope)
        ):
            return await _OriginDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
