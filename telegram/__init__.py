"""The transport on real Telegram user accounts, through Telethon.

`TelethonTransport` is loaded on first use, so that importing a light submodule (`.server`, which the
system checks read) does not load Telethon, about 34 MiB, into processes that run no Telegram agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .transport import TelethonTransport


def __getattr__(name: str) -> Any:
    if name == "TelethonTransport":
        from .transport import TelethonTransport

        return TelethonTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["TelethonTransport"]
