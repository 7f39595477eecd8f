"""Waking idle gateways: every writer that makes work for a gateway calls `wake_gateways_on_commit()`
(the `agents` app, below this one, sends `gateway_request_created` instead: `conversations.receivers`).

A gateway that finds nothing to do waits for its next idle pass, a due timer or a wake-up, whichever
comes first (`engine/wake.py`). The wake-up travels over Redis pub/sub when REDIS_URL is set, otherwise
through the `GatewayWake` row, whose counter gateways read at once when a writer on their host sends
its datagram (`cindy_site/local_wake.py`), else every CINDY_WAKE_POLL_SECONDS. A writer
that knows which agents have work (`wake_gateways_on_commit(agent_ids)`) wakes only the gateways
holding them: each gateway also listens on a channel (or counter row) of its own; an agent without a
live lease wakes every gateway, so that one takes it. It is
only a hint: it carries no data but its kind, a woken gateway runs one ordinary pass, and a lost
wake-up costs at most one idle pass (CINDY_IDLE_PASS_SECONDS). A failure to send one is
logged and never fails the writer.

A wake-up has one of two kinds. A **turn** wake-up (`turn=True`: a person's message, nodes planned
or released) needs only the steps of a turn: the woken gateway ingests, downloads media, ticks and
updates presence, and leaves its backstop steps (leases, requests, events, upkeep) to its next full
pass, at most one idle pass away. Any other wake-up asks for a **full** pass. A turn wake-up meant
for every gateway (no gateway holds one of the agents) is a full one: taking an agent is a full
pass's work. Over Redis the kind is the message (`WAKE_TURN` or `WAKE_FULL`); in the database it is
the column bumped (`GatewayWake.turns` or `counter`).

The bump runs after the writer's commit (`transaction.on_commit`), so the woken gateway sees the rows;
several bumps between two reads of the counter wake a gateway once. Writes made by the gateway itself
(inside `wake_not_needed()`) send none: its loop runs another pass after any pass that did work.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F

from cindy_site.clock import now
from cindy_site.local_wake import local_wake
from conversations.models import GatewayWake

logger = logging.getLogger(__name__)

#: The Redis messages of the two kinds of wake-up.
WAKE_FULL = b"1"
WAKE_TURN = b"turn"

_not_needed: contextvars.ContextVar[bool] = contextvars.ContextVar("cindy_wake_not_needed", default=False)
_redis_clients: dict[str, object] = {}


def wake_channel() -> str:
    """The Redis channel of this installation: named after its database, so installations sharing a
    Redis server do not wake each other's gateways."""
    return f"cindy:wake:{connection.settings_dict['NAME']}"


def gateway_wake_channel(gateway_id: str) -> str:
    """The Redis channel of one gateway: wake-ups for the agents it holds, and `manage.py drain`."""
    return f"{wake_channel()}:gateway:{gateway_id}"


def redis_client(url: str):
    """One synchronous client per URL and process (redis-py reconnects after a fork on its own)."""
    client = _redis_clients.get(url)
    if client is None:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        _redis_clients[url] = client
    return client


def wake_counters(gateway_id: str = "") -> tuple[int, int]:
    """The `GatewayWake` counters (full wake-ups, turn wake-ups; 0 while the row does not exist),
    plus, given `gateway_id`, that gateway's own: each sum moves when either row's does. Plain SQL:
    idle gateways read them every CINDY_WAKE_POLL_SECONDS, and the ORM's query building would cost
    more than the read."""
    q = connection.ops.quote_name
    table = q(GatewayWake._meta.db_table)
    with connection.cursor() as cursor:
        if gateway_id:
            cursor.execute(
                f"SELECT SUM(counter), SUM(turns) FROM {table} WHERE id = %s OR {q('gateway')} = %s",  # noqa: S608
                [GatewayWake.ROW_ID, gateway_id],
            )
        else:
            cursor.execute(f"SELECT counter, turns FROM {table} WHERE id = %s", [GatewayWake.ROW_ID])  # noqa: S608
        row = cursor.fetchone()
    if not row or row[0] is None:
        return 0, 0
    return int(row[0]), int(row[1])


def wake_counter(gateway_id: str = "") -> int:
    """All the wake-ups `wake_counters` counts, of both kinds."""
    return sum(wake_counters(gateway_id))


def _bump(row: dict, *, turn: bool) -> None:
    """Count one wake-up of its kind on the row (`{"pk": ROW_ID}` or `{"gateway": id}`)."""
    column = "turns" if turn else "counter"
    if GatewayWake.objects.filter(**row).update(**{column: F(column) + 1}):
        return
    try:  # the migration creates the installation's row; a flushed test database may have lost it
        with transaction.atomic():
            GatewayWake.objects.create(**row, **{column: 1})
    except IntegrityError:  # created meanwhile by another writer
        GatewayWake.objects.filter(**row).update(**{column: F(column) + 1})


def wake_holders(agent_ids: Iterable[int]) -> tuple[set[str], bool]:
    """The gateways holding a live lease of `agent_ids`, and whether any of them has no holder."""
    from agents.models import AgentLease

    wanted = set(agent_ids)
    held = dict(
        AgentLease.objects.filter(agent_id__in=wanted, expires_at__gte=now()).values_list(
            "agent_id", "holder"
        )
    )
    return set(held.values()), bool(wanted - set(held))


def wake_gateway(gateway_id: str, *, turn: bool = False) -> None:
    """Wake one gateway (its own channel or counter row), whatever the caller's context; `turn`: for
    a turn only (see the module's text)."""
    if not settings.CINDY_WAKE:
        return
    if settings.REDIS_URL:
        redis_client(settings.REDIS_URL).publish(
            gateway_wake_channel(gateway_id), WAKE_TURN if turn else WAKE_FULL
        )
    else:
        _bump({"gateway": gateway_id}, turn=turn)
        local_wake("gateway")  # idle gateways on this host read their counters at once


def wake_gateways(agent_ids: Iterable[int] | None = None, *, force: bool = False, turn: bool = False) -> None:
    """Wake idle gateways now. Logs and returns on failure: the gateways still pass at their next idle pass.

    Without `agent_ids` every gateway wakes. With them, only the gateways holding those agents do
    (their own channel or counter row); when one of them has no live lease, every gateway wakes too,
    so that one takes it (`runagents --auto`, or a gateway standing by). `force` wakes even inside
    `wake_not_needed()`: a gateway handing agents back wakes the others to take them. `turn`: the
    holders' wake-up is for a turn only; the one to every gateway is always a full one.
    """
    if not settings.CINDY_WAKE or (_not_needed.get() and not force):
        return
    try:
        everyone = agent_ids is None
        holders: set[str] = set()
        if agent_ids is not None:
            holders, everyone = wake_holders(agent_ids)
        for holder in sorted(holders):
            wake_gateway(holder, turn=turn)
        if everyone:
            if settings.REDIS_URL:
                redis_client(settings.REDIS_URL).publish(wake_channel(), WAKE_FULL)
            else:
                _bump({"pk": GatewayWake.ROW_ID}, turn=False)
                local_wake("gateway")
    except Exception as exc:
        logger.warning("could not wake the gateways (they act at their next idle pass instead): %r", exc)


def wake_gateways_on_commit(agent_ids: Iterable[int] | None = None, *, turn: bool = False) -> None:
    """Wake the gateways (of `agent_ids`, or all) once the current transaction commits (at once
    outside a transaction); `turn`: the agents have a turn's work only (see `wake_gateways`)."""
    if not settings.CINDY_WAKE or _not_needed.get():
        return
    if agent_ids is None:
        transaction.on_commit(wake_gateways)
    else:
        transaction.on_commit(functools.partial(wake_gateways, sorted(set(agent_ids)), turn=turn))


def wake_gateway_forget(gateway_id: str) -> None:
    """A gateway stopping: its counter row goes (a Redis channel needs no tidying)."""
    GatewayWake.objects.filter(gateway=gateway_id).delete()


@contextlib.contextmanager
def wake_not_needed() -> Iterator[None]:
    """Writes made inside (and in threads started from here) wake no gateway: the gateway's own."""
    token = _not_needed.set(True)
    try:
        yield
    finally:
        _not_needed.reset(token)
