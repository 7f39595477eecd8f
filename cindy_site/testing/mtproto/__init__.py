"""A loopback Telegram that speaks MTProto 2.0 to the unmodified Telethon client (test support).

`StandIn(...).start()` runs it on 127.0.0.1 in a background thread; `python manage.py telegram_standin`
runs it in the foreground with its HTTP control interface. See docs/telegram.md.
"""

from __future__ import annotations

from .crypto import ServerKey, register_public_key
from .server import StandIn

__all__ = ["ServerKey", "StandIn", "register_public_key"]
