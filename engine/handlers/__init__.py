"""Telegram-kind handlers, one module per node kind, registered by name on import."""

from __future__ import annotations

from engine.handlers import (  # noqa: F401  (each module registers its kind)
    block,
    clear_conversation,
    react,
    send,
    shutdown,
    sticker,
    unblock,
    wait,
)
from engine.handlers import send_media, xsend  # noqa: F401,E402  (initiative kinds)
from engine.handlers.base import Defer, Done, HandlerContext, NodeLost, handler_for, register

__all__ = ["Defer", "Done", "HandlerContext", "NodeLost", "handler_for", "register"]
