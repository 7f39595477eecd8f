"""Gateway upkeep steps: media downloads, sticker set imports, dialog refreshes, request reaping.

Step objects of `engine.gateway.Gateway`, each built with the gateway's context and keeping its own
state; each follows the gateway's rules: one unit of work, returns whether it did any, confines every
failure to its agent. State is per gateway process and starts empty, so a restart re-checks
everything once.
"""

from __future__ import annotations

import datetime as dt
import logging

from asgiref.sync import sync_to_async
from django.conf import settings

from agents.models import Agent
from agents.selectors import mute_requests_pending
from cindy_site.clock import get_clock
from cindy_site.parameters import parameter
from conversations.models import ActivityEvent, Conversation
from conversations.services.activity import record_event
from conversations.transport.base import ChatDetails, Transport
from engine.clients import AgentClient
from engine.gateway_context import GatewayContext
from engine.media import download_new_media, media_agents_with_news, media_cursor_start
from engine.refresh import Refreshes, dialog_read_period
from engine.requests import requests_reap_expired, signin_requests_reap_expired
from engine.stickers import (
    RETRY_AFTER_SECONDS,
    sticker_access_record_saved,
    sticker_set_import,
    sticker_sets_to_refresh,
)
from media_catalog.selectors import saved_stickers_by_agent
from media_catalog.services.library import library_sync_saved
from media_catalog.services.sticker_sets import wanted_sticker_sets

logger = logging.getLogger("engine.gateway")
Kind = ActivityEvent.Kind

#: With unread scans off, how often each agent's dialog list is re-read for mute, block and title
#: changes (stretched for a large gateway: engine/refresh.py, `dialog_read_period`). Also how often an
#: unchanged list is compared with the mirror again (`apply_dialog_flags`).
DIALOG_REFRESH_SECONDS = 60.0
#: Besides on connect and on changes, each agent's sets are checked for staleness this often.
STICKER_RECHECK_SECONDS = 3600.0
#: How often the sticker step looks at every agent, not only those whose wanted sets may have changed.
STICKER_SWEEP_SECONDS = 60.0
#: How often each agent's media library is re-read from its Saved Messages.
LIBRARY_REFRESH_SECONDS = 600.0
#: How often the request reaper looks for requests left running by a stopped gateway.
REQUEST_REAP_SECONDS = 30.0


def conversations_refresh_flags(
    *,
    agent_id: int,
    dialogs: list[ChatDetails],
    blocked: dict[int, bool],
    read_since: dt.datetime | None = None,
) -> int:
    """Apply the dialog list's mute state and titles, and the block state, to known conversations.

    `read_since` is when the list's read began: a mute change that reached Telegram since may be
    missing from it, so the list's mute state of that chat is not applied (the next list has it).

    Conversations are not created here (the reconciler does that, with their history). Returns how
    many conversations changed; each change is logged in the activity stream.
    """
    peers = [details.peer_id for details in dialogs]
    by_peer = {
        row[0]: row[1:]
        for row in Conversation.objects.filter(agent_id=agent_id, peer_id__in=peers).values_list(
            "peer_id", "pk", "muted", "blocked", "title"
        )
    }
    muting: set[int] | None = None
    changed = 0
    for details in dialogs:
        known = by_peer.get(details.peer_id)
        if known is None:
            continue
        pk, muted, was_blocked, title = known
        fields = {}
        if muted != details.muted:
            if muting is None:
                # A mute an operator asked for and the gateway has not yet sent, or sent while the
                # list was read: Telegram's old state must not undo it.
                muting = set(mute_requests_pending(agent_id=agent_id, since=read_since))
            if details.peer_id not in muting:
                fields["muted"] = details.muted
        is_blocked = blocked.get(details.peer_id, details.blocked)
        if was_blocked != is_blocked:
            fields["blocked"] = is_blocked
        if details.title and title != details.title[:255]:
            fields["title"] = details.title[:255]
        if not fields:
            continue
        Conversation.objects.filter(pk=pk).update(**fields)
        changed += 1
        flags = {k: v for k, v in fields.items() if k != "title"}
        if flags:
            record_event(
                Kind.INFO,
                agent_id=agent_id,
                conversation_id=pk,
                summary=", ".join(f"{k} {'on' if v else 'off'}" for k, v in flags.items()),
                data=flags,
            )
    return changed


class MediaStep:
    """Downloads new media into the media store, within MEDIA_DESC_BUDGET_PER_TICK per pass."""

    name = "media"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context
        #: Agent id → the newest message whose media was looked at (engine/media.py).
        self.cursors: dict[int, int] = {}

    async def run(self) -> bool:
        cursors = self.cursors
        budget = parameter("MEDIA_DESC_BUDGET_PER_TICK")
        spent_total = 0
        connected = self.context.connected()
        for agent_id, client in connected:
            if agent_id not in cursors:
                try:
                    cursors[agent_id] = await sync_to_async(media_cursor_start)(agent_id=agent_id)
                except Exception:
                    logger.exception("agent %s: media downloads failed", client.agent.name)
        ready = {agent_id: cursors[agent_id] for agent_id, _ in connected if agent_id in cursors}
        news, top = await sync_to_async(media_agents_with_news)(cursors=ready)
        for agent_id, client in connected:
            if agent_id not in news:
                if agent_id in ready and cursors[agent_id] < top:  # nothing of its up to `top`
                    cursors[agent_id] = top
                continue
            if news[agent_id] is not None:  # no media among the new messages
                cursors[agent_id] = news[agent_id]
                continue
            try:
                cursors[agent_id], spent = await download_new_media(
                    agent_id=agent_id,
                    transport=client.transport,
                    cursor=cursors[agent_id],
                    budget=max(budget - spent_total, 0),
                )
            except Exception:
                logger.exception("agent %s: media downloads failed", client.agent.name)
                continue
            spent_total += spent
        return spent_total > 0


class StickersStep:
    """Imports the agents' sticker sets that are missing or stale: on connect, on changes, hourly."""

    name = "stickers"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context
        #: Agent id → (the client, the set names, monotonic time) of its last check, and the agent
        #: (the lease step's `Agent`, rebuilt only when its row changed) it last looked at.
        self.checked: dict[int, tuple[AgentClient, list[str], float, Agent]] = {}
        self._swept_at = float("-inf")  # monotonic time of the last look at every agent
        #: Set short name → monotonic time before which a failed import is not tried again.
        self.failed: dict[str, float] = {}

    async def run(self) -> bool:
        """Look at the agents whose wanted sets may have changed: a client new since the last look, an
        agent row the lease step rebuilt (an admin edit), Saved Messages stickers the library refresh
        found changed; and every agent once per STICKER_SWEEP_SECONDS (an edit of the sticker access
        from elsewhere, the hourly recheck). Reading every agent's saved stickers at every pass cost
        25 ms a pass at 1,000 agents."""
        did = False
        connected = self.context.connected()
        if not connected:
            return False
        at = get_clock().monotonic()
        if at - self._swept_at >= STICKER_SWEEP_SECONDS and not self.context.upkeep_waits(
            last=self._swept_at, period=STICKER_SWEEP_SECONDS
        ):
            self._swept_at = at
            due = connected
        else:
            due = [(agent_id, client) for agent_id, client in connected if self._changed(agent_id, client)]
            if not due:
                return False
        saved = await sync_to_async(saved_stickers_by_agent)(agent_ids=[a for a, _ in due])
        for agent_id, client in due:
            client.stickers_changed = False
            names = wanted_sticker_sets(client.agent, saved=saved[agent_id])
            seen = self.checked.get(agent_id)
            clock_now = get_clock().monotonic()
            if (
                seen is not None
                and seen[0] is client
                and seen[1] == names
                and clock_now - seen[2] < STICKER_RECHECK_SECONDS
            ):
                self.checked[agent_id] = (*seen[:3], client.agent)
                continue
            self.checked[agent_id] = (client, names, clock_now, client.agent)
            if names:
                did = await self._import_sticker_sets(client, names) or did
        return did

    def _changed(self, agent_id: int, client: AgentClient) -> bool:
        seen = self.checked.get(agent_id)
        return seen is None or seen[0] is not client or seen[3] is not client.agent or client.stickers_changed

    async def _import_sticker_sets(self, client: AgentClient, names: list[str]) -> bool:
        clock = get_clock()
        failed = self.failed
        did = False
        for short_name in await sync_to_async(sticker_sets_to_refresh)(short_names=names):
            if clock.monotonic() < failed.get(short_name, float("-inf")):
                continue
            try:
                result = await sticker_set_import(transport=client.transport, short_name=short_name)
            except Exception as exc:
                failed[short_name] = clock.monotonic() + RETRY_AFTER_SECONDS
                logger.warning(
                    "agent %s: could not import sticker set %s: %r", client.agent.name, short_name, exc
                )
                await sync_to_async(record_event)(
                    Kind.AGENT_ERROR,
                    agent_id=client.agent.pk,
                    summary=f"sticker set {short_name!r} could not be imported: {exc}; check Agent Sticker Sets",
                )
                continue
            failed.pop(short_name, None)
            did = True
            await sync_to_async(record_event)(
                Kind.INFO,
                agent_id=client.agent.pk,
                summary=f"imported sticker set {short_name} ({result['stickers']} stickers)",
                data=result,
            )
        return did


class RefreshStep:
    """Starts the refreshes of one kind that are due, in tasks beside the pass (engine/refresh.py):

    - "dialogs": with unread scans off, every DIALOG_REFRESH_SECONDS per agent (stretched for a large
      gateway), on its phase, mute, block and titles from the dialog list (the reconciler has just
      read the dialogs at connect: the first waits its phase). With scans on it reads nothing: each
      scan applies the flags of the list it reads (engine/attention.py), one list per agent, not two;
    - "library": on connect and every LIBRARY_REFRESH_SECONDS per agent, on its phase, Saved Messages
      listed as its media library.
    """

    def __init__(self, context: GatewayContext, name: str) -> None:
        self.context = context
        self.name = name
        if name == "dialogs":
            self.refreshes = Refreshes(
                "dialog", period=DIALOG_REFRESH_SECONDS, at_connect=False, job=_refresh_dialogs
            )
        elif name == "library":
            self.refreshes = Refreshes(
                "media library", period=LIBRARY_REFRESH_SECONDS, at_connect=True, job=_refresh_library
            )
        else:
            raise ValueError(f"no refresh named {name!r}: the refreshes are 'dialogs' and 'library'")

    async def run(self) -> bool:
        clients = self.context.clients
        if self.name == "dialogs":
            if settings.CINDY_UNREAD_SCAN_SECONDS > 0:
                clients = {}  # the scans read the lists (and a refresh in flight is cancelled)
            self.refreshes.period = dialog_read_period(DIALOG_REFRESH_SECONDS, len(clients))
        return self.refreshes.step(clients, self.context.wakeup)

    async def settle(self) -> bool:
        """Wait for the refreshes in flight; returns whether any changed something."""
        return await self.refreshes.settle()

    async def stop(self) -> None:
        """Cancel the refreshes in flight (the gateway is stopping)."""
        await self.refreshes.stop()


class ReapRequestsStep:
    """Returns gateway requests left running by a stopped gateway to pending (or fails them), for the
    agents held here; and fails expired sign-in requests of any agent, blanking their secrets."""

    name = "reap_requests"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context
        self._reaped_at: float | None = None  # monotonic

    async def run(self) -> bool:
        clock = get_clock()
        if self._reaped_at is not None and clock.monotonic() - self._reaped_at < REQUEST_REAP_SECONDS:
            return False
        if self.context.upkeep_waits(last=self._reaped_at, period=REQUEST_REAP_SECONDS):
            return False
        self._reaped_at = clock.monotonic()
        failed = await sync_to_async(signin_requests_reap_expired)()
        held = list(self.context.clients)
        reaped = await sync_to_async(requests_reap_expired)(agent_ids=held) if held else 0
        return bool(failed or reaped)


async def _refresh_dialogs(agent_id: int, client: AgentClient) -> bool:
    """Read the dialog list and apply its flags (with unread scans off: with them on, each scan does)."""
    read_at = get_clock().monotonic()
    dialogs = await client.transport.dialogs()
    return await apply_dialog_flags(agent_id, client, dialogs, read_at=read_at)


async def apply_dialog_flags(
    agent_id: int, client: AgentClient, dialogs: list[ChatDetails], *, read_at: float
) -> bool:
    """Apply a dialog list, read at `read_at` (monotonic) and just now, to the conversations' flags;
    returns whether any changed. A list whose flags are those of the last one compared is compared
    with the database again only once DIALOG_REFRESH_SECONDS have passed since (an operator's change
    that never reached Telegram, and a block Telegram's dialog list does not show, are caught then,
    as by the refresh's period)."""
    seen = tuple((d.peer_id, d.muted, d.blocked, d.title) for d in dialogs)
    compared = client.flags_compared_at
    if seen == client.flags_seen and compared is not None and read_at - compared < DIALOG_REFRESH_SECONDS:
        changed = 0
    else:
        blocked = await _block_states(client.transport, dialogs)
        clock = get_clock()
        read_since = clock.now() - dt.timedelta(seconds=clock.monotonic() - read_at)
        changed = await sync_to_async(conversations_refresh_flags)(
            agent_id=agent_id, dialogs=dialogs, blocked=blocked, read_since=read_since
        )
        client.flags_seen, client.flags_compared_at = seen, read_at
    return bool(changed)


async def _refresh_library(agent_id: int, client: AgentClient) -> bool:
    saved = await client.transport.saved_media()
    added, removed = await sync_to_async(library_sync_saved)(agent_id=agent_id, saved=saved)
    stickers = await sync_to_async(sticker_access_record_saved)(agent_id=agent_id, saved=saved)
    if stickers:
        client.stickers_changed = True
    return bool(added or removed or stickers)


async def _block_states(transport: Transport, dialogs: list[ChatDetails]) -> dict[int, bool]:
    """Whether each DM's user is blocked: a dialog list does not say, the (cached) block list does."""
    states = {}
    for details in dialogs:
        if details.kind == "dm":
            states[details.peer_id] = details.blocked or await transport.is_blocked(details.peer_id)
    return states
