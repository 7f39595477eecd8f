"""Telegram-kind handlers, one module per node kind, registered by name on import."""

from __future__ import annotations

from engine.handlers import (  # noqa: F401  (each module registers its kind)
    block,
    clear_conversation,
    image,
    react,
    send,
    send_media,
    shutdown,
    sticker,
    unblock,
    voice,
    wait,
    xsend,
)
from engine.handlers.base import Defer, Done, HandlerContext, NodeLost, handler_for, register

__all__ = ["Defer", "Done", "HandlerContext", "NodeLost", "handler_for", "register"]
