"""Dispatching the planning (`received`) nodes a tick claimed: sync each chat, mark it read, queue planning.

Run by the gateway's tick step (engine/tick_step.py), with the gateway's context (its held clients
and its `enqueue`). For each node, in this
order: fetch the chat's history newer than the mirror and ingest it; mark the chat read up to the
newest message, on the transport and then in the mirror (not for a consolidation turn's node, which
carries `UNREAD_PARAM`: the agent looks back on a quiet chat, or while it sleeps, and reads nothing
new, so the chat stays unread on Telegram and in the sandbox); queue planning (`run_received` with the
node's claim token) once that is committed. A chat whose sync or mark fails is logged and planned on
what the mirror has; the other chats go ahead as usual. A tick's nodes go together:

- the database work is batched: the mirror's newest message of every chat in one query (before and
  after the sync), the read marks in one statement, the enqueues in one write (with the database
  broker, `engine.taskwake.TaskBroker.enqueue_many`: one INSERT);
- transport calls of different agents run concurrently, those of one agent one after another (one
  request in flight per account); a transport kind may answer many requests in one go
  (`history_many`, `mark_read_many`: the sandbox, whose calls are database queries);
- planning is queued in claim order, so the tick's round-robin order holds.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.db import transaction

from conversations.models import TaskNode
from conversations.selectors import conversations_last_message_ids
from conversations.services.ingest import conversations_mark_read
from conversations.services.nodes import node_release
from conversations.transport.base import Transport
from engine.clients import AgentClient
from engine.consolidation import UNREAD_PARAM
from engine.contacts import partners_add_to_contacts
from engine.ingest import RECONCILE_LIMIT, ingest_history

if TYPE_CHECKING:
    from engine.gateway_context import GatewayContext

logger = logging.getLogger("engine.gateway")

TASK = "engine.tasks.run_received"


@functools.cache
def task_broker() -> Any:
    """django-q2's broker, built once per process. Building one (`get_broker`, which `async_task`
    does for every task it is not given one for) closes the calling thread's database connection
    once it is older than CONN_MAX_AGE, at once with the default of 0: in the gateway that meant a
    new database connection for every turn it queued."""
    from django_q.brokers import get_broker

    return get_broker()


def enqueue_received(node_id: int, owner: str) -> None:
    """Queue planning on django-q2: the node id and the claim token the task may act under."""
    enqueue_received_many([(node_id, owner)])


def enqueue_received_many(items: Sequence[tuple[int, str]]) -> None:
    """`enqueue_received` for many (node id, claim token) pairs, in order, with one write to the
    broker where it allows (django-q2's ORM broker: one INSERT; others: one push per task)."""
    from django_q.tasks import async_task

    buffer = _BufferedBroker(task_broker())
    for node_id, owner in items:
        async_task(TASK, node_id, owner, broker=buffer)
    buffer.flush()


class _BufferedBroker:
    """Collects the signed task packages `async_task` pushes, then writes them together."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.list_key = broker.list_key
        self.packages: list[str] = []

    def enqueue(self, package: str) -> None:
        self.packages.append(package)

    def flush(self) -> None:
        packages, self.packages = self.packages, []
        if not packages:
            return
        enqueue_many = getattr(self.broker, "enqueue_many", None)
        if enqueue_many is not None:  # engine.taskwake.TaskBroker: one write, one wake-up
            enqueue_many(packages)
            return
        for package in packages:
            self.broker.enqueue(package)


async def transports_call(
    requests: Sequence[tuple[Any, ...]],
    *,
    many: str,
    one: Callable[..., Awaitable[Any]],
) -> list[Any]:
    """Answer each (transport, *args) request with `one(transport, *args)`, or with the exception it
    raised, in request order. A transport kind with a classmethod `many` answers all its requests in
    one call, unless it declines (answers None: a subclass that changed the single call); the other
    requests run one at a time per transport, transports concurrently.
    """
    answers: list[Any] = [None] * len(requests)
    by_kind: dict[type, list[int]] = {}
    for i, request in enumerate(requests):
        by_kind.setdefault(type(request[0]), []).append(i)

    async def one_by_one(indices: list[int]) -> None:
        for i in indices:
            try:
                answers[i] = await one(*requests[i])
            except Exception as exc:
                answers[i] = exc

    async def kind_answers(kind: type, indices: list[int]) -> None:
        batch = getattr(kind, many, None)
        if batch is not None:
            try:
                got = await batch([requests[i] for i in indices])
            except Exception as exc:
                got = [exc] * len(indices)
            if got is not None:
                for i, answer in zip(indices, got, strict=True):
                    answers[i] = answer
                return
        per_transport: dict[int, list[int]] = {}
        for i in indices:
            per_transport.setdefault(id(requests[i][0]), []).append(i)
        await asyncio.gather(*(one_by_one(group) for group in per_transport.values()))

    await asyncio.gather(*(kind_answers(kind, indices) for kind, indices in by_kind.items()))
    return answers


def _history(transport: Transport, peer_id: int, since_id: int | None, limit: int) -> Awaitable[Any]:
    return transport.history(peer_id, since_id=since_id, limit=limit)


def _mark_read(transport: Transport, peer_id: int, max_id: int) -> Awaitable[None]:
    return transport.mark_read(peer_id, max_id)


def _topic_history(
    transport: Transport, peer_id: int, since_id: int | None, limit: int, topic_id: int
) -> Awaitable[Any]:
    return transport.history(peer_id, since_id=since_id, limit=limit, topic_id=topic_id)


def _topic_mark_read(transport: Transport, peer_id: int, max_id: int, topic_id: int) -> Awaitable[None]:
    return transport.mark_read(peer_id, max_id, topic_id=topic_id)


async def _chats_call(chats: Sequence[_Chat], args, *, many: str, one, topic_one) -> list[Any]:
    """`transports_call` for these chats: a forum topic's call names its topic (and is made on its
    own: the batch forms know no topics), the others go as before."""
    plain = [i for i, c in enumerate(chats) if not c.node.conversation.topic_id]
    topics = [i for i, c in enumerate(chats) if c.node.conversation.topic_id]
    answers: list[Any] = [None] * len(chats)
    got = await transports_call([args(chats[i]) for i in plain], many=many, one=one)
    for i, answer in zip(plain, got, strict=True):
        answers[i] = answer
    if topics:
        got = await transports_call(
            [(*args(chats[i]), chats[i].node.conversation.topic_id) for i in topics],
            many="",
            one=topic_one,
        )
        for i, answer in zip(topics, got, strict=True):
            answers[i] = answer
    return answers


@dataclass
class _Chat:
    """One claimed planning node on its way to the task queue."""

    node: TaskNode
    owner: str
    client: AgentClient
    last: int | None = None  # the newest message id in the mirror
    synced: bool = False
    read: bool = False

    @property
    def conversation_id(self) -> int:
        return self.node.conversation_id


class PlanningDispatch:
    """The tick's planning nodes on their way to the task queue (see the module docstring)."""

    def __init__(self, context: GatewayContext) -> None:
        self.context = context

    async def dispatch(self, claimed: Sequence[tuple[TaskNode, str]]) -> None:
        """Sync and mark read the chats of these claimed planning nodes, then queue their planning."""
        chats: list[_Chat] = []
        clients = self.context.clients
        for node, owner in claimed:
            client = clients.get(node.agent_id)
            if client is None:  # dropped (fenced, lease lost) while this tick was claiming
                await sync_to_async(node_release)(node_id=node.pk, owner=owner, reason="agent no longer held")
                continue
            chats.append(_Chat(node, owner, client))
        if not chats:
            return
        try:
            await self._sync_and_mark_read(chats)
        except Exception as exc:  # planning can still go ahead on what the mirror has
            logger.warning("history sync before planning failed: %r", exc)
        try:  # engine/contacts.py: a DM partner joins the contacts before the turn
            await partners_add_to_contacts(
                [(c.client.transport, c.node.conversation) for c in chats if c.read]
            )
        except Exception as exc:  # best effort: the next turn tries again
            logger.info("adding DM partners to the contacts failed: %r", exc)
        await sync_to_async(self._mark_read_and_enqueue)(chats)

    async def _sync_and_mark_read(self, chats: list[_Chat]) -> None:
        newest = await sync_to_async(conversations_last_message_ids)(
            conversation_ids=[c.conversation_id for c in chats]
        )
        fetched = await _chats_call(
            chats,
            lambda c: (
                c.client.transport,
                c.node.conversation.peer_id,
                newest.get(c.conversation_id),
                RECONCILE_LIMIT,
            ),
            many="history_many",
            one=_history,
            topic_one=_topic_history,
        )
        for chat, records in zip(chats, fetched, strict=True):
            if isinstance(records, Exception):
                self._sync_failed(chat, records)
            else:
                chat.synced = True
        if any(chat.synced and records for chat, records in zip(chats, fetched, strict=True)):
            await sync_to_async(self._ingest_fetched)(chats, fetched)
        else:  # nothing came (the usual case): the newest messages read before the sync stand
            for chat in chats:
                chat.last = newest.get(chat.conversation_id)
        # A consolidation turn's chat is synced but left unread (the module docstring).
        marking = [c for c in chats if c.synced and c.last and not (c.node.params or {}).get(UNREAD_PARAM)]
        answers = await _chats_call(
            marking,
            lambda c: (c.client.transport, c.node.conversation.peer_id, c.last),
            many="mark_read_many",
            one=_mark_read,
            topic_one=_topic_mark_read,
        )
        for chat, error in zip(marking, answers, strict=True):
            if isinstance(error, Exception):
                self._sync_failed(chat, error)
            else:
                chat.read = True

    def _ingest_fetched(self, chats: list[_Chat], fetched: list[Any]) -> None:
        """Ingest what each chat's history brought, then read the mirror's newest message of each."""
        for chat, records in zip(chats, fetched, strict=True):
            if not chat.synced or not records:
                continue
            try:
                ingest_history(agent_id=chat.node.agent_id, records=records, trigger=False)
            except Exception as exc:
                self._sync_failed(chat, exc)
        newest = conversations_last_message_ids(conversation_ids=[c.conversation_id for c in chats])
        for chat in chats:
            chat.last = newest.get(chat.conversation_id)

    @staticmethod
    def _sync_failed(chat: _Chat, exc: BaseException) -> None:
        chat.synced = False
        logger.warning("agent %s: history sync before planning failed: %r", chat.client.agent.name, exc)

    def _mark_read_and_enqueue(self, chats: list[_Chat]) -> None:
        """Record the read marks, then queue planning for every chat once that is committed."""
        marks = [(c.node.conversation, c.last) for c in chats if c.read]
        try:
            conversations_mark_read(marks=marks)
        except Exception as exc:
            logger.warning("could not record read marks before planning: %r", exc)
        items = [(c.node.pk, c.owner) for c in chats]
        # Queued once the read marks are committed: at once here (no transaction is open), at the
        # end of the caller's transaction if there is one.
        transaction.on_commit(lambda: self._enqueue_items(items))

    def _enqueue_items(self, items: list[tuple[int, str]]) -> None:
        """Queue planning for each (node id, claim token); a node that could not be queued goes back
        to pending, so the tick claims and queues it again."""
        failed: list[tuple[int, str, BaseException]] = []
        enqueue = self.context.enqueue
        if enqueue is enqueue_received:
            try:
                enqueue_received_many(items)
            except Exception as exc:
                failed = [(node_id, owner, exc) for node_id, owner in items]
        else:
            for node_id, owner in items:
                try:
                    enqueue(node_id, owner)
                except Exception as exc:
                    failed.append((node_id, owner, exc))
        for node_id, owner, exc in failed:
            logger.error("could not queue planning for node %s: %r", node_id, exc)
            node_release(node_id=node_id, owner=owner, reason=f"queueing failed: {exc}")
