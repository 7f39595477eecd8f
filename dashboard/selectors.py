"""Reads for the dashboard and the sandbox chat. Each returns plain, JSON-ready dicts.

The page and the socket share these shapes: the browser renders them with `textContent` only, so
names, titles, texts and errors that came from Telegram or an LLM stay inert.

Reads that list records of several agents take `agent_ids`: the agents the viewer may see
(`agents.access.visible_agent_ids`), or None for every agent and the records that belong to none.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.db.models import Count, Max, Q, Sum
from django.urls import reverse

from agents.models import Agent, AgentLease
from agents.schedule import asleep_until
from agents.selectors import agent_notices
from cindy_site.clock import now
from conversations.models import ActivityEvent, Conversation, TaskGraph, TaskNode
from engine.brakes import day_start
from llm.cache_share import cache_shares
from llm.models import LLMCall, RouteBreaker
from memory.models import ScheduledEvent, ScheduleEntry
from sandbox.models import SandboxMember, SandboxMessage, SandboxUpdate
from sandbox.selectors import sandbox_message_row as sandbox_row

#: How many conversations the dashboard lists, most recent first.
CONVERSATION_LIMIT = 40
#: How many events a fresh page or a reconnecting browser gets at most.
EVENT_LIMIT = 200
SANDBOX_HISTORY_LIMIT = 200


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value else None


# --- Agents -----------------------------------------------------------------------------------

#: The dashboard shows each agent's next few events, from the soonest events of all agents.
NEXT_EVENTS_PER_AGENT = 3
NEXT_EVENTS_SCAN = 500


def _agent_row(
    agent: Agent,
    lease: AgentLease | None,
    at: dt.datetime,
    activity: ScheduleEntry | None = None,
    events: list[ScheduledEvent] | None = None,
) -> dict[str, Any]:
    online = lease is not None and lease.expires_at > at
    asleep = asleep_until(schedule=agent.daily_schedule, timezone=agent.timezone, when=at)
    if activity is not None:
        asleep = activity.end if activity.responsiveness == 0 else None
    return {
        "id": agent.pk,
        "name": agent.name,
        "transport": agent.transport,
        "online": online,
        "gateway": lease.holder if lease else "",
        "last_heartbeat": _iso(lease.heartbeat_at) if lease else None,
        "lease_expires": _iso(lease.expires_at) if lease else None,
        "disabled": agent.disabled,
        "stopped": agent.stopped,
        "asleep_until": _iso(asleep),
        "activity": (
            {
                "name": activity.activity,
                "until": _iso(activity.end),
                "responsiveness": activity.responsiveness,
                "description": activity.description,
            }
            if activity is not None
            else None
        ),
        "next_events": [
            {"intent": e.intent, "due": _iso(e.due_at), "channel_id": e.channel_id} for e in events or []
        ],
        "last_error": agent.last_error,
        "last_error_at": _iso(agent.last_error_at),
        "notices": agent_notices(agent=agent),
    }


def _only(queryset, agent_ids: Collection[int] | None, field: str = "agent_id"):
    return queryset if agent_ids is None else queryset.filter(**{f"{field}__in": agent_ids})


def agent_rows(
    *, at: dt.datetime | None = None, agent_ids: Collection[int] | None = None
) -> list[dict[str, Any]]:
    at = at or now()
    leases = {lease.agent_id: lease for lease in AgentLease.objects.all()}
    activities = {
        e.agent_id: e for e in ScheduleEntry.objects.filter(start__lte=at, end__gt=at).order_by("-start")
    }
    upcoming: dict[int, list[ScheduledEvent]] = {}
    for event in ScheduledEvent.objects.filter(due_at__isnull=False).order_by("due_at")[:NEXT_EVENTS_SCAN]:
        if len(upcoming.setdefault(event.agent_id, [])) < NEXT_EVENTS_PER_AGENT:
            upcoming[event.agent_id].append(event)
    return [
        _agent_row(agent, leases.get(agent.pk), at, activities.get(agent.pk), upcoming.get(agent.pk))
        for agent in _only(Agent.objects.order_by("name"), agent_ids, "pk")
    ]


# --- LLM route breakers -----------------------------------------------------------------------

#: The permission that shows the breaker panel: the routes and their errors are LLM-call detail.
BREAKERS_PERMISSION = "llm.view_llmcall"


def route_breakers(*, at: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Each LLM route's circuit breaker (llm/breakers.py); a route without a row is closed and not
    listed. An open breaker past its cool-down reads as open until a turn claims the probe."""
    at = at or now()
    rows = []
    for breaker in RouteBreaker.objects.order_by("provider", "model"):
        until = {
            RouteBreaker.State.OPEN: breaker.open_until,
            RouteBreaker.State.PROBING: breaker.probe_until,
        }.get(breaker.state)
        rows.append(
            {
                "route": f"{breaker.provider}/{breaker.model}",
                "state": breaker.state,
                "failures": breaker.failures,
                "until": _iso(until),
                "cooldown_over": until is not None and until <= at,
                "changed": _iso(breaker.changed),
                "last_error": breaker.last_error,
            }
        )
    return rows


# --- LLM usage --------------------------------------------------------------------------------


def llm_usage_today(
    *, at: dt.datetime | None = None, agent_ids: Collection[int] | None = None
) -> list[dict[str, Any]]:
    rows = (
        # The same "today" as the spend caps' (engine/brakes.py): midnight in TIME_ZONE.
        _only(LLMCall.objects.filter(created__gte=day_start(at or now())), agent_ids)
        .values("agent_id", "agent__name")
        .annotate(
            calls=Count("id"),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            cached_tokens=Sum("cached_tokens"),
            thinking_tokens=Sum("thinking_tokens"),
            cost=Sum("cost"),
        )
        .order_by("agent__name")
    )
    caching = {
        share.agent_id: share.as_row()
        for share in cache_shares(days=1, per_day=False, at=at, agent_ids=agent_ids)
    }
    return [
        {
            "agent_id": row["agent_id"],
            "agent": row["agent__name"] or "(no agent)",
            "calls": row["calls"],
            "input_tokens": row["input_tokens"] or 0,
            "output_tokens": row["output_tokens"] or 0,
            "cached_tokens": row["cached_tokens"] or 0,
            "thinking_tokens": row["thinking_tokens"] or 0,
            "cost": str((row["cost"] or Decimal("0")).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)),
            # What the prompt caches served and saved today (llm/cache_share.py).
            **{
                key: caching.get(row["agent_id"], {}).get(key, default)
                for key, default in (
                    ("cached_share", "—"),
                    ("saved", "0.000000"),
                    ("explicit_saved", "0.000000"),
                )
            },
        }
        for row in rows
    ]


# --- Conversations and task graphs ------------------------------------------------------------


def _node_row(node: TaskNode) -> dict[str, Any]:
    return {
        "id": node.pk,
        "kind": node.kind,
        "status": node.status,
        "sequence": node.sequence,
        "attempts": node.attempts,
        "not_before": _iso(node.not_before),
        "error": node.error,
        "params": node.params,
        "depends_on": sorted(dep.pk for dep in node.depends_on.all()),
    }


def _graph_row(graph: TaskGraph | None) -> dict[str, Any] | None:
    if graph is None:
        return None
    return {
        "id": graph.pk,
        "status": graph.status,
        "trigger": graph.trigger,
        "created": _iso(graph.created),
        "nodes": [_node_row(node) for node in graph.nodes.all()],
    }


def _conversation_row(conversation: Conversation, graph: TaskGraph | None) -> dict[str, Any]:
    return {
        "id": conversation.pk,
        "agent_id": conversation.agent_id,
        "agent": conversation.agent.name,
        "kind": conversation.kind,
        "title": conversation.display_title,
        "peer_id": conversation.peer_id,
        "topic_id": conversation.topic_id,
        "muted": conversation.muted,
        "blocked": conversation.blocked,
        "last_message_at": _iso(conversation.last_message_at),
        "graph": _graph_row(graph),
    }


def _latest_graphs(conversation_ids: list[int]) -> dict[int, TaskGraph]:
    """The newest graph of each conversation (the active one when there is one), nodes prefetched."""
    newest = (
        TaskGraph.objects.filter(conversation_id__in=conversation_ids)
        .values("conversation_id")
        .annotate(newest=Max("id"))
    )
    ids = [row["newest"] for row in newest]
    graphs = TaskGraph.objects.filter(id__in=ids).prefetch_related("nodes__depends_on")
    return {graph.conversation_id: graph for graph in graphs}


def conversation_rows(
    *, limit: int = CONVERSATION_LIMIT, agent_ids: Collection[int] | None = None
) -> list[dict[str, Any]]:
    conversations = list(
        _only(Conversation.objects.select_related("agent"), agent_ids).order_by("-last_message_at", "-id")[
            :limit
        ]
    )
    graphs = _latest_graphs([c.pk for c in conversations])
    return [_conversation_row(c, graphs.get(c.pk)) for c in conversations]


def conversation_row(*, conversation_id: int) -> dict[str, Any] | None:
    conversation = Conversation.objects.select_related("agent").filter(pk=conversation_id).first()
    if conversation is None:
        return None
    return _conversation_row(conversation, _latest_graphs([conversation.pk]).get(conversation.pk))


# --- Activity ---------------------------------------------------------------------------------


def event_row(event: ActivityEvent) -> dict[str, Any]:
    return {
        "id": event.pk,
        "created": _iso(event.created),
        "kind": event.kind,
        "agent_id": event.agent_id,
        "agent": event.agent.name if event.agent_id else "",
        "conversation_id": event.conversation_id,
        "node_id": event.node_id,
        "summary": event.summary,
    }


def recent_events(
    *, limit: int = EVENT_LIMIT, conversation_id: int | None = None, agent_ids: Collection[int] | None = None
) -> list[dict[str, Any]]:
    """The newest events (of one conversation, if given), oldest first, as the browser appends them."""
    events = _only(ActivityEvent.objects.select_related("agent"), agent_ids).order_by("-id")
    if conversation_id is not None:
        events = events.filter(conversation_id=conversation_id)
    events = list(events[:limit])
    return [event_row(e) for e in reversed(events)]


def events_after(
    *, after_id: int, limit: int = EVENT_LIMIT, agent_ids: Collection[int] | None = None
) -> list[dict[str, Any]]:
    """Events with an id above `after_id`, oldest first (the relay's tail and the reconnect catch-up)."""
    events = _only(ActivityEvent.objects.select_related("agent"), agent_ids)
    events = events.filter(id__gt=after_id).order_by("id")[:limit]
    return [event_row(e) for e in events]


def events_tail(*, after_id: int, hole_ids: list[int], limit: int = EVENT_LIMIT) -> list[dict[str, Any]]:
    """Events above `after_id` or among `hole_ids` (ids skipped while their commit was pending)."""
    events = ActivityEvent.objects.select_related("agent").filter(Q(id__gt=after_id) | Q(id__in=hole_ids))
    return [event_row(e) for e in events.order_by("id")[:limit]]


def recent_event_ids(*, below_or_at: int, window: int) -> list[int]:
    return list(
        ActivityEvent.objects.filter(id__gt=below_or_at - window, id__lte=below_or_at).values_list(
            "id", flat=True
        )
    )


def last_event_id() -> int:
    return ActivityEvent.objects.aggregate(last=Max("id"))["last"] or 0


# --- Sandbox ----------------------------------------------------------------------------------


def sandbox_message_row(message: SandboxMessage) -> dict[str, Any]:
    """The sandbox's message row, with its media parts and the URLs the page loads them from."""
    return {**sandbox_row(message), "media": [_media_row(part) for part in message.media]}


def _media_row(part: dict[str, Any]) -> dict[str, Any]:
    folder, _, name = str(part.get("file", "")).rpartition("/")
    kind = part.get("media_kind", "")
    view = "dashboard:sandbox_voice" if kind == "voice" else "dashboard:sandbox_photo"
    url = reverse(view, args=[name]) if folder == "sandbox" and name else ""
    row = {
        "media_kind": kind,
        "sticker_set_name": part.get("sticker_set_name", ""),
        "sticker_name": part.get("sticker_name", ""),
        "unique_id": part.get("unique_id", ""),
        "url": url,
    }
    if kind == "voice":  # the browser's audio player: its length, and what an agent's note says
        row["duration"] = part.get("duration")
        row["transcript"] = part.get("transcript", "")
    return row


def sandbox_messages(*, chat_id: int, limit: int = SANDBOX_HISTORY_LIMIT) -> list[dict[str, Any]]:
    messages = list(
        SandboxMessage.objects.select_related("sender")
        .filter(chat_id=chat_id)
        .order_by("-message_id")[:limit]
    )
    return [sandbox_message_row(m) for m in reversed(messages)]


def sandbox_message(*, chat_id: int, message_id: int) -> dict[str, Any] | None:
    message = (
        SandboxMessage.objects.select_related("sender").filter(chat_id=chat_id, message_id=message_id).first()
    )
    return sandbox_message_row(message) if message else None


def sandbox_typing(*, chat_id: int, at: dt.datetime | None = None) -> list[str]:
    """Names of the members shown as typing in a chat right now."""
    at = at or now()
    members = SandboxMember.objects.select_related("user").filter(chat_id=chat_id, typing_until__gt=at)
    return sorted(member.user.name for member in members)


def sandbox_updates_tail(*, after_id: int, hole_ids: list[int], limit: int = 500) -> list[SandboxUpdate]:
    """Sandbox updates above `after_id` or among `hole_ids` (see `events_tail`)."""
    updates = SandboxUpdate.objects.filter(Q(id__gt=after_id) | Q(id__in=hole_ids)).order_by("id")
    return list(updates[:limit])


def recent_sandbox_update_ids(*, below_or_at: int, window: int) -> list[int]:
    return list(
        SandboxUpdate.objects.filter(id__gt=below_or_at - window, id__lte=below_or_at).values_list(
            "id", flat=True
        )
    )


def last_sandbox_update_id() -> int:
    return SandboxUpdate.objects.aggregate(last=Max("id"))["last"] or 0


def sandbox_agents(*, agent_ids: Collection[int] | None = None) -> list[Agent]:
    return list(_only(Agent.objects.filter(transport="sandbox"), agent_ids, "pk").order_by("name"))


def sandbox_chat_agent_ids(*, chat_id: int) -> set[int]:
    """The agents taking part in a sandbox chat (a socket follows it only if it may see them all)."""
    return set(
        SandboxMember.objects.filter(chat_id=chat_id, user__agent__isnull=False).values_list(
            "user__agent_id", flat=True
        )
    )
