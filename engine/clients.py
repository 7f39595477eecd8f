"""One supervised Telegram (or sandbox) connection of the gateway, held in its context's `clients`
(engine/gateway_context.py) and read by its steps.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from agents.models import Agent
from cindy_site.clock import get_clock
from conversations.transport.base import FloodWait, Transport

logger = logging.getLogger("engine.gateway")

#: The longest pause before a failed client is connected again.
MAX_BACKOFF_SECONDS = 60


@dataclass
class AgentClient:
    """One supervised Telegram (or sandbox) connection."""

    agent: Agent
    transport: Transport
    connected: bool = False
    failures: int = 0
    retry_at: float = 0.0
    paused_until: dt.datetime | None = None
    renewed_at: float = 0.0  # monotonic start of the last lease acquisition or renewal that succeeded
    dropped: bool = False  # released (or fenced) while a step still held on to it
    shown_online: bool | None = None  # the online status last set on the account (engine/presence.py)
    #: The mute, block and title flags of the dialog list last compared with the database (peer,
    #: muted, blocked, title per dialog; read by an unread scan, engine/attention.py, or with scans off
    #: by the dialog refresh, engine/upkeep.py) and the monotonic time it was read: an unchanged list
    #: is compared again only after DIALOG_REFRESH_SECONDS (engine/upkeep.py, `apply_dialog_flags`).
    flags_seen: tuple = ()
    flags_compared_at: float | None = None
    #: Set by the library refresh when the account's Saved Messages stickers changed: the sticker step
    #: looks at this agent at its next pass instead of its next sweep (engine/upkeep.py).
    stickers_changed: bool = False

    def fail(self, exc: BaseException) -> float:
        self.connected = False
        self.failures += 1
        delay = min(2**self.failures, MAX_BACKOFF_SECONDS)
        if isinstance(exc, FloodWait):
            delay = max(delay, exc.seconds)  # Telegram said when; asking earlier only prolongs the wait
        self.retry_at = get_clock().monotonic() + delay
        logger.warning("agent %s: client failed (%r); reconnecting in %ss", self.agent.name, exc, delay)
        return delay


def asks_database(client: AgentClient) -> bool:
    """Whether the client's transport tells in the database whether a poll finds anything (its class
    offers `with_updates(transports)`, as the sandbox's does): `clients_quiet` asks those."""
    return hasattr(type(client.transport), "with_updates")


def reports_updates(client: AgentClient) -> bool:
    """Whether the client's transport knows in memory whether a poll finds anything (`poll_pending`,
    as Telethon's does, which queues updates as they arrive and reports them through `on_update`).
    `poll_pending` is asked of the class: it is a property, which `hasattr` on the object would run."""
    transport = client.transport
    return hasattr(type(transport), "poll_pending") and hasattr(transport, "on_update")


def clients_quiet(clients: list[AgentClient]) -> set[int]:
    """Agent ids whose transport says, in one query per transport kind, that a poll finds nothing.

    A transport class may offer `with_updates(transports)` (the sandbox does: its poll is a
    query); the others are polled unless their `poll_pending` says there is nothing (Telegram: an
    in-memory queue; the ingest step reads it before asking here).
    """
    by_kind: dict[type, list[AgentClient]] = {}
    for client in clients:
        by_kind.setdefault(type(client.transport), []).append(client)
    quiet: set[int] = set()
    for kind, group in by_kind.items():
        if not asks_database(group[0]):
            continue
        ready = kind.with_updates([c.transport for c in group])
        quiet.update(c.agent.id for c in group if c.transport not in ready)
    return quiet
