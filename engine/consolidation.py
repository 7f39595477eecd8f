"""Consolidation while the agent rests: a quiet chat's new messages reviewed into notes and memories.

A conversation whose newest message is CINDY_CONSOLIDATE_QUIET_SECONDS old, and that has messages the
agent has not reviewed yet (newer than the last message its previous consolidation turn covered), gets
a turn of its own: a graph with trigger `consolidate` whose `received` node plans through the usual
planning path (llm/planning.py), with a `# Consolidation` section saying which messages are new. The
policy lets that turn write only notes, memories, plans and intentions (llm/policy.py); every other
kind is refused with a `policy_refused` event. Its LLM call is an `LLMCall` like any turn's.

- Only agents whose role prompts include `Task-Consolidate` consolidate (the prompt teaches it), and
  only chats they may act in: not muted, blocked or a channel, not Saved Messages or Telegram's
  service chat, and with no turn under way (a reply is never delayed by one).
- Each agent has at most CINDY_CONSOLIDATE_PER_DAY consolidation turns a day (midnight to midnight in
  TIME_ZONE, counted from its graphs). A chat that would be one too many is said once per agent, day
  and limit as an `info` event naming the setting.
- Chats that went quiet more than LOOKBACK ago are not looked at, so a gateway back after days does not
  review every old chat at once.
- While the agent sleeps per its schedule (`engine.responsiveness.agents_asleep`), a chat quiet for
  CINDY_CONSOLIDATE_ASLEEP_QUIET_SECONDS (when shorter than the quiet time) is reviewed then (a chat
  whose message waits for the wake-up has a turn under way, so it is not), within the same daily
  limit, and the tick runs a sleeping agent's consolidation turns (engine/tick.py) while its other
  turns wait for the wake-up.

A consolidation turn reads nothing: its `received` node carries `UNREAD_PARAM`, and the planning
dispatch (engine/dispatch.py) syncs its chat without marking it read, on the transport or in the
mirror. A group's chatter the agent looked back on stays unread, as it would for a person who reviewed
the day in their head, or slept; the next reply turn marks it read as usual.

The step that calls this keeps a `ConsolidationMemo` so that a chat found reviewed (or started) is not
read again until a new message arrives.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Min, Q

from agents.models import Agent
from cindy_site.clock import now
from cindy_site.lookups import Ids
from cindy_site.parameters import parameter
from conversations.models import ActivityEvent, Conversation, Message, NodeKind, TaskGraph, TaskNode
from conversations.services.activity import record_event
from conversations.services.graphs import graph_active, graph_replan
from engine.brakes import day_start
from engine.responsiveness import agents_asleep

#: The role prompt that teaches consolidation; agents without it have no consolidation turns.
CONSOLIDATE_PROMPT = "Task-Consolidate"
#: Chats whose newest message is older than the quiet time plus this are left alone.
LOOKBACK = dt.timedelta(days=2)
#: Chats looked at per pass, the most recently quiet first.
BATCH = 50
#: The `received` node param of a consolidation turn: its chat is not marked read (engine/dispatch.py).
UNREAD_PARAM = "leave_unread"

Trigger = TaskGraph.Trigger


@dataclass
class ConsolidationMemo:
    """What a gateway already knows: chats whose newest message it found reviewed (conversation id ->
    its `last_message_at` then), and agents at their daily limit (agent id -> (day, limit))."""

    seen: dict[int, dt.datetime | None] = field(default_factory=dict)
    capped: dict[int, tuple[dt.date, int]] = field(default_factory=dict)


def consolidating_agents(agents: Iterable[Agent]) -> list[Agent]:
    """The agents among `agents` that consolidate: active, with `Task-Consolidate` in their prompts.

    In memory: the gateway passes the agents it holds, whose rows its lease step reads at every full
    pass (reading them again here built 1,000 models a minute at 1,000 agents, 30 ms of one pass)."""
    return [
        agent
        for agent in agents
        if not agent.disabled and not agent.stopped and CONSOLIDATE_PROMPT in (agent.role_prompt_names or [])
    ]


def last_reviewed_id(conversation_id: int) -> int | None:
    """The newest message id the conversation's last consolidation turn covered (None: never)."""
    context = (
        TaskGraph.objects.filter(conversation_id=conversation_id, trigger=Trigger.CONSOLIDATE)
        .order_by("-id")
        .values_list("context", flat=True)
        .first()
    )
    if not context:
        return None
    last = (context.get("consolidate") or {}).get("last")
    return int(last) if last is not None else None


def unreviewed(conversation: Conversation) -> dict:
    """The conversation's messages since its last consolidation: {"first", "last", "count"}."""
    rows = Message.objects.filter(conversation=conversation, deleted=False, is_service=False)
    since = last_reviewed_id(conversation.pk)
    if since is not None:
        rows = rows.filter(message_id__gt=since)
    return rows.aggregate(first=Min("message_id"), last=Max("message_id"), count=Count("pk"))


def quiet_times() -> tuple[dt.timedelta, dt.timedelta]:
    """(quiet, asleep quiet): how long a chat is quiet before its consolidation, awake and while the
    agent sleeps. The asleep quiet time applies only when it is the shorter one."""
    quiet = dt.timedelta(seconds=parameter("CINDY_CONSOLIDATE_QUIET_SECONDS"))
    return quiet, min(quiet, dt.timedelta(seconds=parameter("CINDY_CONSOLIDATE_ASLEEP_QUIET_SECONDS")))


def consolidations_today(agent_id: int, *, at: dt.datetime) -> int:
    return TaskGraph.objects.filter(
        conversation__agent_id=agent_id, trigger=Trigger.CONSOLIDATE, created__gte=day_start(at)
    ).count()


def consolidations_start_due(
    *, agents: Iterable[Agent], at: dt.datetime | None = None, memo: ConsolidationMemo | None = None
) -> int:
    """Start the consolidation turns that are due for `agents` (as their rows were read lately: the
    gateway's held agents). Returns how many started."""
    when = at or now()
    memo = memo if memo is not None else ConsolidationMemo()
    agents = {agent.pk: agent for agent in consolidating_agents(agents)}
    if not agents:
        return 0
    quiet, asleep_quiet = quiet_times()
    limit = parameter("CINDY_CONSOLIDATE_PER_DAY")
    today = day_start(when).date()
    for agent_id, (day, capped_at) in list(memo.capped.items()):
        if day != today or capped_at != limit:
            del memo.capped[agent_id]
    cutoff = when - quiet
    open_ids = [pk for pk in agents if pk not in memo.capped]
    asleep = agents_asleep(agents=[agents[pk] for pk in open_ids], at=when) if open_ids else set()
    candidates = (
        Conversation.objects.filter(
            Q(agent_id__in_ids=Ids([pk for pk in open_ids if pk not in asleep]), last_message_at__lte=cutoff)
            | Q(
                agent_id__in_ids=Ids([pk for pk in open_ids if pk in asleep]),
                last_message_at__lte=when - asleep_quiet,
            ),
            last_message_at__gt=cutoff - LOOKBACK,
            muted=False,
            blocked=False,
        )
        .exclude(kind=Conversation.Kind.CHANNEL)
        .order_by("-last_message_at", "-id")
    )
    started = 0
    for conversation in candidates[:BATCH]:
        if memo.seen.get(conversation.pk, False) == conversation.last_message_at:
            continue
        if conversation.agent_id in memo.capped:
            continue
        conversation.agent = agents[conversation.agent_id]
        if conversation.is_saved_messages or conversation.is_telegram_service:
            memo.seen[conversation.pk] = conversation.last_message_at
            continue
        news = unreviewed(conversation)
        if not news["count"]:
            memo.seen[conversation.pk] = conversation.last_message_at
            continue
        quiet_for = when - conversation.last_message_at
        asleep_now = conversation.agent_id in asleep
        if _start(conversation, news=news, at=when, quiet=quiet_for, limit=limit, asleep=asleep_now):
            memo.seen[conversation.pk] = conversation.last_message_at
            started += 1
        elif limit <= consolidations_today(conversation.agent_id, at=when):
            memo.capped[conversation.agent_id] = (today, limit)
    return started


def _start(
    conversation: Conversation,
    *,
    news: dict,
    at: dt.datetime,
    quiet: dt.timedelta,
    limit: int,
    asleep: bool = False,
) -> TaskGraph | None:
    """Start the conversation's consolidation turn, unless a turn is under way or the agent reached its
    daily limit (said once per agent, day and limit). `asleep`: started because the agent sleeps."""
    agent = conversation.agent
    with transaction.atomic():
        # The agent's row orders two gateways' starts (and their count of today's turns).
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        if graph_active(conversation=conversation) is not None:
            return None
        done = consolidations_today(agent.pk, at=at)
        if done >= limit:
            _say_capped(conversation, limit=limit, done=done, at=at)
            return None
        minutes = int(quiet.total_seconds() // 60)
        context = {"consolidate": {**news, "quiet_minutes": minutes, **({"asleep": True} if asleep else {})}}
        graph = graph_replan(
            conversation=conversation, trigger=Trigger.CONSOLIDATE, target_message_id=None, context=context
        )
        # Committed with the node, before a tick can claim it: the dispatch leaves the chat unread.
        TaskNode.objects.filter(graph=graph, kind=NodeKind.RECEIVED).update(params={UNREAD_PARAM: True})
        record_event(
            ActivityEvent.Kind.INFO,
            agent_id=agent.pk,
            conversation_id=conversation.pk,
            summary=(
                f"consolidation started: {news['count']} new message(s) (#{news['first']} to "
                f"#{news['last']}), quiet for {minutes} min{' while asleep' if asleep else ''}; {done + 1} of "
                f"{limit} today "
                "(CINDY_CONSOLIDATE_PER_DAY)"
            ),
            data={"consolidate": context["consolidate"], "graph_id": graph.pk},
        )
        return graph


def _say_capped(conversation: Conversation, *, limit: int, done: int, at: dt.datetime) -> None:
    agent = conversation.agent
    key = f"{agent.pk}:{day_start(at).date().isoformat()}:{limit}"
    if ActivityEvent.objects.filter(agent_id=agent.pk, data__consolidate_cap=key).exists():
        return
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=agent.pk,
        conversation_id=conversation.pk,
        summary=(
            f"consolidation skipped: CINDY_CONSOLIDATE_PER_DAY allows {limit} a day and agent {agent.name} "
            f"has had {done} today; quiet chats wait until after midnight ({settings.TIME_ZONE}) or a "
            "higher limit"
        ),
        data={"consolidate_cap": key},
    )
