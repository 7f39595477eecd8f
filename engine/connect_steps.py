"""The connection steps: connect the held clients, and ingest the updates they received.

`ConnectStep` connects (or reconnects, after backoff) each held client and fills gaps from history
(`engine.ingest.reconcile`); `IngestStep` polls each connected client and stores what came. A
client whose session Telegram refuses stops its agent (`stop_agent`); any other failure backs the
client off (`AgentClient.fail`) and the connect step tries it again later.
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async

from agents.models import Agent
from cindy_site.clock import get_clock
from conversations.models import ActivityEvent
from conversations.services.activity import record_event
from conversations.transport.base import AuthError
from engine.clients import asks_database, clients_quiet, reports_updates
from engine.gateway_context import GatewayContext, quiet_disconnect
from engine.heap import COLLECT_SECONDS
from engine.ingest import ingest_updates, reconcile
from engine.leases import agent_stop
from engine.stickers import sticker_access_record_premium

logger = logging.getLogger("engine.gateway")

#: How long one pass may spend connecting clients (the rest connect in the passes that follow).
CONNECT_BUDGET_SECONDS = 2.0


async def stop_agent(context: GatewayContext, agent_id: int, exc: AuthError) -> None:
    """Telegram refused the agent's session: stop the agent (an operator must act) and drop it."""
    if exc.reason == "NOT_READY":  # not logged in or no credentials: the message says what to do
        reason = str(exc)
    else:
        reason = f"Telegram refused the session: {exc.reason}"
    await sync_to_async(agent_stop)(agent_id=agent_id, reason=reason, error=str(exc))
    await context.drop(agent_id, f"stopped: {exc.reason}")


def account_record(agent_id: int, user_id: int, username: str) -> None:
    """Remember the account's user id (and username, if none is set) as the transport reports them."""
    Agent.objects.filter(pk=agent_id).exclude(telegram_user_id=user_id).update(telegram_user_id=user_id)
    if username:
        Agent.objects.filter(pk=agent_id, telegram_username="").update(telegram_username=username)


class ConnectStep:
    name = "connect"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context
        #: Clients connected since the heap was last settled; the first pass with nothing left to
        #: connect settles it (engine/heap.py, in a thread): the burst's garbage collected, the
        #: survivors frozen out of later collections, the freed pages returned.
        self.connected_since_trim = 0
        self._trim: asyncio.Future | None = None

    def _trim_after_burst(self) -> None:
        held, heap = len(self.context.clients), self.context.heap
        if not (self.connected_since_trim or heap.due(held)) or (
            self._trim is not None and not self._trim.done()
        ):
            return
        self.connected_since_trim = 0
        self._trim = asyncio.get_running_loop().run_in_executor(None, heap.settle, held)

    async def run(self) -> bool:
        """Connect (or reconnect, after backoff) each held client, then fill gaps from history.

        A pass that has spent CONNECT_BUDGET_SECONDS connecting leaves the rest to the next pass
        (which follows at once): a gateway taking over a hundred agents keeps ticking the ones it
        drives and taking the leases that expire meanwhile, instead of connecting them all first."""
        ctx = self.context
        did = False
        started = get_clock().monotonic()
        for agent_id, client in list(ctx.clients.items()):
            if client.connected or get_clock().monotonic() < client.retry_at:
                continue
            if did and get_clock().monotonic() - started >= CONNECT_BUDGET_SECONDS:
                break
            did = True
            try:
                if client.failures:
                    await quiet_disconnect(client)
                account = await client.transport.connect()
                await sync_to_async(account_record)(agent_id, account.user_id, account.username)
                # The held agent as stored now, for the steps that read it before the lease step's next
                # read (the daily schedule planning needs the account id).
                client.agent.telegram_user_id = account.user_id
                if account.username and not client.agent.telegram_username:
                    client.agent.telegram_username = account.username
                await sync_to_async(sticker_access_record_premium)(agent_id=agent_id, premium=account.premium)
                fetched = await reconcile(agent_id=agent_id, transport=client.transport)
            except AuthError as exc:
                await stop_agent(ctx, agent_id, exc)
                continue
            except Exception as exc:
                client.fail(exc)
                continue
            if client.dropped:  # fenced or released while connecting: this connection must not stay
                await quiet_disconnect(client)
                continue
            client.connected, client.failures = True, 0
            self.connected_since_trim += 1
            await sync_to_async(record_event)(
                ActivityEvent.Kind.AGENT_ONLINE,
                agent_id=agent_id,
                summary=f"online via {ctx.gateway_id}"
                + (f"; caught up {fetched} messages" if fetched else ""),
            )
        if not did:
            self._trim_after_burst()
            heap = self.context.heap
            if not self.context.upkeep_waits(last=heap.collected_at, period=COLLECT_SECONDS):
                heap.tend()
        return did


class IngestStep:
    name = "ingest"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context
        #: Whether the last run stored anything: a follow-up pass then looks for media too.
        self.ingested = False

    async def run(self) -> bool:
        """Poll each connected client that may have something and store what came.

        A transport that knows in memory whether it has something (`poll_pending`: Telethon's, which
        queues updates as they arrive) is asked so in a full pass; in a follow-up pass only those
        that reported updates since (`GatewayContext.updated`) are, so the passes a message causes
        read no Telethon state of the clients that reported nothing (a connection Telethon gave up on
        is found by the next full pass). What is left per held client is a class check, to find the
        transports that cannot report (about 0.1 ms a pass at 1,000 clients). The sandbox's
        transports are asked in one query for all (`clients_quiet`, in the database thread)."""
        ctx = self.context
        did = False
        clients = ctx.clients
        if ctx.follow_up:
            noted, ctx.updated = ctx.updated, set()
            polled = [
                (agent_id, client)
                for agent_id, client in clients.items()
                if client.connected and not reports_updates(client)
            ]
            polled += [
                (agent_id, client)
                for agent_id in noted
                if (client := clients.get(agent_id)) is not None
                and client.connected
                and client.transport.poll_pending
            ]
        else:
            ctx.updated = set()
            polled = [
                (agent_id, client)
                for agent_id, client in clients.items()
                if client.connected and getattr(client.transport, "poll_pending", True)
            ]
        asked = [client for _agent_id, client in polled if asks_database(client)]
        quiet = await sync_to_async(clients_quiet)(asked) if asked else set()
        for agent_id, client in polled:
            if agent_id in quiet or not client.connected:
                continue
            try:
                updates = await client.transport.poll_updates()
            except AuthError as exc:
                await stop_agent(ctx, agent_id, exc)
                continue
            except Exception as exc:
                client.fail(exc)
                continue
            if updates:
                did = True
                try:
                    await sync_to_async(ingest_updates)(agent_id=agent_id, updates=updates)
                except Exception as exc:
                    # The batch was rolled back as a whole (messages and replans, engine/ingest.py)
                    # and the transport's cursor has moved past it: reconnect, so that the
                    # reconciler fetches its messages again from history and evaluates their
                    # triggers. Edits, deletions and reactions in it are not in history.
                    logger.exception("agent %s: ingest failed", client.agent.name)
                    client.fail(exc)
        self.ingested = did
        return did
