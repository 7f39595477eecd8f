"""What a Telegram-kind handler gets and returns.

A handler is a coroutine run in the gateway for one claimed node. It returns `Done` (the node is
finished) or `Defer` (come back at `until`, e.g. while typing or waiting; no attempt is counted).
It raises a transport error to fail: `FloodWait` reschedules, `PermanentError` fails at once, anything
else is retried by the engine.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agents.models import Agent
from conversations.models import Conversation, TaskNode
from conversations.transport.base import Transport


class NodeLost(Exception):
    """The node is no longer ours (replanned or taken over): the handler stops quietly."""


@dataclass
class HandlerContext:
    node: TaskNode
    agent: Agent
    conversation: Conversation
    transport: Transport
    owner: str  # the claim token; every write about the node is conditional on it

    @property
    def params(self) -> dict[str, Any]:
        return self.node.params


@dataclass
class Done:
    summary: str = "done"
    result: dict[str, Any] = field(default_factory=dict)


@dataclass
class Defer:
    until: dt.datetime
    reason: str
    params: dict[str, Any] = field(default_factory=dict)


Outcome = Done | Defer
Handler = Callable[[HandlerContext], Awaitable[Outcome]]

_HANDLERS: dict[str, Handler] = {}


def register(kind: str) -> Callable[[Handler], Handler]:
    def decorator(handler: Handler) -> Handler:
        if kind in _HANDLERS:
            raise RuntimeError(f"two handlers registered for node kind {kind!r}")
        _HANDLERS[kind] = handler
        return handler

    return decorator


def handler_for(kind: str) -> Handler | None:
    return _HANDLERS.get(kind)
