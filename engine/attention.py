"""The unread scan: attention as the original pays it, for what no update delivered.

Telegram's updates can be lost (a gateway down, a dropped update, a gap Telegram never fills), and
some attention is only ever visible in the dialog list: a dialog the account marked unread from
another device, unread mentions, unread reactions. So every `CINDY_UNREAD_SCAN_SECONDS` (and once after
each (re)connect) each held agent reads its dialog list once (`transport.dialogs`, the newest
`SCAN_DIALOGS`) and, per dialog:

- **Messages no update delivered.** The dialog's newest message (`top_message`) is newer than the
  mirror's newest and at least `UNDELIVERED_AFTER_SECONDS` old (an update normally arrives within a
  second; a younger one is left to it): the history after the mirror's newest is fetched and ingested
  with triggers on, as if it had just arrived. A message is stored once, so when its update comes
  after all, it finds the message stored and triggers nothing: one answer.
- **A chat the mirror has never seen** with unread messages or an unread mark: recorded as the
  reconciler records a new chat, only the messages after the account's read mark triggering.
- **Marked unread** (`unread_mark`): a callout (`engine.triggers.unread_mark_decision`), unless the agent
  is answering the chat already; reading the chat before planning clears the mark.
- **Unread reactions** (`unread_reactions_count`): the agent's last message in the chat is fetched,
  and reactions the mirror does not have yet are ingested (an unread one on it triggers).
- Unread mentions need no request of their own: a mention is a message, fetched by the first rule,
  and the transport clears the dialog's mention count when it reads the chat.

Cheap and bounded: one dialog list request per agent and scan, and a history request only for a
dialog whose marks changed since the agent's previous scan (`ScanState.marks`). A gateway holding more
agents than the interval times CINDY_DIALOG_READS_PER_SECOND stretches the interval to agents / that
rate (`engine.refresh.dialog_read_period`: 200 s at 1,000 agents and 5 a second), so its scans cost the
same however many agents it holds. The scan applies its list's mute, block and title flags, so with
scans on the dialog refresh reads no list of its own (engine/upkeep.py). The scan runs as an
asyncio task of its own per agent (`AttentionStep.run` only starts them), so the gateway's
pass and its tick never wait on it. The agents' scans are spread over the interval by agent id, each
on a phase of its own that a late pass does not move (`engine.refresh.refresh_offset`): scheduled as
"the pass's time + the interval", every scan a pass started came due again together, and at 1,000
agents they gathered onto a few passes' beats (bursts of hundreds of dialog lists at once). At most
CINDY_UPKEEP_CONCURRENCY scans talk to Telegram and the database at once; the rest wait their turn, so
the gateway's own database work never queues behind hundreds of scans. A
flood wait (or the account's flood pause) ends that agent's scan and moves its next one to after the
wait; other errors are logged and the next scan comes at the usual interval.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.db.models import Max

from agents.models import Agent
from cindy_site.clock import get_clock, now
from conversations.models import TELEGRAM_SERVICE_USER_ID, ActivityEvent, Conversation, Message
from conversations.selectors import conversations_last_message_ids
from conversations.services.activity import record_event
from conversations.services.ingest import conversation_apply_details
from conversations.transport.base import (
    ChatDetails,
    DialogUnreadMark,
    FloodWait,
    InboundMessage,
    ReactionsChanged,
    Transport,
)
from engine.clients import AgentClient
from engine.gateway_context import GatewayContext
from engine.ingest import RECONCILE_LIMIT, _history_after, ingest_history, ingest_updates
from engine.refresh import UpkeepCap, dialog_read_period, refresh_offset

logger = logging.getLogger("engine.gateway")

#: How many dialogs (the most recent) one scan reads.
SCAN_DIALOGS = 100
#: A dialog's newest message younger than this is left to its update.
UNDELIVERED_AFTER_SECONDS = 5.0
#: The first scan after a (re)connect waits up to this long, spread over the agents by id.
FIRST_SCAN_SPREAD_SECONDS = 5.0


@dataclass(frozen=True)
class _Work:
    peer_id: int
    fetch_after: int | None = None  # fetch history after this id (None with `fetch`: recent history)
    fetch: bool = False
    fresh: ChatDetails | None = None  # a chat the mirror has never seen
    mark: bool = False
    reaction_message_id: int | None = None


@dataclass
class ScanReport:
    fetched: int = 0
    graph_ids: list[int] = field(default_factory=list)
    #: The dialog list the scan read, and when (monotonic, taken before the request).
    dialogs: list[ChatDetails] = field(default_factory=list)
    read_at: float = 0.0


def _dialog_key(details: ChatDetails) -> tuple:
    extra = details.extra
    return (
        extra.get("top_message"),
        bool(extra.get("unread_mark")),
        extra.get("unread_reactions_count") or 0,
        extra.get("unread_count") or 0,
    )


def scan_plan(
    *, agent_id: int, dialogs: list[ChatDetails], marks: dict[int, tuple], at: dt.datetime
) -> list[_Work]:
    """What this scan must fetch or trigger, from the dialog list and the mirror (three queries).

    `marks` (peer → the dialog's marks when last handled) is updated for the dialogs handled in
    full; a dialog whose newest message is still too young to call undelivered is looked at again.
    """
    peers = [d.peer_id for d in dialogs if d.peer_id != TELEGRAM_SERVICE_USER_ID]
    known = {c.peer_id: c for c in Conversation.objects.filter(agent_id=agent_id, peer_id__in=peers)}
    newest = conversations_last_message_ids(conversation_ids=[c.pk for c in known.values()])
    reacted = [
        known[d.peer_id].pk
        for d in dialogs
        if d.peer_id in known and (d.extra.get("unread_reactions_count") or 0) > 0
    ]
    last_agent = (
        dict(  # conversation -> the agent's newest message there
            Message.objects.filter(conversation_id__in=reacted, is_agent=True, deleted=False)
            .values("conversation_id")
            .annotate(m=Max("message_id"))
            .values_list("conversation_id", "m")
        )
        if reacted
        else {}
    )
    young = at - dt.timedelta(seconds=UNDELIVERED_AFTER_SECONDS)
    work: list[_Work] = []
    for details in dialogs:
        peer = details.peer_id
        if peer == TELEGRAM_SERVICE_USER_ID:
            continue
        key = _dialog_key(details)
        if marks.get(peer) == key:
            continue
        extra = details.extra
        top = extra.get("top_message") or 0
        top_date = extra.get("top_date")
        settled = top_date is None or top_date <= young
        conversation = known.get(peer)
        last = newest.get(conversation.pk) if conversation is not None else None
        if conversation is None or last is None:
            if (extra.get("unread_count") or extra.get("unread_mark")) and settled:
                work.append(_Work(peer, fresh=details, mark=bool(extra.get("unread_mark"))))
                marks[peer] = key
            elif not extra.get("unread_count") and not extra.get("unread_mark"):
                marks[peer] = key
            continue
        fetch = top > last
        if fetch and not settled:
            continue  # its update is probably on its way; look again at the next scan
        reaction_id = None
        if (extra.get("unread_reactions_count") or 0) > 0:
            reaction_id = last_agent.get(conversation.pk)
        if fetch or extra.get("unread_mark") or reaction_id:
            work.append(
                _Work(
                    peer,
                    fetch_after=last,
                    fetch=fetch,
                    mark=bool(extra.get("unread_mark")),
                    reaction_message_id=reaction_id,
                )
            )
        marks[peer] = key
    return work


def _ingest_undelivered(agent_id: int, peer_id: int, records: list[InboundMessage]) -> list[int]:
    """Ingest what the scan fetched, with triggers; the messages new to the mirror are named in the
    activity stream (a late update of them finds them stored and says nothing)."""
    ids = [r.message_id for r in records]
    with transaction.atomic():
        conversation = Conversation.objects.filter(agent_id=agent_id, peer_id=peer_id).first()
        known = set(
            Message.objects.filter(conversation=conversation, message_id__in=ids).values_list(
                "message_id", flat=True
            )
            if conversation is not None
            else ()
        )
        graph_ids = ingest_history(agent_id=agent_id, records=records, trigger=True)
    new = [i for i in ids if i not in known]
    if new and conversation is not None:
        summary = f"unread scan: {len(new)} message(s) no update delivered (#{', #'.join(map(str, new))})"
        logger.info("agent #%s, peer %s: %s", agent_id, peer_id, summary)
        record_event(
            ActivityEvent.Kind.INFO,
            agent_id=agent_id,
            conversation_id=conversation.pk,
            summary=summary,
            data={"unread_scan": new},
        )
    return graph_ids


def _apply_fresh(agent_id: int, details: ChatDetails) -> None:
    conversation_apply_details(agent=Agent.objects.get(pk=agent_id), details=details)


async def unread_scan(*, agent_id: int, transport: Transport, marks: dict[int, tuple]) -> ScanReport:
    """One scan of one agent (see the module docstring). Transport errors, a `FloodWait` included,
    propagate; what was ingested before stays ingested.

    A dialog whose marks are those it had when last handled needs nothing: a scan that finds every
    dialog so (an idle account's usual scan) reads nothing from the database."""
    report = ScanReport(read_at=get_clock().monotonic())
    dialogs = report.dialogs = await transport.dialogs(limit=SCAN_DIALOGS)
    changed = [
        d for d in dialogs if d.peer_id != TELEGRAM_SERVICE_USER_ID and marks.get(d.peer_id) != _dialog_key(d)
    ]
    if not changed:
        return report
    work = await sync_to_async(scan_plan)(agent_id=agent_id, dialogs=changed, marks=marks, at=now())
    for item in work:
        try:
            await _handle(agent_id, transport, item, report)
        except BaseException:
            marks.pop(item.peer_id, None)  # not handled: the next scan tries again
            raise
    return report


async def _handle(agent_id: int, transport: Transport, item: _Work, report: ScanReport) -> None:
    if item.fresh is not None:
        await sync_to_async(_apply_fresh)(agent_id, item.fresh)
        records = await transport.history(item.peer_id, limit=RECONCILE_LIMIT)
        read_max = item.fresh.extra.get("read_inbox_max_id")
        old = [r for r in records if read_max is None or r.message_id <= read_max]
        unread = [r for r in records if read_max is not None and r.message_id > read_max]
        report.fetched += len(records)
        await sync_to_async(ingest_history)(agent_id=agent_id, records=old, trigger=False)
        if unread:
            report.graph_ids += await sync_to_async(ingest_history)(
                agent_id=agent_id, records=unread, trigger=True
            )
    elif item.fetch:
        records: list[InboundMessage] = []
        try:
            await _history_after(transport, agent_id, item.peer_id, item.fetch_after, records)
        finally:
            if records:
                report.fetched += len(records)
                report.graph_ids += await sync_to_async(_ingest_undelivered)(agent_id, item.peer_id, records)
    if item.reaction_message_id is not None:
        records = await transport.history(item.peer_id, since_id=item.reaction_message_id - 1, limit=1)
        record = next((r for r in records if r.message_id == item.reaction_message_id), None)
        if record is not None and record.reactions:
            update = ReactionsChanged(
                peer_id=item.peer_id,
                message_id=record.message_id,
                reactions=record.reactions,
                unread=any(r.unread for r in record.reactions),
            )
            report.graph_ids += await sync_to_async(ingest_updates)(agent_id=agent_id, updates=[update])
    if item.mark:
        report.graph_ids += await sync_to_async(ingest_updates)(
            agent_id=agent_id, updates=[DialogUnreadMark(peer_id=item.peer_id, unread=True)]
        )


@dataclass
class ScanState:
    """One agent's scans, in the gateway's memory."""

    due: float = 0.0  # monotonic
    task: asyncio.Task | None = None
    connected: bool = False  # as the previous step saw the client
    marks: dict[int, tuple] = field(default_factory=dict)


def first_scan_delay(agent_id: int) -> float:
    """The spread of the agents' scans: a stable fraction of FIRST_SCAN_SPREAD_SECONDS per agent."""
    spread = min(FIRST_SCAN_SPREAD_SECONDS, settings.CINDY_UNREAD_SCAN_SECONDS)
    return (agent_id * 7919 % 1000) / 1000 * spread


def next_scan_due(agent_id: int, clock: float, interval: float) -> float:
    """The agent's next scan after one started at `clock`: its next beat (its phase plus a whole
    number of intervals) at least half an interval on, so a late pass does not move its phase."""
    phase = refresh_offset(agent_id, interval)
    return phase + ((clock + interval / 2 - phase) // interval + 1) * interval


class AttentionStep:
    """Starts the due unread scans, each as a task of its own; keeps each held agent's `ScanState`."""

    name = "attention"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context
        self.scans: dict[int, ScanState] = {}
        self.cap = UpkeepCap()

    async def run(self) -> bool:
        """Start the unread scans that are due (each in a task of its own); never waits for one.

        Returns False even when it started some: a scan's result comes later, in its own task, which
        wakes the gateway when the scan stored work for the tick (`_scan_now`; with wake-ups off, the
        next tick claims it). Had a started scan
        counted as the pass's work, the gateway would run a follow-up pass at once that could find
        nothing of the scan's (about 12 passes a minute at 100 idle agents)."""
        self.start_due()
        return False

    def start_due(self) -> bool:
        """Start the unread scans that are due; returns whether it started any."""
        interval = dialog_read_period(settings.CINDY_UNREAD_SCAN_SECONDS, len(self.context.clients))
        scans = self.scans
        clients = self.context.clients
        for agent_id in [a for a in scans if a not in clients]:
            state = scans.pop(agent_id)
            if state.task is not None:
                state.task.cancel()
        if interval <= 0:
            return False
        clock = get_clock().monotonic()
        started = False
        for agent_id, client in list(clients.items()):
            state = scans.setdefault(agent_id, ScanState())
            if not client.connected:
                state.connected = False
                continue
            if not state.connected:  # (re)connected: a scan soon, spread over the agents
                state.connected = True
                state.due = clock + first_scan_delay(agent_id)
                state.marks.clear()
            if clock < state.due or (state.task is not None and not state.task.done()):
                continue
            state.due = next_scan_due(agent_id, clock, interval)
            state.task = asyncio.create_task(
                self._scan(agent_id, client, state), name=f"unread scan {agent_id}"
            )
            started = True
        return started

    async def _scan(self, agent_id: int, client: AgentClient, state: ScanState) -> None:
        async with self.cap.held():
            await self._scan_now(agent_id, client, state)

    async def _scan_now(self, agent_id: int, client: AgentClient, state: ScanState) -> None:
        try:
            report = await unread_scan(agent_id=agent_id, transport=client.transport, marks=state.marks)
        except asyncio.CancelledError:
            raise
        except FloodWait as exc:
            state.due = max(state.due, get_clock().monotonic() + exc.seconds)
            logger.info(
                "agent %s: unread scan waits %ss for Telegram (flood wait)", client.agent.name, exc.seconds
            )
            return
        except Exception as exc:
            # A connection dropped or broken meanwhile is the gateway's to handle (and to report).
            quiet = client.dropped or not client.connected
            (logger.info if quiet else logger.warning)(
                "agent %s: unread scan failed: %r", client.agent.name, exc
            )
            return
        await self._scan_flags(agent_id, client, report)
        if report.graph_ids:
            self.context.wakeup.set()  # their nodes are the tick's to claim

    async def _scan_flags(self, agent_id: int, client: AgentClient, report: ScanReport) -> None:
        """Apply the mute, block and title flags of the scan's dialog list, as the dialog refresh does
        with scans off (with scans on it reads no list: engine/upkeep.py). A failure is logged; the
        next scan applies its own list."""
        from engine.upkeep import apply_dialog_flags

        try:
            changed = await apply_dialog_flags(agent_id, client, report.dialogs, read_at=report.read_at)
        except Exception as exc:
            quiet = client.dropped or not client.connected
            (logger.info if quiet else logger.warning)(
                "agent %s: could not apply the dialog flags of its unread scan: %r", client.agent.name, exc
            )
            return
        if changed:
            self.context.wakeup.set()

    async def stop(self) -> None:
        """Cancel the scans in flight (the gateway is stopping)."""
        tasks = [s.task for s in self.scans.values() if s.task is not None and not s.task.done()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except BaseException:  # noqa: BLE001 - a cancelled scan has nothing left to say
                pass
