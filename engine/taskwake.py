"""Waking idle task workers on this host when a task is queued, so no idle pool polls the queue.

With Redis as the broker, django-q2's pusher blocks on `BLPOP` and needs nothing here. With the
database as the broker (no REDIS_URL), django-q2's pusher looks for a task, and when it finds none,
sleeps CINDY_Q_POLL_SECONDS (0.05 s) and looks again: twenty queries a second per pool while idle.

`TaskBroker` (the broker class without Redis, `Q_CLUSTER["broker_class"]`) waits instead: after
finding no task, its pusher waits on a socket of its own (a Unix datagram socket in a directory named
after the database, `task_wake_dir()`) for at most CINDY_Q_IDLE_SECONDS (5 s), and every writer of a
task (`TaskBroker.enqueue`, the gateway's batched dispatch) sends one byte to each socket there once
the task's row is committed (`task_workers_wake`). A task queued on this host therefore starts at once,
and an idle pool reads the queue once per CINDY_Q_IDLE_SECONDS. A wake-up is only a hint: a lost one
(a pool on another host, a full socket buffer) costs at most CINDY_Q_IDLE_SECONDS; a socket left by a
killed pool is removed by the next writer that finds nobody listening. With CINDY_WAKE off the pusher
polls every CINDY_Q_POLL_SECONDS, as django-q2 does; CINDY_Q_WAKE=false does that for
the pool alone.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings
from django.db import connections, router, transaction
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.models import OrmQ

from cindy_site import rows
from cindy_site.local_wake import LocalWakeListener, local_wake, wake_dir

KIND = "task"


def task_wake_dir() -> Path:
    """The directory of this installation's pusher sockets (named after its database)."""
    return wake_dir(KIND)


def task_wake_on() -> bool:
    return settings.CINDY_WAKE and settings.CINDY_Q_WAKE


def task_workers_wake() -> int:
    """Wake every idle pusher of this host now; returns how many sockets it reached. Never raises."""
    return local_wake(KIND) if task_wake_on() else 0


def task_workers_wake_on_commit() -> None:
    """`task_workers_wake` once the current transaction commits (at once outside a transaction)."""
    if task_wake_on():
        transaction.on_commit(task_workers_wake)


class TaskWakeListener(LocalWakeListener):
    """A pusher's socket: `wait` returns when a writer woke it, or after `timeout` seconds."""

    def __init__(self) -> None:
        super().__init__(KIND)


class TaskBroker(ORM):
    """django-q2's database broker whose idle pusher sleeps until a task is queued (module docstring).

    A custom broker through django-q2's documented interface (`Q_CLUSTER["broker_class"]`, a subclass
    of one of its brokers overriding `enqueue` and `dequeue`); the rest (acknowledge, delete, queue
    sizes, the retry time) is the ORM broker's own."""

    def __init__(self, list_key: str | None = None) -> None:
        super().__init__(list_key=list_key)
        self.listener: TaskWakeListener | None = None

    def enqueue(self, task):
        task_id = super().enqueue(task)
        task_workers_wake_on_commit()
        return task_id

    def enqueue_many(self, packages: Sequence[str]) -> None:
        """Queue many signed task packages (`async_task` built them) in one write, then wake this
        host's idle pools once that is committed. One package (a turn's task) is one plain INSERT
        (`cindy_site.rows.insert`: per inbound message, `create()` costs about 0.15 ms of CPU more);
        more are one `bulk_create`. The caller's connection stays open: unlike `enqueue`, which
        closes a stale one first as django-q2's brokers do, this runs in the gateway, whose
        connection is managed by its own loop."""
        if not packages:
            return
        key, lock = self.list_key or settings.Q_CLUSTER["name"], timezone.now()
        if len(packages) == 1 and router.db_for_write(OrmQ) == queue_alias():
            rows.insert(OrmQ(key=key, payload=packages[0], lock=lock))
        else:
            OrmQ.objects.using(queue_alias()).bulk_create(
                OrmQ(key=key, payload=p, lock=lock) for p in packages
            )
        task_workers_wake_on_commit()  # idle pools on this host start them at once

    def listening(self) -> TaskWakeListener:
        """This pusher's socket, made in the pusher's own process (the broker object is created
        before the fork)."""
        if self.listener is None or self.listener.pid != os.getpid():
            self.listener = TaskWakeListener()
        return self.listener

    def dequeue(self):
        if not task_wake_on():
            return super().dequeue()  # polls every CINDY_Q_POLL_SECONDS
        listener = self.listening()  # bound before the read: a task queued meanwhile wakes the wait
        self.get_connection()  # closes the connection if it is stale, as django-q2's reads do
        taken = tasks_take(
            key=str(self.list_key), at=timezone.now(), until=self.timeout(None)
        )  # ORM.timeout: now + retry
        if taken is not None:
            return taken
        listener.wait(settings.CINDY_Q_IDLE_SECONDS)
        return None


def queue_alias() -> str:
    """The database of django-q2's queue (`Q_CLUSTER["orm"]`)."""
    return settings.Q_CLUSTER.get("orm", "default")


def tasks_take(*, key: str, at, until) -> list[tuple[int, str]] | None:
    """Take the queued tasks of cluster `key` whose lock has passed `at` (at most
    `Q_CLUSTER["bulk"]`, oldest first): each is taken by moving its lock on to `until`, if no other pusher moved it
    first; returns the (id, payload) of those taken, or None when none was due (`ORM.dequeue`'s read
    and update).

    Plain SQL: a pusher runs it for every task it hands out, and the ORM's read and update cost
    about 0.4 ms of CPU against 0.04 ms through the cursor (measured as
    cindy_site/rows.py says, per statement). The lock read is given back unchanged in the compare-and-set."""
    connection = connections[queue_alias()]
    q = connection.ops.quote_name
    table = rows.table(OrmQ, using=connection.alias)
    bulk = int(settings.Q_CLUSTER.get("bulk", 1))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, payload, {q('lock')} FROM {table} WHERE {q('key')} = %s AND {q('lock')} < %s "  # noqa: S608
            "ORDER BY id LIMIT %s",
            [key, connection.ops.adapt_datetimefield_value(at), bulk],
        )
        due = cursor.fetchall()
        if not due:
            return None
        taken = []
        for pk, payload, lock in due:
            with transaction.mark_for_rollback_on_error(using=connection.alias):
                cursor.execute(
                    f"UPDATE {table} SET {q('lock')} = %s WHERE id = %s AND {q('lock')} = %s",  # noqa: S608
                    [connection.ops.adapt_datetimefield_value(until), pk, lock],
                )
            if cursor.rowcount:
                taken.append((pk, payload))
    return taken
