"""Which transport drives an agent: the sandbox for sandbox agents, Telegram (Telethon) otherwise."""

from __future__ import annotations

from agents.models import Agent
from agents.models import Transport as TransportKind
from conversations.transport.base import Transport


def transport_for(agent: Agent, *, gateway_id: str = "") -> Transport:
    if agent.transport == TransportKind.SANDBOX:
        from sandbox.transport.transport import SandboxTransport

        return SandboxTransport(agent, gateway_id=gateway_id)
    # Imported here so that sandbox-only installs and the web process never load Telethon.
    from telegram import TelethonTransport

    return TelethonTransport(agent, gateway_id=gateway_id)
