"""The origin check for the dashboard socket (cross-site WebSocket hijacking).

A browser sends cookies with a WebSocket handshake to any site, so a page elsewhere could open the
socket with an operator's session unless the origin is checked. Channels' AllowedHostsOriginValidator
compares the Origin with ALLOWED_HOSTS, which accepts every origin when ALLOWED_HOSTS holds "*".
This check instead accepts an Origin only when it is this site itself (its host and port equal the
Host header, which must be one of ALLOWED_HOSTS) or one of CSRF_TRUSTED_ORIGINS (wildcards as in
Django's CSRF check); everything else, including a missing Origin, is closed with code 4403.
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


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1").strip()
    return ""


def _trusted(origin: str, scheme: str, netloc: str) -> bool:
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        parts = urlsplit(trusted)
        if "*" in parts.netloc:
            if parts.scheme == scheme and is_same_domain(netloc, parts.netloc.lower().lstrip("*")):
                return True
        elif origin == trusted.lower().rstrip("/"):
            return True
    return False


def origin_allowed(*, origin: str, host: str) -> bool:
    """Whether a socket handshake with these Origin and Host headers comes from this site."""
    origin = origin.lower().rstrip("/")
    host = host.lower()
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc or not host:
        return False
    domain, _ = split_domain_port(host)
    allowed_hosts = settings.ALLOWED_HOSTS or (DEBUG_HOSTS if settings.DEBUG else [])
    if not domain or not validate_host(domain, allowed_hosts):
        return False
    return parts.netloc == host or _trusted(origin, parts.scheme, parts.netloc)


class _OriginDenier(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        await self.close(code=CLOSE_NOT_ALLOWED)


class SameOriginValidator:
    """ASGI middleware: lets a WebSocket through only when `origin_allowed`."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(
            origin=_header(scope, b"origin"), host=_header(scope, b"host")
        ):
            return await _OriginDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
