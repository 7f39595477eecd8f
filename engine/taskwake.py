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

import datetime as dt
import functools
import os
from pathlib import Path

from django.conf import settings
from django.db import router, transaction
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.models import OrmQ

from cindy_site.local_wake import LocalWakeListener, local_wake, wake_dir
from cindy_site.prepared import PreparedRead, PreparedUpdate

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
    """django-q2's database broker whose idle pusher sleeps until a task is queued (module docstring)."""

    def __init__(self, list_key: str = None) -> None:
        super().__init__(list_key=list_key)
        self._listener: TaskWakeListener | None = None

    def enqueue(self, task):
        task_id = super().enqueue(task)
        task_workers_wake_on_commit()
        return task_id

    def _listening(self) -> TaskWakeListener:
        # Made in the pusher's own process (the broker object is created before the fork).
        if self._listener is None or self._listener.pid != os.getpid():
            self._listener = TaskWakeListener()
        return self._listener

    def dequeue(self):
        if not task_wake_on():
            return super().dequeue()  # polls every CINDY_Q_POLL_SECONDS
        listener = self._listening()  # bound before the read: a task queued meanwhile wakes the wait
        # The queue in the default database (as configured): its statements are prepared
        # (cindy_site/prepared.py), a pusher runs them for every task; elsewhere, the ORM's.
        prepared = Conf.ORM == router.db_for_write(OrmQ)
        if prepared:
            self.get_connection()  # closes the connection if it is stale, as django-q2's reads do
            tasks = _due_tasks(Conf.BULK).all(str(self.list_key), _now())
        else:
            tasks = self.get_connection().filter(key=self.list_key, lock__lt=_now())[0 : Conf.BULK]

        def take(task) -> int:
            if prepared:
                return _take_task.run(task.id, task.lock, self.timeout(task))
            return self.get_connection().filter(id=task.id, lock=task.lock).update(lock=self.timeout(task))

        if tasks:
            return [(task.pk, task.payload) for task in tasks if take(task)]
        listener.wait(settings.CINDY_Q_IDLE_SECONDS)
        return None


@functools.cache
def _due_tasks(bulk: int) -> PreparedRead:
    """The queued tasks of a cluster whose lock has passed, at most `bulk` (`ORM.dequeue`'s read)."""
    return PreparedRead(lambda key, at: OrmQ.objects.filter(key=key, lock__lt=at)[0:bulk], str, dt.datetime)


#: A task taken by moving its lock on, if no other pusher moved it first (`ORM.dequeue`'s update).
_take_task = PreparedUpdate(
    lambda pk, lock, until: (OrmQ.objects.filter(id=pk, lock=lock), {"lock": until}),
    int,
    dt.datetime,
    dt.datetime,
)


def _now():
    from django.utils import timezone

    return timezone.now()
