"""The tick's selection and claim: which eligible nodes start now, fairly.

Fairness is round-robin: every started node stamps its conversation and its agent with a rising
counter, and candidates are taken least-recently-served agent first, then least-recently-served
conversation. With at most one running node per conversation (enforced by the eligibility query) a chat
with fifty queued sends gets one turn per tick like any other chat, so it never starves the rest.
Telegram kinds are limited to one per agent per tick: one account acts like one person.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.conf import settings

from cindy_site.clock import now
from conversations.models import TaskNode
from conversations.models.graph import BRAIN_KINDS
from conversations.selectors import eligible_nodes, pending_nodes_due
from conversations.services.nodes import new_claim_token, nodes_claim

logger = logging.getLogger(__name__)

#: Upper bound on nodes started per tick; the rest wait for the next tick.
MAX_NODES_PER_TICK = 200
#: Upper bound on candidates read per tick.
SCAN_LIMIT = 5000


class Ticker:
    def __init__(self, *, gateway_id: str) -> None:
        self.gateway_id = gateway_id
        self._counter = 0
        self._served_conversation: dict[int, int] = {}
        self._served_agent: dict[int, int] = {}

    def select(self, candidates: Iterable[TaskNode], *, limit: int = MAX_NODES_PER_TICK) -> list[TaskNode]:
        """Pick at most one node per conversation and one Telegram node per agent, round-robin."""
        first_per_conversation: dict[int, TaskNode] = {}
        for node in candidates:  # oldest not_before first, so the head of each chain wins
            first_per_conversation.setdefault(node.conversation_id, node)
        ordered = sorted(
            first_per_conversation.values(),
            key=lambda n: (
                self._served_agent.get(n.agent_id, 0),
                self._served_conversation.get(n.conversation_id, 0),
                n.not_before,
                n.pk,
            ),
        )
        picked: list[TaskNode] = []
        acting_agents: set[int] = set()
        for node in ordered:
            if len(picked) >= limit:
                break
            if node.kind not in BRAIN_KINDS:
                if node.agent_id in acting_agents:
                    continue
                acting_agents.add(node.agent_id)
            self._counter += 1
            self._served_agent[node.agent_id] = self._counter
            self._served_conversation[node.conversation_id] = self._counter
            picked.append(node)
        return picked

    def claim(
        self, *, agent_ids: Iterable[int], limit: int = MAX_NODES_PER_TICK
    ) -> list[tuple[TaskNode, str]]:
        """Select and claim this tick's nodes; returns (node, claim token) pairs actually won."""
        agent_ids, at = list(agent_ids), now()
        if not pending_nodes_due(agent_ids=agent_ids, at=at):  # an idle tick: skip the full scan
            return []
        candidates = eligible_nodes(agent_ids=agent_ids, at=at, limit=SCAN_LIMIT)
        chosen = self.select(candidates, limit=limit)
        if not chosen:
            return []
        owner = new_claim_token(self.gateway_id)
        won = nodes_claim(
            node_ids=[n.pk for n in chosen], owner=owner, lease_seconds=settings.CINDY_NODE_LEASE_SECONDS
        )
        return [(node, owner) for node in won]
