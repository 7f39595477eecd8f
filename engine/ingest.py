"""Ingest, then trigger: the gateway's path from transport records to the DB mirror and to replans.

The sync functions here run in a thread (`sync_to_async`), never on the event loop. Each batch is
written before any trigger is evaluated, and a batch replans each conversation at most once (for its
last triggering event), so a burst costs one graph and one LLM call.

A batch (its messages and its replans) is one transaction. A message is stored only together with
the replan it triggers: if the replan fails, the messages are rolled back too, so the reconciler or a
re-delivery creates them again and evaluates their triggers again, instead of finding them already
stored (`created=False`) and never triggering.

The `received` node of a replan waits until the triggering message is CINDY_READ_DELAY_SECONDS old
(for a reaction: that long after it was seen), so the chat is not read the instant a message lands,
and a burst typed within the delay costs one LLM call. An agent with a daily schedule waits as its
current activity's responsiveness says instead (`engine.responsiveness`), and a DM partner's typing
holds it longer (`engine.partner_typing`).

A dialog marked unread (`DialogUnreadMark`) starts a turn as a callout (`engine.triggers`), unless the
agent is answering the chat already; the unread scan (`engine.attention`) feeds what no update
brought through the same functions.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.db import transaction

from agents.models import Agent
from agents.selectors import agent_by_pk, mute_requests_pending
from cindy_site.clock import now
from cindy_site.parameters import parameter
from conversations.models import Conversation, Message, TaskGraph
from conversations.selectors import conversation_last_message_id, conversations_with_messages
from conversations.services.graphs import graph_replan
from conversations.services.ingest import (
    conversation_apply_details,
    message_set_reactions,
    message_upsert,
    messages_mark_deleted,
)
from conversations.services.summaries import first_message_clear, summarization_start_if_due
from conversations.transport.base import (
    DialogUnreadMark,
    InboundMessage,
    MessageEdited,
    MessagesDeleted,
    NewMessage,
    PartnerTyping,
    ReactionsChanged,
    Transport,
    Update,
)
from engine.partner_typing import partner_typing_end, partner_typing_record, typing_hold
from engine.responsiveness import reply_not_before
from engine.triggers import Decision, message_decision, reaction_decision, unread_mark_decision

logger = logging.getLogger(__name__)

#: How many messages the reconciler fetches per history request after a reconnect.
RECONCILE_LIMIT = 200
#: Pages the reconciler reads forward in one conversation before it jumps to the newest page.
RECONCILE_MAX_PAGES = 25


@dataclass(frozen=True)
class _Trigger:
    conversation: Conversation
    decision: Decision
    message_id: int
    seen_at: dt.datetime  # when the person acted: the message's date, or when a reaction was seen


def _replan_all(pending: dict[int, _Trigger], typed: set[int] = frozenset()) -> list[int]:
    """Replan each triggered conversation. `typed`: the peers whose typing the batch recorded or ended
    (their conversations' typing time is read again; the others' rows were read in this transaction
    and are current)."""
    delay = dt.timedelta(seconds=parameter("CINDY_READ_DELAY_SECONDS"))
    graph_ids = []
    for item in pending.values():
        not_before = reply_not_before(
            agent=item.conversation.agent, seen_at=item.seen_at, default_delay=delay, at=now()
        )
        hold = typing_hold(
            conversation=item.conversation, since=now(), fresh=item.conversation.peer_id in typed
        )
        graph = graph_replan(
            conversation=item.conversation,
            trigger=item.decision.trigger,
            target_message_id=item.message_id,
            not_before=max(not_before, hold) if hold else not_before,
        )
        graph_ids.append(graph.pk)
    return graph_ids


def ingest_updates(
    *, agent_id: int, updates: Iterable[Update], trigger: bool = True, older: bool = False
) -> list[int]:
    """Record a batch of updates, then replan the conversations they trigger. Returns new graph ids.

    One transaction: a failure anywhere (a replan included) stores nothing, see the module docstring.
    `older`: history from before what the mirror holds (a backfill, engine/backfill.py): stored and
    indexed only, with no activity events, and a partner's message found there is neither a first
    message (its persona flags would clear the summaries) nor the end of their typing.
    """
    with transaction.atomic():
        return _ingest_batch(agent_id=agent_id, updates=updates, trigger=trigger and not older, older=older)


def _ingest_batch(
    *, agent_id: int, updates: Iterable[Update], trigger: bool, older: bool = False
) -> list[int]:
    agent = agent_by_pk(agent_id=agent_id)  # plain SQL: per batch (agents/selectors.py)
    if agent is None:
        raise Agent.DoesNotExist(f"agent #{agent_id} does not exist")
    pending: dict[int, _Trigger] = {}
    grown: set[int] = set()  # conversations with new messages, checked for a due summarization
    typed: set[int] = set()  # peers whose typing this batch recorded or ended
    for update in updates:
        if isinstance(update, NewMessage | MessageEdited):
            edited = isinstance(update, MessageEdited)
            conversation, message, created = message_upsert(
                agent=agent, record=update.message, edited=edited, quiet=older
            )
            if created and not conversation.is_telegram_service:  # its messages are never summarized
                grown.add(conversation.pk)
            if created and not older and partner_typing_end(conversation=conversation, message=message):
                typed.add(conversation.peer_id)  # another trigger of the batch may hold an older row
            if created and not older:
                first_message_clear(conversation=conversation, message=message)
            if trigger and created:
                decision = message_decision(
                    agent=agent,
                    conversation=conversation,
                    message=message,
                    reply_to_agent=update.message.reply_to_agent,
                )
                if decision:
                    pending[conversation.pk] = _Trigger(
                        conversation, decision, message.message_id, message.date
                    )
        elif isinstance(update, PartnerTyping):
            if trigger:
                partner_typing_record(agent=agent, update=update)
                typed.add(update.peer_id)
        elif isinstance(update, MessagesDeleted):
            messages_mark_deleted(agent=agent, peer_id=update.peer_id, message_ids=update.message_ids)
        elif isinstance(update, ReactionsChanged):
            before = _stored_reactions(
                agent_id=agent_id, peer_id=update.peer_id, message_id=update.message_id
            )
            message = message_set_reactions(
                agent=agent, peer_id=update.peer_id, message_id=update.message_id, reactions=update.reactions
            )
            # Only a change triggers: the unread scan and a late update may bring the same reactions.
            if trigger and message is not None and message.reactions != before:
                decision = reaction_decision(
                    agent=agent, conversation=message.conversation, message=message, unread=update.unread
                )
                if decision:
                    pending[message.conversation_id] = _Trigger(
                        message.conversation, decision, message.message_id, now()
                    )
        elif isinstance(update, DialogUnreadMark):
            if trigger and update.unread:
                item = _unread_mark_trigger(agent=agent, peer_id=update.peer_id)
                if item is not None:
                    pending[item.conversation.pk] = item
    graph_ids = _replan_all(pending, typed)
    if trigger:
        for conversation_id in sorted(grown - set(pending)):
            graph = summarization_start_if_due(conversation_id=conversation_id)
            if graph is not None:
                graph_ids.append(graph.pk)
    return graph_ids


def _stored_reactions(*, agent_id: int, peer_id: int, message_id: int) -> list | None:
    return (
        Message.objects.filter(
            conversation__agent_id=agent_id, conversation__peer_id=peer_id, message_id=message_id
        )
        .values_list("reactions", flat=True)
        .first()
    )


def _unread_mark_trigger(*, agent: Agent, peer_id: int) -> _Trigger | None:
    """A dialog marked unread starts a turn on the other side's newest message, unless the agent is answering it
    already (its active graph reads the chat, which clears the mark) or the chat is quiet."""
    conversation = Conversation.objects.filter(agent=agent, peer_id=peer_id).first()
    if conversation is None:
        logger.info(
            "agent #%s: peer %s was marked unread before any message of it was seen", agent.pk, peer_id
        )
        return None
    decision = unread_mark_decision(agent=agent, conversation=conversation)
    if not decision:
        logger.info("agent #%s: peer %s marked unread, not answered: %s", agent.pk, peer_id, decision.reason)
        return None
    if TaskGraph.objects.filter(active_slot=conversation.pk).exists():
        return None
    # The other side's newest message is what a person re-reads; the chat's newest if they wrote none.
    theirs = Message.objects.filter(
        conversation=conversation, is_agent=False, is_service=False, deleted=False
    )
    last = theirs.order_by("-message_id").values_list("message_id", flat=True).first()
    if last is None:
        last = conversation_last_message_id(conversation=conversation)
    if last is None:
        return None
    return _Trigger(conversation, decision, last, now())


def ingest_history(
    *, agent_id: int, records: Iterable[InboundMessage], trigger: bool, older: bool = False
) -> list[int]:
    """Record messages fetched from history (a gap fill, a pre-dispatch sync, or with `older` a
    backfill of what came before the mirror)."""
    return ingest_updates(
        agent_id=agent_id, updates=[NewMessage(r) for r in records], trigger=trigger, older=older
    )


def _known_conversations(agent_id: int) -> list[tuple[int, int | None]]:
    """(peer, newest stored message id) of each chat the mirror has messages of. A forum's topics are
    one chat on Telegram with one id sequence: its history after the oldest of their newest ids brings
    every topic's new messages (each is ingested into its topic's conversation)."""
    newest: dict[int, int | None] = {}
    for c in conversations_with_messages(agent_id=agent_id):
        last = conversation_last_message_id(conversation=c)
        if c.peer_id not in newest:
            newest[c.peer_id] = last
        elif newest[c.peer_id] is not None:
            newest[c.peer_id] = None if last is None else min(newest[c.peer_id], last)
    return list(newest.items())


def _apply_dialogs(agent_id: int, dialogs, read_since: dt.datetime) -> list[tuple[int, int | None]]:
    """Refresh conversations from the dialog list, read from `read_since` on; returns (peer,
    read_inbox_max_id) of new ones.

    A chat with a mute change waiting for the gateway, or sent since the list's read began, keeps its
    stored mute state: the list may show Telegram's state from before the change.

    A conversation the mirror has no message of counts as new even if its row exists: a reconcile cut
    off (a killed gateway) after creating the row and before reading its history must not leave its
    messages unread for good.
    """
    agent = Agent.objects.get(pk=agent_id)
    known = {c.peer_id for c in conversations_with_messages(agent_id=agent_id)}
    muting = set(mute_requests_pending(agent_id=agent_id, since=read_since))
    fresh = []
    for details in dialogs:
        conversation_apply_details(agent=agent, details=details, keep_muted=details.peer_id in muting)
        if details.peer_id not in known:
            fresh.append((details.peer_id, details.extra.get("read_inbox_max_id")))
    return fresh


async def _history_after(
    transport: Transport, agent_id: int, peer_id: int, last_id: int | None, into: list[InboundMessage]
) -> None:
    """Append the messages after `last_id` to `into`, a page at a time until a short page.

    After RECONCILE_MAX_PAGES full pages it reads the newest page instead and logs the gap, so the
    agent sees the chat's present rather than the oldest part of a huge backlog.
    """
    if last_id is None:
        into.extend(await transport.history(peer_id, limit=RECONCILE_LIMIT))
        return
    since = last_id
    for _ in range(RECONCILE_MAX_PAGES):
        page = await transport.history(peer_id, since_id=since, limit=RECONCILE_LIMIT)
        into.extend(page)
        newest = max((r.message_id for r in page), default=since)
        if len(page) < RECONCILE_LIMIT or newest <= since:
            return
        since = newest
    latest = [r for r in await transport.history(peer_id, limit=RECONCILE_LIMIT) if r.message_id > since]
    into.extend(latest)
    logger.warning(
        "agent #%s, peer %s: more than %d messages were missed; messages after #%s and before #%s were "
        "not fetched (the newest %d are)",
        agent_id,
        peer_id,
        RECONCILE_MAX_PAGES * RECONCILE_LIMIT,
        since,
        min((r.message_id for r in latest), default=since + 1),
        len(latest),
    )


async def reconcile(*, agent_id: int, transport: Transport) -> int:
    """Fill what the gateway missed while it was down or disconnected. Returns messages fetched.

    Steps:
    1. Refresh conversations (mute, block, titles) from the dialog list.
    2. For every conversation the mirror knows, fetch history after its newest stored message (page by
       page, see `_history_after`; skipped when the dialog's `top_message` is already stored) and
       ingest it with triggers on, as if the messages had just arrived. Transport errors, a
       `FloodWait` included, propagate: the gateway backs off and reconciles again.
    3. For conversations seen for the first time, ingest recent history; messages after the account's
       read mark (when the transport reports it) trigger, older ones are only recorded, so a first
       start does not answer a whole backlog.
    """
    fetched = 0
    read_since = now()
    dialogs = await transport.dialogs()
    fresh = await sync_to_async(_apply_dialogs)(agent_id, dialogs, read_since)
    # A chat whose newest message (as the dialog list reports it) is already stored needs no request,
    # which keeps a reconnect cheap; chats the list does not cover are always read.
    top = {d.peer_id: d.extra.get("top_message") for d in dialogs}
    for peer_id, last_id in await sync_to_async(_known_conversations)(agent_id):
        if last_id is not None and top.get(peer_id) is not None and top[peer_id] <= last_id:
            continue
        records: list[InboundMessage] = []
        try:
            await _history_after(transport, agent_id, peer_id, last_id, records)
        except Exception:
            # Keep what was read (a flood wait may stop the pages), then let the gateway back off.
            if records:
                await sync_to_async(ingest_history)(agent_id=agent_id, records=records, trigger=True)
            raise
        if records:
            fetched += len(records)
            await sync_to_async(ingest_history)(agent_id=agent_id, records=records, trigger=True)
    for peer_id, read_max in fresh:
        records = await transport.history(peer_id, limit=RECONCILE_LIMIT)
        if not records:
            continue
        fetched += len(records)
        old = [r for r in records if read_max is None or r.message_id <= read_max]
        unread = [r for r in records if read_max is not None and r.message_id > read_max]
        await sync_to_async(ingest_history)(agent_id=agent_id, records=old, trigger=False)
        if unread:
            await sync_to_async(ingest_history)(agent_id=agent_id, records=unread, trigger=True)
    return fetched
