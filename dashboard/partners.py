"""Users: the people the agents talk to, across agents (the original console's Users view).

A partner is a Telegram user id with a direct conversation with at least one agent. For each, per
agent: message counts, LLM cost, and the agent's records about them. Records come from
PARTNER_RECORD_SOURCES, one function per kind (memories today; notes add theirs when they exist),
each answering for all of the partner's agents in one query.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.db.models import Count, DecimalField, F, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from conversations.models import TELEGRAM_SERVICE_USER_ID, Conversation
from llm.models import LLMCall
from memory.models import Memory

#: How many partners the list shows, most recently active first.
PARTNER_LIMIT = 500
_MONEY = DecimalField(max_digits=14, decimal_places=6)


def _dm_conversations(agent_ids=None):
    """DMs with message counts and LLM cost annotated (one query however many there are).

    The agent's chat with itself (Saved Messages, where its planning turns run) is no partner, nor is
    Telegram's service account (login codes)."""
    cost = (
        LLMCall.objects.filter(conversation=OuterRef("pk"))
        .order_by()
        .values("conversation")
        .annotate(total=Sum("cost"))
        .values("total")
    )
    conversations = Conversation.objects.filter(kind=Conversation.Kind.DM)
    if agent_ids is not None:
        conversations = conversations.filter(agent_id__in=agent_ids)
    return (
        conversations.exclude(agent__telegram_user_id=F("peer_id"))
        .exclude(peer_id=TELEGRAM_SERVICE_USER_ID)
        .select_related("agent")
        .annotate(
            messages_in=Count("messages", filter=Q(messages__is_agent=False)),
            messages_out=Count("messages", filter=Q(messages__is_agent=True)),
            cost=Coalesce(Subquery(cost, output_field=_MONEY), Value(Decimal("0")), output_field=_MONEY),
        )
    )


def partner_rows(*, limit: int = PARTNER_LIMIT, agent_ids=None) -> list[dict[str, Any]]:
    """The partners of the agents in `agent_ids` (None: every agent)."""
    partners: dict[int, dict[str, Any]] = {}
    for conversation in _dm_conversations(agent_ids).order_by("-last_message_at", "-id"):
        row = partners.get(conversation.peer_id)
        if row is None:
            if len(partners) >= limit:
                continue
            row = partners[conversation.peer_id] = {
                "peer_id": conversation.peer_id,
                "name": conversation.title or str(conversation.peer_id),
                "username": conversation.username,
                "agents": [],
                "messages_in": 0,
                "messages_out": 0,
                "cost": Decimal("0"),
                "last_message_at": conversation.last_message_at,
            }
        row["agents"].append(conversation.agent.name)
        row["messages_in"] += conversation.messages_in
        row["messages_out"] += conversation.messages_out
        row["cost"] += conversation.cost
    return list(partners.values())


def memory_records(*, peer_id: int, agent_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Curated memories about the partner, and episodic ones the agent formed in their chat."""
    rows = Memory.objects.filter(agent_id__in=agent_ids).filter(
        Q(kind=Memory.Kind.CURATED, partner_id=peer_id)
        | Q(kind=Memory.Kind.EPISODIC, creation_channel_id=peer_id)
    )
    found: dict[int, list[dict[str, Any]]] = {}
    for memory in rows.order_by("agent_id", "kind", "position", "id"):
        found.setdefault(memory.agent_id, []).append(
            {"kind": memory.get_kind_display(), "content": memory.content, "created": memory.created}
        )
    return found


#: (title, source) pairs: each source maps agent id -> records ({"kind", "content", "created"}).
PARTNER_RECORD_SOURCES: list[tuple[str, Callable[..., dict[int, list[dict[str, Any]]]]]] = [
    ("Memories", memory_records),
]


def partner_detail(*, peer_id: int, agent_ids=None) -> dict[str, Any] | None:
    conversations = list(_dm_conversations(agent_ids).filter(peer_id=peer_id).order_by("agent__name"))
    if not conversations:
        return None
    agent_ids = [c.agent_id for c in conversations]
    sources = [
        (title, source(peer_id=peer_id, agent_ids=agent_ids)) for title, source in PARTNER_RECORD_SOURCES
    ]
    newest = max(conversations, key=lambda c: (c.last_message_at is not None, c.last_message_at))
    return {
        "peer_id": peer_id,
        "name": newest.title or str(peer_id),
        "username": newest.username,
        "total_cost": sum((c.cost for c in conversations), Decimal("0")),
        "agents": [
            {
                "conversation": c,
                "records": [(title, found.get(c.agent_id, [])) for title, found in sources],
            }
            for c in conversations
        ],
    }
