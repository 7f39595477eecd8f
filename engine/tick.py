"""The tick's selection and claim: which eligible nodes start now, fairly.

Fairness is round-robin: every started node stamps its conversation and its agent with a rising
counter, and candidates are taken least-recently-served agent first, then least-recently-served
conversation. Only a conversation's next node is a candidate (one running node per conversation, see
`conversation_heads`), so a chat with fifty queued sends gets one turn per tick like any other chat and
never starves the rest. A pass reads at most `SCAN_LIMIT` conversations, carrying on from where the
previous read stopped, so with more waiting conversations than that each still comes up within a round
of ticks. Telegram kinds are limited to one per agent per tick: one account acts like one person.
An agent asleep per its schedule starts only its consolidation turns' nodes (engine/consolidation.py);
its other turns wait for its wake-up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from django.conf import settings

from cindy_site.clock import now
from conversations.models import TaskGraph, TaskNode
from conversations.models.graph import BRAIN_KINDS
from conversations.selectors import (
    Candidate,
    Head,
    candidates_in_turns,
    conversation_heads,
    pending_nodes_due,
)
from conversations.services.nodes import new_claim_token, nodes_claim

logger = logging.getLogger(__name__)

#: Upper bound on nodes started per tick; the rest wait for the next tick.
MAX_NODES_PER_TICK = 200
#: Given agent ids, the ones asleep now (`Ticker.candidates`).
Asleep = Callable[[set[int]], set[int]]

#: Candidates read per tick (at most one per conversation): a small multiple of the cap, so the
#: round-robin has choice while the read stays the same size however long the backlog.
SCAN_LIMIT = 4 * MAX_NODES_PER_TICK


class Ticker:
    def __init__(self, *, gateway_id: str) -> None:
        self.gateway_id = gateway_id
        self._counter = 0
        self._served_conversation: dict[int, int] = {}
        self._served_agent: dict[int, int] = {}
        #: The conversation id the next read starts after (see `candidates`).
        self._after = 0

    @property
    def partial(self) -> bool:
        """Whether the last read stopped at `SCAN_LIMIT` conversations: the next one carries on."""
        return bool(self._after)

    def select(self, candidates: Iterable[Candidate], *, limit: int = MAX_NODES_PER_TICK) -> list[Candidate]:
        """Pick at most one node per conversation and one Telegram node per agent, round-robin."""
        # Candidates come in the order to prefer when the stamps tie (`candidates_in_turns`: agents in
        # turns, oldest first); a list with several nodes of a conversation keeps the first.
        first_per_conversation: dict[int, tuple[int, Candidate]] = {}
        for position, node in enumerate(candidates):
            first_per_conversation.setdefault(node.conversation_id, (position, node))
        ordered = [
            node
            for _, node in sorted(
                first_per_conversation.values(),
                key=lambda entry: (
                    self._served_agent.get(entry[1].agent_id, 0),
                    self._served_conversation.get(entry[1].conversation_id, 0),
                    entry[0],
                ),
            )
        ]
        picked: list[Candidate] = []
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

    def candidates(self, *, agent_ids: list[int], at, asleep: Asleep | None = None) -> list[Candidate]:
        """This tick's candidates: at most `SCAN_LIMIT` conversations' next nodes, read in conversation
        id order from where the previous read stopped, wrapping round to the first conversation.

        While fewer than `SCAN_LIMIT` conversations have a node to start, every read sees them all
        and starts from the first. With more, each read takes the next `SCAN_LIMIT` of them, so every
        conversation comes up within a round of ticks, however many there are, and a read costs the
        same at 100 or at 10,000 waiting conversations.

        `asleep` (given agent ids, those asleep now) is asked only about the agents the read found a
        node of: an agent asleep is left out and the read made again without it, as if it had been
        left out from the start (a sleeping agent's turns wait for its wake-up, `reply_not_before`,
        so this is rare, and most ticks ask about one agent or none instead of every one held). A
        sleeping agent's head that belongs to a consolidation turn is kept: those run while it sleeps."""
        start, sleeping, judged = self._after, set(), set()
        resting: dict[int, Head] = {}  # conversation id -> a sleeping agent's consolidation head
        while True:
            self._after = start
            heads = self._read(agent_ids=[a for a in agent_ids if a not in sleeping], at=at)
            found = {head.candidate.agent_id for head in heads} - judged
            newly = asleep(found) if asleep is not None and found else set()
            judged |= found
            if not newly:
                return candidates_in_turns(heads=heads + list(resting.values()), limit=SCAN_LIMIT)
            resting |= {head.candidate.conversation_id: head for head in _consolidating(heads, newly)}
            sleeping |= newly

    def _read(self, *, agent_ids: list[int], at) -> list:
        heads = conversation_heads(agent_ids=agent_ids, at=at, limit=SCAN_LIMIT, after=self._after)
        if len(heads) < SCAN_LIMIT and self._after:  # the end was reached: go round from the start
            heads += conversation_heads(
                agent_ids=agent_ids, at=at, limit=SCAN_LIMIT - len(heads), upto=self._after
            )
        self._after = heads[-1].candidate.conversation_id if len(heads) == SCAN_LIMIT else 0
        return heads

    def claim(
        self,
        *,
        agent_ids: Iterable[int],
        limit: int = MAX_NODES_PER_TICK,
        agents: dict | None = None,
        asleep: Asleep | None = None,
        due_known: bool = False,
    ) -> list[tuple[TaskNode, str]]:
        """Select and claim this tick's nodes; returns (node, claim token) pairs actually won.
        `agents` (id → Agent): the caller's current agent rows, for the nodes won (`nodes_claim`);
        `asleep`: which of some agents are asleep now, whose nodes wait (see `candidates`);
        `due_known`: the caller found a pending node due already (`pending_nodes_due`)."""
        agent_ids, at = list(agent_ids), now()
        if not due_known and not pending_nodes_due(agent_ids=agent_ids, at=at):  # an idle tick
            return []
        chosen = self.select(self.candidates(agent_ids=agent_ids, at=at, asleep=asleep), limit=limit)
        if not chosen:
            return []
        owner = new_claim_token(self.gateway_id)
        won = nodes_claim(
            node_ids=[n.id for n in chosen],
            owner=owner,
            lease_seconds=settings.CINDY_NODE_LEASE_SECONDS,
            agents=agents,
        )
        return [(node, owner) for node in won]


def _consolidating(heads: list[Head], agent_ids: set[int]) -> list[Head]:
    """The heads of `agent_ids` (asleep) whose node belongs to a consolidation turn. One query."""
    ids = [head.candidate.id for head in heads if head.candidate.agent_id in agent_ids]
    keep = set(
        TaskNode.objects.filter(pk__in=ids, graph__trigger=TaskGraph.Trigger.CONSOLIDATE).values_list(
            "pk", flat=True
        )
    )
    return [head for head in heads if head.candidate.id in keep]
