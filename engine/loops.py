"""Agent-to-agent loops: two agents (or an agent and a bot) in one chat must not talk forever.

A *machine* message is one written by any of Cindy's agents (the agent's own included) or by a bot.
A *run* is the chat's newest messages that are all machine messages, back to the last person's message
or to a pause of the cool-down between two of them. An agent answers a machine message only while the
run, that message included, is at most its hop limit long: a person writing, or a quiet cool-down,
starts a new run. With the default limit of 4, a person's question to two agents gets at most 5
agent messages in a row.

The limit and cool-down are the agent's (`Agent.hop_limit`, `Agent.hop_cooldown_seconds`), else the
settings CINDY_AGENT_HOP_LIMIT and CINDY_AGENT_HOP_COOLDOWN_SECONDS. A stopped run is recorded in the
activity stream (`loop_guard`).
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from agents.models import Agent
from agents.selectors import telegram_user_is_agent
from conversations.models import ActivityEvent, Conversation, Message
from conversations.services.activity import record_event


def _limits(agent: Agent) -> tuple[int, dt.timedelta]:
    limit = agent.hop_limit if agent.hop_limit is not None else settings.CINDY_AGENT_HOP_LIMIT
    cooldown = agent.hop_cooldown_seconds
    if cooldown is None:
        cooldown = settings.CINDY_AGENT_HOP_COOLDOWN_SECONDS
    return limit, dt.timedelta(seconds=cooldown)


def _agent_user_ids() -> set[int]:
    return set(Agent.objects.exclude(telegram_user_id=None).values_list("telegram_user_id", flat=True))


def _sent_by_machine(message: Message) -> bool:
    """`is_machine_message` for one message, without reading every agent's user id."""
    if message.is_agent or message.sender_is_bot:
        return True
    return message.sender_id is not None and telegram_user_is_agent(user_id=int(message.sender_id))


def is_machine_message(message: Message, *, agent_user_ids: set[int]) -> bool:
    return message.is_agent or message.sender_is_bot or message.sender_id in agent_user_ids


def machine_run(*, conversation: Conversation, message: Message, cooldown: dt.timedelta, longest: int) -> int:
    """The length of the run ending at `message` (0 when a person wrote it), counted up to `longest`."""
    if not _sent_by_machine(message):
        return 0
    agent_user_ids = _agent_user_ids()
    newest_first = Message.objects.filter(
        conversation=conversation, message_id__lte=message.message_id, is_service=False
    ).order_by("-message_id")[:longest]
    run, later = 0, None
    for earlier in newest_first:
        if not is_machine_message(earlier, agent_user_ids=agent_user_ids):
            break
        if later is not None and later.date - earlier.date >= cooldown:
            break
        run, later = run + 1, earlier
    return run


def loop_guard_reason(*, agent: Agent, conversation: Conversation, message: Message) -> str | None:
    """Why the agent must not answer `message` (another agent's or a bot's), or None.

    When it must not, the stop is recorded in the activity stream."""
    limit, cooldown = _limits(agent)
    run = machine_run(conversation=conversation, message=message, cooldown=cooldown, longest=limit + 1)
    if run <= limit:
        return None
    reason = (
        f"loop guard: more than {limit} messages in a row from agents or bots; the agent answers again "
        f"after a person writes or {int(cooldown.total_seconds())} s of quiet"
    )
    record_event(
        ActivityEvent.Kind.LOOP_GUARD,
        agent_id=agent.pk,
        conversation_id=conversation.pk,
        summary=f"{message.sender_name or message.sender_id} #{message.message_id} not answered: {reason}",
        data={
            "message_id": message.message_id,
            "hop_limit": limit,
            "cooldown_seconds": cooldown.total_seconds(),
        },
    )
    return reason
