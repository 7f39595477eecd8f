"""Online presence, as the original's "already online" (a 5-minute online window per chat).

- An agent that wrote in a chat within CINDY_ONLINE_WINDOW_SECONDS before a turn started is *already
  online* there: the first message of that turn skips the start-typing delay (`engine.handlers.send`).
  A fresh exchange, or one that resumes after the window, pays it again.
- The account's online status on Telegram follows the same activity and the schedule: the gateway shows
  an agent online while it wrote in any chat within the window and is awake, and offline otherwise
  (asleep, or quiet for the window). It changes the status only when that changes, and says so in the
  activity stream.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable

from asgiref.sync import sync_to_async
from django.conf import settings

from agents.models import Agent
from cindy_site.clock import get_clock, now
from cindy_site.lookups import Ids
from conversations.models import ActivityEvent, Conversation, Message
from conversations.services.activity import record_event
from conversations.transport.base import AuthError, FloodWait, TransportError
from engine.gateway_context import GatewayContext
from engine.responsiveness import agents_asleep

logger = logging.getLogger(__name__)

#: How often the gateway checks whether an agent's online status must change.
PRESENCE_CHECK_SECONDS = 5.0


def online_window() -> dt.timedelta:
    return dt.timedelta(seconds=settings.CINDY_ONLINE_WINDOW_SECONDS)


def already_online(*, conversation_id: int, before: dt.datetime) -> bool:
    """Whether the agent wrote in this conversation within the online window before `before`."""
    return Message.objects.filter(
        conversation_id=conversation_id,
        is_agent=True,
        deleted=False,
        date__gt=before - online_window(),
        date__lte=before,
    ).exists()


def agents_active(*, agent_ids: Iterable[int], at: dt.datetime) -> set[int]:
    """The agents that wrote in any chat within the online window before `at`.

    Two indexed queries: the conversations with a message in the window (conversation_recent_idx),
    then the agent's own messages among them (message_history_idx)."""
    since = at - online_window()
    recent = Conversation.objects.filter(agent_id__in_ids=Ids(agent_ids), last_message_at__gt=since)
    conversation_agents = dict(recent.values_list("pk", "agent_id"))
    if not conversation_agents:
        return set()
    spoke = (
        Message.objects.filter(
            conversation_id__in=list(conversation_agents), is_agent=True, deleted=False, date__gt=since
        )
        .values_list("conversation_id", flat=True)
        .distinct()
    )
    return {conversation_agents[conversation_id] for conversation_id in spoke}


def agents_due_online(*, agents: list[Agent], at: dt.datetime) -> dict[int, tuple[bool, str]]:
    """For each agent: (online, why), as the status Telegram should show."""
    asleep = agents_asleep(agents=agents, at=at)
    # `id`, not `pk`: read for every held agent every few seconds, and `pk` is a property.
    active = agents_active(agent_ids=[a.id for a in agents if a.id not in asleep], at=at)
    minutes = round(settings.CINDY_ONLINE_WINDOW_SECONDS / 60, 1)
    wrote, quiet = (
        (True, f"wrote within the last {minutes:g} min"),
        (False, f"nothing written for {minutes:g} min"),
    )
    due = {}
    for agent in agents:
        agent_id = agent.id
        due[agent_id] = (False, "asleep") if agent_id in asleep else wrote if agent_id in active else quiet
    return due


def presence_record(*, agent_id: int, online: bool, why: str) -> None:
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=agent_id,
        summary=f"shown {'online' if online else 'offline'} on Telegram ({why})",
        data={"online": online},
    )


class PresenceStep:
    """Shows each connected agent online or offline as its activity and schedule say."""

    name = "presence"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context
        self._checked_at = 0.0  # monotonic

    async def run(self) -> bool:
        at = get_clock().monotonic()
        if at - self._checked_at < PRESENCE_CHECK_SECONDS:
            return False
        if self.context.upkeep_waits(last=self._checked_at, period=PRESENCE_CHECK_SECONDS):
            return False
        self._checked_at = at
        clients = [c for c in self.context.clients.values() if c.connected]
        if not clients:
            return False
        due = await sync_to_async(agents_due_online)(agents=[c.agent for c in clients], at=now())
        did = False
        for client in clients:
            online, why = due[client.agent.id]
            if client.shown_online == online:
                continue
            try:
                await client.transport.set_online(online)
            except (FloodWait, AuthError):
                raise
            except TransportError as exc:
                logger.info("agent %s: could not set the online status: %s", client.agent.name, exc)
                continue
            client.shown_online = online
            await sync_to_async(presence_record)(agent_id=client.agent.pk, online=online, why=why)
            did = True
        return did
