"""Request bodies refused by size, before anything reads them.

Two layers, because they guard different things:
- `BodySizeLimit` wraps the whole ASGI application (`cindy_site.asgi`): a body larger than
  `CINDY_MAX_REQUEST_BODY_BYTES` is answered 413 for every route, by its Content-Length before the app
  runs, or, when no length is sent, as soon as the streamed chunks pass the limit (the app is then
  told the client left, so Django stops reading and answers nothing itself). Django never spools such
  a body. The ASGI server may still have buffered it (daphne queues the whole body before the app
  reads any), which is why production puts the same limit on its proxy (README, production notes).
- A route may take less (`limit_route_body`, e.g. the API's sandbox upload): the same middleware
  answers 413 by the request's Content-Length before the body is parsed, naming the route's limit
  (Django never reads past Content-Length).
- `RequestDataTooBigMiddleware` makes Django's own limits on form and JSON data
  (`DATA_UPLOAD_MAX_MEMORY_SIZE`, raised as `RequestDataTooBig` when the data is first read) answer
  413 on the API and the web forms, instead of a 400 page (or a 500 where a view read the body).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _too_large_text(limit: int) -> str:
    return f"the request body is too large: at most {limit:,} bytes are accepted"


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(send: Send, limit: int) -> None:
    body = _too_large_text(limit).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodySizeLimit:
    """ASGI middleware: 413 for an HTTP request whose body passes `CINDY_MAX_REQUEST_BODY_BYTES`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit: int = settings.CINDY_MAX_REQUEST_BODY_BYTES
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await _refuse(send, limit)
            return

        received = 0
        refused = False

        async def counted_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # The app has not answered yet (Django reads the whole body first); from here
                    # on it only hears that the client left, and whatever it sends is dropped.
                    refused = True
                    await _refuse(send, limit)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counted_receive, guarded_send)


#: A route's own body limit, by its view name ("namespace:name"): a function giving (bytes, what).
_ROUTE_LIMITS: dict[str, Callable[[], tuple[int, str]]] = {}


def limit_route_body(view_name: str, limit: Callable[[], tuple[int, str]]) -> None:
    """Bound the body of the route named `view_name` (e.g. "api:sandbox_file") below the global
    limit: `limit()` gives the largest body in bytes and words saying where it comes from (a
    setting), read on each request so that a changed setting holds at once."""
    _ROUTE_LIMITS[view_name] = limit


def _route_refusal(request: HttpRequest) -> HttpResponse | None:
    """413 when the route has a limit of its own and the declared body is past it."""
    if not _ROUTE_LIMITS:
        return None
    try:
        view_name = resolve(request.path_info).view_name
    except Resolver404:
        return None
    limit_of = _ROUTE_LIMITS.get(view_name)
    if limit_of is None:
        return None
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    limit, what = limit_of()
    if declared <= limit:
        return None
    detail = f"{_too_large_text(limit)} here ({what}); this one declares {declared:,}"
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": detail, "field": None}, status=413)
    return HttpResponse(detail, status=413, content_type="text/plain; charset=utf-8")


class RequestDataTooBigMiddleware:
    """Reads a request's data up front, so that Django's data limit answers 413 here rather than
    wherever the data is first touched (the CSRF check's 400, a view's 500).

    A route with a limit of its own (`limit_route_body`) is checked by Content-Length first.
    Multipart bodies are parsed (files go to the upload handlers, so to disk past
    `FILE_UPLOAD_MAX_MEMORY_SIZE`); other bodies are read into `request.body`, within
    `DATA_UPLOAD_MAX_MEMORY_SIZE`. Both are what the views would read next anyway."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            refused = _route_refusal(request)
            if refused is not None:
                return refused
            try:
                if request.content_type == "multipart/form-data":
                    request.POST  # noqa: B018 (parsing is the point)
                else:
                    request.body  # noqa: B018
            except RequestDataTooBig:
                return _data_too_big(request)
        return self.get_response(request)


def _data_too_big(request: HttpRequest) -> HttpResponse:
    detail = _too_large_text(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) + " as form or JSON data"
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": detail, "field": None}, status=413)
    return HttpResponse(detail, status=413, content_type="text/plain; charset=utf-8")
