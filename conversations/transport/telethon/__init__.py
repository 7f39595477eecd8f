"""The transport on real Telegram user accounts, through Telethon."""

from __future__ import annotations

from .transport import TelethonTransport

__all__ = ["TelethonTransport"]
