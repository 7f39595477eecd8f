"""What the API handlers share: the error they raise and the table that routes requests to them."""

from __future__ import annotations

from typing import Any

HANDLERS: dict[type, str] = {}


class RpcFail(Exception):
    """Answered to the client as rpc_error(code, message)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code} {message}")
        self.code = code
        self.message = message


def handles(*request_types: type):
    """Route these request types to the decorated method (by name, so subclasses may override it)."""

    def register(fn):
        for t in request_types:
            HANDLERS[t] = fn.__name__
        return fn

    return register


def method_name(request: Any) -> str:
    """Telegram's name of a request, e.g. messages.sendMessage for SendMessageRequest."""
    module = type(request).__module__.rsplit(".", 1)[-1]
    name = type(request).__name__.removesuffix("Request")
    name = name[:1].lower() + name[1:]
    return name if module == "functions" else f"{module}.{name}"
