"""Waking idle gateways: every writer that makes work for a gateway calls `wake_gateways_on_commit()`
(the `agents` app, below this one, sends `gateway_request_created` instead: `conversations.receivers`).

A gateway that finds nothing to do waits for its next idle pass, a due timer or a wake-up, whichever
comes first (`engine/wake.py`). The wake-up travels over Redis pub/sub when REDIS_URL is set, otherwise
through the `GatewayWake` row, whose counter gateways read at once when a writer on their host sends
its datagram (`cindy_site/local_wake.py`), else every CINDY_WAKE_POLL_SECONDS. It is
only a hint: it carries no data, every gateway wakes and runs one ordinary pass, and a lost wake-up
costs at most one idle pass (CINDY_IDLE_PASS_SECONDS). A failure to send one is
logged and never fails the writer.

The bump runs after the writer's commit (`transaction.on_commit`), so the woken gateway sees the rows;
several bumps between two reads of the counter wake a gateway once. Writes made by the gateway itself
(inside `wake_not_needed()`) send none: its loop runs another pass after any pass that did work.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F

from cindy_site.local_wake import local_wake
from conversations.models import GatewayWake

logger = logging.getLogger(__name__)

_not_needed: contextvars.ContextVar[bool] = contextvars.ContextVar("cindy_wake_not_needed", default=False)
_redis_clients: dict[str, object] = {}


def wake_channel() -> str:
    """The Redis channel of this installation: named after its database, so installations sharing a
    Redis server do not wake each other's gateways."""
    return f"cindy:wake:{connection.settings_dict['NAME']}"


def redis_client(url: str):
    """One synchronous client per URL and process (redis-py reconnects after a fork on its own)."""
    client = _redis_clients.get(url)
    if client is None:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        _redis_clients[url] = client
    return client


def wake_counter() -> int:
    """The `GatewayWake` counter (0 while the row does not exist). Plain SQL: idle gateways read it
    every CINDY_WAKE_POLL_SECONDS, and the ORM's query building would cost more than the read."""
    table = connection.ops.quote_name(GatewayWake._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT counter FROM {table} WHERE id = %s", [GatewayWake.ROW_ID])  # noqa: S608
        row = cursor.fetchone()
    return row[0] if row else 0


def _bump_row() -> None:
    if GatewayWake.objects.filter(pk=GatewayWake.ROW_ID).update(counter=F("counter") + 1):
        return
    try:  # the migration creates the row; a flushed test database may have lost it
        with transaction.atomic():
            GatewayWake.objects.create(pk=GatewayWake.ROW_ID, counter=1)
    except IntegrityError:  # created meanwhile by another writer
        GatewayWake.objects.filter(pk=GatewayWake.ROW_ID).update(counter=F("counter") + 1)


def wake_gateways() -> None:
    """Wake every idle gateway now. Logs and returns on failure: the gateways still pass at their next idle pass."""
    if not settings.CINDY_WAKE or _not_needed.get():
        return
    try:
        if settings.REDIS_URL:
            redis_client(settings.REDIS_URL).publish(wake_channel(), b"1")
        else:
            _bump_row()
            local_wake("gateway")  # idle gateways on this host read the counter at once
    except Exception as exc:
        logger.warning("could not wake the gateways (they act at their next idle pass instead): %r", exc)


def wake_gateways_on_commit() -> None:
    """Wake the gateways once the current transaction commits (at once outside a transaction)."""
    if not settings.CINDY_WAKE or _not_needed.get():
        return
    transaction.on_commit(wake_gateways)


@contextlib.contextmanager
def wake_not_needed() -> Iterator[None]:
    """Writes made inside (and in threads started from here) wake no gateway: the gateway's own."""
    token = _not_needed.set(True)
    try:
        yield
    finally:
        _not_needed.reset(token)
