"""The agents app's models: accounts and their Telegram state (`agent`), and the Telegram one-time
password device (`otp_device`), which builds on them. Both are registered by importing them here."""

from __future__ import annotations

from agents.models.access import AccessRequest, AgentGrant
from agents.models.agent import (
    Agent,
    AgentDocument,
    AgentLease,
    GatewayRequest,
    RolePrompt,
    TelegramEntity,
    TelegramSession,
    TelegramUpdateState,
    Transport,
)
from agents.models.otp_device import TelegramDevice

__all__ = [
    "AccessRequest",
    "Agent",
    "AgentGrant",
    "AgentDocument",
    "AgentLease",
    "GatewayRequest",
    "RolePrompt",
    "TelegramDevice",
    "TelegramEntity",
    "TelegramSession",
    "TelegramUpdateState",
    "Transport",
]
